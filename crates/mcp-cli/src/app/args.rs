//! The command line, as clap reads it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Lists and calls the tools, resources and prompts of any MCP server, in either protocol era.
#[derive(Debug, Parser)]
#[command(name = "mcp", version, max_term_width = 100, long_about = ABOUT, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    #[command(flatten)]
    pub global: Global,
}

const ABOUT: &str = "\
Lists and calls the tools, resources and prompts of any MCP server, in either protocol era.

TARGET is a URL (Streamable HTTP or the older HTTP+SSE), a server's name in a configuration
file (`mcpServers`/`servers` JSON, as Claude Desktop, VS Code and Cursor write it), or, at the
end after `--`, the command line of a stdio server:

  mcp tools https://example.com/mcp
  mcp call files read_file path=/etc/hostname
  mcp call add a=1 b=2 -- python server.py";

pub const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  the tool answered with an error (isError), or `codegen --check` found changes
  2  usage: bad arguments, unknown tool or argument (nothing was sent)
  3  connection: the server could not be started or reached, or it went away
  4  authorization: not logged in, refused, or the login failed
  5  protocol: the server answered with an error or broke the protocol
  130 interrupted (Ctrl-C); the request was cancelled";

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// The configuration file that names servers (default: see `mcp servers --help`)
    #[arg(long, global = true, env = "MCP_CONFIG", value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// An HTTP header sent with every request, as `Name: value` (repeatable)
    #[arg(long = "header", short = 'H', global = true, value_name = "K:V")]
    pub headers: Vec<String>,
    /// The protocol era: `auto` negotiates (2026-07-28 first, then the `initialize` handshake)
    #[arg(long, global = true, value_enum, default_value_t = EraChoice::Auto)]
    pub era: EraChoice,
    /// How long to wait for each answer, in seconds
    #[arg(long, global = true, value_name = "SECS", default_value = "60", value_parser = seconds)]
    pub timeout: Duration,
    /// Print stable JSON (the protocol's shapes) instead of tables and text
    #[arg(long, global = true, conflicts_with = "raw")]
    pub json: bool,
    /// Print the JSON-RPC exchange, one message per line (`->` sent, `<-` received)
    #[arg(long, global = true)]
    pub raw: bool,
    /// When to colour the output (NO_COLOR and CLICOLOR_FORCE are honoured with `auto`)
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// The loopback port the browser returns to after a login
    #[arg(long, global = true, env = "MCP_CALLBACK_PORT", default_value_t = 33418)]
    pub callback_port: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EraChoice {
    Auto,
    Modern,
    Legacy,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

fn seconds(text: &str) -> Result<Duration, String> {
    let secs: f64 = text.parse().map_err(|_| format!("{text:?} is not a number of seconds"))?;
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text} is not a positive duration"))
}

/// Where the server is: the first word (a URL or a configured name), or the words after `--`.
#[derive(Debug, Args)]
pub struct On {
    /// After `--`: the command line of a stdio server
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The server's name, version, era, capabilities and instructions
    Info(Plain),
    /// The server's tools, with their arguments
    Tools(ToolsArgs),
    /// Calls a tool: `mcp call TARGET TOOL key=value …` (values typed by the tool's inputSchema)
    Call(CallArgs),
    /// The server's resources
    Resources(Plain),
    /// The server's resource templates
    Templates(Plain),
    /// Reads a resource: `mcp read TARGET URI`
    Read(Words),
    /// The server's prompts, with their arguments
    Prompts(Plain),
    /// Gets a prompt: `mcp prompt TARGET NAME key=value …`
    Prompt(Words),
    /// Completes an argument of a prompt or resource template:
    /// `mcp complete TARGET (--prompt NAME | --template URI) ARGUMENT [PREFIX]`
    Complete(CompleteArgs),
    /// The server's skills (skills extension): list, get URI, read URI
    Skills(Words),
    /// Tasks (tasks extension): `mcp tasks TARGET (get|cancel|wait) ID` for an id `mcp call --task` printed
    Tasks(Words),
    /// Prints list changes, resource updates and (legacy era) log messages until Ctrl-C
    Watch(WatchArgs),
    /// Checks that the server answers
    Ping(Plain),
    /// Logs in to a protected server (OAuth 2.1 in the browser) and keeps the tokens
    Login(LoginArgs),
    /// Forgets the tokens kept for a server
    Logout(Plain),
    /// The servers a configuration file names
    Servers(ServersArgs),
    /// Generates typed Rust bindings for a server's tools, prompts and templates
    Codegen(CodegenArgs),
    /// Prints a shell completion script
    Completions(CompletionsArgs),
}

/// A command that takes only the target.
#[derive(Debug, Args)]
pub struct Plain {
    /// A URL or a configured server's name (or give `-- COMMAND ARGS…`)
    #[arg(value_name = "TARGET")]
    pub target: Option<String>,
    #[command(flatten)]
    pub on: On,
}

/// A command that takes the target then words of its own.
#[derive(Debug, Args)]
pub struct Words {
    /// TARGET (unless the server comes after `--`), then the command's own words
    #[arg(value_name = "WORDS", allow_hyphen_values = false)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub on: On,
}

#[derive(Debug, Args)]
pub struct ToolsArgs {
    #[command(flatten)]
    pub plain: Plain,
    /// Print each tool's input and output schemas
    #[arg(long)]
    pub schema: bool,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// TARGET (unless the server comes after `--`), TOOL, then key=value arguments (`key:=JSON`
    /// for a raw JSON value)
    #[arg(value_name = "WORDS", required = true)]
    pub words: Vec<String>,
    /// The arguments as a JSON object, or `@FILE` (`@-` for stdin); key=value words override
    #[arg(long, value_name = "JSON|@FILE")]
    pub args: Option<String>,
    /// Run the call as a task (tasks extension) and follow it to its result
    #[arg(long)]
    pub task: bool,
    /// With --task: print the task's id and exit instead of following it (see `mcp tasks`)
    #[arg(long, requires = "task")]
    pub detach: bool,
    #[command(flatten)]
    pub on: On,
}

#[derive(Debug, Args)]
pub struct CompleteArgs {
    /// TARGET (unless the server comes after `--`), ARGUMENT, then the PREFIX typed so far
    #[arg(value_name = "WORDS", required = true)]
    pub words: Vec<String>,
    /// The prompt whose argument is completed
    #[arg(long, conflicts_with = "template", required_unless_present = "template")]
    pub prompt: Option<String>,
    /// The resource template (its URI template) whose variable is completed
    #[arg(long)]
    pub template: Option<String>,
    /// Values of other arguments, as key=value (repeatable)
    #[arg(long = "context", value_name = "K=V")]
    pub context: Vec<String>,
    #[command(flatten)]
    pub on: On,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    #[command(flatten)]
    pub plain: Plain,
    /// Also subscribe to updates of this resource (repeatable)
    #[arg(long = "resource", value_name = "URI")]
    pub resources: Vec<String>,
    /// The lowest log level to receive
    #[arg(long, default_value = "info")]
    pub level: String,
}

#[derive(Debug, Args)]
pub struct LoginArgs {
    #[command(flatten)]
    pub plain: Plain,
    /// Scopes to ask for, beyond what the server asks (repeatable)
    #[arg(long = "scope")]
    pub scopes: Vec<String>,
    /// A pre-registered client id (else the client registers itself)
    #[arg(long)]
    pub client_id: Option<String>,
}

#[derive(Debug, Args)]
pub struct ServersArgs {}

#[derive(Debug, Args)]
pub struct CodegenArgs {
    #[command(flatten)]
    pub plain: Plain,
    /// The file to write (or, with --check, to compare with the server)
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
    /// Fail, naming each tool, prompt or template whose contract differs from FILE's
    #[arg(long)]
    pub check: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}
