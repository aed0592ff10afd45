//! A small incremental `text/event-stream` parser.
//!
//! Written here rather than taken from a crate because MCP's SSE polling needs the `id` and
//! `retry` of events whose data is empty (the 2025-11-25 "priming" event), which the HTML
//! dispatch algorithm, and so the common parsers, drop together with the event.

use std::time::Duration;

/// Longest line or event accepted; a server sending more is treated as broken.
const MAX_EVENT_BYTES: usize = 32 * 1024 * 1024;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// `message` when the server named none.
    pub event: String,
    /// The `data` lines, joined by `
    /// `.
    pub data: String,
}

/// Splits a byte stream into events; feed it chunks as they arrive.
#[derive(Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    data: String,
    has_data: bool,
    event: String,
    /// The last `id` field seen (the SSE "last event ID").
    pub last_event_id: Option<String>,
    /// The last valid `retry` field seen.
    pub retry: Option<Duration>,
}

impl SseParser {
    /// A parser for a resumed stream: keeps the last event id and retry delay only.
    pub fn resumed(&self) -> Self {
        SseParser { last_event_id: self.last_event_id.clone(), retry: self.retry, ..SseParser::default() }
    }

    /// Feeds bytes; completed events are appended to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), String> {
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(out),
                b'\r' => {
                    self.after_cr = true;
                    self.end_line(out);
                }
                _ => {
                    if self.line.len() + self.data.len() >= MAX_EVENT_BYTES {
                        return Err("an SSE event exceeds the size limit".into());
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(())
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let line = std::mem::take(&mut self.line);
        let line = String::from_utf8_lossy(&line);
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: if self.event.is_empty() { "message".into() } else { std::mem::take(&mut self.event) },
                    data: std::mem::take(&mut self.data),
                });
            }
            self.data.clear();
            self.event.clear();
            self.has_data = false;
            return;
        }
        if line.starts_with(':') {
            return;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (&*line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = value.to_owned(),
            "id" if !value.contains('\0') => self.last_event_id = Some(value.to_owned()),
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_split_chunks_crlf_comments_and_priming_events() {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        let text = b"id: 1\r\nretry: 500\r\ndata:\r\n\r\n: keep-alive\n\nevent: endpoint\ndata: /messages?x=1\n\nid: 2\ndata: {\"a\":\ndata: 1}\r\r";
        for chunk in text.chunks(3) {
            parser.push(chunk, &mut out).unwrap();
        }
        assert_eq!(parser.retry, Some(Duration::from_millis(500)));
        assert_eq!(parser.last_event_id.as_deref(), Some("2"));
        assert_eq!(
            out,
            vec![
                SseEvent { event: "message".into(), data: String::new() },
                SseEvent { event: "endpoint".into(), data: "/messages?x=1".into() },
                SseEvent { event: "message".into(), data: "{\"a\":\n1}".into() },
            ]
        );
    }

    #[test]
    fn ignores_bad_retry_values_and_unfinished_events() {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        parser.push(b"retry: 5x\nretry: -1\ndata: never dispatched", &mut out).unwrap();
        assert!(out.is_empty());
        assert_eq!(parser.retry, None);
    }
}
