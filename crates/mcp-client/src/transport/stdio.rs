//! stdio: the server is a child process; one JSON-RPC message per line in each direction.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError, mpsc};
use tokio::task::JoinSet;

use super::request::{Outgoing, PendingGuard, delivered};
use crate::core::{Core, Reply};
use crate::error::Error;

/// A line longer than this is treated as a broken server.
const MAX_LINE: usize = 64 * 1024 * 1024;
/// What a queued message costs beyond its bytes (its allocation and queue node), so that a
/// flood of tiny messages is bounded too.
const MESSAGE_OVERHEAD: usize = 64;

/// What happens to the child's stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StderrMode {
    /// Passed through to this process's stderr.
    #[default]
    Inherit,
    /// Captured: logged with `tracing` (target `mcp_client::stderr`) and kept for
    /// [`Client::stderr_lines`](crate::Client::stderr_lines).
    Capture,
    /// Discarded.
    Discard,
}

/// How to start a stdio server.
#[derive(Debug, Clone)]
pub struct StdioCommand {
    program: OsString,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
    env_clear: bool,
    cwd: Option<PathBuf>,
    stderr: StderrMode,
    grace: Duration,
    stderr_line_bytes: usize,
    stderr_capture_bytes: usize,
    restart_on_exit: bool,
}

impl StdioCommand {
    /// Runs `program` (looked up in `PATH`) with no arguments, stderr inherited.
    pub fn new(program: impl AsRef<OsStr>) -> Self {
        StdioCommand {
            program: program.as_ref().to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            env_clear: false,
            cwd: None,
            stderr: StderrMode::Inherit,
            grace: Duration::from_secs(2),
            stderr_line_bytes: 16 * 1024,
            stderr_capture_bytes: 256 * 1024,
            restart_on_exit: true,
        }
    }

    /// Adds an argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    /// Adds arguments.
    pub fn args<I: IntoIterator<Item = S>, S: AsRef<OsStr>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Sets an environment variable of the child.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.env.push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    /// Starts the child with no environment but the variables set with [`env`](Self::env)
    /// (default: it inherits this process's, those set with `env` added). For a server that
    /// must not see this process's secrets: pass it what it needs, `PATH` included if it looks
    /// programs up.
    pub fn env_clear(mut self) -> Self {
        self.env_clear = true;
        self
    }

    /// The child's working directory (default: this process's).
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// What becomes of the child's stderr (default [`StderrMode::Inherit`]).
    pub fn stderr(mut self, mode: StderrMode) -> Self {
        self.stderr = mode;
        self
    }

    /// With [`StderrMode::Capture`]: the longest stderr line kept (default 16 KiB); the rest of
    /// a longer line is dropped and the kept part ends with a note saying how much.
    pub fn stderr_line_bytes(mut self, bytes: usize) -> Self {
        self.stderr_line_bytes = bytes;
        self
    }

    /// With [`StderrMode::Capture`]: bytes of the most recent stderr lines kept for
    /// [`Client::stderr_lines`](crate::Client::stderr_lines) (default 256 KiB).
    pub fn stderr_capture_bytes(mut self, bytes: usize) -> Self {
        self.stderr_capture_bytes = bytes;
        self
    }

    /// Whether a request that finds the server exited starts it again and is sent once more
    /// to the new process (default `true`). Turn it off where something else supervises the
    /// process, or where a request must not be sent twice: the request then fails with
    /// [`Error::Closed`](crate::Error::Closed), as every later one does.
    pub fn restart_on_exit(mut self, restart: bool) -> Self {
        self.restart_on_exit = restart;
        self
    }

    /// How long shutdown waits after closing stdin (and again after SIGTERM) before it
    /// escalates. Default 2 s.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }
}

struct Running {
    writer: Outbox,
    child: Arc<tokio::sync::Mutex<Child>>,
    alive: Arc<AtomicBool>,
    /// Becomes `true` at the process's first line on stdout or stderr: a sign of life.
    spoke: tokio::sync::watch::Receiver<bool>,
}

/// The lines on their way to the child's stdin, within `ClientBuilder::max_outbox_bytes`: each
/// holds permits for its bytes until it is written.
#[derive(Clone)]
struct Outbox {
    lines: mpsc::UnboundedSender<(String, OwnedSemaphorePermit)>,
    room: Arc<Semaphore>,
    capacity: usize,
}

/// An [`Outbox`] that does not keep stdin open.
#[derive(Clone)]
struct WeakOutbox {
    lines: mpsc::WeakUnboundedSender<(String, OwnedSemaphorePermit)>,
    room: Arc<Semaphore>,
    capacity: usize,
}

impl Outbox {
    fn new(capacity: usize) -> (Self, mpsc::UnboundedReceiver<(String, OwnedSemaphorePermit)>) {
        let capacity = capacity.clamp(1, u32::MAX as usize);
        let (lines, queue) = mpsc::unbounded_channel();
        (Outbox { lines, room: Arc::new(Semaphore::new(capacity)), capacity }, queue)
    }

    /// Permits for `line`; a line larger than the whole outbox waits for it to be empty.
    fn cost(&self, line: &str) -> u32 {
        (line.len() + MESSAGE_OVERHEAD).min(self.capacity) as u32
    }

    /// Queues `line` if there is room now.
    fn try_send(&self, line: String) -> Result<(), Error> {
        let permit = match Arc::clone(&self.room).try_acquire_many_owned(self.cost(&line)) {
            Ok(permit) => permit,
            Err(TryAcquireError::NoPermits) => {
                return Err(Error::limit(
                    "ClientBuilder::max_outbox_bytes",
                    format!("the stdio server is not reading its stdin: {} bytes are queued for it", self.capacity),
                ));
            }
            Err(TryAcquireError::Closed) => return Err(Error::Closed),
        };
        self.lines.send((line, permit)).map_err(|_| Error::Closed)
    }

    /// Queues `line` once there is room.
    async fn send(&self, line: String) -> Result<(), Error> {
        let permit = Arc::clone(&self.room).acquire_many_owned(self.cost(&line)).await.map_err(|_| Error::Closed)?;
        self.lines.send((line, permit)).map_err(|_| Error::Closed)
    }

    fn downgrade(&self) -> WeakOutbox {
        WeakOutbox { lines: self.lines.downgrade(), room: Arc::clone(&self.room), capacity: self.capacity }
    }
}

impl WeakOutbox {
    fn upgrade(&self) -> Option<Outbox> {
        Some(Outbox { lines: self.lines.upgrade()?, room: Arc::clone(&self.room), capacity: self.capacity })
    }
}

pub(crate) struct StdioTransport {
    command: StdioCommand,
    running: Mutex<Option<Running>>,
    stderr_lines: Arc<Mutex<StderrLines>>,
}

/// The most recent stderr lines, and what they cost (their bytes plus [`MESSAGE_OVERHEAD`]
/// each, so that a flood of empty lines is bounded too).
#[derive(Default)]
struct StderrLines {
    lines: VecDeque<String>,
    cost: usize,
}

impl StdioTransport {
    pub async fn spawn(command: StdioCommand, core: &Arc<Core>) -> Result<Self, Error> {
        let transport = StdioTransport { command, running: Mutex::new(None), stderr_lines: Arc::default() };
        let running = transport.start(core)?;
        *transport.running.lock().unwrap() = Some(running);
        Ok(transport)
    }

    fn start(&self, core: &Arc<Core>) -> Result<Running, Error> {
        let c = &self.command;
        let mut cmd = Command::new(&c.program);
        if c.env_clear {
            cmd.env_clear();
        }
        cmd.args(&c.args)
            .envs(c.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(match c.stderr {
                StderrMode::Inherit => Stdio::inherit(),
                StderrMode::Capture => Stdio::piped(),
                StderrMode::Discard => Stdio::null(),
            })
            .kill_on_drop(true);
        if let Some(dir) = &c.cwd {
            cmd.current_dir(dir);
        }
        let mut child = cmd.spawn().map_err(|e| Error::transport_with(format!("cannot start {:?}", c.program), e))?;
        let (spoke_tx, spoke) = tokio::sync::watch::channel(false);
        let spoke_tx = Arc::new(spoke_tx);
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::transport("the child process has no stdin/stdout pipes"));
        };
        if let Some(stderr) = child.stderr.take() {
            let capture = StderrCapture {
                lines: self.stderr_lines.clone(),
                line_bytes: c.stderr_line_bytes,
                kept_bytes: c.stderr_capture_bytes,
                spoke: spoke_tx.clone(),
            };
            tokio::spawn(capture.run(stderr));
        }

        let (writer, mut outbox) = Outbox::new(core.limits.max_outbox_bytes);
        tokio::spawn(async move {
            while let Some((mut line, room)) = outbox.recv().await {
                crate::telemetry::wire("send", &line);
                line.push('\n');
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
                drop(room);
            }
            // Dropping stdin here closes the child's input: the polite shutdown signal.
        });

        let alive = Arc::new(AtomicBool::new(true));
        let (core, weak_writer, reader_alive) = (core.clone(), writer.downgrade(), alive.clone());
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            // The answers to server requests; dropped (so stopped) when the server is gone.
            let mut answering = JoinSet::new();
            loop {
                match read_line_capped(&mut reader, &mut buf).await {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        tracing::error!(error = %e, "stopped reading the server's stdout");
                        break;
                    }
                }
                spoke_tx.send_replace(true);
                let line = String::from_utf8_lossy(&buf);
                if line.trim().is_empty() {
                    continue;
                }
                if let Some(request) = core.dispatch(&line, None) {
                    // While `max_server_requests` are being answered, stdout is not read.
                    let slot = core.server_request_slot().await;
                    let writer = weak_writer.clone();
                    answering.spawn(core.clone().answer_and_deliver(request, slot, |answer| async move {
                        if let Some(writer) = writer.upgrade() {
                            let _ = writer.send(answer.to_string()).await;
                        }
                    }));
                    while answering.try_join_next().is_some() {}
                }
            }
            // Dead before anyone is told, so that a waiter seeing `Closed` also sees it dead.
            reader_alive.store(false, Ordering::SeqCst);
            core.close_all();
        });
        Ok(Running { writer, child: Arc::new(tokio::sync::Mutex::new(child)), alive, spoke })
    }

    fn writer(&self) -> Result<Outbox, Error> {
        match &*self.running.lock().unwrap() {
            Some(running) if running.alive.load(Ordering::SeqCst) => Ok(running.writer.clone()),
            _ => Err(Error::Closed),
        }
    }

    /// Resolves at the server's first line on stdout or stderr (at once if it has written one;
    /// never if it exits silently).
    pub fn first_output(&self) -> impl std::future::Future<Output = ()> + use<> {
        let spoke = self.running.lock().unwrap().as_ref().map(|r| r.spoke.clone());
        async move {
            match spoke {
                Some(mut spoke) => {
                    if spoke.wait_for(|spoke| *spoke).await.is_err() {
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending().await,
            }
        }
    }

    pub fn is_alive(&self) -> bool {
        self.writer().is_ok()
    }

    /// Queues a notification; fails naming the limit when the outbox is full.
    pub fn send(&self, message: &Value) -> Result<(), Error> {
        self.writer()?.try_send(message.to_string())
    }

    pub async fn request(&self, core: &Arc<Core>, out: Outgoing) -> Result<Reply, Error> {
        let writer = self.writer()?;
        let rx = core.expect(out.id.clone(), out.wants);
        if !self.is_alive() {
            // Died between the check and the registration: nobody would ever answer.
            core.forget(&out.id);
            return Err(Error::Closed);
        }
        let on_cancel: Option<Box<dyn FnOnce() + Send>> = out.cancel_on_drop.then(|| {
            let (writer, id, notice) = (writer.clone(), out.id.clone(), out.cancel_notice);
            Box::new(move || {
                let (message, span) = notice.message(&id);
                if let Err(error) = writer.try_send(message.to_string()) {
                    crate::telemetry::notification_failed(&span, &error);
                    tracing::debug!(%error, "the cancellation could not be queued");
                }
            }) as Box<dyn FnOnce() + Send>
        });
        let mut guard = PendingGuard::new(core, out.id, on_cancel);
        writer.send(out.message).await?;
        let reply = delivered(rx.await);
        guard.disarm();
        reply
    }

    /// Whether a request that finds the process exited may start it again
    /// ([`StdioCommand::restart_on_exit`]).
    pub fn restarts_on_exit(&self) -> bool {
        self.command.restart_on_exit
    }

    /// Starts a fresh process (the old one, if any, is shut down first).
    pub async fn restart(&self, core: &Arc<Core>) -> Result<(), Error> {
        self.shutdown().await;
        let running = self.start(core)?;
        *self.running.lock().unwrap() = Some(running);
        Ok(())
    }

    /// Closes the child's stdin, waits the grace period, then SIGTERM, then SIGKILL.
    pub async fn shutdown(&self) {
        let Some(Running { writer, child, .. }) = self.running.lock().unwrap().take() else { return };
        drop(writer);
        let grace = self.command.grace;
        let mut child = child.lock().await;
        if tokio::time::timeout(grace, child.wait()).await.is_ok() {
            return;
        }
        #[cfg(unix)]
        if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
            // SAFETY: kill(2) with a pid we own and a valid signal number has no memory effects.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            if tokio::time::timeout(grace, child.wait()).await.is_ok() {
                return;
            }
        }
        let _ = child.kill().await;
    }

    pub fn stderr_lines(&self) -> Vec<String> {
        self.stderr_lines.lock().unwrap().lines.iter().cloned().collect()
    }
}

/// Reads a child's stderr into bounded memory: each line cut at `line_bytes` (the rest is
/// read and dropped), and only the most recent `kept_bytes` of lines kept.
struct StderrCapture {
    lines: Arc<Mutex<StderrLines>>,
    line_bytes: usize,
    kept_bytes: usize,
    /// Told of the first line: a sign of life for the startup probe.
    spoke: Arc<tokio::sync::watch::Sender<bool>>,
}

impl StderrCapture {
    async fn run(self, stderr: impl AsyncRead + Unpin) {
        let mut reader = BufReader::new(stderr);
        let mut line = Vec::new();
        let mut dropped = 0usize;
        let mut chunk = vec![0u8; 8192];
        loop {
            let read = match reader.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            for piece in chunk[..read].split_inclusive(|&b| b == b'\n') {
                let (text, ends) = match piece.strip_suffix(b"\n") {
                    Some(text) => (text, true),
                    None => (piece, false),
                };
                let room = self.line_bytes.saturating_sub(line.len());
                line.extend_from_slice(&text[..text.len().min(room)]);
                dropped += text.len().saturating_sub(room);
                if ends {
                    self.keep(std::mem::take(&mut line), std::mem::take(&mut dropped));
                }
            }
        }
        if !line.is_empty() || dropped > 0 {
            self.keep(line, dropped);
        }
    }

    fn keep(&self, line: Vec<u8>, dropped: usize) {
        self.spoke.send_replace(true);
        let mut line = String::from_utf8_lossy(&line).into_owned();
        if dropped > 0 {
            line.push_str(&format!(
                " … [{dropped} more bytes of this line dropped: StdioCommand::stderr_line_bytes is {}]",
                self.line_bytes
            ));
        }
        tracing::debug!(target: "mcp_client::stderr", "{line}");
        let mut kept = self.lines.lock().unwrap();
        kept.cost += line.len() + MESSAGE_OVERHEAD;
        kept.lines.push_back(line);
        while kept.cost > self.kept_bytes
            && let Some(oldest) = kept.lines.pop_front()
        {
            kept.cost -= oldest.len() + MESSAGE_OVERHEAD;
        }
    }
}

/// Reads one line (without its `\n`) into `buf`; `false` at end of input.
async fn read_line_capped<R: AsyncBufRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>) -> std::io::Result<bool> {
    buf.clear();
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(!buf.is_empty());
        }
        if let Some(i) = available.iter().position(|b| *b == b'\n') {
            buf.extend_from_slice(&available[..i]);
            reader.consume(i + 1);
            return Ok(true);
        }
        let n = available.len();
        buf.extend_from_slice(available);
        reader.consume(n);
        if buf.len() > MAX_LINE {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a line from the server is too long"));
        }
    }
}
