//! Model → Rust tokens. Structs get hand-rolled (de)serializers: unknown members go to `extra`
//! without `#[serde(flatten)]` (which buffers every object), `const` members are checked, and
//! errors name the type and field.

use std::collections::BTreeMap;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote};
use serde_json::Value;

use super::docs::Docs;
use super::model::*;

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
    }
}

/// Free-form JSON (`Value`, objects, lists or maps of them): decoded through
/// `private::FreeForm`, which refuses numbers a `Value` cannot hold exactly.
fn is_free_form(ty: &Ty) -> bool {
    match ty {
        Ty::Value | Ty::Object => true,
        Ty::Vec(inner) | Ty::Map(inner) => is_free_form(inner),
        _ => false,
    }
}

/// Reads the value of the current member (`map.next_value…`) as `ty`, exactly.
fn read_value(ty: &Ty) -> TokenStream {
    if *ty == Ty::Number {
        quote!(map.next_value::<crate::private::ExactNumber>().map(|n| n.0))
    } else if is_free_form(ty) {
        quote!(map.next_value_seed(crate::private::FreeForm::new()))
    } else {
        quote!(map.next_value())
    }
}

/// A type as fallback docs name it: a link for a generated or crate type, `None` for plain JSON.
fn ty_phrase(ty: &Ty) -> Option<String> {
    match ty {
        Ty::Named(name) => Some(format!("[`{name}`]")),
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

fn struct_tokens(
    s: &StructDef,
    docs: &Docs,
    objects: &BTreeMap<&str, String>,
    lenient: bool,
    module: &str,
    enums: &BTreeMap<String, EnumSpec>,
) -> TokenStream {
    let name = ident(&s.name);
    let name_str = s.schema_name.clone().unwrap_or_else(|| s.name.clone());
    // Definitions the schema does not describe still get a line (`missing_docs`).
    let fallback = format!("The schema's `{name_str}` object.");
    let doc = doc_attrs(docs, Some(s.doc.as_deref().unwrap_or(&fallback)));
    let default = s.default.then(|| quote!(Default,));

    let mut field_defs = Vec::new();
    for f in &s.fields {
        let id = ident(&f.ident);
        let ty = ty_tokens(&f.ty);
        let ty = if f.required && !f.nullable { ty } else { quote!(::std::option::Option<#ty>) };
        let mut text = f.doc.clone().unwrap_or_default();
        if text.is_empty() {
            // A member the schema does not describe: its name and type.
            text = match ty_phrase(&f.ty) {
                Some(phrase) => format!("The `{}` member: {phrase}.", f.json),
                None => format!("The `{}` member.", f.json),
            };
        } else if f.json != f.ident && f.json.contains('/') {
            text = format!("`{}`: {text}", f.json);
        }
        if f.default_if_absent {
            text.push_str("\n\nDecoded as `complete` when absent (results of servers older than 2026-07-28).");
        }
        let fdoc = doc_attrs(docs, Some(&text));
        field_defs.push(quote!(#fdoc pub #id: #ty,));
    }
    let extra_def = s.open.then(|| {
        quote! {
            /// Members the schema does not define, kept so that re-encoding loses nothing.
            pub extra: crate::JsonObject,
        }
    });

    // Associated consts: `CallToolRequest::METHOD`, `TextContent::TYPE`, `ParseError::CODE`.
    let assoc: Vec<TokenStream> = s
        .consts
        .iter()
        .filter(|c| c.json != "jsonrpc")
        .map(|c| {
            let cname = format_ident!("{}", super::model::field_ident(&c.json).to_uppercase());
            let value = const_tokens(&c.value);
            let ty = if c.value.is_string() { quote!(&'static str) } else { quote!(i64) };
            let text = format!("The `{}` member every `{}` carries.", c.json, name_str);
            quote!(#[doc = #text] pub const #cname: #ty = #value;)
        })
        .collect();

    // Constructor over the required fields, unless two of them would have the same type (a
    // swap would compile): such types derive `Default` and are built with a struct literal.
    let required = constructor_fields(s);
    let params = required.iter().map(|f| {
        let id = ident(&f.ident);
        let ty = param_ty(f);
        quote!(#id: #ty)
    });
    let inits = s.fields.iter().map(|f| {
        let id = ident(&f.ident);
        if f.constructor_arg {
            quote!(#id: ::std::option::Option::Some(#id.into()),)
        } else if f.required && !f.default_if_absent {
            if (f.ty == Ty::String || f.ty == Ty::Path("crate::Integer")) && !f.nullable {
                quote!(#id: #id.into(),)
            } else {
                quote!(#id,)
            }
        } else if f.default_if_absent {
            quote!(#id: ::std::default::Default::default(),)
        } else {
            quote!(#id: ::std::option::Option::None,)
        }
    });
    let extra_init = s.open.then(|| quote!(extra: crate::JsonObject::new(),));
    let constructor = if has_positional_new(s) {
        let new_doc = format!(
            "A `{name_str}` with the given required members (in the schema's alphabetical order) and no optional ones."
        );
        quote! {
            #[doc = #new_doc]
            #[allow(clippy::too_many_arguments)]
            pub fn new(#(#params),*) -> Self {
                #name { #(#inits)* #extra_init }
            }
        }
    } else {
        quote!()
    };
    let setters = s.fields.iter().filter(|f| is_optional(f)).map(|f| {
        let id = ident(&f.ident);
        let setter = format_ident!("with_{}", f.ident);
        // Setters are the only generated associated functions named `with_*`; none is hand-written.
        assert!(
            !HAND_WRITTEN.iter().any(|(t, n)| *t == s.name && setter == n),
            "{}::{setter} is also written by hand",
            s.name
        );
        let ty = ty_tokens(&f.ty);
        let first = f.doc.as_deref().and_then(|d| d.lines().map(str::trim).find(|l| !l.is_empty()));
        let text = match first {
            Some(line) => format!("Sets `{}`: {line}", f.json),
            None => format!("Sets `{}`.", f.json),
        };
        let sdoc = doc_attrs(docs, Some(&text));
        quote! {
            #sdoc
            pub fn #setter(mut self, value: impl ::std::convert::Into<#ty>) -> Self {
                self.#id = ::std::option::Option::Some(value.into());
                self
            }
        }
    });
    let literal_doc = (!has_positional_new(s)).then(|| literal_doc(s, &name_str, module, enums));

    // Serialize.
    let fixed_count = s.consts.len() + s.fields.iter().filter(|f| f.required).count();
    let mut len_terms = if fixed_count > 0 { vec![quote!(#fixed_count)] } else { Vec::new() };
    let mut ser_entries = Vec::new();
    for c in &s.consts {
        let key = &c.json;
        let value = const_tokens(&c.value);
        ser_entries.push(quote!(crate::private::entry(&mut map, #key, &#value)?;));
    }
    // Discriminators first (consts, then `resultType`), so that readers find them early.
    let mut ordered: Vec<&Field> = s.fields.iter().filter(|f| f.json == "resultType").collect();
    ordered.extend(s.fields.iter().filter(|f| f.json != "resultType"));
    for f in ordered {
        let key = &f.json;
        let id = ident(&f.ident);
        if f.required {
            ser_entries.push(quote!(crate::private::entry(&mut map, #key, &self.#id)?;));
        } else {
            len_terms.push(quote!(usize::from(self.#id.is_some())));
            ser_entries.push(
                quote!(if let ::std::option::Option::Some(value) = &self.#id { crate::private::entry(&mut map, #key, value)?; }),
            );
        }
    }
    if s.open {
        len_terms.push(quote!(self.extra.len()));
        // One shared writer instead of a loop in every serializer: less code per message (the
        // official examples touched 166 → 114 uncached instruction lines per pass in callgrind's
        // model, at 0.4% fewer instructions), and an empty `extra` costs one check.
        ser_entries.push(quote!(if !self.extra.is_empty() {
            crate::private::extra(&mut map, &self.extra)?;
        }));
    }
    if len_terms.is_empty() {
        len_terms.push(quote!(0usize));
    }

    // Deserialize.
    let slots = s.fields.iter().map(|f| {
        let slot = format_ident!("f_{}", f.ident.trim_start_matches("r#"));
        let ty = ty_tokens(&f.ty);
        let ty = if f.nullable && f.required { quote!(::std::option::Option<#ty>) } else { ty };
        quote!(let mut #slot: ::std::option::Option<#ty> = ::std::option::Option::None;)
    });
    let seen = s.consts.iter().map(|c| {
        let flag = format_ident!("seen_{}", super::model::field_ident(&c.json));
        quote!(let mut #flag = false;)
    });
    let mut arms = Vec::new();
    for f in &s.fields {
        let key = &f.json;
        let slot = format_ident!("f_{}", f.ident.trim_start_matches("r#"));
        // A member of a generated object type is decoded straight into its slot: the value is
        // not moved out through the deserializer's layers (these structs are large).
        let object = match &f.ty {
            Ty::Named(n) if !(f.nullable && f.required) => objects.get(n.as_str()),
            _ => None,
        };
        let read = match object {
            Some(expecting) => quote! {
                map.next_value_seed(crate::private::InPlace(&mut #slot, #expecting)).map_err(|e| crate::private::in_field(#key, e))?;
            },
            None => {
                let read = if f.nullable && f.required { quote!(map.next_value()) } else { read_value(&f.ty) };
                quote! {
                    #slot = ::std::option::Option::Some(#read.map_err(|e| crate::private::in_field(#key, e))?);
                }
            }
        };
        arms.push(quote! {
            #key => {
                if #slot.is_some() {
                    return ::std::result::Result::Err(crate::private::duplicate_field(#name_str, #key));
                }
                #read
            }
        });
    }
    for c in &s.consts {
        let key = &c.json;
        let flag = format_ident!("seen_{}", super::model::field_ident(&c.json));
        let check = match &c.value {
            Value::String(v) => quote!(crate::private::expect_const_str(&mut map, #name_str, #key, #v)?;),
            Value::Number(n) => {
                let n = n.as_i64().unwrap();
                quote!(crate::private::expect_const_i64(&mut map, #name_str, #key, #n)?;)
            }
            other => panic!("unsupported const {other}"),
        };
        arms.push(quote! {
            #key => {
                if #flag {
                    return ::std::result::Result::Err(crate::private::duplicate_field(#name_str, #key));
                }
                #check
                #flag = true;
            }
        });
    }
    let unknown_arm = if s.open {
        quote! {
            _ => {
                let value: ::serde_json::Value = map.next_value_seed(crate::private::FreeForm::new()).map_err(|e| crate::private::in_field(key.as_str(), e))?;
                extra.insert(key.into_owned(), value);
            }
        }
    } else {
        quote! {
            other => {
                return ::std::result::Result::Err(::serde::de::Error::custom(format_args!("`{}`: unknown field `{}`", #name_str, other)));
            }
        }
    };
    let extra_decl = s.open.then(|| quote!(let mut extra = crate::JsonObject::new();));
    let const_checks: Vec<TokenStream> = s
        .consts
        .iter()
        .map(|c| {
            let key = &c.json;
            let flag = format_ident!("seen_{}", super::model::field_ident(&c.json));
            quote!(if !#flag { return ::std::result::Result::Err(crate::private::missing_field(#name_str, #key)); })
        })
        .collect();
    let finish: Vec<TokenStream> = s
        .fields
        .iter()
        .map(|f| {
            let id = ident(&f.ident);
            let slot = format_ident!("f_{}", f.ident.trim_start_matches("r#"));
            let key = &f.json;
            if f.default_if_absent {
                quote!(#id: #slot.unwrap_or_default(),)
            } else if f.required {
                quote!(#id: #slot.ok_or_else(|| crate::private::missing_field(#name_str, #key))?,)
            } else {
                quote!(#id: #slot,)
            }
        })
        .collect();
    let extra_finish = s.open.then(|| quote!(extra,));
    let map_binding = if s.fields.is_empty() && s.consts.is_empty() && !s.open { quote!(map) } else { quote!(mut map) };

    // `visit_object_or_members`: the same decoding, but an object that lacks a required member
    // gives back every member it has (for the `Other` variant of a `resultType` union).
    let members_fallback = lenient.then(|| {
        let missing: Vec<TokenStream> = s
            .fields
            .iter()
            .filter(|f| f.required && !f.default_if_absent)
            .map(|f| {
                let slot = format_ident!("f_{}", f.ident.trim_start_matches("r#"));
                quote!(#slot.is_none())
            })
            .collect();
        let missing = if missing.is_empty() { quote!(false) } else { quote!(#(#missing)||*) };
        let keep = s.fields.iter().map(|f| {
            let slot = format_ident!("f_{}", f.ident.trim_start_matches("r#"));
            let key = &f.json;
            quote!(if let ::std::option::Option::Some(value) = &#slot {
                members.insert(#key.to_owned(), crate::private::member_value(value)?);
            })
        });
        let keep_consts = s.consts.iter().map(|c| {
            let key = &c.json;
            let value = const_tokens(&c.value);
            quote!(members.insert(#key.to_owned(), ::serde_json::Value::from(#value));)
        });
        let members_init = if s.open { quote!(let mut members = extra;) } else { quote!(let mut members = crate::JsonObject::new();) };
        let slots = s.fields.iter().map(|f| {
            let slot = format_ident!("f_{}", f.ident.trim_start_matches("r#"));
            let ty = ty_tokens(&f.ty);
            let ty = if f.nullable && f.required { quote!(::std::option::Option<#ty>) } else { ty };
            quote!(let mut #slot: ::std::option::Option<#ty> = ::std::option::Option::None;)
        });
        let seen = s.consts.iter().map(|c| {
            let flag = format_ident!("seen_{}", super::model::field_ident(&c.json));
            quote!(let mut #flag = false;)
        });
        let extra_decl = s.open.then(|| quote!(let mut extra = crate::JsonObject::new();));
        let const_checks = const_checks.clone();
        let finish = finish.clone();
        let extra_finish = extra_finish.clone();
        let arms = arms.clone();
        let unknown_arm = unknown_arm.clone();
        quote! {
            impl #name {
                /// Like `visit_object`, but an object that lacks a required member gives back its
                /// members (`Err`) instead of failing.
                fn visit_object_or_members<'de, A: ::serde::de::MapAccess<'de>>(#map_binding: A) -> ::std::result::Result<::std::result::Result<Self, crate::JsonObject>, A::Error> {
                    #(#slots)*
                    #(#seen)*
                    #extra_decl
                    while let ::std::option::Option::Some(key) = map.next_key::<crate::private::Key>()? {
                        match key.as_str() {
                            #(#arms)*
                            #unknown_arm
                        }
                    }
                    #(#const_checks)*
                    if #missing {
                        #members_init
                        #(#keep)*
                        #(#keep_consts)*
                        return ::std::result::Result::Ok(::std::result::Result::Err(members));
                    }
                    ::std::result::Result::Ok(::std::result::Result::Ok(#name { #(#finish)* #extra_finish }))
                }
            }
        }
    });

    // Scoring for unions that no member discriminates.
    let required_keys: Vec<&str> = s
        .fields
        .iter()
        .filter(|f| f.required && !f.default_if_absent)
        .map(|f| f.json.as_str())
        .chain(s.consts.iter().filter(|c| !c.value.is_string()).map(|c| c.json.as_str()))
        .collect();
    let tag_terms = s.score_tags.iter().map(|(k, vs, optional)| quote!((#k, &[#(#vs),*], #optional)));
    let declared: Vec<&str> =
        s.fields.iter().map(|f| f.json.as_str()).chain(s.consts.iter().map(|c| c.json.as_str())).collect();
    // Required members of a generated type must fit that type too (tells apart unions whose
    // members differ only below the top level, like the titled and untitled enum schemas).
    let nested = s.fields.iter().filter(|f| f.required && !f.nullable && matches!(f.ty, Ty::Named(_))).map(|f| {
        let ty = ty_tokens(&f.ty);
        let key = &f.json;
        quote!(score += <#ty as crate::private::MatchScore>::match_score(&value[#key])?;)
    });

    quote! {
        #doc
        #literal_doc
        #[derive(Debug, Clone, PartialEq, Eq, #default)]
        pub struct #name {
            #(#field_defs)*
            #extra_def
        }

        impl #name {
            #(#assoc)*
            #constructor
            #(#setters)*
        }

        impl ::serde::Serialize for #name {
            #[inline(never)]
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                use ::serde::ser::SerializeMap as _;
                let mut map = serializer.serialize_map(::std::option::Option::Some(#(#len_terms)+*))?;
                #(#ser_entries)*
                map.end()
            }
        }

        impl crate::private::VisitObject for #name {
            fn visit_object<'de, A: ::serde::de::MapAccess<'de>>(#map_binding: A) -> ::std::result::Result<Self, A::Error> {
                #(#slots)*
                #(#seen)*
                #extra_decl
                while let ::std::option::Option::Some(key) = map.next_key::<crate::private::Key>()? {
                    match key.as_str() {
                        #(#arms)*
                        #unknown_arm
                    }
                }
                #(#const_checks)*
                ::std::result::Result::Ok(#name { #(#finish)* #extra_finish })
            }
        }

        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                crate::private::deserialize_object(deserializer, #name_str)
            }
        }

        #members_fallback

        impl crate::private::MatchScore for #name {
            fn match_score(value: &::serde_json::Value) -> ::std::option::Option<usize> {
                #[allow(unused_mut)]
                let mut score = crate::private::object_score(value, &[#(#required_keys),*], &[#(#tag_terms),*], &[#(#declared),*])?;
                #(#nested)*
                ::std::option::Option::Some(score)
            }
        }
    }
}

fn union_tokens(u: &UnionDef, docs: &Docs) -> TokenStream {
    let name = ident(&u.name);
    let name_str = u.schema_name.clone().unwrap_or_else(|| u.name.clone());
    let mut doc_text = u.doc.clone().unwrap_or_default();
    let how = match &u.strategy {
        Strategy::Tag { key, .. } if key == "resultType" => "Decoded by the `resultType` member (absent: `complete`), \
            whichever member comes first: a variant whose `resultType` is its own and whose members fit \
            it; an unknown `resultType`, or members that do not fit the variant `resultType` names, \
            decode as `Other` with every member. Members the other variant declares are kept in `extra`."
            .to_owned(),
        Strategy::Tag { key, default, other, .. } => {
            let mut s = format!("Decoded by the `{key}` member");
            if let Some(d) = default {
                s.push_str(&format!(" (absent: `{}`)", u.variants[*d].ident));
            }
            if other.is_some() {
                s.push_str("; an unknown method decodes as `Other`, a known method with bad params is an error");
            }
            s + "."
        }
        Strategy::Score => "Decoded by shape: the variant whose required members and tags all fit, the most \
                            specific one winning (or, if it rejects the value, the next one that fits); a tie \
                            between variants is an error, never a guess, except for `[]`, which takes the first \
                            list variant."
            .into(),
    };
    if !doc_text.is_empty() {
        doc_text.push_str("\n\n");
    }
    doc_text.push_str(&how);
    let doc = doc_attrs(docs, Some(&doc_text));

    let mut variant_defs = Vec::new();
    let mut ser_arms = Vec::new();
    for v in &u.variants {
        let id = ident(&v.ident);
        let ty = ty_tokens(&v.ty);
        let vdoc = match (&v.tags[..], v.same_as) {
            (_, Some(j)) => format!(
                "Same shape as [`{0}::{1}`]: a decoded value is always `{1}`; build this variant to send it.",
                u.name, u.variants[j].ident
            ),
            ([], None) => match ty_phrase(&v.ty) {
                Some(phrase) if matches!(v.ty, Ty::Named(_) | Ty::Path(_)) => {
                    let vowel = phrase.trim_start_matches("[`").starts_with(['A', 'E', 'I', 'O', 'U']);
                    format!("{} {phrase}.", if vowel { "An" } else { "A" })
                }
                Some(phrase) => format!("{}{}.", phrase[..1].to_uppercase(), &phrase[1..]),
                None => String::new(),
            },
            (tags, None) => format!("`{}`", tags.join("`, `")),
        };
        let vdoc = doc_attrs(docs, Some(&vdoc));
        variant_defs.push(quote!(#vdoc #id(#ty),));
        ser_arms.push(quote!(Self::#id(value) => ::serde::Serialize::serialize(value, serializer),));
    }
    let result_type_union = matches!(&u.strategy, Strategy::Tag { key, .. } if key == "resultType");
    if result_type_union {
        variant_defs.push(quote!(
            /// A `resultType` this union does not define (an extension's, such as the tasks
            /// extension's `"task"`, or `""`), or a known one whose members do not fit its
            /// variant: every member as received.
            Other(crate::JsonObject),
        ));
        ser_arms.push(quote!(Self::Other(value) => ::serde::Serialize::serialize(value, serializer),));
    }
    let mut other_impl = TokenStream::new();
    if result_type_union {
        other_impl = settle_tokens(u);
    }
    if let Strategy::Tag { other: Some(other), .. } = &u.strategy {
        let ty = ty_tokens(other);
        variant_defs.push(quote!(
            /// A method this revision does not define (an extension), kept as received.
            Other(#ty),
        ));
        ser_arms.push(quote!(Self::Other(value) => ::serde::Serialize::serialize(value, serializer),));
        let method_arms = u.variants.iter().map(|v| {
            let id = ident(&v.ident);
            let tag = &v.tags[0];
            quote!(Self::#id(_) => #tag,)
        });
        let id_impl = match other {
            Ty::Named(n) if n.starts_with("JsonRpc") => {
                let is_request = n == "JsonRpcRequest";
                is_request.then(|| {
                    let id_arms = u.variants.iter().map(|v| {
                        let vid = ident(&v.ident);
                        quote!(Self::#vid(value) => &value.id,)
                    });
                    quote! {
                        /// The JSON-RPC id of the request.
                        pub fn id(&self) -> &crate::RequestId {
                            match self {
                                #(#id_arms)*
                                Self::Other(value) => &value.id,
                            }
                        }
                    }
                })
            }
            _ => None,
        };
        other_impl = quote! {
            impl #name {
                /// The method name, as sent on the wire.
                pub fn method(&self) -> &str {
                    match self {
                        #(#method_arms)*
                        Self::Other(value) => &value.method,
                    }
                }
                #id_impl
            }
        };
    }

    let de_impl = match &u.strategy {
        Strategy::Tag { key, exclusive_keys, default, other } => {
            let arms = u.variants.iter().enumerate().map(|(i, v)| {
                let id = ident(&v.ident);
                let ty = ty_tokens(&v.ty);
                let tags = &v.tags;
                let what = format!("`{}` `{}`", name_str, v.tags[0]);
                if key == "resultType" {
                    // Read by `resultType` or by one of the variant's own members; `settle`
                    // checks that `resultType` names this variant.
                    return if *default == Some(i) {
                        quote!(#(#tags)|* => match #ty::visit_object_or_members(map).map_err(|e| crate::private::in_variant(#what, e))? {
                            ::std::result::Result::Ok(value) => Self::#id(value).settle(),
                            ::std::result::Result::Err(members) => ::std::result::Result::Ok(Self::Other(members)),
                        },)
                    } else {
                        quote!(#(#tags)|* => <#ty as crate::private::VisitObject>::visit_object(map).map_err(|e| crate::private::in_variant(#what, e))
                            .and_then(|value| Self::#id(value).settle()),)
                    };
                }
                quote!(#(#tags)|* => <#ty as crate::private::VisitObject>::visit_object(map).map(Self::#id).map_err(|e| crate::private::in_variant(#what, e)),)
            });
            let key_arms = exclusive_keys.iter().map(|(k, i)| {
                let tag = &u.variants[*i].tags[0];
                quote!(#k => ::std::option::Option::Some(#tag),)
            });
            let variant_for_key = (!exclusive_keys.is_empty()).then(|| {
                quote! {
                    fn variant_for_key(key: &str) -> ::std::option::Option<&'static str> {
                        match key {
                            #(#key_arms)*
                            _ => ::std::option::Option::None,
                        }
                    }
                }
            });
            let all_tags: Vec<&String> = u.variants.iter().flat_map(|v| &v.tags).collect();
            let fallback = match other {
                _ if key == "resultType" => quote!(_ => crate::private::visit_members(map).map(Self::Other),),
                Some(ty) => {
                    let ty = ty_tokens(ty);
                    quote!(_ => <#ty as crate::private::VisitObject>::visit_object(map).map(Self::Other),)
                }
                None => {
                    quote!(other => ::std::result::Result::Err(crate::private::unknown_tag(#name_str, #key, other, &[#(#all_tags),*])),)
                }
            };
            let default_tag = match default {
                Some(d) => {
                    let t = &u.variants[*d].tags[0];
                    quote!(::std::option::Option::Some(#t))
                }
                None => quote!(::std::option::Option::None),
            };
            quote! {
                impl crate::private::TaggedUnion for #name {
                    const NAME: &'static str = #name_str;
                    const TAG: &'static str = #key;
                    const DEFAULT_TAG: ::std::option::Option<&'static str> = #default_tag;
                    fn dispatch<'de, A: ::serde::de::MapAccess<'de>>(tag: &str, map: crate::private::Resumed<'de, A>) -> ::std::result::Result<Self, A::Error> {
                        match tag {
                            #(#arms)*
                            #fallback
                        }
                    }
                    #variant_for_key
                }

                impl crate::private::VisitObject for #name {
                    fn visit_object<'de, A: ::serde::de::MapAccess<'de>>(map: A) -> ::std::result::Result<Self, A::Error> {
                        crate::private::visit_tagged(map)
                    }
                }

                impl<'de> ::serde::Deserialize<'de> for #name {
                    fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                        deserializer.deserialize_map(crate::private::TaggedVisitor::<Self>::new())
                    }
                }
            }
        }
        Strategy::Score => {
            let scores = u.variants.iter().map(|v| {
                let ty = ty_tokens(&v.ty);
                let id = &v.ident;
                if v.same_as.is_some() {
                    quote!((#id, ::std::option::Option::None),)
                } else {
                    quote!((#id, <#ty as crate::private::MatchScore>::match_score(value)),)
                }
            });
            let arms = u.variants.iter().enumerate().map(|(i, v)| {
                let id = ident(&v.ident);
                let vname = &v.ident;
                let ty = ty_tokens(&v.ty);
                if v.ty == Ty::Number {
                    quote!(#i => scored.decode::<crate::private::ExactNumber, D::Error>(#name_str, #vname).map(|n| Self::#id(n.0)),)
                } else if is_free_form(&v.ty) {
                    quote!(#i => scored.decode_free_form::<#ty, D::Error>(#name_str, #vname).map(Self::#id),)
                } else {
                    quote!(#i => scored.decode::<#ty, D::Error>(#name_str, #vname).map(Self::#id),)
                }
            });
            let arms: Vec<TokenStream> = arms.collect();
            quote! {
                impl<'de> ::serde::Deserialize<'de> for #name {
                    fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                        // Scored on a `Value`, decoded from the exact text.
                        let scored = <crate::private::Scored as ::serde::Deserialize>::deserialize(deserializer)?;
                        let value = &scored.value;
                        let scores = [#(#scores)*];
                        let mut first_error = ::std::option::Option::None;
                        for i in crate::private::rank_variants::<D::Error>(#name_str, value, &scores)? {
                            let decoded = match i {
                                #(#arms)*
                                _ => ::std::unreachable!(),
                            };
                            match decoded {
                                ::std::result::Result::Ok(decoded) => return ::std::result::Result::Ok(decoded),
                                ::std::result::Result::Err(e) => {
                                    first_error.get_or_insert(e);
                                }
                            }
                        }
                        ::std::result::Result::Err(first_error.expect("rank_variants gives at least one variant"))
                    }
                }
            }
        }
    };

    let score_terms = u.variants.iter().map(|v| {
        let ty = ty_tokens(&v.ty);
        quote!(<#ty as crate::private::MatchScore>::match_score(value),)
    });
    let other_score = match &u.strategy {
        Strategy::Tag { other: Some(ty), .. } => {
            let ty = ty_tokens(ty);
            quote!(<#ty as crate::private::MatchScore>::match_score(value).map(|_| 0),)
        }
        _ => quote!(),
    };

    quote! {
        #doc
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum #name {
            #(#variant_defs)*
        }

        #other_impl

        impl ::serde::Serialize for #name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                match self {
                    #(#ser_arms)*
                }
            }
        }

        #de_impl

        impl crate::private::MatchScore for #name {
            fn match_score(value: &::serde_json::Value) -> ::std::option::Option<usize> {
                [#(#score_terms)* #other_score].into_iter().flatten().max()
            }
        }
    }
}

/// `settle` of a `resultType` union: a variant read by one of its own members (servers often write
/// `resultType` last) whose `resultType` names another variant, or none, is decoded again from its
/// re-encoded text as what `resultType` names when the members fit it, else kept as `Other`.
fn settle_tokens(u: &UnionDef) -> TokenStream {
    let name = ident(&u.name);
    let fits = u.variants.iter().map(|v| {
        let id = ident(&v.ident);
        let tag = &v.tags[0];
        quote!(Self::#id(value) => value.result_type.as_str() == #tag,)
    });
    let texts = u.variants.iter().map(|v| {
        let id = ident(&v.ident);
        quote!(Self::#id(value) => (value.result_type.as_str(), ::serde_json::to_string(value)),)
    });
    let redecode = u.variants.iter().map(|v| {
        let id = ident(&v.ident);
        let tag = &v.tags[0];
        let ty = ty_tokens(&v.ty);
        quote!(#tag => ::serde_json::from_str::<#ty>(&text).ok().map(Self::#id),)
    });
    quote! {
        impl #name {
            fn settle<E: ::serde::de::Error>(self) -> ::std::result::Result<Self, E> {
                let fits = match &self {
                    #(#fits)*
                    Self::Other(_) => true,
                };
                if fits {
                    return ::std::result::Result::Ok(self);
                }
                let (result_type, text) = match &self {
                    #(#texts)*
                    Self::Other(_) => ::std::unreachable!(),
                };
                let text = text.map_err(E::custom)?;
                let settled = match result_type {
                    #(#redecode)*
                    _ => ::std::option::Option::None,
                };
                match settled {
                    ::std::option::Option::Some(value) => ::std::result::Result::Ok(value),
                    ::std::option::Option::None => crate::private::members_of(&text).map(Self::Other),
                }
            }
        }
    }
}

fn message_tokens(msg: &MessageDef, m: &Module) -> TokenStream {
    let name = ident(&msg.name);
    let name_str = &msg.name;
    let doc = &msg.doc;
    let union_tags = |schema_name: &str| -> Vec<String> {
        m.items
            .iter()
            .find_map(|i| match i {
                Item::Union(u) if u.schema_name.as_deref() == Some(schema_name) => {
                    Some(u.variants.iter().flat_map(|v| v.tags.clone()).collect())
                }
                _ => None,
            })
            .unwrap_or_default()
    };
    let notif = ident(&msg.notification);
    let notif_tags = union_tags(&msg.notification);
    let (req_variant, req_arm, req_unknown, req_ser) = match &msg.request {
        Some(r) => {
            let req = ident(r);
            let tags = union_tags(r);
            (
                quote!(
                    /// A request.
                    Request(#req),
                ),
                quote!(#(#tags)|* => <#req as crate::private::TaggedUnion>::dispatch(method, rest).map(Self::Request),),
                quote!(<#req as crate::private::TaggedUnion>::dispatch(method, rest).map(Self::Request)),
                quote!(Self::Request(value) => ::serde::Serialize::serialize(value, serializer),),
            )
        }
        None => (
            quote!(),
            quote!(),
            quote!(::std::result::Result::Err(::serde::de::Error::custom(
                format_args!("`{}`: `{}` is not a request method of this revision", #name_str, method)
            ))),
            quote!(),
        ),
    };
    let (resp_variants, resp_arms, resp_ser) = if msg.responses {
        (
            quote! {
                /// A successful response; decode `result` by the request's method.
                Response(JsonRpcResultResponse),
                /// An error response.
                Error(JsonRpcErrorResponse),
            },
            quote! {
                "result" => return <JsonRpcResultResponse as crate::private::VisitObject>::visit_object(crate::private::Resumed::new(buffered, ::std::option::Option::Some(key.0), map)).map(Self::Response),
                "error" => return <JsonRpcErrorResponse as crate::private::VisitObject>::visit_object(crate::private::Resumed::new(buffered, ::std::option::Option::Some(key.0), map)).map(Self::Error),
            },
            quote! {
                Self::Response(value) => ::serde::Serialize::serialize(value, serializer),
                Self::Error(value) => ::serde::Serialize::serialize(value, serializer),
            },
        )
    } else {
        (quote!(), quote!(), quote!())
    };
    let extension_tail = extension_tail(msg, m, &notif, &req_unknown);
    let expecting = if msg.responses { "`method`, `result` or `error`" } else { "`method`" };
    quote! {
        #[doc = #doc]
        #[derive(Debug, Clone, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum #name {
            #req_variant
            /// A notification.
            Notification(#notif),
            #resp_variants
        }

        impl ::serde::Serialize for #name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> ::std::result::Result<S::Ok, S::Error> {
                match self {
                    #req_ser
                    Self::Notification(value) => ::serde::Serialize::serialize(value, serializer),
                    #resp_ser
                }
            }
        }

        impl crate::private::VisitObject for #name {
            fn visit_object<'de, A: ::serde::de::MapAccess<'de>>(mut map: A) -> ::std::result::Result<Self, A::Error> {
                // Members before `method`/`result`/`error` (usually `jsonrpc` and `id`) are kept
                // borrowed and replayed to the variant, which checks them.
                let mut buffered = crate::private::Entries::new();
                while let ::std::option::Option::Some(key) = map.next_key::<crate::private::Key<'de>>()? {
                    match key.as_str() {
                        "method" => {
                            let method: crate::private::Str<'de> = map.next_value().map_err(|e| crate::private::in_field("method", e))?;
                            let id_first = buffered.contains_key("id");
                            return crate::private::dispatch_tag(buffered, "method", method, map, |method, rest| match method {
                                #req_arm
                                #(#notif_tags)|* => <#notif as crate::private::TaggedUnion>::dispatch(method, rest).map(Self::Notification),
                                // An extension method after an `id`: a request.
                                _ if id_first => #req_unknown,
                                _ => #extension_tail,
                            });
                        }
                        #resp_arms
                        _ => {
                            let value = crate::private::read_ahead(&mut map, key.as_str())?;
                            buffered.push((key.0, value));
                        }
                    }
                }
                ::std::result::Result::Err(::serde::de::Error::custom(format_args!("`{}`: not a JSON-RPC message of this revision (no {})", #name_str, #expecting)))
            }
        }

        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> ::std::result::Result<Self, D::Error> {
                crate::private::deserialize_object(deserializer, #name_str)
            }
        }
    }
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

/// The name of the catch-all (`Other`) variant type of a method union.
fn other_struct<'a>(m: &'a Module, schema_name: &str) -> Option<&'a StructDef> {
    match &union_named(m, schema_name)?.strategy {
        Strategy::Tag { other: Some(Ty::Named(n)), .. } => struct_named(m, n),
        _ => None,
    }
}

/// Decoding of the rest of a message whose method this revision does not define and that had no
/// `id` before its `method`. When the generic request type is the generic notification type plus
/// `id` (every revision with message types), the rest is decoded in one pass as a notification
/// with `id` held aside (`mcp_types::private::IdProbe`); an `id` turns the result into a
/// request. Otherwise the rest is buffered, then decoded as one or the other.
fn extension_tail(msg: &MessageDef, m: &Module, notif: &Ident, req_unknown: &TokenStream) -> TokenStream {
    let drain = quote! {{
        let (buffered, has_id) = crate::private::drain_checking(rest, "id")?;
        let rest = crate::private::Resumed::new(buffered, ::std::option::Option::None, crate::private::EmptyMap::<A::Error>::new());
        if has_id {
            #req_unknown
        } else {
            <#notif as crate::private::TaggedUnion>::dispatch(method, rest).map(Self::Notification)
        }
    }};
    let Some(notif_other) = other_struct(m, &msg.notification) else { return drain };
    let notif_ty = ident(&notif_other.name);
    let decode = quote! {
        <#notif_ty as crate::private::VisitObject>::visit_object(&mut probe)
    };
    let Some(req) = &msg.request else {
        // No request methods: an `id` is an error once the rest is read.
        return quote! {{
            let mut probe = crate::private::IdProbe::<'de, _, ::serde::de::IgnoredAny>::new(rest, ::std::option::Option::None);
            let notification = #decode?;
            match probe.into_id() {
                ::std::option::Option::None => ::std::result::Result::Ok(Self::Notification(#notif::Other(notification))),
                ::std::option::Option::Some(_) => #req_unknown,
            }
        }};
    };
    let Some(req_other) = other_struct(m, req) else { return drain };
    let same_shape = |a: &Field, b: &Field| {
        a.json == b.json && a.ident == b.ident && a.ty == b.ty && a.required == b.required && a.nullable == b.nullable
    };
    let req_fields: Vec<&Field> = req_other.fields.iter().filter(|f| f.json != "id").collect();
    let id_field = req_other.fields.iter().find(|f| f.json == "id" && f.required && !f.nullable);
    let fits = id_field.is_some()
        && notif_other.open == req_other.open
        && req_fields.len() == notif_other.fields.len()
        && req_fields.iter().zip(&notif_other.fields).all(|(a, b)| same_shape(a, b))
        && req_other.consts.len() == notif_other.consts.len()
        && req_other.consts.iter().zip(&notif_other.consts).all(|(a, b)| a.json == b.json && a.value == b.value);
    let Some(id_field) = id_field.filter(|_| fits) else { return drain };
    let req = ident(req);
    let req_ty = ident(&req_other.name);
    let req_name = req_other.schema_name.clone().unwrap_or_else(|| req_other.name.clone());
    let id_ty = ty_tokens(&id_field.ty);
    let id_ident = ident(&id_field.ident);
    let moves = notif_other.fields.iter().map(|f| {
        let id = ident(&f.ident);
        quote!(#id: notification.#id,)
    });
    let extra = notif_other.open.then(|| quote!(extra: notification.extra,));
    quote! {{
        let mut probe = crate::private::IdProbe::<'de, _, #id_ty>::new(rest, ::std::option::Option::Some(#req_name));
        let notification = #decode?;
        match probe.into_id() {
            ::std::option::Option::None => ::std::result::Result::Ok(Self::Notification(#notif::Other(notification))),
            ::std::option::Option::Some(#id_ident) => {
                ::std::result::Result::Ok(Self::Request(#req::Other(#req_ty { #id_ident, #(#moves)* #extra })))
            }
        }
    }}
}

fn method_impls(m: &Module) -> TokenStream {
    let mut out = TokenStream::new();
    for r in &m.requests {
        let ty = ident(&r.ty);
        let method = &r.method;
        let params = ty_tokens(&r.params);
        let result = ty_tokens(r.result.as_ref().expect("requests have results"));
        out.extend(quote! {
            impl crate::Request for #ty {
                const METHOD: &'static str = #method;
                type Params = #params;
                type Result = #result;
            }
        });
    }
    for n in &m.notifications {
        let ty = ident(&n.ty);
        let method = &n.method;
        let params = ty_tokens(&n.params);
        out.extend(quote! {
            impl crate::Notification for #ty {
                const METHOD: &'static str = #method;
                type Params = #params;
            }
        });
    }
    out
}

/// Associated functions written by hand in `mcp-types` (`src/shorthand.rs`) on generated types of
/// every revision; generated names must not take them.
const HAND_WRITTEN: &[(&str, &str)] =
    &[("PromptMessage", "user"), ("PromptMessage", "assistant"), ("CallToolResult", "text")];

/// The members `new` takes, in the schema's (alphabetical) order.
fn constructor_fields(s: &StructDef) -> Vec<&Field> {
    s.fields.iter().filter(|f| (f.required || f.constructor_arg) && !f.default_if_absent).collect()
}

/// A member with a `with_*` setter: optional in the schema and in the constructor.
fn is_optional(f: &Field) -> bool {
    !f.required && !f.constructor_arg && !f.default_if_absent
}

/// The type of a constructor parameter.
fn param_ty(f: &Field) -> TokenStream {
    let ty = ty_tokens(&f.ty);
    if f.constructor_arg || (!f.nullable && matches!(f.ty, Ty::String | Ty::Path("crate::Integer"))) {
        quote!(impl ::std::convert::Into<#ty>)
    } else if f.nullable {
        quote!(::std::option::Option<#ty>)
    } else {
        ty
    }
}

/// Whether the type gets a positional `new`: no two of its parameters have the same type, so that
/// swapping two arguments is a compile error rather than a silent mistake.
pub fn has_positional_new(s: &StructDef) -> bool {
    let types: Vec<String> = constructor_fields(s).iter().map(|f| param_ty(f).to_string()).collect();
    types.iter().enumerate().all(|(i, t)| !types[..i].contains(t))
}

/// An example value of a required member in a struct literal.
fn sample_value(s: &StructDef, f: &Field, enums: &BTreeMap<String, EnumSpec>) -> String {
    if f.nullable {
        return "None".into();
    }
    if let Ty::Named(n) = &f.ty
        && let Some(e) = enums.get(n)
        && !s.default
    {
        let value = e.values.iter().find(|v| *v == "working").unwrap_or(&e.values[0]);
        return format!("{n}::{}", pascal(value));
    }
    if f.ty != Ty::String {
        return "Default::default()".into();
    }
    let text = match f.json.as_str() {
        "uri" => "file:///notes/a.md",
        "uriTemplate" => "file:///notes/{name}",
        "name" if s.name.contains("Implementation") => "notes-client",
        "name" if s.name.contains("Argument") => "language",
        "name" if s.name.contains("Tool") => "get_weather",
        "name" => "a.md",
        "version" => "1.0.0",
        "createdAt" | "lastUpdatedAt" => "2025-11-25T10:30:00Z",
        "taskId" => "task-1",
        "text" => "Hello",
        "blob" | "data" => "SGVsbG8=",
        "mimeType" if s.name.contains("Audio") => "audio/wav",
        "mimeType" if s.name.contains("Image") => "image/png",
        "mimeType" => "text/markdown",
        "value" => "py",
        "id" => "call-1",
        "elicitationId" => "elicitation-1",
        "message" => "Please sign in",
        "url" => "https://example.com/login",
        "const" => "fr",
        "title" => "French",
        other => other,
    };
    format!("{text:?}.into()")
}

/// How a type without a positional `new` is built: a doc example with a struct literal.
fn literal_doc(s: &StructDef, name_str: &str, module: &str, enums: &BTreeMap<String, EnumSpec>) -> TokenStream {
    let required = constructor_fields(s);
    let names: Vec<String> = required.iter().map(|f| format!("`{}`", ident(&f.ident))).collect();
    let mut members: Vec<String> = required
        .iter()
        .map(|f| {
            let value = sample_value(s, f, enums);
            let id = ident(&f.ident);
            if f.constructor_arg { format!("{id}: Some({value})") } else { format!("{id}: {value}") }
        })
        .collect();
    let name = &s.name;
    let rest = if s.default {
        "`Default` fills the rest and the `with_*` setters add optional members"
    } else {
        "the optional members are named too (the type has no `Default`), or added with the `with_*` setters"
    };
    let mut imports = vec![name.clone()];
    for f in &required {
        if let Ty::Named(n) = &f.ty
            && !s.default
            && enums.contains_key(n)
            && !imports.contains(n)
        {
            imports.push(n.clone());
        }
    }
    let imports = if imports.len() == 1 { imports[0].clone() } else { format!("{{{}}}", imports.join(", ")) };
    let mut lines = vec![
        String::new(),
        format!(" No positional `new`: two required members of `{name_str}` have the same type and"),
        " could be swapped silently. Build it with a struct literal that names each required member".into(),
        format!(" ({}); {rest}.", names.join(", ")),
        String::new(),
        " ```".into(),
        format!(" use mcp_types::{module}::{imports};"),
        String::new(),
        format!(" let value = {name} {{"),
    ];
    if !s.default {
        members.extend(s.fields.iter().filter(|f| is_optional(f)).map(|f| format!("{}: None", ident(&f.ident))));
        if s.open {
            members.push("extra: Default::default()".into());
        }
    }
    lines.extend(members.iter().map(|m| format!("     {m},")));
    if s.default {
        lines.push("     ..Default::default()".into());
    }
    lines.push(" };".into());
    lines.push(" ```".into());
    quote!(#(#[doc = #lines])*)
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

/// `From<V> for U` for each variant type `V` of union `U` that no other variant wraps, and
/// shorthands for variants tagged by `type` (or `mode`) whose struct has exactly one
/// constructor parameter: `ContentBlock::text("Hello")` is `ContentBlock::Text(TextContent::new("Hello"))`.
fn union_conversions(u: &UnionDef, m: &Module, docs: &Docs) -> TokenStream {
    let name = ident(&u.name);
    let resolved: Vec<Option<&str>> = u.variants.iter().map(|v| resolve_named(m, &v.ty)).collect();
    let other = match &u.strategy {
        Strategy::Tag { other: Some(ty), .. } => resolve_named(m, ty),
        _ => None,
    };
    let mut out = TokenStream::new();
    for (i, v) in u.variants.iter().enumerate() {
        let Some(target) = resolved[i] else { continue };
        let unique = resolved.iter().filter(|r| **r == Some(target)).count() == 1 && other != Some(target);
        if !unique || struct_named(m, target).is_none() {
            continue;
        }
        let ty = ty_tokens(&v.ty);
        let vid = ident(&v.ident);
        out.extend(quote! {
            impl ::std::convert::From<#ty> for #name {
                fn from(value: #ty) -> Self {
                    Self::#vid(value)
                }
            }
        });
    }

    // The tag of each variant: its `type` (or `mode`) const, when no other variant has it.
    let key = match &u.strategy {
        Strategy::Tag { key, other: None, .. } if key == "type" || key == "mode" => key.as_str(),
        Strategy::Score => "type",
        _ => return out,
    };
    let tags: Vec<Option<&str>> = resolved
        .iter()
        .map(|r| {
            let s = struct_named(m, (*r)?)?;
            s.consts.iter().find(|c| c.json == key)?.value.as_str()
        })
        .collect();
    // Names the union's own associated items take.
    let mut taken: Vec<String> = vec!["method".into(), "id".into(), "settle".into()];
    taken.extend(HAND_WRITTEN.iter().filter(|(t, _)| *t == u.name).map(|(_, f)| f.to_string()));
    let mut fns = Vec::new();
    for (i, v) in u.variants.iter().enumerate() {
        let Some(s) = resolved[i].and_then(|t| struct_named(m, t)) else { continue };
        let Some(tag) = tags[i] else { continue };
        let unique = tags.iter().filter(|t| **t == Some(tag)).count() == 1;
        let params = constructor_fields(s);
        let [field] = &params[..] else { continue };
        if !unique || !has_positional_new(s) || !is_snake_ident(tag) || taken.iter().any(|t| t == tag) {
            continue;
        }
        taken.push(tag.to_owned());
        let fname = ident(tag);
        let arg = ident(&field.ident);
        let (param, pass) = match param_ty(field) {
            ty if field.nullable || field.constructor_arg || matches!(field.ty, Ty::String | Ty::Path(_)) => {
                (ty, quote!(#arg))
            }
            _ => {
                let ty = ty_tokens(&field.ty);
                (quote!(impl ::std::convert::Into<#ty>), quote!(#arg.into()))
            }
        };
        let sname = ident(&s.name);
        let vid = ident(&v.ident);
        let text = format!("A `{tag}` variant: [`{}::new`] with `{}`, no optional members.", s.name, field.json);
        let fdoc = doc_attrs(docs, Some(&text));
        fns.push(quote! {
            #fdoc
            pub fn #fname(#arg: #param) -> Self {
                Self::#vid(#sname::new(#pass))
            }
        });
    }
    if !fns.is_empty() {
        out.extend(quote! {
            impl #name {
                #(#fns)*
            }
        });
    }
    out
}
