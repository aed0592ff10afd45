//! `mcp`: any MCP server from a terminal. See `mcp --help` and the README's "The mcp command".

mod app;

fn main() -> std::process::ExitCode {
    app::main()
}
