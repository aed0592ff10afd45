//! One function per command. Each connects (through [`connect`]), does its work, and prints
//! for people or, with `--json`, the protocol's JSON.

mod auth;
mod calls;
mod codegen;
mod lists;
mod live;

use std::future::Future;

use mcp_cli::target::{self, Target};
use mcp_client::Client;

use super::args::{Cli, Command, Global, On};
use super::connect::{self, Connection, Login};
use super::failure::{Failure, Kind, Outcome};

pub async fn run(cli: Cli) -> Outcome {
    let global = &cli.global;
    match cli.command {
        Command::Info(plain) => with_client(global, plain.target, &plain.on, lists::info).await,
        Command::Tools(args) => {
            with_client(global, args.plain.target, &args.plain.on, |s| lists::tools(s, args.schema)).await
        }
        Command::Resources(plain) => with_client(global, plain.target, &plain.on, lists::resources).await,
        Command::Templates(plain) => with_client(global, plain.target, &plain.on, lists::templates).await,
        Command::Prompts(plain) => with_client(global, plain.target, &plain.on, lists::prompts).await,
        Command::Ping(plain) => with_client(global, plain.target, &plain.on, lists::ping).await,
        Command::Call(args) => {
            let (target, words) = split(global, args.words, &args.on)?;
            let [tool, words @ ..] = words.as_slice() else {
                return Err(Failure::usage("which tool? `mcp call TARGET TOOL key=value …`"));
            };
            let call =
                calls::ToolCall { tool, words, args: args.args.as_deref(), task: args.task, detach: args.detach };
            with_target(global, &target, |s| calls::call(s, call)).await
        }
        Command::Read(words) => {
            let (target, words) = split(global, words.words, &words.on)?;
            let [uri] = words.as_slice() else {
                return Err(Failure::usage("`mcp read TARGET URI` takes one URI"));
            };
            with_target(global, &target, |s| calls::read(s, uri)).await
        }
        Command::Prompt(words) => {
            let (target, words) = split(global, words.words, &words.on)?;
            let [name, words @ ..] = words.as_slice() else {
                return Err(Failure::usage("which prompt? `mcp prompt TARGET NAME key=value …`"));
            };
            with_target(global, &target, |s| calls::prompt(s, name, words)).await
        }
        Command::Complete(args) => {
            let (target, words) = split(global, args.words, &args.on)?;
            let (argument, prefix) = match words.as_slice() {
                [argument] => (argument.as_str(), ""),
                [argument, prefix] => (argument.as_str(), prefix.as_str()),
                _ => return Err(Failure::usage("`mcp complete TARGET --prompt NAME ARGUMENT [PREFIX]`")),
            };
            let reference = match (&args.prompt, &args.template) {
                (Some(name), _) => calls::Reference::Prompt(name),
                (None, Some(uri)) => calls::Reference::Template(uri),
                (None, None) => return Err(Failure::usage("give --prompt NAME or --template URI")),
            };
            let complete = calls::Completion { reference, argument, prefix, context: &args.context };
            with_target(global, &target, |s| calls::complete(s, complete)).await
        }
        Command::Skills(words) => {
            let (target, words) = split(global, words.words, &words.on)?;
            with_target(global, &target, |s| live::skills(s, &words)).await
        }
        Command::Tasks(words) => {
            let (target, words) = split(global, words.words, &words.on)?;
            with_target(global, &target, |s| live::tasks(s, &words)).await
        }
        Command::Watch(args) => {
            let target = target_of(global, args.plain.target.as_deref(), &args.plain.on)?;
            with_target(global, &target, |s| live::watch(s, &args.resources, &args.level)).await
        }
        Command::Login(args) => {
            let target = target_of(global, args.plain.target.as_deref(), &args.plain.on)?;
            let login = Login { explicit: true, scopes: args.scopes, client_id: args.client_id };
            auth::login(global, &target, login).await
        }
        Command::Logout(plain) => auth::logout(&target_of(global, plain.target.as_deref(), &plain.on)?),
        Command::Servers(_) => lists::servers(global),
        Command::Codegen(args) => {
            let target = target_of(global, args.plain.target.as_deref(), &args.plain.on)?;
            let (out, check) = (args.out, args.check);
            with_target(global, &target, |s| codegen::codegen(s, &out, check)).await
        }
        Command::Completions(args) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(args.shell, &mut command, "mcp", &mut std::io::stdout());
            Ok(())
        }
    }
}

/// The target: the words after `--` if any (then all `words` are the command's), else the
/// first word.
fn split(global: &Global, mut words: Vec<String>, on: &On) -> Outcome<(Target, Vec<String>)> {
    if !on.command.is_empty() {
        return Ok((Target::command(on.command.clone()).map_err(|e| Failure::usage(e.to_string()))?, words));
    }
    if words.is_empty() {
        return Err(Failure::usage("which server? give a URL, a configured name, or `-- COMMAND ARGS…`"));
    }
    let first = words.remove(0);
    Ok((resolve(global, &first)?, words))
}

fn target_of(global: &Global, word: Option<&str>, on: &On) -> Outcome<Target> {
    let words = word.map(|w| vec![w.to_owned()]).unwrap_or_default();
    let (target, rest) = split(global, words, on)?;
    match rest.first() {
        Some(extra) => Err(Failure::usage(format!("unexpected {extra:?}: the server is given after `--`"))),
        None => Ok(target),
    }
}

fn resolve(global: &Global, word: &str) -> Outcome<Target> {
    if Target::is_url(word) {
        return Ok(Target::url(word));
    }
    target::resolve(word, global.config.as_deref()).map_err(|e| Failure::usage(e.to_string()))
}

/// What a command works with: the connected client and how to report.
#[derive(Clone)]
pub struct Session {
    pub client: Client,
    /// The target as given: for hints ("run `mcp login …`").
    pub target: String,
    /// `--json`.
    pub json: bool,
    /// `--raw`: the exchange is the output; nothing else goes to stdout.
    pub raw: bool,
}

impl Session {
    /// A client error as a failure, its hint naming this target.
    pub fn failed(&self, error: mcp_client::Error) -> Failure {
        Failure::client(error, &self.target)
    }

    /// Whether to print for people.
    pub fn human(&self) -> bool {
        !self.json && !self.raw
    }
}

async fn with_client<F, Fut>(global: &Global, word: Option<String>, on: &On, work: F) -> Outcome
where
    F: FnOnce(Session) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let target = target_of(global, word.as_deref(), on)?;
    with_target(global, &target, work).await
}

/// Connects, runs `work` until it ends or Ctrl-C, then closes the connection. On Ctrl-C the
/// work's future is dropped, which cancels its request at the server (a legacy server gets
/// `notifications/cancelled`, a task `tasks/cancel`) before the connection closes.
async fn with_target<F, Fut>(global: &Global, target: &Target, work: F) -> Outcome
where
    F: FnOnce(Session) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let Connection { client, .. } = tokio::select! {
        connected = connect::connect(global, target, Login::default()) => connected?,
        _ = tokio::signal::ctrl_c() => return Err(Failure::new(Kind::Interrupted, "interrupted while connecting")),
    };
    let session = Session { client: client.clone(), target: target.describe(), json: global.json, raw: global.raw };
    let outcome = tokio::select! {
        outcome = work(session) => outcome,
        _ = tokio::signal::ctrl_c() => Err(Failure::new(Kind::Interrupted, "interrupted: the request was cancelled")),
    };
    if outcome.as_ref().is_err_and(|f| f.kind == Kind::Interrupted) {
        // The dropped work spawned its cancellation (`tasks/cancel`) or queued it
        // (`notifications/cancelled`): let it reach the server, for a few seconds at most.
        let settled = async {
            tokio::task::yield_now().await;
            while client.records_in_flight() > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(3), settled).await;
    }
    client.close().await;
    outcome
}
