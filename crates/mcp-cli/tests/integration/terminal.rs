//! A server's elicitation answered by a person at a real pseudo-terminal, in both eras.

use crate::support;

use rexpect::session::spawn_command;
use support::Scratch;

#[test]
fn an_elicitation_is_answered_in_the_terminal() {
    let scratch = Scratch::new();
    for era in ["modern", "legacy"] {
        let mut command = scratch.terminal_command();
        command.args(["--era", era, "call", "test_elicitation", "message=Who are you?", "--"]);
        command.args(support::stdio_server());
        let mut terminal = spawn_command(command, Some(30_000)).expect("mcp starts in a pseudo-terminal");
        terminal.exp_string("The server asks: Who are you?").unwrap();
        terminal.exp_string("Answer? [y]es / [n]o (decline) / [c]ancel: ").unwrap();
        terminal.send_line("y").unwrap();
        // Fields in the schema's order (sorted by name), each with its description.
        terminal.exp_string("email (Your email address): ").unwrap();
        terminal.send_line("ada@example.com").unwrap();
        terminal.exp_string("username (Your username): ").unwrap();
        // A required field left empty is asked again.
        terminal.send_line("").unwrap();
        terminal.exp_string("username is required").unwrap();
        terminal.send_line("ada").unwrap();
        terminal.exp_string(r#"User response: Accept {"email":"ada@example.com","username":"ada"}"#).unwrap();
        terminal.exp_eof().unwrap();
    }
}

#[test]
fn a_declined_elicitation_says_so() {
    let scratch = Scratch::new();
    let mut command = scratch.terminal_command();
    command.args(["call", "test_elicitation", "message=Share?", "--"]);
    command.args(support::stdio_server());
    let mut terminal = spawn_command(command, Some(30_000)).unwrap();
    terminal.exp_string("Answer? ").unwrap();
    terminal.send_line("n").unwrap();
    terminal.exp_string("User response: Decline").unwrap();
    terminal.exp_eof().unwrap();
}

#[test]
fn a_url_elicitation_opens_the_browser_after_consent() {
    use mcp_server::{Context, Error, NoArguments, Server, ToolRoute};

    // A server whose tool sends the user to a URL (2026-07-28 URL-mode elicitation).
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = Server::builder("url-elicitation", "0.0.1")
        .tool(ToolRoute::new("visit", |ctx: Context, _: NoArguments| async move {
            let params = serde_json::from_value(serde_json::json!({
                "mode": "url", "message": "Sign the form", "url": "https://example.com/form"
            }))
            .expect("URL elicitation parameters");
            let answer = ctx.elicit_with("visit", params).await?;
            Ok::<_, Error>(format!("visited: {:?}", answer.action))
        }))
        .build()
        .unwrap();
    runtime.spawn(mcp_server::http::serve(listener, server, mcp_server::http::HttpConfig::default()));

    let scratch = Scratch::new();
    // The "browser" marks that it started, then records the URL it was asked to open after
    // starting slowly: `mcp` has exited by then, and the terminal's hangup must not kill it.
    let started = scratch.path().join("started.txt");
    let opened = scratch.path().join("opened.txt");
    let browser = scratch.path().join("browser.sh");
    let script =
        format!("#!/bin/sh\ntouch {}\nsleep 1\nprintf '%s' \"$1\" > {}\n", started.display(), opened.display());
    std::fs::write(&browser, script).unwrap();
    std::fs::set_permissions(&browser, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    let mut command = scratch.terminal_command();
    command.env("BROWSER", &browser).args(["call", &url, "visit"]);
    let mut terminal = spawn_command(command, Some(30_000)).unwrap();
    terminal.exp_string("The server asks: Sign the form").unwrap();
    terminal.exp_string("https://example.com/form").unwrap();
    terminal.exp_string("Open this URL in the browser? [y]es / [n]o (decline) / [c]ancel: ").unwrap();
    terminal.send_line("y").unwrap();
    terminal.exp_string("visited: Accept").unwrap();
    terminal.exp_eof().unwrap();
    // `mcp` starts the browser and does not wait for it (as `xdg-open` is not waited for): the
    // script may still be writing when `mcp` has exited.
    let written = (0..200).find_map(|_| {
        std::fs::read_to_string(&opened).ok().filter(|url| !url.is_empty()).or_else(|| {
            std::thread::sleep(std::time::Duration::from_millis(50));
            None
        })
    });
    assert_eq!(written.as_deref(), Some("https://example.com/form"), "the browser was given the URL");

    // Declined: the browser is not started.
    std::fs::remove_file(&started).unwrap();
    let mut command = scratch.terminal_command();
    command.env("BROWSER", &browser).args(["call", &url, "visit"]);
    let mut terminal = spawn_command(command, Some(30_000)).unwrap();
    terminal.exp_string("Open this URL in the browser?").unwrap();
    terminal.send_line("n").unwrap();
    terminal.exp_string("visited: Decline").unwrap();
    terminal.exp_eof().unwrap();
    assert!(!started.exists(), "a declined URL is not opened");
}
