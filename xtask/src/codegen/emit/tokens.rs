//! The small pieces every emitter uses: idents, type tokens, doc attributes, lookups in the model.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use super::super::docs::Docs;
use super::super::model::{Item, Module, StructDef, UnionDef};
use super::super::ty::Ty;

pub fn ident(name: &str) -> Ident {
    match name {
        "type" | "ref" | "enum" | "const" | "match" | "mod" | "move" | "return" | "static" | "use" | "where"
        | "async" | "await" | "dyn" | "fn" | "for" | "impl" | "in" | "let" | "loop" | "mut" | "pub" | "struct"
        | "trait" | "true" | "false" | "while" | "box" | "final" | "override" | "priv" | "abstract" | "become"
        | "do" | "macro" | "try" | "yield" | "virtual" | "unsized" | "typeof" | "gen" => {
            Ident::new_raw(name, Span::call_site())
        }
        _ => Ident::new(name, Span::call_site()),
    }
}

pub fn ty_tokens(ty: &Ty) -> TokenStream {
    match ty {
        Ty::String => quote!(::std::string::String),
        Ty::Bool => quote!(bool),
        Ty::Number => quote!(::serde_json::Number),
        Ty::Value => quote!(::serde_json::Value),
        Ty::Object => quote!(crate::free_form::JsonObject),
        Ty::Vec(inner) => {
            let inner = ty_tokens(inner);
            quote!(::std::vec::Vec<#inner>)
        }
        Ty::Map(inner) => {
            let inner = ty_tokens(inner);
            quote!(::std::collections::BTreeMap<::std::string::String, #inner>)
        }
        Ty::Named(n) => {
            let n = ident(n);
            quote!(#n)
        }
        Ty::Path(p) => syn::parse_str::<syn::Type>(&home(p)).map(|t| quote!(#t)).expect("valid path"),
        Ty::Boxed(inner) => {
            let inner = ty_tokens(inner);
            quote!(::std::boxed::Box<#inner>)
        }
    }
}

/// Where the generated code finds a type the model names by its public path: a hand-written
/// one (`crate::RequestId`) in its own module, one of a revision (`crate::v2026_07_28::Tool`, which
/// the extensions restate) in `generated`; never through the crate root, which stands above the
/// revisions it re-exports (`cargo xtask imports`).
pub fn home(path: &str) -> String {
    let rest = path.trim_start_matches("crate::");
    let first = rest.split("::").next().unwrap_or_default();
    let module = match rest {
        "RequestId" | "ProgressToken" | "ErrorObject" | "ResultType" | "TtlMs" => "common",
        "Integer" => "number",
        "RawResult" => "raw_result",
        "JsonSchema" | "ObjectSchema" => "schema",
        _ if first == "draft"
            || (first.starts_with('v') && first[1..].bytes().all(|b| b.is_ascii_digit() || b == b'_')) =>
        {
            "generated"
        }
        _ => return path.to_owned(),
    };
    path.replacen("crate::", &format!("crate::{module}::"), 1)
}

/// Free-form JSON (`Value`, objects, lists or maps of them): decoded through
/// `private::FreeForm`, which refuses numbers a `Value` cannot hold exactly.
pub fn is_free_form(ty: &Ty) -> bool {
    match ty {
        Ty::Value | Ty::Object => true,
        Ty::Vec(inner) | Ty::Map(inner) => is_free_form(inner),
        _ => false,
    }
}

/// Reads the value of the current member (`map.next_value…`) as `ty` (free-form when it names an
/// alias of free-form JSON), exactly.
pub(super) fn read_value(ty: &Ty, free_form_alias: bool) -> TokenStream {
    if *ty == Ty::Number {
        quote!(map.next_value::<crate::private::ExactNumber>().map(|n| n.0))
    } else if free_form_alias || is_free_form(ty) {
        quote!(map.next_value_seed(crate::private::FreeForm::new()))
    } else {
        quote!(map.next_value())
    }
}

/// A type as fallback docs name it: a link for a generated or crate type, `None` for plain JSON.
pub(super) fn ty_phrase(ty: &Ty) -> Option<String> {
    match ty {
        Ty::Named(name) => Some(format!("[`{name}`]")),
        Ty::Boxed(inner) => ty_phrase(inner),
        Ty::Path(path) => Some(format!("[`{}`]({path})", path.trim_start_matches("crate::"))),
        Ty::Vec(inner) => ty_phrase(inner).map(|p| format!("a list of {p}")),
        Ty::Map(inner) => ty_phrase(inner).map(|p| format!("a map from names to {p}")),
        Ty::String => Some("a string".into()),
        Ty::Bool => Some("a boolean".into()),
        Ty::Number => Some("a JSON number".into()),
        Ty::Object => Some("a JSON object".into()),
        Ty::Value => Some("any JSON value".into()),
    }
}

pub(super) fn doc_attrs(docs: &Docs, text: Option<&str>) -> TokenStream {
    let lines = docs.lines(text.unwrap_or(""));
    quote!(#(#[doc = #lines])*)
}

pub(super) fn const_tokens(value: &Value) -> TokenStream {
    match value {
        Value::String(s) => quote!(#s),
        Value::Number(n) if n.is_i64() => {
            let n = n.as_i64().unwrap();
            quote!(#n)
        }
        other => panic!("unsupported const {other}"),
    }
}

/// Resolves a type through this module's aliases to the generated type it names.
pub(super) fn resolve_named<'a>(m: &'a Module, ty: &'a Ty) -> Option<&'a str> {
    let mut ty = ty;
    for _ in 0..8 {
        let Ty::Named(n) = ty else { return None };
        match m.items.iter().find_map(|i| match i {
            Item::Alias(a) if a.name == *n => Some(&a.ty),
            _ => None,
        }) {
            Some(target) => ty = target,
            None => return Some(n),
        }
    }
    None
}

pub(super) fn is_snake_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && ident(s) == Ident::new(s, Span::call_site())
}

pub(super) fn union_named<'a>(m: &'a Module, schema_name: &str) -> Option<&'a UnionDef> {
    m.items.iter().find_map(|i| match i {
        Item::Union(u) if u.schema_name.as_deref() == Some(schema_name) => Some(u),
        _ => None,
    })
}

pub(super) fn struct_named<'a>(m: &'a Module, name: &str) -> Option<&'a StructDef> {
    m.items.iter().find_map(|i| match i {
        Item::Struct(s) if s.name == name => Some(s),
        _ => None,
    })
}
