//! Rust names for MCP names: tools are called `files/read.v2` or `getWeather`, Rust wants
//! `files_read_v2` and `FilesReadV2`, never a keyword, and each name once.

use std::collections::BTreeSet;

/// The words of a name: split at anything not alphanumeric and where case changes
/// (`getHTTPResponse` → `get`, `http`, `response`), lowercased.
fn words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for part in name.split(|c: char| !c.is_alphanumeric()).filter(|p| !p.is_empty()) {
        let chars: Vec<char> = part.chars().collect();
        let mut word = String::new();
        for (i, &c) in chars.iter().enumerate() {
            let boundary = i > 0
                && c.is_uppercase()
                && (chars[i - 1].is_lowercase()
                    || chars[i - 1].is_ascii_digit()
                    || chars.get(i + 1).is_some_and(|n| n.is_lowercase()) && chars[i - 1].is_uppercase());
            if boundary && !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            word.extend(c.to_lowercase());
        }
        words.push(word);
    }
    words
}

/// `snake_case` for a name, valid as an identifier: a leading digit gets an `x` before it, a
/// keyword a `_` after it, a name with no letters or digits becomes `unnamed`.
pub fn snake(name: &str) -> String {
    let mut out = words(name).join("_");
    if out.is_empty() {
        out = "unnamed".into();
    }
    if !out.starts_with(|c: char| c.is_alphabetic() || c == '_') {
        out.insert(0, 'x');
    }
    if is_keyword(&out) {
        out.push('_');
    }
    out
}

/// `CamelCase` of a (snake) name: `files_read_v2` → `FilesReadV2`. Type names always get a
/// suffix (`Args`, `Output`), so a keyword cannot come out.
pub fn camel(snake: &str) -> String {
    snake
        .split('_')
        .map(|w| {
            let mut chars = w.chars();
            chars.next().map(|c| c.to_uppercase().chain(chars).collect::<String>()).unwrap_or_default()
        })
        .collect()
}

/// Gives each name its own snake identifier: names that meet (`get-weather`, `get_weather`) get
/// `_2`, `_3`, ... in the order given (which the caller keeps sorted, so it is stable).
pub fn unique_snakes<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut taken = BTreeSet::new();
    names
        .into_iter()
        .map(|name| {
            let base = snake(name);
            let mut candidate = base.clone();
            let mut n = 2;
            while !taken.insert(candidate.clone()) {
                candidate = format!("{}_{n}", base.trim_end_matches('_'));
                n += 1;
            }
            candidate
        })
        .collect()
}

/// Strict and reserved keywords of Rust 2024, and the weak ones that cannot be identifiers.
fn is_keyword(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate", "do", "dyn",
        "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "macro",
        "match", "mod", "move", "mut", "override", "priv", "pub", "ref", "return", "self", "static", "struct", "super",
        "trait", "true", "try", "type", "typeof", "union", "unsafe", "unsized", "use", "virtual", "where", "while",
        "yield",
    ];
    KEYWORDS.contains(&word)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_identifiers() {
        assert_eq!(snake("files/read.v2"), "files_read_v2");
        assert_eq!(snake("get-weather"), "get_weather");
        assert_eq!(snake("getHTTPResponse"), "get_http_response");
        assert_eq!(snake("GetWeather"), "get_weather");
        assert_eq!(snake("type"), "type_");
        assert_eq!(snake("self"), "self_");
        assert_eq!(snake("3d-render"), "x3d_render");
        assert_eq!(snake("--"), "unnamed");
        assert_eq!(camel("files_read_v2"), "FilesReadV2");
        assert_eq!(camel("type_"), "Type");
        assert_eq!(camel("x3d_render"), "X3dRender");
    }

    #[test]
    fn names_that_meet_are_numbered() {
        assert_eq!(
            unique_snakes(["get-weather", "get_weather", "getWeather"]),
            ["get_weather", "get_weather_2", "get_weather_3"]
        );
        assert_eq!(unique_snakes(["type", "TYPE"]), ["type_", "type_2"]);
    }
}
