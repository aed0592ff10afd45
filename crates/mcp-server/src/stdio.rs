//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.

use std::io::BufRead;

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncWrite, AsyncWriteExt as _, BufWriter};
use tokio::sync::mpsc;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::connection::{Inbox, Incoming, WriteNow};
use crate::{connection::Connection, principal::Principal, server::Server};

/// The default of [`StdioConfig::max_line_bytes`].
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Answers are gathered up to this many bytes before they are written (and flushed once nothing
/// more is ready), so that a burst of answers costs a few writes, not one write and flush each.
const WRITE_BATCH: usize = 64 * 1024;

/// Settings of the stdio transport. The limits on requests in flight and on the time they get
/// after stdin closes are the server's [`Options`](crate::Options).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StdioConfig {
    /// The longest line accepted (default [`MAX_LINE`], 16 MiB); a longer one is answered with
    /// `-32600` naming this limit and skipped without being buffered.
    pub max_line_bytes: usize,
}

impl Default for StdioConfig {
    fn default() -> Self {
        StdioConfig { max_line_bytes: MAX_LINE }
    }
}

/// Serves the process's stdin and stdout until stdin closes.
pub async fn serve_stdio(server: Server) -> std::io::Result<()> {
    serve_stdio_with(server, StdioConfig::default()).await
}

/// [`serve_stdio`] with explicit settings.
///
/// When stdin is a pipe or a socket (what a client that spawns the server gives it), it is read
/// on the runtime's reactor, so a line reaches the server without waking another thread; this
/// sets `O_NONBLOCK` on stdin's open file description while it serves, and clears it when
/// serving ends, so that a process that reads the same pipe next (the shell that started this
/// one, say) does not get `EAGAIN`. Otherwise (a terminal, a file, or a
/// descriptor that stdout or stderr shares) stdin is read by a thread with blocking reads:
/// tokio's own handle would run every read as a separate blocking-pool task. That thread stops
/// reading while the server is behind (it waits for room in the server's inbox), and is left to
/// end with the process if the server stops first. stdout is written with blocking writes (it is
/// never made non-blocking, so a stray `println!` elsewhere in the process is never refused with
/// `EAGAIN`): on the runtime when stdout is a pipe with room for the whole batch (on Linux one
/// `pwritev2` with `RWF_NOWAIT`, elsewhere a `poll` and a `write`: no thread to wake for each
/// answer), else on the blocking pool.
pub async fn serve_stdio_with(server: Server, config: StdioConfig) -> std::io::Result<()> {
    let (outbox, from_server) = mpsc::channel::<String>(64);
    let max_line = config.max_line_bytes;
    let writing = Arc::new(AtomicBool::new(false));
    let serving = match reactor_stdin()? {
        // Read by the serving task itself: no task and no channel between a line and the server,
        // and a reply complete at once is written by it too when it can be (`StdoutNow`).
        Some(stdin) => {
            let lines = Lines::new(stdin, max_line);
            let now = StdoutNow {
                pipe: stdout_is_pipe(),
                queue: outbox.clone(),
                writing: Arc::clone(&writing),
                batch: Vec::new(),
            };
            tokio::spawn(async move { server.serve_inbox(lines, outbox, now, Principal::anonymous()).await })
        }
        None => {
            let (to_server, inbox) = mpsc::channel::<String>(64);
            let errors = outbox.clone();
            std::thread::Builder::new()
                .name("mcp-stdin".into())
                .spawn(move || read_lines_blocking(std::io::stdin().lock(), &to_server, &errors, max_line))?;
            tokio::spawn(async move { server.serve(Connection { sender: outbox, receiver: inbox }).await })
        }
    };
    // A task of the runtime, like the server: an answer wakes it on the worker that produced it,
    // not the thread awaiting this function.
    let writer = tokio::spawn(write_lines(from_server, writing));
    let written = writer.await.map_err(std::io::Error::other).and_then(|written| written);
    // After a failed write (stdout closed) nothing more can be answered: the server is stopped.
    if written.is_err() {
        serving.abort();
    }
    // Until the serving task is dropped, stdin (read on the reactor) is still non-blocking.
    let _ = serving.await;
    written
}

/// stdin as a non-blocking reader on the reactor, if it is a pipe or a socket that neither stdout
/// nor stderr shares (their blocking writes would fail with `EAGAIN` once it is non-blocking).
#[cfg(unix)]
fn reactor_stdin() -> std::io::Result<Option<tokio::io::BufReader<ReactorStdin>>> {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};

    let stdin = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned()?);
    let metadata = stdin.metadata()?;
    let same_file = |fd: std::os::fd::BorrowedFd<'_>| {
        let other = fd.try_clone_to_owned().map(std::fs::File::from).and_then(|file| file.metadata());
        other.is_ok_and(|other| (other.dev(), other.ino()) == (metadata.dev(), metadata.ino()))
    };
    if same_file(std::io::stdout().as_fd()) || same_file(std::io::stderr().as_fd()) {
        return Ok(None);
    }
    let reader = if metadata.file_type().is_fifo() {
        NonBlocking::Pipe(tokio::net::unix::pipe::Receiver::from_file(stdin)?)
    } else if metadata.file_type().is_socket() {
        let socket = std::os::unix::net::UnixStream::from(std::os::fd::OwnedFd::from(stdin));
        socket.set_nonblocking(true)?;
        NonBlocking::Socket(tokio::net::UnixStream::from_std(socket)?)
    } else {
        return Ok(None);
    };
    Ok(Some(tokio::io::BufReader::new(ReactorStdin(Some(reader)))))
}

#[cfg(not(unix))]
fn reactor_stdin() -> std::io::Result<Option<tokio::io::BufReader<tokio::io::Empty>>> {
    Ok(None)
}

/// stdin registered with the reactor; blocking again once dropped.
#[cfg(unix)]
struct ReactorStdin(Option<NonBlocking>);

#[cfg(unix)]
enum NonBlocking {
    Pipe(tokio::net::unix::pipe::Receiver),
    Socket(tokio::net::UnixStream),
}

#[cfg(unix)]
impl tokio::io::AsyncRead for ReactorStdin {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::pin::Pin;
        match self.get_mut().0.as_mut().expect("taken only when dropped") {
            NonBlocking::Pipe(pipe) => Pin::new(pipe).poll_read(cx, buf),
            NonBlocking::Socket(socket) => Pin::new(socket).poll_read(cx, buf),
        }
    }
}

#[cfg(unix)]
impl Drop for ReactorStdin {
    fn drop(&mut self) {
        // `O_NONBLOCK` belongs to the open file description, which whoever gave this process its
        // stdin may share; the descriptor itself (a duplicate) closes here.
        let restored = match self.0.take() {
            Some(NonBlocking::Pipe(pipe)) => pipe.into_blocking_fd().map(drop),
            Some(NonBlocking::Socket(socket)) => socket.into_std().and_then(|socket| socket.set_nonblocking(false)),
            None => Ok(()),
        };
        if let Err(error) = restored {
            tracing::debug!(%error, "stdin could not be made blocking again");
        }
    }
}

/// Serves newline-delimited JSON-RPC over any byte streams (a socket, a pipe, a child's stdio).
pub async fn serve_lines<R, W>(server: Server, reader: R, writer: W) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_lines_with(server, reader, writer, StdioConfig::default()).await
}

/// [`serve_lines`] with explicit settings.
pub async fn serve_lines_with<R, W>(server: Server, reader: R, writer: W, config: StdioConfig) -> std::io::Result<()>
where
    R: AsyncBufRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outbox, mut from_server) = mpsc::channel::<String>(64);
    let serving = tokio::spawn(async move {
        let mut lines = Lines::new(reader, config.max_line_bytes);
        server.serve_inbox(&mut lines, outbox, (), Principal::anonymous()).await;
        lines.error.map_or(Ok(()), Err)
    });
    let mut writer = BufWriter::with_capacity(WRITE_BATCH, writer);
    while let Some(message) = from_server.recv().await {
        write_line(&mut writer, &message).await?;
        // Whatever else is ready goes out with it; one flush once the queue is empty.
        while let Ok(message) = from_server.try_recv() {
            write_line(&mut writer, &message).await?;
        }
        writer.flush().await?;
    }
    serving.await.unwrap_or(Ok(()))
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &mut BufWriter<W>, message: &str) -> std::io::Result<()> {
    writer.write_all(message.as_bytes()).await?;
    writer.write_all(b"\n").await
}

/// What a whole line (its newline included) becomes: a message for the server, the transport's
/// own answer when it is not UTF-8 (refused as HTTP refuses it, never repaired), or nothing when
/// it is blank.
fn line_incoming(bytes: &[u8]) -> Option<Incoming> {
    match std::str::from_utf8(bytes) {
        Ok(text) => match text.trim() {
            "" => None,
            text => Some(Incoming::Message(text.to_owned())),
        },
        Err(error) => Some(Incoming::Answer(invalid_utf8_error(&error))),
    }
}

/// Splits bytes into lines as they arrive; both readers (the reactor's and the blocking thread's)
/// follow its rules. A line over `max_line` bytes is answered with -32600 as soon as it passes the
/// limit and skipped to its newline without being buffered, so one huge line can neither exhaust
/// memory nor end the session.
struct LineSplitter {
    /// The line read so far, at most `max_line` bytes and its newline.
    line: Vec<u8>,
    max_line: usize,
    /// Inside a line over the limit, already answered.
    skipping: bool,
}

impl LineSplitter {
    fn new(max_line: usize) -> Self {
        LineSplitter { line: Vec::new(), max_line, skipping: false }
    }

    /// Takes `available` up to and including its first newline: how many bytes it took, and what
    /// the line that ended there (or passed the limit) becomes.
    fn take(&mut self, available: &[u8]) -> (usize, Option<Incoming>) {
        let (used, complete) = match memchr::memchr(b'\n', available) {
            Some(newline) => (newline + 1, true),
            None => (available.len(), false),
        };
        if self.skipping {
            self.skipping = !complete;
            return (used, None);
        }
        if self.line.len() + used - usize::from(complete) > self.max_line {
            self.line.clear();
            self.skipping = !complete;
            return (used, Some(Incoming::Answer(oversized_line_error(self.max_line))));
        }
        self.line.extend_from_slice(&available[..used]);
        if !complete {
            return (used, None);
        }
        let line = line_incoming(&self.line);
        self.line.clear();
        (used, line)
    }

    /// At the end of input: a last line without its newline is still a line.
    fn finish(&mut self) -> Option<Incoming> {
        self.skipping = false;
        let last = std::mem::take(&mut self.line);
        if last.is_empty() { None } else { line_incoming(&last) }
    }
}

/// Newline-delimited messages, read by the serving loop itself (by [`LineSplitter`]'s rules).
struct Lines<R> {
    reader: R,
    splitter: LineSplitter,
    /// Why reading stopped, if it failed.
    error: Option<std::io::Error>,
}

impl<R> Lines<R> {
    fn new(reader: R, max_line: usize) -> Self {
        Lines { reader, splitter: LineSplitter::new(max_line), error: None }
    }
}

impl<R: AsyncBufRead + Unpin + Send> Inbox for Lines<R> {
    /// Cancel-safe: only `fill_buf` waits, and what was read stays in the reader's buffer or in
    /// the splitter.
    async fn next(&mut self) -> Option<Incoming> {
        loop {
            let available = match self.reader.fill_buf().await {
                Ok(available) => available,
                Err(error) => {
                    self.error = Some(error);
                    return None;
                }
            };
            if available.is_empty() {
                return self.splitter.finish();
            }
            let (used, line) = self.splitter.take(available);
            self.reader.consume(used);
            if line.is_some() {
                return line;
            }
        }
    }
}

/// Forwards each line to the server, from a thread of its own with blocking reads (by
/// [`LineSplitter`]'s rules, as [`Lines`] reads them).
fn read_lines_blocking<R: BufRead>(
    mut reader: R,
    to_server: &mpsc::Sender<String>,
    to_client: &mpsc::Sender<String>,
    max_line: usize,
) -> std::io::Result<()> {
    let mut splitter = LineSplitter::new(max_line);
    loop {
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(error),
        };
        let ended = available.is_empty();
        let (used, line) = if ended { (0, splitter.finish()) } else { splitter.take(available) };
        reader.consume(used);
        let delivered = match line {
            Some(Incoming::Message(message)) => to_server.blocking_send(message),
            Some(Incoming::Answer(answer)) => to_client.blocking_send(answer),
            None => Ok(()),
        };
        if ended || delivered.is_err() {
            return Ok(());
        }
    }
}

/// The serving task's own write of a reply complete at once to a stdout pipe, with no task or
/// channel on its way: only when nothing is queued for the writer task or held by it (so that it
/// passes nothing already on its way), and when the pipe takes the whole batch at once, as the
/// writer task's own writes on the runtime. Anything else goes through the writer task, which
/// also meets and reports a failed write.
struct StdoutNow {
    pipe: bool,
    /// A sender of the writer task's channel: to see that nothing is queued there.
    queue: mpsc::Sender<String>,
    /// The writer task holds messages it has not written yet.
    writing: Arc<AtomicBool>,
    batch: Vec<u8>,
}

impl WriteNow for StdoutNow {
    fn write_now(&mut self, messages: &[String]) -> bool {
        let len: usize = messages.iter().map(|message| message.len() + 1).sum();
        if !self.pipe
            || messages.is_empty()
            || len > PIPE_BUF
            || self.writing.load(Ordering::Acquire)
            || self.queue.capacity() < self.queue.max_capacity()
        {
            return false;
        }
        self.batch.clear();
        for message in messages {
            self.batch.extend_from_slice(message.as_bytes());
            self.batch.push(b'\n');
        }
        matches!(write_stdout_now(&self.batch), Ok(true))
    }
}

/// Writes each answer as a line to stdout: what is ready is written together, with one write
/// call and one flush. A batch that a pipe takes at once (at most `PIPE_BUF` bytes while it has a
/// free buffer: such a write neither blocks nor splits) is written right here; any other goes to
/// the blocking pool, which this awaits, so that lines keep their order. `writing` is set while
/// this holds messages it has not written.
async fn write_lines(mut from_server: mpsc::Receiver<String>, writing: Arc<AtomicBool>) -> std::io::Result<()> {
    let pipe = stdout_is_pipe();
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    while let Some(message) = from_server.recv().await {
        writing.store(true, Ordering::Release);
        batch.extend_from_slice(message.as_bytes());
        batch.push(b'\n');
        while batch.len() < WRITE_BATCH
            && let Ok(message) = from_server.try_recv()
        {
            batch.extend_from_slice(message.as_bytes());
            batch.push(b'\n');
        }
        if !(pipe && batch.len() <= PIPE_BUF && write_stdout_now(&batch)?) {
            let written = tokio::task::spawn_blocking(move || write_stdout(&batch).map(|()| batch));
            batch = written.await.map_err(std::io::Error::other)??;
        }
        // One huge answer should not keep its buffer for the rest of the session.
        if batch.capacity() > 4 * WRITE_BATCH {
            batch = Vec::with_capacity(WRITE_BATCH);
        }
        batch.clear();
        writing.store(false, Ordering::Release);
    }
    Ok(())
}

/// The bytes a pipe write is atomic up to (POSIX's minimum, Linux's value).
const PIPE_BUF: usize = 4096;

/// One batch, with the stdout lock taken for it alone (a stray print elsewhere in the process
/// waits at most one batch).
fn write_stdout(batch: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(batch)?;
    out.flush()
}

#[cfg(unix)]
fn stdout_is_pipe() -> bool {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::FileTypeExt as _;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned().map(std::fs::File::from);
    stdout.and_then(|file| file.metadata()).is_ok_and(|metadata| metadata.file_type().is_fifo())
}

#[cfg(not(unix))]
fn stdout_is_pipe() -> bool {
    false
}

/// Writes `batch` (at most `PIPE_BUF` bytes) to the stdout pipe if that cannot block: `Ok(true)`
/// when written, `Ok(false)` when the pipe has no free buffer now (nothing written). Linux is asked
/// in the write itself (`RWF_NOWAIT`, which a pipe honours since 5.x): one system call an answer.
/// Where the kernel refuses the flag (remembered), and on other systems, a `poll` asks first.
#[cfg(unix)]
fn write_stdout_now(batch: &[u8]) -> std::io::Result<bool> {
    use std::io::Write as _;
    debug_assert!(batch.len() <= PIPE_BUF);
    // Held across the write: whatever a stray `print!` left in std's buffer goes first.
    let mut out = std::io::stdout().lock();
    out.flush()?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsFd as _;
        static REFUSED: AtomicBool = AtomicBool::new(false);
        if !REFUSED.load(Ordering::Relaxed) {
            match write_nowait(out.as_fd(), batch) {
                // A pipe takes such a batch whole; anything else is finished as any write is.
                Ok(written) => return out.write_all(batch.get(written..).unwrap_or_default()).map(|()| true),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
                Err(error) if matches!(error.raw_os_error(), Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS)) => {
                    REFUSED.store(true, Ordering::Relaxed);
                }
                Err(error) => return Err(error),
            }
        }
    }
    if !stdout_has_room() {
        return Ok(false);
    }
    out.write_all(batch)?;
    out.flush()?;
    Ok(true)
}

#[cfg(not(unix))]
fn write_stdout_now(_: &[u8]) -> std::io::Result<bool> {
    Ok(false)
}

/// One `pwritev2` of `batch` to `fd` with `RWF_NOWAIT`: `WouldBlock` where it would wait. A write
/// of at most `PIPE_BUF` bytes to a pipe is whole or nothing.
#[cfg(target_os = "linux")]
fn write_nowait(fd: std::os::fd::BorrowedFd<'_>, batch: &[u8]) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd as _;
    let iov = libc::iovec { iov_base: batch.as_ptr().cast_mut().cast(), iov_len: batch.len() };
    loop {
        // SAFETY: one iovec over `batch`, which outlives the call; the kernel only reads it.
        let written = unsafe { libc::pwritev2(fd.as_raw_fd(), &iov, 1, -1, libc::RWF_NOWAIT) };
        match usize::try_from(written) {
            Ok(written) => return Ok(written),
            Err(_) => {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
}

/// Whether the stdout pipe has a free buffer now (`poll` with no wait).
#[cfg(unix)]
fn stdout_has_room() -> bool {
    let mut stdout = libc::pollfd { fd: libc::STDOUT_FILENO, events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd, a count of one, and no wait.
    let ready = unsafe { libc::poll(&mut stdout, 1, 0) };
    ready == 1 && stdout.revents & libc::POLLOUT != 0 && stdout.revents & (libc::POLLERR | libc::POLLHUP) == 0
}

/// The error for a line too long to read: its `id` is unknown, so the response has none.
fn oversized_line_error(max_line: usize) -> String {
    let error = mcp_types::ErrorObject::invalid_request(format!(
        "Invalid Request: the line exceeds the {max_line}-byte limit of this stdio server \
         (StdioConfig::max_line_bytes) and was skipped"
    ));
    serde_json::json!({"jsonrpc": "2.0", "error": error}).to_string()
}

/// The error for a line that is not UTF-8: its `id` cannot be trusted, so the response has none.
fn invalid_utf8_error(error: &std::str::Utf8Error) -> String {
    let error = mcp_types::ErrorObject::parse_error(format!(
        "Parse error: the line is not valid UTF-8 (at byte {})",
        error.valid_up_to()
    ));
    serde_json::json!({"jsonrpc": "2.0", "error": error}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt as _;

    /// A batch to a pipe with no room is refused whole, without waiting: the pipe then holds
    /// every byte of the batches it took and none of the refused one.
    #[test]
    #[cfg(target_os = "linux")]
    fn a_write_that_would_wait_is_refused_whole() {
        use std::os::fd::AsFd as _;
        let (mut reader, writer) = std::io::pipe().unwrap();
        let batch: Vec<u8> = (0..PIPE_BUF - 7).map(|at| b'a' + (at % 26) as u8).collect();
        let mut taken = 0;
        let refused = loop {
            match write_nowait(writer.as_fd(), &batch) {
                Ok(written) => {
                    assert_eq!(written, batch.len(), "a batch within PIPE_BUF is written whole");
                    taken += 1;
                }
                Err(error) => break error,
            }
            assert!(taken < 1 << 12, "a pipe has room for fewer batches than this");
        };
        assert_eq!(refused.kind(), std::io::ErrorKind::WouldBlock, "{refused}");
        assert!(taken > 0, "an empty pipe takes a batch");
        drop(writer);
        let mut read = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut read).unwrap();
        assert_eq!(read, batch.repeat(taken));
    }

    /// What `Lines` gives for `input`, written through a pipe that holds `chunk` bytes at a time.
    async fn read_all(input: &'static [u8], chunk: usize, max_line: usize) -> Vec<String> {
        let (mut client, server) = tokio::io::duplex(chunk);
        let writer = tokio::spawn(async move { client.write_all(input).await.unwrap() });
        let mut lines = Lines::new(tokio::io::BufReader::new(server), max_line);
        let mut items = Vec::new();
        while let Some(item) = lines.next().await {
            items.push(match item {
                Incoming::Message(message) => format!("message {message}"),
                Incoming::Answer(answer) => format!("answer {answer}"),
            });
        }
        writer.await.unwrap();
        assert!(lines.error.is_none());
        items
    }

    /// What the blocking thread's reader forwards for `input`, read `chunk` bytes at a time.
    fn read_all_blocking(input: &'static [u8], chunk: usize, max_line: usize) -> Vec<String> {
        let (to_server, mut messages) = mpsc::channel(64);
        let (to_client, mut answers) = mpsc::channel(64);
        let reader = std::io::BufReader::with_capacity(chunk, input);
        read_lines_blocking(reader, &to_server, &to_client, max_line).unwrap();
        // Messages and answers go to two channels, so their order between each other is lost.
        let mut items = Vec::new();
        while let Ok(message) = messages.try_recv() {
            items.push(format!("message {message}"));
        }
        while let Ok(answer) = answers.try_recv() {
            items.push(format!("answer {answer}"));
        }
        items
    }

    const LINES: &[u8] = b"{\"a\":1}\n\n  \n\xff\xfe\n0123456789\n01234567890123\n{\"b\":2}\n{\"c\":3}";

    #[test]
    fn the_blocking_reader_follows_the_same_rules() {
        for chunk in [1, 3, 4096] {
            let mut items = read_all_blocking(LINES, chunk, 10);
            items.sort();
            let answers = &items[..2];
            assert!(answers[0].contains("exceeds the 10-byte limit"), "{answers:?}");
            assert!(answers[1].contains("not valid UTF-8"), "{answers:?}");
            assert_eq!(
                items[2..],
                ["message 0123456789", r#"message {"a":1}"#, r#"message {"b":2}"#, r#"message {"c":3}"#],
                "{chunk}-byte pieces"
            );
        }
    }

    #[tokio::test]
    async fn each_line_is_a_message_and_one_that_cannot_be_is_answered() {
        for chunk in [1, 3, 4096] {
            let items = read_all(LINES, chunk, 10).await;
            assert_eq!(items.len(), 6, "blank lines are skipped ({chunk}-byte pieces): {items:?}");
            assert_eq!(items[0], r#"message {"a":1}"#);
            assert!(items[1].starts_with("answer ") && items[1].contains("not valid UTF-8"), "{}", items[1]);
            assert_eq!(items[2], "message 0123456789", "a line of exactly the limit is read");
            assert!(items[3].starts_with("answer ") && items[3].contains("exceeds the 10-byte limit"), "{}", items[3]);
            assert_eq!(items[4], r#"message {"b":2}"#, "the session goes on after a line over the limit");
            assert_eq!(items[5], r#"message {"c":3}"#, "the last line needs no newline");
        }
    }

    /// The serving loop drops a wait for the next line when other work comes first.
    #[tokio::test]
    async fn part_of_a_line_survives_a_dropped_wait() {
        let (mut client, server) = tokio::io::duplex(1024);
        let mut lines = Lines::new(tokio::io::BufReader::new(server), 100);
        client.write_all(br#"{"pa"#).await.unwrap();
        assert!(lines.next().now_or_never().is_none(), "half a line is no message yet");
        client.write_all(b"rt\":1}\n").await.unwrap();
        match lines.next().await {
            Some(Incoming::Message(message)) => assert_eq!(message, r#"{"part":1}"#),
            _ => panic!("the whole line is one message"),
        }
    }
}
