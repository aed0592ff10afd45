//! The `mcp` command: parse, connect, run one command, say how it went in the exit code.
//!
//! Floors, top down: `commands` (one function per command) → `connect` (target and options to a
//! client) → `form`, `arguments`, `tokens`, `render`, `wire` → `args`, `failure`.

mod args;
mod arguments;
mod commands;
mod connect;
mod failure;
mod form;
mod render;
mod tokens;
mod wire;

use std::process::ExitCode;

use clap::Parser as _;

use failure::Kind;

pub fn main() -> ExitCode {
    quiet_typify_panics();
    let cli = args::Cli::parse();
    let choice = match cli.global.color {
        args::ColorChoice::Auto => anstream::ColorChoice::Auto,
        args::ColorChoice::Always => anstream::ColorChoice::Always,
        args::ColorChoice::Never => anstream::ColorChoice::Never,
    };
    choice.write_global();
    wire::install(cli.global.raw);
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            anstream::eprintln!("mcp: could not start the runtime: {error}");
            return Kind::Connection.exit_code();
        }
    };
    match runtime.block_on(commands::run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            if failure.kind != Kind::ToolError || !failure.message.is_empty() {
                anstream::eprintln!("{} {failure}", render::red("mcp:"));
            }
            failure.kind.exit_code()
        }
    }
}

/// typify asserts (panics) on schemas it cannot express; the bindings generator catches that and
/// says so in the bindings, so the panic's own report would only be noise.
fn quiet_typify_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.location().is_some_and(|at| at.file().contains("typify")) {
            report(info);
        }
    }));
}
