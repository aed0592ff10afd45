//! `serve_stdio` in a real child process, with every kind of stdin a client may give it: a pipe
//! and a socket (read on the reactor), a socket that is stdout too and a regular file (read by a
//! thread with blocking reads). Each must answer every request, in both eras, and end at EOF; a
//! pipe or socket made non-blocking for the reactor is blocking again once the server has ended.
#![cfg(all(unix, feature = "stdio"))]

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};

use common::*;
use serde_json::{Value, json};

const CHILD: &str = "MCP_SERVER_STDIO_PROCESS_CHILD";

/// The stdio server: this test binary, re-run with only this (ignored) test. Test-harness lines
/// on its stdout are not JSON, and the reader skips them.
#[test]
#[ignore = "the stdio server of the tests below, run in a child process"]
fn stdio_child_server() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(mcp_server::stdio::serve_stdio(server())).unwrap();
}

fn child(stdin: Stdio, stdout: Stdio) -> Child {
    child_with_stderr(stdin, stdout, Stdio::inherit())
}

fn child_with_stderr(stdin: Stdio, stdout: Stdio, stderr: Stdio) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["stdio_child_server", "--exact", "--ignored", "--quiet", "--test-threads=1"])
        .env(CHILD, "1")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// A legacy session and a modern call on one line stream, written at once.
fn requests() -> String {
    let lines = [
        initialize(1, "2025-11-25", json!({})),
        notification("notifications/initialized", json!({})),
        request(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "legacy" } })),
        modern(3, "tools/call", json!({ "name": "echo", "arguments": { "text": "modern" } })),
        request(4, "tools/call", json!({ "name": "nope", "arguments": {} })),
    ];
    lines.iter().map(|line| format!("{line}\n")).collect()
}

/// `count` more calls, each answered with 1 KiB: together more than a socket's buffer holds.
fn bulk(count: i64) -> String {
    let text = "x".repeat(1024);
    (100..100 + count)
        .map(|id| format!("{}\n", modern(id, "tools/call", json!({ "name": "echo", "arguments": { "text": text } }))))
        .collect()
}

/// Reads the server's output to its end (the harness of the child prints until it exits) and
/// checks the four answers to `requests()` and the `bulk` ones in it.
fn read_answers(output: impl std::io::Read, bulk: i64) {
    let mut answers = std::collections::BTreeMap::new();
    for line in BufReader::new(output).lines() {
        let Ok(message) = serde_json::from_str::<Value>(&line.unwrap()) else { continue };
        assert!(answers.insert(message["id"].as_i64().expect("an answer"), message).is_none(), "one answer each");
    }
    assert_eq!(answers.len() as i64, 4 + bulk, "every request is answered before the output ends");
    for id in 100..100 + bulk {
        assert_eq!(text(&answers[&id]).len(), "echo: ".len() + 1024, "{}", answers[&id]);
    }
    assert_eq!(answers[&1]["result"]["protocolVersion"], "2025-11-25", "{}", answers[&1]);
    assert_eq!(text(&answers[&2]), "echo: legacy", "{}", answers[&2]);
    assert_eq!(text(&answers[&3]), "echo: modern", "{}", answers[&3]);
    assert_eq!(answers[&4]["error"]["code"], -32602, "an unknown tool: {}", answers[&4]);
}

fn assert_ends(mut child: Child) {
    let status = child.wait().unwrap();
    assert!(status.success(), "the server ends cleanly at the end of its input: {status}");
}

#[test]
fn stdin_a_pipe() {
    let mut server = child(Stdio::piped(), Stdio::piped());
    server.stdin.take().unwrap().write_all(requests().as_bytes()).unwrap();
    read_answers(server.stdout.take().unwrap(), 0);
    assert_ends(server);
}

/// Stdout a pipe that fills: each reply complete at once is written by the serving task itself
/// while the pipe has room and nothing is queued for the writer task, and through that task
/// otherwise. Either way every request is answered once, and a reply's progress notifications
/// come before its response.
#[test]
fn a_filling_pipe_keeps_each_reply_whole_and_in_order() {
    let mut server = child(Stdio::piped(), Stdio::piped());
    let mut stdin = server.stdin.take().unwrap();
    let calls = 300;
    let writer = std::thread::spawn(move || {
        let text = "y".repeat(3000);
        for id in 0..calls {
            let line = if id % 3 == 0 {
                let mut meta = common::meta();
                meta["progressToken"] = json!(id);
                modern(id, "tools/call", json!({ "name": "progress_logger", "arguments": {}, "_meta": meta }))
            } else {
                // Answers near and beyond `PIPE_BUF`, which the serving task leaves to the writer.
                let text = &text[..if id % 3 == 1 { 100 } else { 3000 + id as usize }.min(text.len())];
                modern(id, "tools/call", json!({ "name": "echo", "arguments": { "text": text } }))
            };
            stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        }
    });
    let mut answered = std::collections::BTreeSet::new();
    let mut progress = std::collections::BTreeMap::<i64, usize>::new();
    for line in BufReader::new(server.stdout.take().unwrap()).lines() {
        let Ok(message) = serde_json::from_str::<Value>(&line.unwrap()) else { continue };
        if message["method"] == "notifications/progress" {
            let token = message["params"]["progressToken"].as_i64().unwrap();
            assert!(!answered.contains(&token), "progress of {token} after its response");
            *progress.entry(token).or_default() += 1;
            continue;
        }
        if let Some(id) = message["id"].as_i64() {
            assert!(message.get("result").is_some(), "{message}");
            assert!(answered.insert(id), "one answer each: {id}");
            if id % 3 == 0 {
                assert_eq!(progress.get(&id), Some(&3), "three progress notifications before the answer to {id}");
            }
        }
    }
    writer.join().unwrap();
    assert_eq!(answered.len() as i64, calls, "every request is answered");
    assert_ends(server);
}

/// The server's end of the socket is kept here too: once the server has ended, it must be
/// blocking again (the server made it non-blocking for its reactor), so that a write bigger than
/// the socket's buffer waits for the reader instead of failing with `EAGAIN`.
#[test]
fn stdin_a_socket() {
    let (mut ours, theirs) = UnixStream::pair().unwrap();
    let mut kept = theirs.try_clone().unwrap();
    let mut server = child(Stdio::from(std::os::fd::OwnedFd::from(theirs)), Stdio::piped());
    ours.write_all(requests().as_bytes()).unwrap();
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    read_answers(server.stdout.take().unwrap(), 0);
    assert_ends(server);

    const BYTES: usize = 4 << 20;
    let writing = std::thread::spawn(move || kept.write_all(&vec![b'x'; BYTES]));
    let mut read = Vec::new();
    std::io::Read::read_to_end(&mut ours, &mut read).unwrap();
    let written = writing.join().unwrap();
    assert!(written.is_ok(), "stdin is left non-blocking after the server ended: {written:?}");
    assert_eq!(read.len(), BYTES);
}

/// A pipe whose read end is shared: after the server ends (here because its stdout was closed,
/// the other way out), the shared description is blocking again (read from `/proc`, so Linux).
#[test]
#[cfg(target_os = "linux")]
fn stdin_a_pipe_is_blocking_again_after_serving() {
    let (reader, mut writer) = std::io::pipe().unwrap();
    let kept = reader.try_clone().unwrap();
    // Its harness fails too, once it finds stdout closed: that is not this test's business.
    let mut server = child_with_stderr(Stdio::from(reader), Stdio::piped(), Stdio::null());
    let mut stdout = BufReader::new(server.stdout.take().unwrap());
    writer
        .write_all(
            format!("{}\n", modern(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "a" } })))
                .as_bytes(),
        )
        .unwrap();
    let mut line = String::new();
    while !line.contains(r#""id":1"#) {
        line.clear();
        assert_ne!(stdout.read_line(&mut line).unwrap(), 0, "the server answers the first call");
    }
    drop(stdout);
    // The answer to this one finds stdout closed, and the server ends.
    writer
        .write_all(
            format!("{}\n", modern(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "b" } })))
                .as_bytes(),
        )
        .unwrap();
    let status = server.wait().unwrap();
    assert!(!status.success(), "a server that cannot write ends with an error");

    // `O_NONBLOCK` (octal 04000) belongs to the open file description, which `kept` shares.
    let flags = status_flags(&kept);
    assert_eq!(flags & 0o4000, 0, "stdin is left non-blocking after the server ended (flags {flags:o})");
}

/// The status flags of an open file description: `flags:` in `/proc/self/fdinfo/<fd>`, octal.
#[cfg(target_os = "linux")]
fn status_flags(fd: &impl std::os::fd::AsRawFd) -> u32 {
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", fd.as_raw_fd())).unwrap();
    let flags = info.lines().find_map(|line| line.strip_prefix("flags:")).expect("a flags line");
    u32::from_str_radix(flags.trim(), 8).unwrap()
}

/// stdin and stdout are one socket: stdin must stay blocking, or the answers, written faster than
/// they are read here, would fail with `EAGAIN` once the socket's buffer is full.
#[test]
fn stdin_and_stdout_one_socket() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let both = std::os::fd::OwnedFd::from(theirs);
    let server = child(Stdio::from(both.try_clone().unwrap()), Stdio::from(both));
    let mut writer = ours.try_clone().unwrap();
    let writing = std::thread::spawn(move || {
        writer.write_all(format!("{}{}", requests(), bulk(2000)).as_bytes()).unwrap();
        writer.shutdown(std::net::Shutdown::Write).unwrap();
    });
    // Nothing is read for a while, so that the server's writes find the buffer full.
    std::thread::sleep(std::time::Duration::from_millis(300));
    read_answers(ours, 2000);
    writing.join().unwrap();
    assert_ends(server);
}

#[test]
fn stdin_a_file() {
    let path = std::env::temp_dir().join(format!("mcp-stdio-process-{}.jsonl", std::process::id()));
    std::fs::write(&path, requests()).unwrap();
    let mut server = child(Stdio::from(std::fs::File::open(&path).unwrap()), Stdio::piped());
    read_answers(server.stdout.take().unwrap(), 0);
    assert_ends(server);
    std::fs::remove_file(&path).unwrap();
}
