//! String enums (`LoggingLevel`, `Role`, `cacheScope`, ...) are what typify does well: it emits
//! serde derives with renames, `Display`, `FromStr` and `TryFrom`. Its output goes through syn
//! post-passes: the per-module `error` module is replaced by the crate's shared error type, the
//! parse error names the enum, docs are rewritten, and `LoggingLevel` is ordered by severity.

use std::collections::BTreeMap;

use anyhow::Context;
use syn::visit_mut::VisitMut;

use super::docs::Docs;
use super::model::EnumSpec;

/// RFC 5424 severities, least severe first (the schema lists them alphabetically).
const SEVERITY: &[&str] = &["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

pub fn generate(enums: &BTreeMap<String, EnumSpec>, docs: &Docs) -> anyhow::Result<Vec<syn::Item>> {
    if enums.is_empty() {
        return Ok(Vec::new());
    }
    let definitions: serde_json::Map<String, serde_json::Value> = enums
        .iter()
        .map(|(name, spec)| (name.clone(), serde_json::json!({ "type": "string", "enum": spec.values })))
        .collect();
    let root: schemars::schema::RootSchema =
        serde_json::from_value(serde_json::json!({ "definitions": definitions })).context("enum schemas")?;
    let mut space = typify::TypeSpace::new(&typify::TypeSpaceSettings::default());
    space.add_ref_types(root.definitions).context("typify")?;
    let mut file: syn::File = syn::parse2(space.to_stream()).context("parsing typify output")?;

    file.items.retain(|item| !matches!(item, syn::Item::Mod(m) if m.ident == "error"));
    let mut pass = PostPass { current: None };
    pass.visit_file_mut(&mut file);
    for item in &mut file.items {
        if let syn::Item::Enum(e) = item {
            let name = e.ident.to_string();
            let spec = &enums[&name];
            e.attrs.retain(|a| !a.path().is_ident("doc"));
            let mut text = spec.doc.clone().unwrap_or_else(|| format!("The schema's `{name}` values."));
            if name == "LoggingLevel" {
                text.push_str("\n\nOrdered by severity: `Debug < Info < ... < Emergency`.");
                e.variants = sort_by_severity(&e.variants);
            }
            // Each variant names the string it stands for.
            for variant in e.variants.iter_mut() {
                let wire = serde_rename(&variant.attrs).unwrap_or_else(|| variant.ident.to_string());
                let line = format!(" `\"{wire}\"`");
                variant.attrs.retain(|a| !a.path().is_ident("doc"));
                variant.attrs.insert(0, syn::parse_quote!(#[doc = #line]));
            }
            let lines = docs.lines(&text);
            let attrs: Vec<syn::Attribute> = lines.iter().map(|l| syn::parse_quote!(#[doc = #l])).collect();
            e.attrs.splice(0..0, attrs);
        }
    }
    Ok(file.items)
}

/// The `rename` of a `#[serde(rename = "...")]` attribute.
fn serde_rename(attrs: &[syn::Attribute]) -> Option<String> {
    let mut rename = None;
    for attr in attrs.iter().filter(|a| a.path().is_ident("serde")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                rename = Some(meta.value()?.parse::<syn::LitStr>()?.value());
            }
            Ok(())
        });
    }
    rename
}

fn sort_by_severity(
    variants: &syn::punctuated::Punctuated<syn::Variant, syn::token::Comma>,
) -> syn::punctuated::Punctuated<syn::Variant, syn::token::Comma> {
    let mut sorted: Vec<syn::Variant> = variants.iter().cloned().collect();
    sorted.sort_by_key(|v| {
        let lower = v.ident.to_string().to_lowercase();
        SEVERITY.iter().position(|s| *s == lower).unwrap_or(usize::MAX)
    });
    sorted.into_iter().collect()
}

struct PostPass {
    /// Type whose `impl` is being visited.
    current: Option<String>,
}

impl VisitMut for PostPass {
    fn visit_item_impl_mut(&mut self, item: &mut syn::ItemImpl) {
        if let syn::Type::Path(p) = &*item.self_ty {
            self.current = p.path.segments.last().map(|s| s.ident.to_string());
        }
        syn::visit_mut::visit_item_impl_mut(self, item);
        self.current = None;
    }

    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments == ["self", "error", "ConversionError"] {
            *path = syn::parse_quote!(crate::private::ConversionError);
            return;
        }
        syn::visit_mut::visit_path_mut(self, path);
    }

    fn visit_lit_str_mut(&mut self, lit: &mut syn::LitStr) {
        if lit.value() == "invalid value"
            && let Some(ty) = &self.current
        {
            let text = format!("not a valid `{ty}` value");
            *lit = syn::LitStr::new(&text, lit.span());
        }
    }
}
