//! `cargo xtask codegen`: MCP JSON schemas → `crates/mcp-types/src/generated/`.
//!
//! Pipeline, per revision:
//! 0. [`corrections`]: named fixes of known upstream schema defects (e.g. `ElicitResult.content`
//!    numbers), and members decoded more leniently than the schema says because the prose tells
//!    receivers to (`ttlMs`/`cacheScope` of cacheable results), each tested.
//! 1. [`model`]: reads `schema/<rev>/schema.json` (draft-07 `definitions` or 2020-12 `$defs`) into a
//!    small model. Schema normalisation happens here: `$ref` siblings are ignored, `allOf` members are
//!    merged, required `const` members become checked tags instead of fields, optional objects and
//!    arrays stay `Option` (so `{}`/`[]` differ from absent), `number` is `serde_json::Number`,
//!    `JSONValue`/`RequestId`/`Error`/... are replaced by shared types, and every `anyOf` becomes a
//!    union with a discriminator chosen at generation time (`method`, `type`, `mode`, `resultType`,
//!    or the most specific shape; ambiguity is reported, never resolved by declaration order).
//! 2. [`enums`]: string enums go through typify, then syn post-passes.
//! 3. [`emit`]: structs and unions are emitted with quote, with hand-rolled serde impls that keep
//!    unknown members in `extra` without `#[serde(flatten)]`. Unions and JSON-RPC messages read
//!    members met before their discriminator (`jsonrpc`, `id`, ...) ahead, kept borrowed from the
//!    input, and replay them to the variant; members of generated object types are decoded straight
//!    into their slot; an extension method is decoded in one pass, its `id` (if any) held aside.
//!    Constructors: `new` over the required members, unless two of them have the same type (a
//!    swap would compile), in which case the type derives `Default` (or, lacking one, names every
//!    member) and documents a struct literal instead; a `with_*` setter per optional member;
//!    `From<V>` for a union of which `V` is exactly one variant; and, on unions tagged by `type`
//!    (or `mode`), a shorthand named after the tag for a variant whose `new` takes one argument
//!    (`ContentBlock::text(..)`). Hand-written shorthands live in `mcp-types/src/shorthand.rs`.
//! 4. [`docs`]: descriptions become `///` lines with intra-doc links.
//! 5. prettyplease formats the file; an `@generated` header names the revision and schema sha256.
//!
//! The official extensions that publish a schema ([`EXTENSIONS`]) go through the same pipeline
//! after [`inlined::normalize`] has turned zod's output into the shapes of the core schemas; the
//! core definitions an extension restates are re-exported from the core revision's module.
//!
//! `--check` renders everything in memory and fails, naming the files, if anything differs.
//!
//! Conventions of the generated code (each rule named in a test of `tests/tests/integration/decoding.rs`, and
//! checked over generated instances of every definition by `tests/tests/integration/generated_instances.rs`):
//! - **Exactness.** An instance valid against a definition decodes into its type and encodes back
//!   to the same JSON, numbers included. `integer` members are `mcp_types::Integer` (any JSON
//!   Schema integer: beyond 64 bits, `1.0`, `1e3`, kept as written); ids and progress tokens keep
//!   such integers in `RequestId::Number`; `number` members are `serde_json::Number`, read from
//!   their text (fractions as the nearest `f64`, correctly rounded). Members read ahead of a
//!   discriminator and values of shape-scored unions are replayed from their exact text.
//! - **Free-form JSON** (`_meta` values, `arguments`, `data`, `JSONValue`, unknown members) is
//!   `serde_json::Value`, which holds integers within 64 bits and every other number as an `f64`.
//!   mcp-types does not enable serde_json's `arbitrary_precision`: it would change `Value` for
//!   every crate of a program (numbers become strings inside, untagged and flattened enums stop
//!   seeing numbers). A free-form member holding an integer it cannot hold (beyond 64 bits, or
//!   `-0`) is an error naming the member, never a silent float; so is an integer beyond 64 bits in
//!   a `number` member.
//! - **Responses read on their own** (`JSONRPCResultResponse`, older `JSONRPCResponse`): `result`
//!   is `mcp_types::RawResult`, the object's exact text, decoded by the request's method
//!   (`RawResult::decode`); the message does not say which type it has.
//! - **`resultType` unions** (`*Outcome`): decoded by `resultType` whichever member comes first; an
//!   unknown `resultType` (an extension's, such as the tasks extension's `"task"`; the spec says a
//!   client MUST consider a value it does not recognise invalid, which is the client's decision),
//!   or members that do not fit the variant `resultType` names (`{"resultType":"complete"}`
//!   without `content`), decode as `Other(JsonObject)` with every member; members of the other
//!   variant are kept in `extra`. A member declared by a variant must have that variant's type.
//! - **Shape-scored unions** take the most specific variant that fits and accepts the value, then
//!   the next; a tie is an error, except `[]` (the empty 2025-03-26 batch), which takes the first
//!   list variant.

mod corrections;
mod docs;
mod emit;
mod enums;
mod inlined;
mod model;
mod registry;
mod ty;

use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::schema::{Pins, REVISIONS, sha256_hex};

pub fn module_name(revision: &str) -> String {
    if revision == "draft" { "draft".into() } else { format!("v{}", revision.replace('-', "_")) }
}

pub fn run(root: &Path, check: bool) -> anyhow::Result<()> {
    let started = Instant::now();
    let pins = Pins::load(root)?;
    let out_dir = root.join("crates/mcp-types/src/generated");
    let test_dir = root.join("tests/src/generated");
    let mut files = Vec::new();
    for revision in REVISIONS {
        let path = root.join("schema").join(revision).join("schema.json");
        let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let sha = sha256_hex(&bytes);
        if sha != pins.schema_sha256(revision) {
            bail!("{} does not match its pin; run `cargo xtask schema sync`", path.display());
        }
        let mut schema: serde_json::Value = serde_json::from_slice(&bytes)?;
        corrections::apply(&mut schema);
        let (types, tests) = generate(revision, &schema, &sha).with_context(|| format!("generating {revision}"))?;
        files.push((out_dir.join(format!("{}.rs", module_name(revision))), types));
        files.push((test_dir.join(format!("{}.rs", module_name(revision))), tests));
    }
    for extension in EXTENSIONS {
        let pin = pins.extension(extension.pin)?;
        let path = crate::schema::extension_path(root, pin);
        let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let sha = sha256_hex(&bytes);
        if sha != pin.sha256 {
            bail!("{} does not match its pin; run `cargo xtask schema sync`", path.display());
        }
        let schema: serde_json::Value = serde_json::from_slice(&bytes)?;
        let core_path = root.join("schema").join(extension.core).join("schema.json");
        let core: serde_json::Value = serde_json::from_slice(&fs::read(&core_path)?)?;
        let (types, tests) = generate_extension(extension, pin, &schema, &core, &sha)
            .with_context(|| format!("generating extension {}", extension.pin))?;
        files.push((out_dir.join(format!("{}.rs", extension.module)), types));
        files.push((test_dir.join(format!("{}.rs", extension.module)), tests));
    }
    files.push((out_dir.join("mod.rs"), mod_rs()));

    let mut stale = Vec::new();
    for (path, text) in &files {
        if fs::read_to_string(path).ok().as_deref() != Some(text.as_str()) {
            stale.push(path.clone());
        }
    }
    let extra: Vec<_> = [&out_dir, &test_dir]
        .into_iter()
        .flat_map(|dir| {
            fs::read_dir(dir)
                .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.path()).collect::<Vec<_>>())
                .unwrap_or_default()
        })
        .filter(|p| !files.iter().any(|(f, _)| f == p))
        .collect();
    if check {
        if stale.is_empty() && extra.is_empty() {
            eprintln!("codegen --check: {} files up to date ({:.2?})", files.len(), started.elapsed());
            return Ok(());
        }
        let list: Vec<String> =
            stale.iter().chain(&extra).map(|p| format!("  {}", p.strip_prefix(root).unwrap_or(p).display())).collect();
        bail!("generated code is out of date; run `cargo xtask codegen`:\n{}", list.join("\n"));
    }
    fs::create_dir_all(&out_dir)?;
    fs::create_dir_all(&test_dir)?;
    for (path, text) in &files {
        if stale.contains(path) {
            fs::write(path, text)?;
        }
    }
    for path in &extra {
        fs::remove_file(path)?;
    }
    eprintln!(
        "codegen: {} revisions, {} extensions, {} files written, {} removed, {:.2?}",
        REVISIONS.len(),
        EXTENSIONS.len(),
        stale.len(),
        extra.len(),
        started.elapsed()
    );
    Ok(())
}

/// The revision's module of `mcp-types` and its test registry.
fn generate(revision: &str, schema: &serde_json::Value, sha: &str) -> anyhow::Result<(String, String)> {
    let module = model::build(schema)?;
    let docs = docs::Docs::new(module.names.clone());
    let tokens = emit::module(&module, &docs, &module_name(revision));
    let mut file: syn::File = syn::parse2(tokens).context("parsing emitted tokens")?;
    file.items.extend(enums::generate(&module.enums, &docs)?);
    let body = prettyplease::unparse(&file);
    let registry: syn::File = syn::parse2(registry::registry(
        &module,
        &module_name(revision),
        &format!("mcp_types::{}", module_name(revision)),
    ))
    .context("parsing registry")?;
    let tests = format!(
        "// @generated by `cargo xtask codegen` from schema/{revision}/schema.json. Do not edit by hand.\n\n{}",
        prettyplease::unparse(&registry)
    );
    let types = format!(
        "// @generated by `cargo xtask codegen` from schema/{revision}/schema.json\n\
         // (sha256 {sha}). Do not edit by hand.\n\n\
         //! Types of MCP schema revision `{revision}`, one per schema definition.\n\
         //!\n\
         //! Requests and notifications implement [`crate::Request`] and [`crate::Notification`].\n\
         //! Every object keeps members it does not know in `extra`.\n\n\
         {body}"
    );
    Ok((types, tests))
}

/// An official extension whose schema is generated like a revision's.
pub struct Extension {
    /// Module of `mcp_types::generated` (and of the test registry).
    pub module: &'static str,
    /// Its entry in `schema/pins.toml` (`[extensions.<pin>]`).
    pub pin: &'static str,
    /// The core revision whose definitions the extension's schema restates: those are re-exported
    /// from that revision's module, not generated again.
    pub core: &'static str,
    /// The cargo feature of `mcp-types` that compiles the module.
    pub feature: &'static str,
    /// Where its types are public.
    pub public: &'static str,
}

pub const EXTENSIONS: &[Extension] = &[
    Extension {
        module: "ext_tasks",
        pin: "ext-tasks",
        core: "2026-07-28",
        feature: "ext-tasks",
        public: "mcp_types::ext::tasks",
    },
    // MCP Apps' host↔app messages embed the 2025-11-25 shapes (`Tool`, `CallToolResult`, ...).
    Extension {
        module: "ext_apps",
        pin: "ext-apps",
        core: "2025-11-25",
        feature: "ext-apps",
        public: "mcp_types::ext::apps",
    },
];

/// An extension's module and test registry. Its schema is normalized first (see [`inlined`]);
/// every definition it restates from the core revision must equal the core's (descriptions aside)
/// and is re-exported from the core module, with every type generated from it.
fn generate_extension(
    extension: &Extension,
    pin: &crate::schema::ExtensionPin,
    schema: &serde_json::Value,
    core: &serde_json::Value,
    sha: &str,
) -> anyhow::Result<(String, String)> {
    let core_defs = core.get("$defs").and_then(serde_json::Value::as_object).context("core schema has no $defs")?;
    let defs = schema.get("$defs").and_then(serde_json::Value::as_object).context("extension schema has no $defs")?;
    for (name, def) in defs {
        if core_defs.get(name).is_some_and(|core_def| inlined::canonical(def) != inlined::canonical(core_def)) {
            bail!("`{name}` restates the core definition of {} with another shape", extension.core);
        }
    }
    let mut schema = schema.clone();
    inlined::normalize(&mut schema, core);
    let mut module = model::build(&schema)?;
    let core_module = model::build(core)?;
    let core_name = module_name(extension.core);
    model::reexport_core(&mut module, &core_module, &core_name);
    let docs = docs::Docs::new(module.names.clone());
    let tokens = emit::module(&module, &docs, extension.public.trim_start_matches("mcp_types::"));
    let mut file: syn::File = syn::parse2(tokens).context("parsing emitted tokens")?;
    file.items.extend(enums::generate(&module.enums, &docs)?);
    let body = prettyplease::unparse(&file);
    let registry: syn::File =
        syn::parse2(registry::registry(&module, extension.module, extension.public)).context("parsing registry")?;
    let source = format!("schema/extensions/{}", pin.path);
    let tests = format!(
        "// @generated by `cargo xtask codegen` from {source}. Do not edit by hand.\n\n{}",
        prettyplease::unparse(&registry)
    );
    let types = format!(
        "// @generated by `cargo xtask codegen` from {source}\n         // (sha256 {sha}; upstream {}). Do not edit by hand.\n\n         //! Types of the extension's schema, one per definition it adds; the core definitions it\n         //! restates are re-exported from [`crate::{core_name}`].\n\n         {body}",
        pin.upstream
    );
    Ok((types, tests))
}

fn mod_rs() -> String {
    let mut out = String::from(
        "// @generated by `cargo xtask codegen`. Do not edit by hand.\n\n\
         //! One module per MCP schema revision, each behind the cargo feature of the same name, and\n\
         //! one per official extension with a schema (public as `crate::ext::<name>`).\n\n",
    );
    for revision in REVISIONS {
        let name = module_name(revision);
        out.push_str(&format!(
            "#[cfg(feature = \"{name}\")]\n#[rustfmt::skip]\n#[allow(clippy::large_enum_variant, clippy::new_without_default)]\npub mod {name};\n"
        ));
    }
    for extension in EXTENSIONS {
        out.push_str(&format!(
            "#[cfg(feature = \"{}\")]\n#[rustfmt::skip]\n#[allow(clippy::large_enum_variant, clippy::new_without_default)]\npub(crate) mod {};\n",
            extension.feature, extension.module
        ));
    }
    out
}
