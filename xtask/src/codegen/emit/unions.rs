//! Unions: an enum per `anyOf`/`oneOf` and its (de)serializer, decoded by a tag member where the
//! schema has one (`method`, `type`, `resultType`) and by shape (the most specific variant that
//! fits) where it has not; the `settle` step of `resultType` unions; and the `From` conversions
//! and shorthands between a union and its variants.

use proc_macro2::TokenStream;
use quote::quote;

use super::super::docs::Docs;
use super::super::model::*;
use super::structs::{HAND_WRITTEN, constructor_fields, has_positional_new, param_ty};
use super::tokens::{
    doc_attrs, ident, is_free_form, is_snake_ident, resolve_named, struct_named, ty_phrase, ty_tokens,
};

pub(super) fn union_tokens(u: &UnionDef, docs: &Docs) -> TokenStream {
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
            Other(crate::free_form::JsonObject),
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
                        pub fn id(&self) -> &crate::common::RequestId {
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
                } else if v.free_form_alias || is_free_form(&v.ty) {
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

/// `From<V> for U` for each variant type `V` of union `U` that no other variant wraps, and
/// shorthands for variants tagged by `type` (or `mode`) whose struct has exactly one
/// constructor parameter: `ContentBlock::text("Hello")` is `ContentBlock::Text(TextContent::new("Hello"))`.
pub(super) fn union_conversions(u: &UnionDef, m: &Module, docs: &Docs) -> TokenStream {
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
