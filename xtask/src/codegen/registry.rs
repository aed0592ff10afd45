//! The test registry: for every revision, a table of its types and unions, so that the example
//! and fixture tests in `tests/` can decode a file by the schema name of its folder and check which
//! variant each union picks. Generated beside the types so the two never drift apart.

use proc_macro2::TokenStream;
use quote::quote;

use super::emit::{ident, is_free_form, ty_tokens};
use super::model::{Item, Module, Strategy, Ty};

/// `path`: where the module's types are public (`mcp_types::v2026_07_28`, `mcp_types::ext::apps`).
pub fn registry(module: &Module, module_name: &str, path: &str) -> TokenStream {
    let m = ident(module_name);
    let path: syn::Path = syn::parse_str(path).expect("a path");
    let mut types = Vec::new();
    for item in &module.items {
        let (schema, ty) = match item {
            Item::Struct(s) => match &s.schema_name {
                Some(n) => (n.clone(), ident(&s.name)),
                None => continue,
            },
            Item::Union(u) => match &u.schema_name {
                Some(n) => (n.clone(), ident(&u.name)),
                None => continue,
            },
            Item::Alias(a) => {
                let Some((schema, _)) = module.names.iter().find(|(_, r)| **r == a.name) else { continue };
                if is_free_form(&a.ty) {
                    // Free-form JSON on its own: decoded as the types decode free-form members.
                    let ty = ident(&a.name);
                    types.push(quote!(crate::TypeEntry { schema: #schema, roundtrip: crate::roundtrip_free_form::<#m::#ty>, text: crate::roundtrip_free_form_text::<#m::#ty> },));
                    continue;
                }
                (schema.clone(), ident(&a.name))
            }
            Item::Reexport { schema_name, .. } if schema_name.is_empty() => continue,
            Item::Reexport { path, schema_name, .. } => {
                let path: syn::Path = syn::parse_str(&path.replace("crate::", "mcp_types::")).unwrap();
                types.push(quote!(crate::TypeEntry { schema: #schema_name, roundtrip: crate::roundtrip::<#path>, text: crate::roundtrip_text::<#path> },));
                continue;
            }
        };
        types.push(quote!(crate::TypeEntry { schema: #schema, roundtrip: crate::roundtrip::<#m::#ty>, text: crate::roundtrip_text::<#m::#ty> },));
    }
    for name in module.enums.keys() {
        if let Some((schema, _)) = module.names.iter().find(|(_, r)| *r == name) {
            let ty = ident(name);
            types.push(quote!(crate::TypeEntry { schema: #schema, roundtrip: crate::roundtrip::<#m::#ty>, text: crate::roundtrip_text::<#m::#ty> },));
        }
    }

    let schema_of = |ty: &Ty| -> Option<String> {
        let Ty::Named(n) = ty else { return None };
        module.names.iter().find(|(_, r)| *r == n).map(|(s, _)| s.clone())
    };
    let mut unions = Vec::new();
    for item in &module.items {
        let Item::Union(u) = item else { continue };
        let uname = ident(&u.name);
        let label = u.schema_name.clone().unwrap_or_else(|| u.name.clone());
        let members: Vec<TokenStream> = u
            .variants
            .iter()
            .filter_map(|v| {
                // A variant with the same shape as an earlier one decodes as that one.
                let lands_in = &v.same_as.map_or(v, |j| &u.variants[j]).ident;
                schema_of(&v.ty).map(|s| quote!((#s, #lands_in),))
            })
            .collect();
        let arms = u.variants.iter().map(|v| {
            let id = ident(&v.ident);
            let name = &v.ident;
            quote!(#m::#uname::#id(_) => #name,)
        });
        let other = matches!(&u.strategy, Strategy::Tag { other: Some(_), .. })
            .then(|| quote!(#m::#uname::Other(_) => "Other",));
        let text_other = other.clone();
        let text_arms = u.variants.iter().map(|v| {
            let id = ident(&v.ident);
            let name = &v.ident;
            quote!(#m::#uname::#id(_) => #name,)
        });
        unions.push(quote! {
            crate::UnionEntry {
                union: #label,
                members: &[#(#members)*],
                decode: |text| {
                    let value: #m::#uname = serde_json::from_str(text).map_err(|e| e.to_string())?;
                                        let variant = match &value { #(#arms)* #other _ => "?" };
                    Ok((variant, serde_json::to_value(&value).map_err(|e| e.to_string())?))
                },
                decode_text: |text| {
                    let value: #m::#uname = serde_json::from_str(text).map_err(|e| e.to_string())?;
                    let variant = match &value { #(#text_arms)* #text_other _ => "?" };
                    Ok((variant, serde_json::to_string(&value).map_err(|e| e.to_string())?))
                },
            },
        });
    }
    for msg in &module.messages {
        let mname = ident(&msg.name);
        let mut members = Vec::new();
        let mut push_union = |union: &str, variant: &str| {
            for item in &module.items {
                if let Item::Union(u) = item
                    && u.schema_name.as_deref() == Some(union)
                {
                    for v in &u.variants {
                        if let Some(s) = schema_of(&v.ty) {
                            members.push(quote!((#s, #variant),));
                        }
                    }
                }
            }
        };
        if let Some(r) = &msg.request {
            push_union(r, "Request");
        }
        push_union(&msg.notification, "Notification");
        let response_arms = if msg.responses {
            for schema in module.names.keys() {
                if schema.ends_with("ResultResponse") {
                    members.push(quote!((#schema, "Response"),));
                } else if is_error_response(module, schema) {
                    members.push(quote!((#schema, "Error"),));
                }
            }
            quote!(#m::#mname::Response(_) => "Response", #m::#mname::Error(_) => "Error",)
        } else {
            quote!()
        };
        let request_arm = msg.request.as_ref().map(|_| quote!(#m::#mname::Request(_) => "Request",));
        let label = &msg.name;
        let text_request_arm = request_arm.clone();
        let text_response_arms = response_arms.clone();
        unions.push(quote! {
            crate::UnionEntry {
                union: #label,
                members: &[#(#members)*],
                decode: |text| {
                    let value: #m::#mname = serde_json::from_str(text).map_err(|e| e.to_string())?;
                                        let variant = match &value { #request_arm #m::#mname::Notification(_) => "Notification", #response_arms _ => "?" };
                    Ok((variant, serde_json::to_value(&value).map_err(|e| e.to_string())?))
                },
                decode_text: |text| {
                    let value: #m::#mname = serde_json::from_str(text).map_err(|e| e.to_string())?;
                    let variant = match &value { #text_request_arm #m::#mname::Notification(_) => "Notification", #text_response_arms _ => "?" };
                    Ok((variant, serde_json::to_string(&value).map_err(|e| e.to_string())?))
                },
            },
        });
    }

    let results = module.requests.iter().map(|r| {
        let method = &r.method;
        let result = ty_tokens(r.result.as_ref().unwrap());
        let outcome = match r.result.as_ref().unwrap() {
            Ty::Named(n) if n.ends_with("Outcome") => {
                let n = ident(n);
                quote! {
                                        match &value { #m::#n::Complete(_) => "Complete", #m::#n::InputRequired(_) => "InputRequired", #m::#n::Other(_) => "Other", _ => "?" }
                }
            }
            _ => quote!("Complete"),
        };
        let request = module.names.iter().find(|(_, rust)| **rust == r.ty).map(|(schema, _)| schema.clone()).unwrap_or_default();
        quote! {
            crate::ResultEntry {
                request: #request,
                method: #method,
                decode: |result| {
                    let value: #m::#result = serde_json::from_value(result.clone()).map_err(|e| e.to_string())?;
                    let variant = #outcome;
                    Ok((variant, serde_json::to_value(&value).map_err(|e| e.to_string())?))
                },
            },
        }
    });

    let import = if path.segments.last().is_some_and(|last| last.ident == m) {
        quote!(use #path;)
    } else {
        quote!(use #path as #m;)
    };
    quote! {
        #import
        pub fn types() -> Vec<crate::TypeEntry> { vec![#(#types)*] }
        pub fn unions() -> Vec<crate::UnionEntry> { vec![#(#unions)*] }
        pub fn results() -> Vec<crate::ResultEntry> { vec![#(#results)*] }
    }
}

/// Error types that are whole JSON-RPC error responses (`JSONRPCErrorResponse` and the typed
/// 2026-07-28 errors), not bare error objects.
fn is_error_response(module: &Module, schema: &str) -> bool {
    module.items.iter().any(|item| match item {
        Item::Struct(s) => s.schema_name.as_deref() == Some(schema) && s.fields.iter().any(|f| f.json == "error"),
        _ => false,
    })
}
