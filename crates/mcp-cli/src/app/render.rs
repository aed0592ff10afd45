//! What `mcp` prints: tables and text for people (coloured through `anstream`, which drops the
//! colours when the output is not a terminal, NO_COLOR is set or `--color never`), stable JSON
//! for scripts.

use anstyle::{AnsiColor, Style};
use mcp_client::types::{CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

pub fn bold(text: &str) -> String {
    paint(Style::new().bold(), text)
}

pub fn heading(text: &str) -> String {
    paint(Style::new().bold().fg_color(Some(AnsiColor::Cyan.into())), text)
}

pub fn dim(text: &str) -> String {
    paint(Style::new().dimmed(), text)
}

pub fn red(text: &str) -> String {
    paint(Style::new().fg_color(Some(AnsiColor::Red.into())), text)
}

pub fn green(text: &str) -> String {
    paint(Style::new().fg_color(Some(AnsiColor::Green.into())), text)
}

/// Prints `value` as indented JSON on stdout.
pub fn json(value: &impl Serialize) {
    match serde_json::to_string_pretty(value) {
        Ok(text) => anstream::println!("{text}"),
        Err(error) => anstream::eprintln!("mcp: could not encode the output: {error}"),
    }
}

/// The first line of a description, shortened to `width` characters.
pub fn summary(text: Option<&str>, width: usize) -> String {
    let line = text.unwrap_or("").lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    if line.chars().count() <= width {
        return line.to_owned();
    }
    let mut short: String = line.chars().take(width.saturating_sub(1)).collect();
    short.push('…');
    short
}

/// Prints rows under a bold header, columns aligned; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let columns = header.len();
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(columns) {
            widths[i] = widths[i].max(visible_width(cell));
        }
    }
    let line = |cells: Vec<String>| {
        let mut out = String::new();
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i + 1 < cells.len() {
                out.push_str(&" ".repeat(widths[i] - visible_width(cell) + 2));
            }
        }
        anstream::println!("{}", out.trim_end());
    };
    line(header.iter().map(|h| bold(h)).collect());
    for row in rows {
        line(row.clone());
    }
}

/// Characters a person sees: ANSI escape sequences excluded.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut in_escape = false;
    for c in text.chars() {
        match (in_escape, c) {
            (false, '\x1b') => in_escape = true,
            (true, 'm') => in_escape = false,
            (true, _) => {}
            (false, _) => width += 1,
        }
    }
    width
}

/// A tool's result as text: its content blocks, then its structured content if no text says it.
pub fn call_result(result: &CallToolResult) {
    let mut printed_text = false;
    for block in &result.content {
        printed_text |= content_block(block);
    }
    if let Some(structured) = &result.structured_content
        && !printed_text
    {
        json(structured);
    }
}

/// Prints one content block; true if it was text.
pub fn content_block(block: &ContentBlock) -> bool {
    let value = serde_json::to_value(block).unwrap_or(Value::Null);
    let field = |name: &str| value.get(name).and_then(Value::as_str).unwrap_or("");
    match field("type") {
        "text" => {
            anstream::println!("{}", field("text"));
            true
        }
        "image" | "audio" => {
            let bytes = field("data").len() / 4 * 3;
            anstream::println!("{}", dim(&format!("[{} {}, about {bytes} bytes]", field("type"), field("mimeType"))));
            false
        }
        "resource_link" => {
            anstream::println!("{}", dim(&format!("[link {} {}]", field("uri"), field("name"))));
            false
        }
        "resource" => {
            let resource = value.get("resource").cloned().unwrap_or(Value::Null);
            let uri = resource.get("uri").and_then(Value::as_str).unwrap_or("");
            match resource.get("text").and_then(Value::as_str) {
                Some(text) => {
                    anstream::println!("{}", dim(&format!("[resource {uri}]")));
                    anstream::println!("{text}");
                    true
                }
                None => {
                    anstream::println!("{}", dim(&format!("[resource {uri}, binary]")));
                    false
                }
            }
        }
        other => {
            anstream::println!("{}", dim(&format!("[{other} content]")));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_ignore_colours_and_summaries_are_cut() {
        assert_eq!(visible_width(&red("abc")), 3);
        assert_eq!(summary(Some("\n  first line  \nsecond"), 40), "first line");
        assert_eq!(summary(Some("abcdef"), 4), "abc…");
        assert_eq!(summary(None, 4), "");
    }
}
