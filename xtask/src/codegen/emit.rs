//! Model → Rust tokens. Structs get hand-rolled (de)serializers: unknown members go to `extra`
//! without `#[serde(flatten)]` (which buffers every object), `const` members are checked, and
//! errors name the type and field.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::quote;

use super::docs::Docs;
use super::model::*;

mod messages;
mod structs;
mod tokens;
mod unions;
use messages::{message_tokens, method_impls};
use structs::struct_tokens;
// What the registry emits with.
use tokens::{doc_attrs, home, ty_phrase};
pub use tokens::{ident, is_free_form, ty_tokens};
use unions::{union_conversions, union_tokens};

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
                // A hand-written type is re-exported from its (private) module: listed as a
                // re-export, as its public path was, rather than inlined into every revision. (A
                // revision's type restated by an extension was inlined already, and stays so.)
                let home = home(path);
                let hand_written = home != *path && !home.starts_with("crate::generated::");
                let no_inline = hand_written.then(|| quote!(#[doc(no_inline)]));
                let path: syn::Path = syn::parse_str(&home).unwrap();
                let doc = doc_attrs(docs, Some(doc));
                quote!(#doc #no_inline pub use #path;)
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
