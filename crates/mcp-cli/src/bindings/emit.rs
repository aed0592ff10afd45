//! The generated module: typify's types per tool, and the hand-shaped parts around them
//! (handles, error type, prompt arguments, URI builders, the contract's digests).

use std::collections::BTreeMap;

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use serde_json::Value;

use super::names::{camel, unique_snakes};
use super::schema::{Untyped, item_ident, tool_types};
use super::{BindingsError, MARKER, Options};
use crate::contract::{Contract, EntryKind};

pub fn generate(contract: &Contract, options: &Options) -> Result<String, BindingsError> {
    let entries = contract.canonical_entries();
    for pair in entries.windows(2) {
        if pair[0].0 == pair[1].0 && pair[0].1 == pair[1].1 {
            return Err(BindingsError::DuplicateName { kind: pair[0].0.as_str(), name: pair[0].1.clone() });
        }
    }
    let of = |kind: EntryKind| entries.iter().filter(move |e| e.0 == kind).map(|(_, name, v)| (name.as_str(), v));
    let tools: Vec<_> = of(EntryKind::Tool).collect();
    let prompts: Vec<_> = of(EntryKind::Prompt).collect();
    let templates: Vec<_> = of(EntryKind::Template).collect();

    let mut names = Names::default();
    let mut items = vec![contract_digests(contract)];
    items.extend(tools_part(&tools, &mut names)?);
    items.extend(prompts_part(&prompts, &mut names)?);
    items.extend(templates_part(&templates, &mut names)?);

    let file: syn::File = syn::parse2(quote!(#(#items)*))
        .map_err(|e| BindingsError::Internal(format!("{e} in\n{}", quote!(#(#items)*))))?;
    let mut text = format!("{MARKER}. Do not edit: regenerate it.\n");
    if let Some(command) = &options.regenerate_with {
        text.push_str(&format!("// Regenerate with: {}\n", command.replace(['\r', '\n'], " ")));
    }
    text.push_str(
        "// Typed bindings for an MCP server's tools, prompts and resource templates; the digests of the\n\
         // contract they were generated from are at the end (`mcp codegen --check` compares them).\n\n",
    );
    text.push_str(&prettyplease::unparse(&file));
    Ok(text)
}

/// The top-level names given out, each with the entry it is for, so that two entries whose
/// Rust names meet are an error rather than code that does not compile. Types and values are
/// separate namespaces, as in Rust.
#[derive(Default)]
struct Names {
    types: BTreeMap<String, String>,
    values: BTreeMap<String, String>,
}

impl Names {
    fn claim(&mut self, value: bool, ident: &str, owner: String) -> Result<syn::Ident, BindingsError> {
        let space = if value { &mut self.values } else { &mut self.types };
        if let Some(first) = space.get(ident) {
            return Err(BindingsError::NameClash { ident: ident.to_owned(), first: first.clone(), second: owner });
        }
        space.insert(ident.to_owned(), owner);
        Ok(syn::Ident::new(ident, proc_macro2::Span::call_site()))
    }
}

/// `#[doc]` attributes, one per line, so that prettyplease prints `///` lines.
fn docs(text: &str) -> TokenStream {
    let lines = text.lines().map(|line| format!(" {line}"));
    quote!(#(#[doc = #lines])*)
}

fn description(entry: &Value) -> Option<&str> {
    entry.get("description").and_then(Value::as_str).filter(|d| !d.trim().is_empty())
}

fn contract_digests(contract: &Contract) -> TokenStream {
    let sha = contract.sha256();
    let rows = contract.digests().into_iter().map(|d| {
        let (kind, name, sha) = (d.kind.as_str(), d.name, d.sha256);
        quote!((#kind, #name, #sha))
    });
    quote! {
        /// sha256 of the canonical JSON of the contract these bindings were generated from.
        #[allow(dead_code)] // for `mcp codegen --check`, not for the program
        pub const CONTRACT_SHA256: &str = #sha;
        /// Each entry of that contract: its kind (`tool`, `prompt`, `template`), its name and the
        /// sha256 of its canonical JSON.
        #[allow(dead_code)]
        pub const CONTRACT_ENTRIES: &[(&str, &str, &str)] = &[#(#rows),*];
    }
}

fn tools_part(tools: &[(&str, &Value)], names: &mut Names) -> Result<Vec<TokenStream>, BindingsError> {
    if tools.is_empty() {
        return Ok(Vec::new());
    }
    let snakes = unique_snakes(tools.iter().map(|t| t.0));
    let mut items = Vec::new();
    let mut methods = Vec::new();
    let mut any_output = false;
    for ((name, tool), snake) in tools.iter().zip(&snakes) {
        let owner = format!("tool `{name}`");
        let camel = camel(snake);
        let schema_error = |reason: String| BindingsError::Schema { tool: (*name).to_owned(), reason };
        let input = tool.get("inputSchema").ok_or_else(|| schema_error("it has no inputSchema".into()))?;
        let args_name = format!("{camel}Args");
        let output_name = format!("{camel}Output");
        let output = tool.get("outputSchema").map(|schema| (output_name.as_str(), schema));
        // What typify cannot express is bound untyped, with the reason in the docs: first the
        // output (the result stays a `CallToolResult`), then the arguments (a JSON object).
        let (types, output, untyped) = match tool_types(&args_name, input, output) {
            Ok(types) => (types, output, None),
            Err(Untyped::Invalid(reason)) => return Err(schema_error(reason)),
            Err(Untyped::Unsupported(reason)) => match output.map(|_| tool_types(&args_name, input, None)) {
                Some(Ok(types)) => (
                    types,
                    None,
                    Some(format!(
                        "Its outputSchema could not be typed ({reason}): the result is the plain `CallToolResult`."
                    )),
                ),
                Some(Err(Untyped::Invalid(reason))) => return Err(schema_error(reason)),
                _ => {
                    let ident = format_ident!("{}", args_name);
                    let alias: syn::Item = syn::parse_quote! {
                        /// The arguments, as a JSON object: the schema could not be typed.
                        pub type #ident = ::serde_json::Map<::std::string::String, ::serde_json::Value>;
                    };
                    (
                        vec![alias],
                        None,
                        Some(format!(
                            "Its schemas could not be typed ({reason}): the arguments are a JSON object and the result the plain `CallToolResult`."
                        )),
                    )
                }
            },
        };
        for wanted in std::iter::once(&args_name).chain(output.map(|_| &output_name)) {
            if !types.iter().any(|item| item_ident(item).is_some_and(|i| i == wanted)) {
                return Err(schema_error(format!("typify did not name a type `{wanted}`")));
            }
        }

        let module = names.claim(false, snake, owner.clone())?;
        let args = names.claim(false, &args_name, owner.clone())?;
        let module_doc = match &untyped {
            Some(why) => format!(" Types of tool `{name}`'s schemas. {why}"),
            None => format!(" Types of tool `{name}`'s schemas."),
        };
        let type_items = &types;
        // typify's output is not ours to tidy: clippy's lints stay off inside it, and so does
        // dead_code (typify emits `default_*` helpers that some schemas leave unused).
        items.push(quote! {
            #[doc = #module_doc]
            #[allow(clippy::all, dead_code)]
            pub mod #module { #(#type_items)* }
            pub use self::#module::#args;
        });
        let returns = if output.is_some() {
            any_output = true;
            let output = names.claim(false, &output_name, owner.clone())?;
            items.push(quote!(pub use self::#module::#output;));
            quote!(#output)
        } else {
            quote!(::mcp_client::types::CallToolResult)
        };
        let decode = if output.is_some() { quote!(structured_output(result)) } else { quote!(tool_result(result)) };
        let method = format_ident!("{}", snake);
        let mut doc = description(tool).map(|d| format!("{d}\n\n")).unwrap_or_default();
        doc.push_str(&format!("Calls tool `{name}`."));
        if let Some(why) = &untyped {
            doc.push_str(&format!("\n\n{why}"));
        }
        let doc = docs(&doc);
        methods.push(quote! {
            #doc
            pub async fn #method(&self, args: #args) -> ::std::result::Result<#returns, ToolError> {
                let result = self.client.call_tool(#name, &args).await?;
                #decode
            }
        });
    }
    names.claim(false, "Tools", "the tools' handle".into())?;
    names.claim(false, "ToolError", "the tools' error".into())?;
    items.push(quote! {
        /// The server's tools, one method each: arguments and results typed by the tools' schemas.
        #[derive(Debug, Clone, Copy)]
        pub struct Tools<'a> {
            client: &'a ::mcp_client::Client,
        }

        impl<'a> Tools<'a> {
            /// The tools of the server `client` is connected to.
            pub fn new(client: &'a ::mcp_client::Client) -> Self {
                Tools { client }
            }

            #(#methods)*
        }

        /// Why a typed tool call has no result.
        #[derive(Debug)]
        pub enum ToolError {
            /// The call itself failed: transport, timeout, or an error answer (an unknown tool,
            /// arguments the server refused).
            Client(::mcp_client::Error),
            /// The tool ran and reported a failure (`isError: true`); its content says why.
            Tool(::std::boxed::Box<::mcp_client::types::CallToolResult>),
            /// The tool's `structuredContent` does not fit its output type.
            Decode(::serde_json::Error),
            /// The tool declares an output schema but its result has no `structuredContent`.
            MissingStructuredContent(::std::boxed::Box<::mcp_client::types::CallToolResult>),
        }

        impl ::std::fmt::Display for ToolError {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                match self {
                    ToolError::Client(e) => ::std::fmt::Display::fmt(e, f),
                    ToolError::Tool(result) => {
                        f.write_str("the tool failed")?;
                        for block in &result.content {
                            if let ::mcp_client::types::ContentBlock::Text(text) = block {
                                write!(f, ": {}", text.text)?;
                            }
                        }
                        Ok(())
                    }
                    ToolError::Decode(e) => write!(f, "the tool's structured content does not fit its output type: {e}"),
                    ToolError::MissingStructuredContent(_) => {
                        f.write_str("the tool declares an output schema but returned no structured content")
                    }
                }
            }
        }

        impl ::std::error::Error for ToolError {
            fn source(&self) -> ::std::option::Option<&(dyn ::std::error::Error + 'static)> {
                match self {
                    ToolError::Client(e) => Some(e),
                    ToolError::Decode(e) => Some(e),
                    ToolError::Tool(_) | ToolError::MissingStructuredContent(_) => None,
                }
            }
        }

        impl ::std::convert::From<::mcp_client::Error> for ToolError {
            fn from(e: ::mcp_client::Error) -> Self {
                ToolError::Client(e)
            }
        }

        /// The result, unless the tool reported a failure.
        #[allow(clippy::result_large_err)]
        fn tool_result(
            result: ::mcp_client::types::CallToolResult,
        ) -> ::std::result::Result<::mcp_client::types::CallToolResult, ToolError> {
            if result.is_error == Some(true) {
                return Err(ToolError::Tool(::std::boxed::Box::new(result)));
            }
            Ok(result)
        }
    });
    if any_output {
        items.push(quote! {
            /// The result's `structuredContent` as the tool's output type.
            #[allow(clippy::result_large_err)]
            fn structured_output<T: ::serde::de::DeserializeOwned>(
                result: ::mcp_client::types::CallToolResult,
            ) -> ::std::result::Result<T, ToolError> {
                let mut result = tool_result(result)?;
                match result.structured_content.take() {
                    Some(value) => ::serde_json::from_value(value).map_err(ToolError::Decode),
                    None => Err(ToolError::MissingStructuredContent(::std::boxed::Box::new(result))),
                }
            }
        });
    }
    Ok(items)
}

fn prompts_part(prompts: &[(&str, &Value)], names: &mut Names) -> Result<Vec<TokenStream>, BindingsError> {
    if prompts.is_empty() {
        return Ok(Vec::new());
    }
    let snakes = unique_snakes(prompts.iter().map(|p| p.0));
    let mut items = Vec::new();
    let mut methods = Vec::new();
    for ((name, prompt), snake) in prompts.iter().zip(&snakes) {
        let owner = format!("prompt `{name}`");
        let args = names.claim(false, &format!("{}PromptArgs", camel(snake)), owner)?;
        let arguments: Vec<&Value> =
            prompt.get("arguments").and_then(Value::as_array).map(|a| a.iter().collect()).unwrap_or_default();
        let arg_names: Vec<&str> = arguments.iter().map(|a| a["name"].as_str().unwrap_or_default()).collect();
        let mut all_optional = true;
        let fields = arguments.iter().zip(&arg_names).zip(unique_snakes(arg_names.iter().copied())).map(
            |((argument, wire), field)| {
                let field = format_ident!("{}", field);
                let doc = docs(description(argument).unwrap_or(&format!("Argument `{wire}`.")));
                let rename = (field != wire).then(|| quote!(#[serde(rename = #wire)]));
                if argument.get("required").and_then(Value::as_bool) == Some(true) {
                    all_optional = false;
                    quote!(#doc #rename pub #field: ::std::string::String,)
                } else {
                    quote! {
                        #doc #rename
                        #[serde(default, skip_serializing_if = "::std::option::Option::is_none")]
                        pub #field: ::std::option::Option<::std::string::String>,
                    }
                }
            },
        );
        let fields: Vec<TokenStream> = fields.collect();
        let default = all_optional.then(|| quote!(Default,));
        let struct_doc = docs(&format!("The arguments of prompt `{name}`."));
        items.push(quote! {
            #struct_doc
            #[derive(Debug, Clone, #default PartialEq, Eq, ::serde::Serialize, ::serde::Deserialize)]
            pub struct #args { #(#fields)* }
        });
        let method = format_ident!("{}", snake);
        let mut doc = description(prompt).map(|d| format!("{d}\n\n")).unwrap_or_default();
        doc.push_str(&format!("Gets prompt `{name}`."));
        let doc = docs(&doc);
        methods.push(quote! {
            #doc
            pub async fn #method(
                &self,
                args: #args,
            ) -> ::std::result::Result<::mcp_client::types::GetPromptResult, ::mcp_client::Error> {
                self.client.get_prompt(#name, &args).await
            }
        });
    }
    names.claim(false, "Prompts", "the prompts' handle".into())?;
    items.push(quote! {
        /// The server's prompts, one method each, with typed arguments.
        #[derive(Debug, Clone, Copy)]
        pub struct Prompts<'a> {
            client: &'a ::mcp_client::Client,
        }

        impl<'a> Prompts<'a> {
            /// The prompts of the server `client` is connected to.
            pub fn new(client: &'a ::mcp_client::Client) -> Self {
                Prompts { client }
            }

            #(#methods)*
        }
    });
    Ok(items)
}

/// One RFC 6570 expression: its operator (`None` for a simple `{var}`) and its variables, each
/// with an optional prefix length (`{var:3}`).
struct Expression {
    operator: Option<char>,
    variables: Vec<(String, Option<usize>)>,
}

enum Part {
    Literal(String),
    Expression(Expression),
}

fn parse_template(template: &str) -> Result<Vec<Part>, String> {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').ok_or("has an unclosed `{`")? + open;
        if open > 0 {
            parts.push(Part::Literal(rest[..open].to_owned()));
        }
        let mut body = &rest[open + 1..close];
        let operator = body.chars().next().filter(|c| "+#./;?&".contains(*c));
        if let Some(op) = operator {
            body = &body[op.len_utf8()..];
        }
        let mut variables = Vec::new();
        for spec in body.split(',') {
            let spec = spec.trim_end_matches('*');
            let (name, prefix) = match spec.split_once(':') {
                Some((name, n)) => (name, Some(n.parse().map_err(|_| format!("has a bad prefix length in `{spec}`"))?)),
                None => (spec, None),
            };
            if name.is_empty() {
                return Err(format!("has an empty variable in `{}`", &rest[open..=close]));
            }
            variables.push((name.to_owned(), prefix));
        }
        parts.push(Part::Expression(Expression { operator, variables }));
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err("has a `}` that closes no expression".into());
    }
    if !rest.is_empty() {
        parts.push(Part::Literal(rest.to_owned()));
    }
    Ok(parts)
}

fn templates_part(templates: &[(&str, &Value)], names: &mut Names) -> Result<Vec<TokenStream>, BindingsError> {
    if templates.is_empty() {
        return Ok(Vec::new());
    }
    let snakes = unique_snakes(templates.iter().map(|t| t.0));
    let mut items = Vec::new();
    let mut methods = Vec::new();
    for ((name, template), snake) in templates.iter().zip(&snakes) {
        let owner = format!("template `{name}`");
        let uri_template = template.get("uriTemplate").and_then(Value::as_str).unwrap_or_default();
        let parts = parse_template(uri_template).map_err(|reason| BindingsError::Template {
            template: (*name).to_owned(),
            reason: format!("its uriTemplate `{uri_template}` {reason}"),
        })?;
        // Each variable once, in order of first use.
        let mut variables: Vec<&str> = Vec::new();
        for part in &parts {
            if let Part::Expression(e) = part {
                for (var, _) in &e.variables {
                    if !variables.contains(&var.as_str()) {
                        variables.push(var);
                    }
                }
            }
        }
        let params: BTreeMap<&str, syn::Ident> = variables
            .iter()
            .copied()
            .zip(unique_snakes(variables.iter().copied()))
            .map(|(var, ident)| (var, format_ident!("{}", ident)))
            .collect();
        let body = parts.iter().map(|part| match part {
            Part::Literal(text) => quote!(uri.push_str(#text);),
            Part::Expression(e) => expansion(e, &params),
        });
        let arguments = variables.iter().map(|v| &params[v]);
        let arguments = quote!(#(#arguments: &str),*);
        let forward = variables.iter().map(|v| &params[v]);
        let builder = names.claim(true, &format!("{snake}_uri"), owner)?;
        let mut doc = description(template).map(|d| format!("{d}\n\n")).unwrap_or_default();
        doc.push_str(&format!("The URI of template `{name}`: `{uri_template}`, expanded."));
        let builder_doc = docs(&doc);
        items.push(quote! {
            #builder_doc
            pub fn #builder(#arguments) -> ::std::string::String {
                let mut uri = ::std::string::String::new();
                #(#body)*
                uri
            }
        });
        let method = format_ident!("{}", snake);
        let method_doc = docs(&format!("Reads the resource of template `{name}` (`{uri_template}`)."));
        methods.push(quote! {
            #method_doc
            pub async fn #method(
                &self,
                #arguments
            ) -> ::std::result::Result<::mcp_client::types::ReadResourceResult, ::mcp_client::Error> {
                self.client.read_resource(&#builder(#(#forward),*)).await
            }
        });
    }
    names.claim(false, "Resources", "the resource templates' handle".into())?;
    names.claim(true, "percent_encode", "the URI builders' helper".into())?;
    items.push(quote! {
        /// The server's resource templates, one method each, reading the resource at the URI the
        /// arguments expand to.
        #[derive(Debug, Clone, Copy)]
        pub struct Resources<'a> {
            client: &'a ::mcp_client::Client,
        }

        impl<'a> Resources<'a> {
            /// The resource templates of the server `client` is connected to.
            pub fn new(client: &'a ::mcp_client::Client) -> Self {
                Resources { client }
            }

            #(#methods)*
        }

        /// Appends `value` to `uri` percent-encoded (RFC 6570): unreserved characters stay, and
        /// with `reserved` (`{+var}`, `{#var}`) so do reserved characters and `%XX` triplets.
        /// `prefix` keeps only that many characters of the value (`{var:3}`).
        fn percent_encode(uri: &mut ::std::string::String, value: &str, reserved: bool, prefix: ::std::option::Option<usize>) {
            let value = match prefix {
                Some(n) => value.char_indices().nth(n).map_or(value, |(end, _)| &value[..end]),
                None => value,
            };
            let bytes = value.as_bytes();
            for (i, &b) in bytes.iter().enumerate() {
                let keep = b.is_ascii_alphanumeric()
                    || b"-._~".contains(&b)
                    || (reserved && b":/?#[]@!$&'()*+,;=".contains(&b))
                    || (reserved && b == b'%' && bytes.get(i + 1..i + 3).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)));
                if keep {
                    uri.push(char::from(b));
                } else {
                    uri.push_str(&::std::format!("%{b:02X}"));
                }
            }
        }
    });
    Ok(items)
}

/// The statements that expand one expression into `uri` (all variables are defined strings).
fn expansion(e: &Expression, params: &BTreeMap<&str, syn::Ident>) -> TokenStream {
    /// How values are named: not at all, `name=value` (`{?var}`, `{&var}`), or `name=value` but
    /// only `name` when the value is empty (`{;var}`).
    enum Naming {
        No,
        Always,
        BareIfEmpty,
    }
    // RFC 6570 appendix A: what comes first, what comes between values, how they are named.
    let (first, separator, naming) = match e.operator {
        None | Some('+') => ("", ",", Naming::No),
        Some('#') => ("#", ",", Naming::No),
        Some('.') => (".", ".", Naming::No),
        Some('/') => ("/", "/", Naming::No),
        Some(';') => (";", ";", Naming::BareIfEmpty),
        Some('?') => ("?", "&", Naming::Always),
        Some(_) => ("&", "&", Naming::Always),
    };
    let reserved = matches!(e.operator, Some('+' | '#'));
    let mut statements = Vec::new();
    for (i, (var, prefix)) in e.variables.iter().enumerate() {
        let lead = if i == 0 { first } else { separator };
        let ident = &params[var.as_str()];
        let prefix = match prefix {
            Some(n) => {
                let n = proc_macro2::Literal::usize_unsuffixed(*n);
                quote!(Some(#n))
            }
            None => quote!(None),
        };
        let encode = quote!(percent_encode(&mut uri, #ident, #reserved, #prefix););
        let named = format!("{lead}{var}=");
        statements.push(match naming {
            Naming::No if lead.is_empty() => encode,
            Naming::No => quote!(uri.push_str(#lead); #encode),
            Naming::Always => quote!(uri.push_str(#named); #encode),
            Naming::BareIfEmpty => {
                let bare = format!("{lead}{var}");
                quote! {
                    if #ident.is_empty() {
                        uri.push_str(#bare);
                    } else {
                        uri.push_str(#named);
                        #encode
                    }
                }
            }
        });
    }
    quote!(#(#statements)*)
}
