//! The stdio transport: newline-delimited JSON-RPC on stdin and stdout.

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::mpsc;

use crate::{Connection, Server};

/// The longest line accepted; a longer one is answered with an error and skipped.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

/// Serves the process's stdin and stdout until stdin closes.
pub async fn serve_stdio(server: Server) -> std::io::Result<()> {
    serve_lines(server, BufReader::new(tokio::io::stdin()), tokio::io::stdout()).await
}

/// Serves newline-delimited JSON-RPC over any byte streams (a socket, a pipe, a child's stdio).
pub async fn serve_lines<R, W>(server: Server, reader: R, mut writer: W) -> std::io::Result<()>
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
    let reading = tokio::spawn(read_lines(reader, to_server, outbox_for_errors));
    while let Some(message) = from_server.recv().await {
        writer.write_all(message.as_bytes()).await?;
        writer.write_all(b"\n").await?;
        writer.flush().await?;
    }
    let _ = serving.await;
    reading.await.unwrap_or(Ok(()))
}

/// Forwards each line to the server. A line over [`MAX_LINE`] is answered here with -32600 and
/// skipped without buffering it, so one huge line can neither exhaust memory nor end the session.
async fn read_lines<R: AsyncBufRead + Unpin>(
    mut reader: R,
    to_server: mpsc::Sender<String>,
    to_client: mpsc::Sender<String>,
) -> std::io::Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader).take(MAX_LINE as u64 + 1).read_until(b'\n', &mut line).await?;
        if read == 0 {
            return Ok(());
        }
        if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
            skip_line(&mut reader).await?;
            if to_client.send(oversized_line_error()).await.is_err() {
                return Ok(());
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
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
fn oversized_line_error() -> String {
    let error = mcp_types::ErrorObject::invalid_request(format!(
        "Invalid Request: the line exceeds the {MAX_LINE}-byte limit of this stdio server and was skipped"
    ));
    serde_json::json!({"jsonrpc": "2.0", "error": error}).to_string()
}
