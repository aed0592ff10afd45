//! Why `mcp` stopped, and the exit code that says so (documented in `mcp --help`).

use std::fmt;
use std::process::ExitCode;

use mcp_client::Error;

/// The class of a failure: each has its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The tool answered with `isError: true`.
    ToolError,
    /// The command line or its arguments are wrong; nothing was sent.
    Usage,
    /// The server could not be started or reached, or it went away.
    Connection,
    /// Authorization is missing, refused or failed.
    Authorization,
    /// The server answered with an error or broke the protocol.
    Protocol,
    /// Ctrl-C.
    Interrupted,
}

impl Kind {
    pub fn exit_code(self) -> ExitCode {
        ExitCode::from(match self {
            Kind::ToolError => 1,
            Kind::Usage => 2,
            Kind::Connection => 3,
            Kind::Authorization => 4,
            Kind::Protocol => 5,
            Kind::Interrupted => 130,
        })
    }
}

/// A failure with what to do about it.
#[derive(Debug)]
pub struct Failure {
    pub kind: Kind,
    pub message: String,
    /// What the user can do, if anything specific.
    pub hint: Option<String>,
}

impl Failure {
    pub fn new(kind: Kind, message: impl Into<String>) -> Self {
        Failure { kind, message: message.into(), hint: None }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Failure::new(Kind::Usage, message)
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// A client error, classified, with a hint where one helps; `target` names the server.
    pub fn client(error: Error, target: &str) -> Self {
        let message = error.to_string();
        match &error {
            Error::Auth(_) => Failure::new(Kind::Authorization, message)
                .hint(format!("log in with `mcp login {target}`, or pass a token with -H 'Authorization: Bearer …'")),
            Error::HttpStatus { status: 401 | 403, .. } => {
                Failure::new(Kind::Authorization, message).hint(format!("log in with `mcp login {target}`"))
            }
            Error::Rpc { http_status: Some(401 | 403), .. } => Failure::new(Kind::Authorization, message),
            Error::Transport { .. } | Error::Closed => Failure::new(Kind::Connection, message)
                .hint("check that the server runs and the URL or command is right"),
            Error::HttpStatus { status: 404, .. } => {
                Failure::new(Kind::Connection, message).hint("check the URL: no MCP endpoint answers there")
            }
            Error::HttpStatus { .. } => Failure::new(Kind::Connection, message),
            Error::Timeout { .. } => {
                Failure::new(Kind::Connection, message).hint("raise --timeout if the server is slow")
            }
            Error::VersionMismatch { .. } => {
                Failure::new(Kind::Protocol, message).hint("try --era legacy or --era modern")
            }
            Error::InvalidArguments { .. } => Failure::new(Kind::Usage, message),
            _ => Failure::new(Kind::Protocol, message),
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

pub type Outcome<T = ()> = Result<T, Failure>;
