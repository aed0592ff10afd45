//! Model → Rust tokens. Structs get hand-rolled (de)serializers: unknown members go to `extra`
//! without `#[serde(flatten)]` (which buffers every object), `const` members are checked, and
//! errors name the type and field.

use std::collections::BTreeMap;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use serde_json::Value;

use super::docs::Docs;
use super::model::*;

mod messages;
mod structs;
mod unions;
use messages::{message_tokens, method_impls};
pub use structs::has_positional_new;
use structs::struct_tokens;
use unions::{union_conversions, union_tokens};

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
        Ty::Object => quote!(crate::JsonObject),
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
        Ty::Path(p) => syn::parse_str::<syn::Type>(p).map(|t| quote!(#t)).expect("valid path"),
        Ty::Boxed(inner) => {
            let inner = ty_tokens(inner);
            quote!(::std::boxed::Box<#inner>)
        }
    }
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
fn read_value(ty: &Ty, free_form_alias: bool) -> TokenStream {
    if *ty == Ty::Number {
        quote!(map.next_value::<crate::private::ExactNumber>().map(|n| n.0))
    } else if free_form_alias || is_free_form(ty) {
        quote!(map.next_value_seed(crate::private::FreeForm::new()))
    } else {
        quote!(map.next_value())
    }
}

/// A type as fallback docs name it: a link for a generated or crate type, `None` for plain JSON.
fn ty_phrase(ty: &Ty) -> Option<String> {
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

fn doc_attrs(docs: &Docs, text: Option<&str>) -> TokenStream {
    let lines = docs.lines(text.unwrap_or(""));
    quote!(#(#[doc = #lines])*)
}

pub fn module(m: &Module, docs: &Docs, module: &str) -> TokenStream {
    let objects = object_types(m);
    // The `complete` variants of `resultType` unions also decode leniently (see `members_fallback`).
    let lenient: Vec<&str> = m
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Union(UnionDef { strategy: Strategy::Tag { key, default: Some(d), .. }, variants, .. })
                if key == "resultType" =>
            {
                match &variants[*d].ty {
                    Ty::Named(n) => Some(n.as_str()),
                    _ => None,
                }
            }
            _ => None,
        })
        .collect();
    let mut out = TokenStream::new();
    for item in &m.items {
        out.extend(match item {
            Item::Struct(s) => struct_tokens(s, docs, &objects, lenient.contains(&s.name.as_str()), module, &m.enums),
            Item::Union(u) => {
                let mut tokens = union_tokens(u, docs);
                tokens.extend(union_conversions(u, m, docs));
                tokens
            }
            Item::Alias(a) => {
                let name = ident(&a.name);
                // Spelled out, so that rustdoc shows the type rather than `JsonObject = JsonObject`.
                let ty = match a.ty {
                    Ty::Object => quote!(::serde_json::Map<::std::string::String, ::serde_json::Value>),
                    _ => ty_tokens(&a.ty),
                };
                let fallback = match ty_phrase(&a.ty) {
                    Some(phrase) => format!("The schema's `{}`: {phrase}.", a.name),
                    None => format!("The schema's `{}`.", a.name),
                };
                let doc = doc_attrs(docs, Some(a.doc.as_deref().unwrap_or(&fallback)));
                quote!(#doc pub type #name = #ty;)
            }
            Item::Reexport { path, doc, .. } => {
                let path: syn::Path = syn::parse_str(path).unwrap();
                let doc = doc_attrs(docs, Some(doc));
                quote!(#doc pub use #path;)
            }
        });
    }
    for e in m.enums.keys() {
        let name = ident(e);
        out.extend(quote! {
            impl crate::private::MatchScore for #name {
                fn match_score(value: &::serde_json::Value) -> ::std::option::Option<usize> {
                    value.as_str().and_then(|s| s.parse::<#name>().ok()).map(|_| 1)
                }
            }
        });
    }
    for msg in &m.messages {
        out.extend(message_tokens(msg, m));
    }
    out.extend(method_impls(m));
    out
}

fn const_tokens(value: &Value) -> TokenStream {
    match value {
        Value::String(s) => quote!(#s),
        Value::Number(n) if n.is_i64() => {
            let n = n.as_i64().unwrap();
            quote!(#n)
        }
        other => panic!("unsupported const {other}"),
    }
}

/// Types of this module decoded from an already opened object (`mcp_types::private::VisitObject`),
/// with the `expecting` text of their own `Deserialize` impl.
fn object_types(m: &Module) -> BTreeMap<&str, String> {
    m.items
        .iter()
        .filter_map(|item| match item {
            Item::Struct(s) => {
                Some((s.name.as_str(), format!("a `{}` object", s.schema_name.as_deref().unwrap_or(&s.name))))
            }
            Item::Union(u) => match &u.strategy {
                Strategy::Tag { key, .. } => Some((
                    u.name.as_str(),
                    format!("a `{}` object with a `{key}` member", u.schema_name.as_deref().unwrap_or(&u.name)),
                )),
                Strategy::Score => None,
            },
            _ => None,
        })
        .collect()
}

/// Resolves a type through this module's aliases to the generated type it names.
fn resolve_named<'a>(m: &'a Module, ty: &'a Ty) -> Option<&'a str> {
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

fn is_snake_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && ident(s) == Ident::new(s, Span::call_site())
}

fn union_named<'a>(m: &'a Module, schema_name: &str) -> Option<&'a UnionDef> {
    m.items.iter().find_map(|i| match i {
        Item::Union(u) if u.schema_name.as_deref() == Some(schema_name) => Some(u),
        _ => None,
    })
}

fn struct_named<'a>(m: &'a Module, name: &str) -> Option<&'a StructDef> {
    m.items.iter().find_map(|i| match i {
        Item::Struct(s) if s.name == name => Some(s),
        _ => None,
    })
}
