//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

use crate::{Connection, Server};

/// The default of [`StdioConfig::max_line_bytes`].
pub const MAX_LINE: usize = 16 * 1024 * 1024;

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
pub async fn serve_stdio_with(server: Server, config: StdioConfig) -> std::io::Result<()> {
    serve_lines_with(server, BufReader::new(tokio::io::stdin()), tokio::io::stdout(), config).await
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
pub async fn serve_lines_with<R, W>(
    server: Server,
    reader: R,
    mut writer: W,
    config: StdioConfig,
) -> std::io::Result<()>
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
    while let Some(message) = from_server.recv().await {
        writer.write_all(message.as_bytes()).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await?;
    }
    let _ = serving.await;
    reading.await.unwrap_or(Ok(()))
}

/// Forwards each line to the server. A line over `max_line` bytes is answered here with -32600 and
/// skipped without buffering it, so one huge line can neither exhaust memory nor end the session.
async fn read_lines<R: AsyncBufRead + Unpin>(
    mut reader: R,
    to_server: mpsc::Sender<String>,
    to_client: mpsc::Sender<String>,
    max_line: usize,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader).take(max_line as u64 + 1).read_until(b'\n', &mut line).await?;
        if read == 0 {
            return Ok(());
        }
        if line.len() > max_line && line.last() != Some(&b'\n') {
            skip_line(&mut reader).await?;
            if to_client.send(oversized_line_error(max_line)).await.is_err() {
                return Ok(());
            }
            continue;
        }
        // Invalid UTF-8 is refused as HTTP refuses it, never repaired into something else.
        let text = match std::str::from_utf8(&line) {
            Ok(text) => text.trim(),
            Err(error) => {
                if to_client.send(invalid_utf8_error(&error)).await.is_err() {
                    return Ok(());
                }
                continue;
            }
        };
        if text.is_empty() {
            continue;
        }
        if to_server.send(text.to_owned()).await.is_err() {
            return Ok(());
        }
    }
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
