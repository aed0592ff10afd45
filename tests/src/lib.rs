//! Support for the cross-crate tests in `tests/tests/`: per revision, the generated registry of
//! its types and unions, and helpers to find the schema working copies and fixtures.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod exact;
pub mod instances;
pub mod mutate;
pub mod oidc;
pub mod prometheus;
mod workspace;

pub use workspace::workspace_root;

/// Decodes JSON text into one schema type and re-encodes it.
pub struct TypeEntry {
    pub schema: &'static str,
    pub roundtrip: fn(&str) -> Result<Value, String>,
    /// The same round trip, to JSON text (for exact number comparison, see [`exact`]).
    pub text: fn(&str) -> Result<String, String>,
}

/// Decodes JSON text through a union and reports the variant it landed in.
pub struct UnionEntry {
    pub union: &'static str,
    /// (member schema type, variant a value of that type must land in)
    pub members: &'static [(&'static str, &'static str)],
    pub decode: fn(&str) -> Result<(&'static str, Value), String>,
    /// The same decoding, re-encoded to JSON text.
    pub decode_text: fn(&str) -> Result<(&'static str, String), String>,
}

/// Decodes a response `result` by the method of the request it answers (`Request::Result`).
pub struct ResultEntry {
    /// Schema name of the request type.
    pub request: &'static str,
    pub method: &'static str,
    pub decode: fn(&Value) -> Result<(&'static str, Value), String>,
}

pub fn roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(text: &str) -> Result<Value, String> {
    let value: T = serde_json::from_str(text).map_err(|e| e.to_string())?;
    serde_json::to_value(&value).map_err(|e| e.to_string())
}

pub fn roundtrip_text<T: serde::de::DeserializeOwned + serde::Serialize>(text: &str) -> Result<String, String> {
    let value: T = serde_json::from_str(text).map_err(|e| e.to_string())?;
    serde_json::to_string(&value).map_err(|e| e.to_string())
}

/// [`roundtrip`] for free-form JSON on its own (`JSONValue`, `JSONObject`, `JSONArray`).
pub fn roundtrip_free_form<T: mcp_types::private::FreeFormType + serde::Serialize>(
    text: &str,
) -> Result<Value, String> {
    let value: T = mcp_types::free_form_from_str(text).map_err(|e| e.to_string())?;
    serde_json::to_value(&value).map_err(|e| e.to_string())
}

/// [`roundtrip_text`] for free-form JSON on its own.
pub fn roundtrip_free_form_text<T: mcp_types::private::FreeFormType + serde::Serialize>(
    text: &str,
) -> Result<String, String> {
    let value: T = mcp_types::free_form_from_str(text).map_err(|e| e.to_string())?;
    serde_json::to_string(&value).map_err(|e| e.to_string())
}

pub struct Revision {
    pub name: &'static str,
    pub types: fn() -> Vec<TypeEntry>,
    pub unions: fn() -> Vec<UnionEntry>,
    pub results: fn() -> Vec<ResultEntry>,
}

macro_rules! revisions {
    ($($module:ident => $name:literal),* $(,)?) => {
        pub mod generated {
            $(#[allow(unreachable_patterns)] pub mod $module { include!(concat!("generated/", stringify!($module), ".rs")); })*
        }
        pub const REVISIONS: &[Revision] = &[
            $(Revision {
                name: $name,
                types: generated::$module::types,
                unions: generated::$module::unions,
                results: generated::$module::results,
            },)*
        ];
    };
}

revisions! {
    v2024_11_05 => "2024-11-05",
    v2025_03_26 => "2025-03-26",
    v2025_06_18 => "2025-06-18",
    v2025_11_25 => "2025-11-25",
    v2026_07_28 => "2026-07-28",
    draft => "draft",
    ext_tasks => "extensions/ext-tasks/draft",
    ext_apps => "extensions/ext-apps",
}

pub fn revision(name: &str) -> &'static Revision {
    REVISIONS.iter().find(|r| r.name == name).expect("known revision")
}

/// `schema/<rev>/...`, filled by `cargo xtask schema sync` (the README's test command runs it).
pub fn schema_dir(revision: &str) -> PathBuf {
    let dir = workspace_root().join("schema").join(revision);
    assert!(dir.join("schema.json").is_file(), "{} is missing: run `cargo xtask schema sync` first", dir.display());
    dir
}

/// Every `<Type>/<name>.json` below `dir`, sorted, as (type, file name, text).
pub fn json_files(dir: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut types: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    types.sort();
    for type_dir in types.into_iter().filter(|p| p.is_dir()) {
        let ty = type_dir.file_name().unwrap().to_string_lossy().into_owned();
        let mut files: Vec<_> = std::fs::read_dir(&type_dir).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files.into_iter().filter(|p| p.extension().is_some_and(|e| e == "json")) {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            out.push((ty.clone(), name, std::fs::read_to_string(&file).unwrap()));
        }
    }
    out
}

/// Paths where two JSON values differ, for readable assertion messages.
pub fn diff(expected: &Value, actual: &Value) -> Vec<String> {
    fn walk(path: String, a: &Value, b: &Value, out: &mut Vec<String>) {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for (k, v) in x {
                    match y.get(k) {
                        Some(w) => walk(format!("{path}/{k}"), v, w, out),
                        None => out.push(format!("dropped {path}/{k}")),
                    }
                }
                for k in y.keys().filter(|k| !x.contains_key(*k)) {
                    out.push(format!("added {path}/{k}"));
                }
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
                for (i, (v, w)) in x.iter().zip(y).enumerate() {
                    walk(format!("{path}/{i}"), v, w, out);
                }
            }
            _ if a != b => out.push(format!("changed {path}: {a} -> {b}")),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(String::new(), expected, actual, &mut out);
    out
}

/// The README's Rust example, run as a doctest.
#[doc = include_str!("../../README.md")]
pub struct ReadmeExample;
