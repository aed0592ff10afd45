//! `mcp` against this workspace's conformance server, over stdio and HTTP, in both eras: what
//! each command prints, what it sends, and its exit code.

use crate::support;

use std::io::{BufRead as _, BufReader};
use std::process::Stdio;

use serde_json::json;
use support::{HttpServer, Scratch, interrupt};

const ERAS: [(&str, &str); 2] = [("modern", "2026-07-28"), ("legacy", "2025-11-25")];

#[test]
fn info_names_the_server_era_and_capabilities_over_both_transports() {
    let scratch = Scratch::new();
    let http = HttpServer::start();
    for (era, version) in ERAS {
        let stdio = scratch.run_stdio(&["--json", "--era", era, "info"]).expect(0).json();
        let over_http = scratch.run(&["--json", "--era", era, "info", &http.url]).expect(0).json();
        for (info, transport) in [(stdio, "stdio"), (over_http, "streamable-http")] {
            assert_eq!(info["era"], era, "{info}");
            assert_eq!(info["protocolVersion"], version);
            assert_eq!(info["transport"], transport);
            assert_eq!(info["serverInfo"]["name"], "mcp-rs-conformance-server", "{info}");
            assert!(info["capabilities"]["tools"].is_object(), "{info}");
        }
    }
    // The default negotiates the newest era; people get a summary.
    let text = scratch.run(&["info", &http.url]).expect(0).stdout();
    assert!(text.contains("protocol  modern, 2026-07-28 over streamable-http"), "{text}");
    assert!(text.contains("offers  ") && text.contains("tools (listChanged)"), "{text}");
}

#[test]
fn lists_in_both_eras() {
    let scratch = Scratch::new();
    for (era, _) in ERAS {
        let tools = scratch.run_stdio(&["--json", "--era", era, "tools"]).expect(0).json();
        let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"slow_compute") && names.contains(&"greet"), "{era}: {names:?}");

        let text = scratch.run_stdio(&["--era", era, "tools"]).expect(0).stdout();
        assert!(text.contains("slow_compute (label?: string|null, seconds: number)"), "{era}: {text}");
        assert!(text.contains("    Greets someone at once"), "{era}: {text}");
        let schemas = scratch.run_stdio(&["--era", era, "tools", "--schema"]).expect(0).stdout();
        assert!(schemas.contains(r#"input: {"#) && schemas.contains(r#""required":["name"]"#), "{schemas}");

        let resources = scratch.run_stdio(&["--era", era, "resources"]).expect(0).stdout();
        assert!(resources.lines().next().unwrap().starts_with("URI "), "{resources}");
        assert!(resources.contains("test://static-text") && resources.contains("text/plain"), "{resources}");
        let templates = scratch.run_stdio(&["--json", "--era", era, "templates"]).expect(0).json();
        assert_eq!(templates["resourceTemplates"][0]["uriTemplate"], "test://template/{id}/data");
        let prompts = scratch.run_stdio(&["--era", era, "prompts"]).expect(0).stdout();
        assert!(prompts.contains("test_prompt_with_arguments") && prompts.contains("arg1 arg2"), "{prompts}");
    }
}

#[test]
fn call_types_arguments_by_the_input_schema() {
    let scratch = Scratch::new();
    for (era, _) in ERAS {
        let run =
            scratch.run_stdio(&["--raw", "--era", era, "call", "slow_compute", "seconds=0.01", "label=7"]).expect(0);
        let call = run.raw("->").into_iter().find(|m| m["method"] == "tools/call").expect("a tools/call was sent");
        // `seconds` is a number in the schema, `label` a string (or null): "7" stays text.
        assert_eq!(call["params"]["arguments"], json!({"seconds": 0.01, "label": "7"}), "{era}");
        assert_eq!(call["params"]["name"], "slow_compute");

        let text = scratch.run_stdio(&["--era", era, "call", "greet", "name=Ada"]).expect(0).stdout();
        assert_eq!(text.trim(), "Hello, Ada!", "{era}");
        let result =
            scratch.run_stdio(&["--json", "--era", era, "call", "greet", "--args", r#"{"name": "Bo"}"#]).expect(0);
        assert_eq!(result.json()["content"][0]["text"], "Hello, Bo!");
    }
    // --args from a file, overridden by a word; `key:=JSON` gives a raw value.
    std::fs::write(scratch.path().join("args.json"), r#"{"name": "File"}"#).unwrap();
    let text = scratch.run_stdio(&["call", "greet", "--args", "@args.json"]).expect(0).stdout();
    assert_eq!(text.trim(), "Hello, File!");
    let text = scratch.run_stdio(&["call", "greet", "--args", "@args.json", "name:=\"Word\""]).expect(0).stdout();
    assert_eq!(text.trim(), "Hello, Word!");
}

#[test]
fn bad_arguments_are_named_and_nothing_is_sent() {
    let scratch = Scratch::new();
    for (args, expected) in [
        (vec!["call", "slow_compute"], "tool `slow_compute` needs `seconds`"),
        (vec!["call", "slow_compute", "seconds=soon"], "`seconds` must be number, not \"soon\""),
        (vec!["call", "greet", "name=a", "nmae=b"], "tool `greet` has no argument `nmae`; its arguments: name"),
        (vec!["call", "json_schema_2020_12_tool", "contactMethod=fax"], "must be one of phone, email"),
        (vec!["call", "no_such_tool"], "the server has no tool `no_such_tool`; its tools: test_simple_text"),
        (vec!["call", "greet", "--args", "[1]"], "--args must be a JSON object"),
        (vec!["prompt", "test_prompt_with_arguments", "arg1=x"], "prompt `test_prompt_with_arguments` needs `arg2`"),
    ] {
        let mut all = vec!["--raw"];
        all.extend(&args);
        let run = scratch.run_stdio(&all).expect(2);
        assert!(run.stderr().contains(expected), "{args:?}: {}", run.stderr());
        let sent: Vec<String> = run.raw("->").iter().map(|m| m["method"].to_string()).collect();
        assert!(!sent.iter().any(|m| m.contains("tools/call") || m.contains("prompts/get")), "{args:?} sent {sent:?}");
    }
}

#[test]
fn exit_codes_say_what_failed() {
    let scratch = Scratch::new();
    // 1: the tool answered isError, its text on stdout.
    let run = scratch.run_stdio(&["call", "test_error_handling"]).expect(1);
    assert!(run.stdout().contains("intentionally returns an error"), "{}", run.stdout());
    assert!(run.stderr().contains("the tool `test_error_handling` reported an error"));
    // 2: usage.
    scratch.run(&["call"]).expect(2);
    let run = scratch.run(&["tools"]).expect(2);
    assert!(run.stderr().contains("which server?"), "{}", run.stderr());
    // 3: nothing listens there; a program that does not exist.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", closed.local_addr().unwrap());
    drop(closed);
    let run = scratch.run(&["tools", &url]).expect(3);
    assert!(run.stderr().contains("hint: check that the server runs"), "{}", run.stderr());
    let run = scratch.run(&["tools", "--", "/nonexistent/mcp-server-program"]).expect(3);
    assert!(run.stderr().contains("/nonexistent/mcp-server-program"), "{}", run.stderr());
    // 5: the server answered with a JSON-RPC error.
    let run = scratch.run_stdio(&["read", "test://no-such-resource"]).expect(5);
    assert!(run.stderr().contains("resources/read failed"), "{}", run.stderr());
}

#[test]
fn read_prompt_and_complete_in_both_eras() {
    let scratch = Scratch::new();
    for (era, _) in ERAS {
        let text = scratch.run_stdio(&["--era", era, "read", "test://static-text"]).expect(0).stdout();
        assert!(!text.trim().is_empty(), "{era}");
        let json = scratch.run_stdio(&["--json", "--era", era, "read", "test://static-binary"]).expect(0).json();
        assert!(json["contents"][0]["blob"].as_str().is_some_and(|b| !b.is_empty()), "{json}");
        let human = scratch.run_stdio(&["--era", era, "read", "test://static-binary"]).expect(0).stdout();
        assert!(human.contains("image/png, about"), "{human}");

        let prompt = scratch
            .run_stdio(&["--json", "--era", era, "prompt", "test_prompt_with_arguments", "arg1=one", "arg2=two"])
            .expect(0)
            .json();
        let text = prompt["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("one") && text.contains("two"), "{prompt}");

        let completion = scratch
            .run_stdio(&["--json", "--era", era, "complete", "--prompt", "test_prompt_with_arguments", "arg1", ""])
            .expect(0)
            .json();
        assert!(completion["completion"]["values"].is_array(), "{completion}");
    }
}

#[test]
fn server_requests_without_a_terminal_are_refused_cleanly() {
    let scratch = Scratch::new();
    for (era, _) in ERAS {
        // Elicitation: cancelled, and the user told why; the tool still answers.
        let run = scratch.run_stdio(&["--era", era, "call", "test_elicitation", "message=Who?"]).expect(0);
        assert!(run.stderr().contains("no terminal to ask on, so it was cancelled"), "{}", run.stderr());
        assert!(run.stdout().to_lowercase().contains("cancel"), "{}", run.stdout());
        // Sampling: refused with a message saying so.
        let run = scratch.run_stdio(&["--era", era, "call", "test_sampling", "prompt=hi"]);
        assert!(run.stderr().contains("mcp runs no model and refused"), "{}", run.stderr());
        assert_ne!(run.code(), 0);
    }
}

#[test]
fn progress_and_logs_go_to_stderr_not_stdout() {
    let scratch = Scratch::new();
    for (era, _) in ERAS {
        let run = scratch.run_stdio(&["--era", era, "call", "test_tool_with_logging"]).expect(0);
        assert_eq!(run.stdout().trim(), "Logging test completed", "{era}");
        assert!(run.stderr().contains("[info] conformance: Tool execution started"), "{era}: {}", run.stderr());
        let run = scratch.run_stdio(&["--raw", "--era", era, "call", "test_tool_with_progress"]).expect(0);
        let progress = run.raw("<-").into_iter().filter(|m| m["method"] == "notifications/progress").count();
        assert!(progress > 0, "{era}: no progress was received");
    }
}

#[test]
fn tasks_run_detached_then_get_and_wait() {
    let scratch = Scratch::new();
    let http = HttpServer::start();
    let id = scratch.run(&["call", &http.url, "slow_compute", "seconds=0.5", "--task", "--detach"]).expect(0).stdout();
    let id = id.trim();
    assert!(!id.is_empty() && !id.contains(' '), "{id:?}");
    let state = scratch.run(&["--json", "tasks", &http.url, "get", id]).expect(0).json();
    assert_eq!(state["taskId"], id);
    let result = scratch.run(&["--json", "tasks", &http.url, "wait", id]).expect(0).json();
    assert!(result["content"][0]["text"].as_str().unwrap().contains("in 0.5 s"), "{result}");
    // A task followed to its end prints like a call.
    let text = scratch.run(&["call", &http.url, "slow_compute", "seconds=0.1", "label=x", "--task"]).expect(0);
    assert!(text.stdout().contains("Computed x in 0.1 s"), "{}", text.stdout());
    assert!(text.stderr().contains("task ") && text.stderr().contains("started"), "{}", text.stderr());
    // A cancelled task says so.
    let id = scratch.run(&["call", &http.url, "slow_compute", "seconds=30", "--task", "--detach"]).expect(0).stdout();
    scratch.run(&["tasks", &http.url, "cancel", id.trim()]).expect(0);
    let state = scratch.run(&["--json", "tasks", &http.url, "get", id.trim()]).expect(0).json();
    assert_eq!(state["status"], "cancelled", "{state}");
    // A server without the tasks extension: --task is refused before anything is sent.
    let notes = support::example("notes").display().to_string();
    let run = scratch.run(&["--raw", "call", "list_notes", "--task", "--", &notes]).expect(2);
    assert!(run.stderr().contains("does not offer the tasks extension"), "{}", run.stderr());
    assert!(!run.stdout().contains("tools/call"), "nothing was called: {}", run.stdout());
    let run = scratch.run(&["tasks", &http.url, "list"]).expect(2);
    assert!(run.stderr().contains("the extension has no list"), "{}", run.stderr());
}

#[test]
fn ctrl_c_cancels_the_call_at_the_server() {
    let scratch = Scratch::new();
    let mut args = vec!["--raw".to_owned(), "--era".into(), "legacy".into(), "call".into(), "slow_compute".into()];
    args.extend(["seconds=30".into(), "--".into()]);
    args.extend(support::stdio_server());
    let mut child = scratch.command().args(&args).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Once the call is on the wire, interrupt.
    for line in lines.by_ref() {
        if line.unwrap().contains(r#""method":"tools/call""#) {
            break;
        }
    }
    interrupt(&child);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(
        rest.iter().any(|line| line.starts_with("->") && line.contains("notifications/cancelled")),
        "no cancellation was sent: {rest:?}"
    );
}

#[test]
fn ctrl_c_cancels_a_task() {
    let scratch = Scratch::new();
    let http = HttpServer::start();
    let mut child = scratch
        .command()
        .args(["--raw", "call", &http.url, "slow_compute", "seconds=30", "--task"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut task = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(text) = line.strip_prefix("<- ")
            && let Ok(message) = serde_json::from_str::<serde_json::Value>(text)
            && let Some(id) = message["result"]["task"]["taskId"].as_str().or(message["result"]["taskId"].as_str())
        {
            task = Some(id.to_owned());
            break;
        }
    }
    let task = task.expect("the call became a task");
    interrupt(&child);
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    assert!(rest.iter().any(|l| l.starts_with("->") && l.contains("tasks/cancel")), "{rest:?}");
    let state = scratch.run(&["--json", "tasks", &http.url, "get", &task]).expect(0).json();
    assert_eq!(state["status"], "cancelled", "{state}");
}

#[test]
fn watch_prints_changes_until_ctrl_c() {
    let scratch = Scratch::new();
    let http = HttpServer::start();
    for era in ["modern", "legacy"] {
        let mut child = scratch
            .command()
            .args(["--json", "--era", era, "watch", &http.url])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Wait until it listens (it says so on stderr), then change the tools from elsewhere.
        let mut errors = BufReader::new(child.stderr.take().unwrap()).lines();
        assert!(errors.by_ref().map(Result::unwrap).any(|line| line.contains("watching")));
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let seen = std::thread::spawn(move || {
            lines.by_ref().map(Result::unwrap).find(|line| line.contains("notifications/tools/list_changed"))
        });
        let mut triggered = false;
        for _ in 0..50 {
            scratch.run(&["--era", era, "call", &http.url, "test_trigger_tool_change"]).expect(0);
            if seen.is_finished() {
                triggered = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        assert!(triggered, "{era}: no list change was printed");
        assert!(seen.join().unwrap().is_some());
        interrupt(&child);
        assert_eq!(child.wait().unwrap().code(), Some(130), "{era}");
    }
}

#[test]
fn skills_list_get_and_read() {
    let scratch = Scratch::new();
    let list = scratch.run_stdio(&["--json", "skills"]).expect(0).json();
    let uris: Vec<&str> = list["skills"].as_array().unwrap().iter().map(|s| s["uri"].as_str().unwrap()).collect();
    assert!(uris.contains(&"skill://git-workflow/SKILL.md"), "{uris:?}");
    let text = scratch.run_stdio(&["skills", "get", "skill://git-workflow/SKILL.md"]).expect(0).stdout();
    assert!(text.starts_with("---") && text.contains("git-workflow"), "{text}");
    let file = scratch
        .run_stdio(&["skills", "read", "skill://pdf-processing/SKILL.md", "skill://pdf-processing/scripts/extract.py"])
        .expect(0)
        .stdout();
    assert!(!file.is_empty());
    let run =
        scratch.run_stdio(&["skills", "read", "skill://pdf-processing/SKILL.md", "skill://elsewhere/x"]).expect(5);
    assert!(run.stderr().contains("skill file skill://elsewhere/x failed verification"), "{}", run.stderr());
}

#[test]
fn configured_servers_are_found_by_name() {
    let scratch = Scratch::new();
    let server = support::stdio_server();
    let config = json!({"mcpServers": {"conf": {"command": server[0], "args": [server[1]]}}});
    // The project's .mcp.json is read from the current directory.
    std::fs::write(scratch.path().join(".mcp.json"), config.to_string()).unwrap();
    let text = scratch.run(&["call", "conf", "greet", "name=Config"]).expect(0).stdout();
    assert_eq!(text.trim(), "Hello, Config!");
    let listed = scratch.run(&["servers"]).expect(0).stdout();
    assert!(listed.contains("conf") && listed.contains(".mcp.json"), "{listed}");
    // --config names another file; an unknown name lists what the file has.
    let other = scratch.path().join("other.json");
    std::fs::write(&other, json!({"servers": {"x": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}).to_string())
        .unwrap();
    let run = scratch.run(&["--config", other.to_str().unwrap(), "tools", "conf"]).expect(2);
    assert!(
        run.stderr().contains("no server named \"conf\"") && run.stderr().contains("servers: x"),
        "{}",
        run.stderr()
    );
}

#[test]
fn ping_and_completions() {
    let scratch = Scratch::new();
    let text = scratch.run_stdio(&["ping"]).expect(0).stdout();
    assert!(text.starts_with("alive (server/discover) in "), "{text}");
    let text = scratch.run_stdio(&["--era", "legacy", "ping"]).expect(0).stdout();
    assert!(text.starts_with("alive (ping) in "), "{text}");
    let script = scratch.run(&["completions", "bash"]).expect(0).stdout();
    assert!(script.contains("_mcp()") && script.contains("codegen"), "{}", &script[..200.min(script.len())]);
}

#[test]
fn headers_reach_the_server_and_json_is_stable() {
    let scratch = Scratch::new();
    let http = HttpServer::start();
    let run = scratch.run(&["--json", "-H", "X-Trace: abc", "call", &http.url, "greet", "name=H"]).expect(0);
    assert_eq!(run.json()["content"][0]["text"], "Hello, H!");
    let run = scratch.run(&["-H", "no-colon", "tools", &http.url]).expect(2);
    assert!(run.stderr().contains("is not `Name: value`"), "{}", run.stderr());
    let run = scratch.run(&["-H", "X: y", "tools", "--", "true"]).expect(2);
    assert!(run.stderr().contains("--header applies to URL targets only"), "{}", run.stderr());
}

#[test]
fn codegen_writes_bindings_and_check_names_what_changed() {
    let scratch = Scratch::new();
    let run = scratch.run_stdio(&["codegen", "--out", "conformance.rs"]).expect(0);
    assert!(run.stdout().starts_with("wrote conformance.rs (35 tools, 5 prompts, 1 template)"), "{}", run.stdout());
    let path = scratch.path().join("conformance.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("// @generated by mcp codegen"), "{}", &text[..200]);
    assert!(text.contains("pub struct GreetArgs") && text.contains("pub async fn greet("), "the typed handle is there");
    // A schema typify cannot express (if/then/else) loses its conditions, not its types.
    assert!(text.contains("pub struct JsonSchema202012ToolArgs"));
    scratch.run_stdio(&["codegen", "--out", "conformance.rs", "--check"]).expect(0);
    // The same contract gives the same text: a second run leaves the file alone.
    let run = scratch.run_stdio(&["codegen", "--out", "conformance.rs"]).expect(0);
    assert!(run.stdout().starts_with("unchanged: conformance.rs"), "{}", run.stdout());

    // The bindings say greet's contract was another: --check names it and how to regenerate.
    let before = "\"tool\",\n        \"greet\",\n        \"";
    let digest = text.find(before).expect("greet's digest row") + before.len();
    let mut tampered = text.clone();
    tampered.replace_range(digest..digest + 8, "00000000");
    std::fs::write(&path, tampered).unwrap();
    let run = scratch.run_stdio(&["codegen", "--out", "conformance.rs", "--check"]).expect(1);
    assert!(run.stderr().contains("tool `greet` changed"), "{}", run.stderr());
    assert!(run.stderr().contains("regenerate them with `mcp codegen --out conformance.rs -- "), "{}", run.stderr());
    let run = scratch.run_stdio(&["codegen", "--out", "missing.rs", "--check"]).expect(2);
    assert!(run.stderr().contains("generate it first"), "{}", run.stderr());
}

#[test]
fn generate_for_a_build_script_gives_what_mcp_codegen_writes() {
    let scratch = Scratch::new();
    scratch.run_stdio(&["codegen", "--out", "conformance.rs"]).expect(0);
    let written = std::fs::read_to_string(scratch.path().join("conformance.rs")).unwrap();
    let target = mcp_cli::target::Target::command(support::stdio_server()).unwrap();
    let text = mcp_cli::bindings::generate_for(&target, &mcp_cli::bindings::Options::default()).unwrap();
    // The same bindings; only the command that regenerates them is not recorded.
    let without_command =
        |text: &str| text.lines().filter(|l| !l.starts_with("// Regenerate with:")).collect::<Vec<_>>().join("\n");
    assert_eq!(without_command(&written), without_command(&text));
    assert!(written.contains("// Regenerate with: mcp codegen --out conformance.rs -- "));
}
