//! Structs: their fields, the hand-rolled `Serialize` and `Deserialize` (unknown members to
//! `extra`, `const` members checked, errors naming type and field), and the constructors
//! (`new` with the required members, `with_<member>` setters) with a literal example in their docs.

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use super::super::docs::Docs;
use super::super::model::*;
use super::tokens::{const_tokens, doc_attrs, ident, read_value, ty_phrase, ty_tokens};

pub(super) fn struct_tokens(
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
            pub extra: crate::free_form::JsonObject,
        }
    });

    // Associated consts: `CallToolRequest::METHOD`, `TextContent::TYPE`, `ParseError::CODE`.
    let assoc: Vec<TokenStream> = s
        .consts
        .iter()
        .filter(|c| c.json != "jsonrpc")
        .map(|c| {
            let cname = format_ident!("{}", crate::codegen::model::field_ident(&c.json).to_uppercase());
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
            if (f.ty == Ty::String || f.ty == Ty::Path("crate::Integer") || matches!(f.ty, Ty::Boxed(_))) && !f.nullable
            {
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
    let extra_init = s.open.then(|| quote!(extra: crate::free_form::JsonObject::new(),));
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
        let flag = format_ident!("seen_{}", crate::codegen::model::field_ident(&c.json));
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
                let read = if f.nullable && f.required {
                    quote!(map.next_value())
                } else {
                    read_value(&f.ty, f.free_form_alias)
                };
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
        let flag = format_ident!("seen_{}", crate::codegen::model::field_ident(&c.json));
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
    let extra_decl = s.open.then(|| quote!(let mut extra = crate::free_form::JsonObject::new();));
    let const_checks: Vec<TokenStream> = s
        .consts
        .iter()
        .map(|c| {
            let key = &c.json;
            let flag = format_ident!("seen_{}", crate::codegen::model::field_ident(&c.json));
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
        let members_init = if s.open { quote!(let mut members = extra;) } else { quote!(let mut members = crate::free_form::JsonObject::new();) };
        let slots = s.fields.iter().map(|f| {
            let slot = format_ident!("f_{}", f.ident.trim_start_matches("r#"));
            let ty = ty_tokens(&f.ty);
            let ty = if f.nullable && f.required { quote!(::std::option::Option<#ty>) } else { ty };
            quote!(let mut #slot: ::std::option::Option<#ty> = ::std::option::Option::None;)
        });
        let seen = s.consts.iter().map(|c| {
            let flag = format_ident!("seen_{}", crate::codegen::model::field_ident(&c.json));
            quote!(let mut #flag = false;)
        });
        let extra_decl = s.open.then(|| quote!(let mut extra = crate::free_form::JsonObject::new();));
        let const_checks = const_checks.clone();
        let finish = finish.clone();
        let extra_finish = extra_finish.clone();
        let arms = arms.clone();
        let unknown_arm = unknown_arm.clone();
        quote! {
            impl #name {
                /// Like `visit_object`, but an object that lacks a required member gives back its
                /// members (`Err`) instead of failing.
                fn visit_object_or_members<'de, A: ::serde::de::MapAccess<'de>>(#map_binding: A) -> ::std::result::Result<::std::result::Result<Self, crate::free_form::JsonObject>, A::Error> {
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
    let nested =
        s.fields.iter().filter(|f| f.required && !f.nullable && matches!(f.ty, Ty::Named(_) | Ty::Boxed(_))).map(|f| {
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

/// Associated functions written by hand in `mcp-types` (`src/shorthand.rs`) on generated types of
/// every revision; generated names must not take them.
pub(super) const HAND_WRITTEN: &[(&str, &str)] =
    &[("PromptMessage", "user"), ("PromptMessage", "assistant"), ("CallToolResult", "text")];

/// The members `new` takes, in the schema's (alphabetical) order.
pub(super) fn constructor_fields(s: &StructDef) -> Vec<&Field> {
    s.fields.iter().filter(|f| (f.required || f.constructor_arg) && !f.default_if_absent).collect()
}

/// A member with a `with_*` setter: optional in the schema and in the constructor.
fn is_optional(f: &Field) -> bool {
    !f.required && !f.constructor_arg && !f.default_if_absent
}

/// The type of a constructor parameter.
pub(super) fn param_ty(f: &Field) -> TokenStream {
    let ty = ty_tokens(&f.ty);
    if f.constructor_arg || (!f.nullable && matches!(f.ty, Ty::String | Ty::Path("crate::Integer") | Ty::Boxed(_))) {
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
    if f.ty == Ty::Number {
        return "0.into()".into();
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
