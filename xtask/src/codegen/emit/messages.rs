//! JSON-RPC messages: the message unions keyed by `method` (an extension method decodes as
//! `Other`, with the rest of the message read once where it can be), and the `Request` and
//! `Notification` impls (`METHOD`, `Params`, `Result`) of each method.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use super::super::model::*;
use super::tokens::{ident, struct_named, ty_tokens, union_named};

pub(super) fn message_tokens(msg: &MessageDef, m: &Module) -> TokenStream {
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

pub(super) fn method_impls(m: &Module) -> TokenStream {
    let mut out = TokenStream::new();
    for r in &m.requests {
        let ty = ident(&r.ty);
        let method = &r.method;
        let params = ty_tokens(&r.params);
        let result = ty_tokens(r.result.as_ref().expect("requests have results"));
        out.extend(quote! {
            impl crate::method::Request for #ty {
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
            impl crate::method::Notification for #ty {
                const METHOD: &'static str = #method;
                type Params = #params;
            }
        });
    }
    out
}
