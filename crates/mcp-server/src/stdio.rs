//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.

use std::io::BufRead;

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufWriter};
use tokio::sync::mpsc;

use crate::{Connection, Server};

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
/// `EAGAIN`): on the runtime when stdout is a pipe with room for the whole batch (one `poll` and
/// one `write`, no thread to wake for each answer), else on the blocking pool.
pub async fn serve_stdio_with(server: Server, config: StdioConfig) -> std::io::Result<()> {
    let (to_server, inbox) = mpsc::channel::<String>(64);
    let (outbox, from_server) = mpsc::channel::<String>(64);
    let errors = outbox.clone();
    let max_line = config.max_line_bytes;
    let reading = match reactor_stdin()? {
        Some(stdin) => Some(tokio::spawn(read_lines(stdin, to_server, errors, max_line))),
        None => {
            std::thread::Builder::new()
                .name("mcp-stdin".into())
                .spawn(move || read_lines_blocking(std::io::stdin().lock(), &to_server, &errors, max_line))?;
            None
        }
    };
    let serving = tokio::spawn(async move { server.serve(Connection { sender: outbox, receiver: inbox }).await });
    // A task of the runtime, like the reader and the server: an answer wakes it on the worker
    // that produced it, not the thread awaiting this function.
    let writing = tokio::spawn(write_lines(from_server));
    let written = writing.await.map_err(std::io::Error::other).and_then(|written| written);
    // After a failed write (stdout closed), the server is left to end with the process.
    if written.is_ok() {
        let _ = serving.await;
    }
    if let Some(reading) = reading {
        reading.abort();
        // Until the task is dropped, stdin is still non-blocking.
        let _ = reading.await;
    }
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
    let (to_server, inbox) = mpsc::channel::<String>(64);
    let (outbox, mut from_server) = mpsc::channel::<String>(64);
    let outbox_for_errors = outbox.clone();
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve(Connection { sender: outbox, receiver: inbox }).await }
    });
    let reading = tokio::spawn(read_lines(reader, to_server, outbox_for_errors, config.max_line_bytes));
    let mut writer = BufWriter::with_capacity(WRITE_BATCH, writer);
    while let Some(message) = from_server.recv().await {
        write_line(&mut writer, &message).await?;
        // Whatever else is ready goes out with it; one flush once the queue is empty.
        while let Ok(message) = from_server.try_recv() {
            write_line(&mut writer, &message).await?;
        }
        writer.flush().await?;
    }
    let _ = serving.await;
    reading.await.unwrap_or(Ok(()))
}

async fn write_line<W: AsyncWrite + Unpin>(writer: &mut BufWriter<W>, message: &str) -> std::io::Result<()> {
    writer.write_all(message.as_bytes()).await?;
    writer.write_all(b"\n").await
}

/// Where one line read from the client goes.
enum Delivery {
    /// A message for the server.
    Server(String),
    /// An answer of the transport's own, for a line the server never sees.
    Client(String),
    /// Nowhere: a blank line.
    Nowhere,
}

/// What the line just read (`bytes`, read up to `max_line + 1` bytes) becomes, and whether it
/// was cut there, so that the rest of it must be skipped.
fn delivery(bytes: &[u8], max_line: usize) -> (Delivery, bool) {
    if bytes.len() > max_line && bytes.last() != Some(&b'\n') {
        return (Delivery::Client(oversized_line_error(max_line)), true);
    }
    // Invalid UTF-8 is refused as HTTP refuses it, never repaired into something else.
    let delivery = match std::str::from_utf8(bytes) {
        Ok(text) => match text.trim() {
            "" => Delivery::Nowhere,
            text => Delivery::Server(text.to_owned()),
        },
        Err(error) => Delivery::Client(invalid_utf8_error(&error)),
    };
    (delivery, false)
}

/// Forwards each line to the server. A line over `max_line` bytes is answered here with -32600 and
/// skipped without buffering it, so one huge line can neither exhaust memory nor end the session.
async fn read_lines<R: AsyncBufRead + Unpin>(
    mut reader: R,
    to_server: mpsc::Sender<String>,
    to_client: mpsc::Sender<String>,
    max_line: usize,
) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        let read = (&mut reader).take(max_line as u64 + 1).read_until(b'\n', &mut bytes).await?;
        if read == 0 {
            return Ok(());
        }
        let (delivery, cut) = delivery(&bytes, max_line);
        if cut {
            skip_line(&mut reader).await?;
        }
        let delivered = match delivery {
            Delivery::Server(message) => to_server.send(message).await,
            Delivery::Client(answer) => to_client.send(answer).await,
            Delivery::Nowhere => Ok(()),
        };
        if delivered.is_err() {
            return Ok(());
        }
    }
}

/// [`read_lines`] with blocking reads, for a thread of its own.
fn read_lines_blocking<R: BufRead>(
    mut reader: R,
    to_server: &mpsc::Sender<String>,
    to_client: &mpsc::Sender<String>,
    max_line: usize,
) -> std::io::Result<()> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    loop {
        bytes.clear();
        let read = (&mut reader).take(max_line as u64 + 1).read_until(b'\n', &mut bytes)?;
        if read == 0 {
            return Ok(());
        }
        let (delivery, cut) = delivery(&bytes, max_line);
        if cut {
            skip_line_blocking(&mut reader)?;
        }
        let delivered = match delivery {
            Delivery::Server(message) => to_server.blocking_send(message),
            Delivery::Client(answer) => to_client.blocking_send(answer),
            Delivery::Nowhere => Ok(()),
        };
        if delivered.is_err() {
            return Ok(());
        }
    }
}

/// Writes each answer as a line to stdout: what is ready is written together, with one write
/// call and one flush. A batch that a pipe takes at once (at most `PIPE_BUF` bytes while it has a
/// free buffer: such a write neither blocks nor splits) is written right here; any other goes to
/// the blocking pool, which this awaits, so that lines keep their order.
async fn write_lines(mut from_server: mpsc::Receiver<String>) -> std::io::Result<()> {
    let pipe = stdout_is_pipe();
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    while let Some(message) = from_server.recv().await {
        batch.extend_from_slice(message.as_bytes());
        batch.push(b'\n');
        while batch.len() < WRITE_BATCH
            && let Ok(message) = from_server.try_recv()
        {
            batch.extend_from_slice(message.as_bytes());
            batch.push(b'\n');
        }
        if pipe && batch.len() <= PIPE_BUF && stdout_has_room() {
            write_stdout(&batch)?;
        } else {
            let written = tokio::task::spawn_blocking(move || write_stdout(&batch).map(|()| batch));
            batch = written.await.map_err(std::io::Error::other)??;
        }
        // One huge answer should not keep its buffer for the rest of the session.
        if batch.capacity() > 4 * WRITE_BATCH {
            batch = Vec::with_capacity(WRITE_BATCH);
        }
        batch.clear();
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

/// Whether the stdout pipe has a free buffer now (`poll` with no wait).
#[cfg(unix)]
fn stdout_has_room() -> bool {
    let mut stdout = libc::pollfd { fd: libc::STDOUT_FILENO, events: libc::POLLOUT, revents: 0 };
    // SAFETY: one valid pollfd, a count of one, and no wait.
    let ready = unsafe { libc::poll(&mut stdout, 1, 0) };
    ready == 1 && stdout.revents & libc::POLLOUT != 0 && stdout.revents & (libc::POLLERR | libc::POLLHUP) == 0
}

#[cfg(not(unix))]
fn stdout_has_room() -> bool {
    false
}

/// Discards input up to and including the next newline (or the end of input).
async fn skip_line<R: AsyncBufRead + Unpin>(reader: &mut R) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(());
        }
        let (used, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (buffer.len(), false),
        };
        reader.consume(used);
        if done {
            return Ok(());
        }
    }
}

/// [`skip_line`] with blocking reads.
fn skip_line_blocking<R: BufRead>(reader: &mut R) -> std::io::Result<()> {
    loop {
        let buffer = reader.fill_buf()?;
        if buffer.is_empty() {
            return Ok(());
        }
        let (used, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(newline) => (newline + 1, true),
            None => (buffer.len(), false),
        };
        reader.consume(used);
        if done {
            return Ok(());
        }
    }
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
