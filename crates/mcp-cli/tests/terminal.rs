//! A server's elicitation answered by a person at a real pseudo-terminal, in both eras.

mod support;

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
