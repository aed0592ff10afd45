//! An OpenAPI 3.0 or 3.1 document read as tools: each operation's name, description, arguments
//! (`inputSchema`), result (`outputSchema`) and annotations, and what a call needs to make its
//! request (method, path, where each argument goes, the body's media type).

use std::collections::BTreeSet;

use mcp_types::{JsonSchema, ObjectSchema, Tool, ToolAnnotations};
use serde_json::{Map, Value, json};

use super::schema::{self, Problem, Schemas, child};

/// The methods an OpenAPI path item may hold, in the order their tools are listed.
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// The most characters of a tool's name (MCP's limit).
const MAX_NAME: usize = 128;

/// The argument that carries the request body.
pub(crate) const BODY: &str = "body";

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Location {
    Path,
    Query,
    Header,
    Cookie,
}

impl Location {
    fn parse(text: &str) -> Option<Location> {
        Some(match text {
            "path" => Location::Path,
            "query" => Location::Query,
            "header" => Location::Header,
            "cookie" => Location::Cookie,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Location::Path => "path",
            Location::Query => "query",
            Location::Header => "header",
            Location::Cookie => "cookie",
        }
    }
}

/// One parameter of an operation, and the argument it is taken from.
#[derive(Debug, Clone)]
pub(crate) struct Parameter {
    /// Its name in the API.
    pub(crate) name: String,
    /// The tool's argument: its name, or `<location>_<name>` where that is taken.
    pub(crate) argument: String,
    pub(crate) location: Location,
    pub(crate) required: bool,
    /// How an array or object is serialized (`form`, `simple`, `spaceDelimited`,
    /// `pipeDelimited`, `deepObject`).
    pub(crate) style: String,
    pub(crate) explode: bool,
}

/// One operation: its tool, and how a call of it becomes a request.
#[derive(Debug, Clone)]
pub(crate) struct Operation {
    pub(crate) tool: Tool,
    pub(crate) method: reqwest::Method,
    /// The path template (`/pets/{petId}`).
    pub(crate) path: String,
    pub(crate) parameters: Vec<Parameter>,
    /// The JSON media type the body is sent as (under the argument [`BODY`]), if it has one.
    pub(crate) body: Option<String>,
    /// Whether the body is required.
    pub(crate) body_required: bool,
    /// Whether the tool has an `outputSchema`: a JSON object answer is its `structuredContent`.
    pub(crate) structured: bool,
}

/// What the document describes.
#[derive(Debug)]
pub(crate) struct Operations {
    pub(crate) operations: Vec<Operation>,
    /// Its first server's URL, variables at their defaults (maybe relative to the document).
    pub(crate) server: Option<String>,
    /// The operations left out, and why (the gateway logs them).
    pub(crate) left_out: Vec<Problem>,
}

/// The document's text as JSON (YAML when it is not JSON).
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(json) if text.trim_start().starts_with('{') => Err(format!("it is not JSON: {json}")),
        Err(_) => serde_norway::from_str(text).map_err(|yaml| format!("it is neither JSON nor YAML: {yaml}")),
    }
}

/// Every operation of `root`, an OpenAPI 3.x document.
pub(crate) fn operations(root: &Value) -> Result<Operations, Problem> {
    let version = match root.get("openapi") {
        Some(Value::String(version)) => version,
        _ if root.get("swagger").is_some() => {
            return Err(Problem::new("#/swagger", "Swagger 2.0 is not supported: convert the document to OpenAPI 3"));
        }
        _ => return Err(Problem::new("#/openapi", "no `openapi` version: not an OpenAPI document")),
    };
    if !version.starts_with("3.") {
        return Err(Problem::new("#/openapi", format!("OpenAPI {version} is not supported (3.0 and 3.1 are)")));
    }
    let document = schema::Document { root, v30: version.starts_with("3.0") };
    let mut found = Operations { operations: Vec::new(), server: server(root), left_out: Vec::new() };
    let paths = match root.get("paths") {
        None => return Ok(found),
        Some(Value::Object(paths)) => paths,
        Some(_) => return Err(Problem::new("#/paths", "must be an object")),
    };
    let mut names = BTreeSet::new();
    for (path, item) in paths.iter().filter(|(path, _)| !path.starts_with("x-")) {
        let (item, item_at) = document.follow(item, child("#/paths", path))?;
        if !path.starts_with('/') {
            return Err(Problem::new(item_at, "a path must start with `/`"));
        }
        for method in METHODS {
            let Some(operation) = item.get(*method) else { continue };
            let at = child(&item_at, method);
            let Some(built) = build(document, path, method, item, &item_at, operation, &at)? else {
                let why = "its request body has no JSON media type (only JSON bodies are sent): left out";
                found.left_out.push(Problem::new(child(&at, "requestBody"), why));
                continue;
            };
            found.operations.push(named(built, &mut names));
        }
    }
    Ok(found)
}

/// The first server's URL, with each `{variable}` at its default.
fn server(root: &Value) -> Option<String> {
    let first = root.get("servers")?.get(0)?;
    let mut url = first.get("url")?.as_str()?.to_owned();
    if let Some(Value::Object(variables)) = first.get("variables") {
        for (name, variable) in variables {
            let default = variable.get("default").and_then(Value::as_str).unwrap_or_default();
            url = url.replace(&format!("{{{name}}}"), default);
        }
    }
    Some(url)
}

/// An operation's tool (under a provisional name) and its request's shape; `None` when it is
/// left out (its body can be sent only in a media type other than JSON).
fn build(
    document: schema::Document<'_>,
    path: &str,
    method: &str,
    item: &Value,
    item_at: &str,
    operation: &Value,
    at: &str,
) -> Result<Option<Operation>, Problem> {
    if !operation.is_object() {
        return Err(Problem::new(at, "an operation must be an object"));
    }
    let mut schemas = document.schemas();
    let body = request_body(document, &mut schemas, operation, at)?;
    let (body_type, body_schema) = match body {
        Body::None => (None, None),
        Body::Json { media_type, schema, required } => (Some(media_type), Some((schema, required))),
        Body::Other { required: false } => (None, None),
        Body::Other { required: true } => return Ok(None),
    };
    let mut parameters = Vec::new();
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    if body_type.is_some() {
        taken.insert(BODY.to_owned());
    }
    let declared = declared_parameters(document, item, item_at, operation, at)?;
    // Path parameters first (they keep their names), then query, header and cookie.
    let order = [Location::Path, Location::Query, Location::Header, Location::Cookie];
    for location in order {
        for value in declared.iter().filter(|value| value.location == location) {
            let argument = claim(&mut taken, location, &value.name);
            let mut property = match &value.schema {
                Some((schema, schema_at)) => schemas.convert(schema, schema_at)?,
                None => json!({}),
            };
            describe(&mut property, value, &argument);
            if value.required {
                required.push(argument.clone());
            }
            properties.insert(argument.clone(), property);
            let (name, style, explode) = (value.name.clone(), value.style.clone(), value.explode);
            parameters.push(Parameter { name, argument, location, required: value.required, style, explode });
        }
    }
    // A `{name}` of the path that no parameter declares: a required string all the same.
    for name in template_names(path) {
        if !parameters.iter().any(|p| p.location == Location::Path && p.name == name) {
            let argument = claim(&mut taken, Location::Path, &name);
            properties.insert(argument.clone(), json!({ "type": "string" }));
            required.push(argument.clone());
            let (location, style) = (Location::Path, "simple".to_owned());
            parameters.push(Parameter { name, argument, location, required: true, style, explode: false });
        }
    }
    let mut body_required = false;
    if let Some((schema, is_required)) = body_schema {
        properties.insert(BODY.to_owned(), schema);
        if is_required {
            required.push(BODY.to_owned());
        }
        body_required = is_required;
    }
    let mut input = json!({ "type": "object", "properties": properties, "additionalProperties": false });
    if !required.is_empty() {
        input["required"] = json!(required);
    }
    let input = ObjectSchema::from_value(input).map_err(|e| Problem::new(at, e.to_string()))?;
    let output = output_schema(document, &mut schemas, operation, at)?;
    let method_upper = method.to_ascii_uppercase();
    let text = |key: &str| operation.get(key).and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
    let (summary, description) = (text("summary"), text("description"));
    let mut tool = Tool::new(input, String::new());
    tool.description = Some(match (summary, description) {
        (Some(summary), Some(description)) if summary != description => format!("{summary}\n\n{description}"),
        (Some(one), _) | (None, Some(one)) => one.to_owned(),
        (None, None) => format!("{method_upper} {path}"),
    });
    if operation.get("deprecated") == Some(&Value::Bool(true)) {
        tool.description = tool.description.map(|d| format!("Deprecated. {d}"));
    }
    tool.title = summary.map(str::to_owned);
    tool.annotations = annotations(method);
    let structured = output.is_some();
    tool.output_schema = output;
    // The name: the operationId's, else one derived from the method and path (`named`).
    tool.name = match text("operationId") {
        Some(id) => sanitized(id),
        None => derived(method, path),
    };
    let method = reqwest::Method::from_bytes(method_upper.as_bytes()).expect("one of the methods listed");
    Ok(Some(Operation { tool, method, path: path.to_owned(), parameters, body: body_type, body_required, structured }))
}

/// The argument of a parameter `name` of `location`: `name`, else (taken by the body or another
/// parameter) `<location>_<name>`, else that with `_2`, `_3`…
fn claim(taken: &mut BTreeSet<String>, location: Location, name: &str) -> String {
    let mut argument = name.to_owned();
    let mut n = 1;
    while !taken.insert(argument.clone()) {
        argument = match n {
            1 => format!("{}_{name}", location.name()),
            _ => format!("{}_{name}_{n}", location.name()),
        };
        n += 1;
    }
    argument
}

/// The tool's name made unique among those before it: `_2`, `_3`… added to one already taken.
fn named(mut operation: Operation, names: &mut BTreeSet<String>) -> Operation {
    let base = operation.tool.name.clone();
    let mut n = 1;
    while !names.insert(operation.tool.name.clone()) {
        n += 1;
        let suffix = format!("_{n}");
        let kept: String = base.chars().take(MAX_NAME - suffix.len()).collect();
        operation.tool.name = format!("{kept}{suffix}");
    }
    operation
}

/// An `operationId` as an MCP tool name: each character other than `A-Z a-z 0-9 _ - .` becomes
/// `_`, and at most 128 are kept.
pub(crate) fn sanitized(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') { c } else { '_' })
        .take(MAX_NAME)
        .collect();
    if name.is_empty() { "operation".to_owned() } else { name }
}

/// The name of an operation without an `operationId`: its method and path, each run of other
/// characters one `_` (`GET /pets/{petId}` → `get_pets_petId`).
pub(crate) fn derived(method: &str, path: &str) -> String {
    let raw = sanitized(&format!("{method}_{path}"));
    let mut name = String::with_capacity(raw.len());
    for c in raw.chars() {
        if !(c == '_' && name.ends_with('_')) {
            name.push(c);
        }
    }
    name.trim_end_matches('_').to_owned()
}

/// `GET`/`HEAD` read only; `DELETE` destructive; `PUT` and `DELETE` idempotent (RFC 9110 §9.2.2);
/// the others say nothing (MCP's defaults: may be destructive, not idempotent).
fn annotations(method: &str) -> Option<ToolAnnotations> {
    let hints = match method {
        "get" | "head" => json!({ "readOnlyHint": true }),
        "delete" => json!({ "destructiveHint": true, "idempotentHint": true }),
        "put" => json!({ "idempotentHint": true }),
        _ => return None,
    };
    serde_json::from_value(hints).ok()
}

/// The `{name}`s of a path template.
fn template_names(path: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else { break };
        names.push(rest[start + 1..start + end].to_owned());
        rest = &rest[start + end + 1..];
    }
    names
}

/// A parameter as the document declares it.
struct Declared<'a> {
    name: String,
    location: Location,
    required: bool,
    /// Its schema and where it is.
    schema: Option<(&'a Value, String)>,
    description: Option<String>,
    style: String,
    explode: bool,
}

/// The path item's parameters, replaced by the operation's of the same name and location.
/// `Accept`, `Content-Type` and `Authorization` headers are ignored, as the
/// specification says.
fn declared_parameters<'a>(
    document: schema::Document<'a>,
    item: &'a Value,
    item_at: &str,
    operation: &'a Value,
    at: &str,
) -> Result<Vec<Declared<'a>>, Problem> {
    let mut declared: Vec<Declared<'a>> = Vec::new();
    for (holder, holder_at) in [(item, item_at), (operation, at)] {
        let list_at = child(holder_at, "parameters");
        let list = match holder.get("parameters") {
            None => continue,
            Some(Value::Array(list)) => list,
            Some(_) => return Err(Problem::new(list_at, "must be an array")),
        };
        for (i, parameter) in list.iter().enumerate() {
            let (parameter, here) = document.follow(parameter, child(&list_at, &i.to_string()))?;
            let text = |key: &str| parameter.get(key).and_then(Value::as_str);
            let name = text("name").ok_or_else(|| Problem::new(&here, "a parameter needs a `name`"))?.to_owned();
            let location = text("in")
                .and_then(Location::parse)
                .ok_or_else(|| Problem::new(&here, "a parameter's `in` must be path, query, header or cookie"))?;
            if location == Location::Header
                && ["accept", "content-type", "authorization"].contains(&name.to_ascii_lowercase().as_str())
            {
                continue;
            }
            let schema = match (parameter.get("schema"), parameter.get("content")) {
                (Some(schema), _) => Some((schema, child(&here, "schema"))),
                (None, Some(Value::Object(content))) => content.iter().next().and_then(|(media, entry)| {
                    Some((entry.get("schema")?, child(&child(&child(&here, "content"), media), "schema")))
                }),
                _ => None,
            };
            let style = text("style").map(str::to_owned).unwrap_or_else(|| match location {
                Location::Path | Location::Header => "simple".to_owned(),
                Location::Query | Location::Cookie => "form".to_owned(),
            });
            let explode = parameter.get("explode").and_then(Value::as_bool).unwrap_or(style == "form");
            let required = location == Location::Path || parameter.get("required") == Some(&Value::Bool(true));
            let description = text("description").map(str::to_owned);
            let value = Declared { name, location, required, schema, description, style, explode };
            declared.retain(|other| !(other.name == value.name && other.location == value.location));
            declared.push(value);
        }
    }
    Ok(declared)
}

/// A parameter's argument's schema told what it is: the parameter's description, and its name in
/// the API where the argument's differs.
fn describe(property: &mut Value, declared: &Declared<'_>, argument: &str) {
    if !property.is_object() {
        // `true`: anything.
        *property = json!({});
    }
    let mut description = declared.description.clone();
    if argument != declared.name {
        let said = format!("The {} parameter `{}`.", declared.location.name(), declared.name);
        description = Some(match description {
            Some(description) => format!("{said} {description}"),
            None => said,
        });
    }
    if let Some(description) = description {
        property["description"] = json!(description);
    }
}

/// An operation's request body.
enum Body {
    None,
    Json {
        media_type: String,
        schema: Value,
        required: bool,
    },
    /// It has no JSON media type.
    Other {
        required: bool,
    },
}

/// Whether a media type is JSON (`application/json`, `application/problem+json`…).
pub(crate) fn is_json(media_type: &str) -> bool {
    let essence = media_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase();
    essence == "application/json" || essence.ends_with("+json")
}

fn request_body(
    document: schema::Document<'_>,
    schemas: &mut Schemas<'_>,
    operation: &Value,
    at: &str,
) -> Result<Body, Problem> {
    let Some(body) = operation.get("requestBody") else { return Ok(Body::None) };
    let (body, here) = document.follow(body, child(at, "requestBody"))?;
    let required = body.get("required") == Some(&Value::Bool(true));
    let Some(Value::Object(content)) = body.get("content") else {
        return Err(Problem::new(here, "a request body needs `content`"));
    };
    let Some((media_type, entry)) = content.iter().find(|(media_type, _)| is_json(media_type)) else {
        return Ok(Body::Other { required });
    };
    let mut schema = match entry.get("schema") {
        Some(schema) => schemas.convert(schema, &child(&child(&child(&here, "content"), media_type), "schema"))?,
        None => json!({}),
    };
    if let (Some(description), Some(object)) = (body.get("description"), schema.as_object_mut()) {
        object.entry("description").or_insert_with(|| description.clone());
    }
    if schema == json!(true) {
        schema = json!({});
    }
    Ok(Body::Json { media_type: media_type.clone(), schema, required })
}

/// The schema of the first success response (the lowest `2xx`, then `2XX`) in JSON, when it is
/// an object's (MCP's `outputSchema` must be).
fn output_schema(
    document: schema::Document<'_>,
    schemas: &mut Schemas<'_>,
    operation: &Value,
    at: &str,
) -> Result<Option<JsonSchema>, Problem> {
    let Some(Value::Object(responses)) = operation.get("responses") else { return Ok(None) };
    let mut codes: Vec<&String> = responses.keys().filter(|code| code.len() == 3 && code.starts_with('2')).collect();
    codes.sort_by_key(|code| (code.ends_with(['X', 'x']), code.to_string()));
    let Some(code) = codes.first() else { return Ok(None) };
    let responses_at = child(at, "responses");
    let (response, here) = document.follow(&responses[*code], child(&responses_at, code))?;
    let Some(Value::Object(content)) = response.get("content") else { return Ok(None) };
    let Some((media_type, entry)) = content.iter().find(|(media_type, _)| is_json(media_type)) else {
        return Ok(None);
    };
    let Some(schema) = entry.get("schema") else { return Ok(None) };
    let schema = schemas.convert(schema, &child(&child(&child(&here, "content"), media_type), "schema"))?;
    if schema.get("type") != Some(&json!("object")) {
        return Ok(None);
    }
    Ok(JsonSchema::from_value(schema).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_operation_ids_or_else_the_method_and_path() {
        assert_eq!(sanitized("listPets"), "listPets");
        assert_eq!(sanitized("read_item_items__item_id__get"), "read_item_items__item_id__get");
        assert_eq!(sanitized("pets/list pets!"), "pets_list_pets_");
        assert_eq!(sanitized(&"x".repeat(300)).len(), 128);
        assert_eq!(derived("get", "/pets/{petId}"), "get_pets_petId");
        assert_eq!(derived("delete", "/"), "delete");
        assert_eq!(derived("post", "/a.b/{c}/d-e"), "post_a.b_c_d-e");
        let mut names = BTreeSet::new();
        let operation = |name: &str| Operation {
            tool: Tool::new(ObjectSchema::default(), name),
            method: reqwest::Method::GET,
            path: "/".into(),
            parameters: vec![],
            body: None,
            body_required: false,
            structured: false,
        };
        let taken: Vec<String> =
            ["a", "a", "a", "b"].into_iter().map(|n| named(operation(n), &mut names).tool.name).collect();
        assert_eq!(taken, ["a", "a_2", "a_3", "b"]);
    }

    #[test]
    fn a_document_that_is_not_openapi_3_says_where() {
        let problem = |root: Value| operations(&root).unwrap_err().to_string();
        assert_eq!(
            problem(json!({ "swagger": "2.0" })),
            "`#/swagger`: Swagger 2.0 is not supported: convert the document to OpenAPI 3"
        );
        assert!(problem(json!({ "openapi": "4.0.0" })).starts_with("`#/openapi`: OpenAPI 4.0.0 is not supported"));
        assert!(problem(json!({ "info": {} })).starts_with("`#/openapi`: no `openapi` version"));
        let bad = json!({ "openapi": "3.1.0", "paths": { "/a": { "get": { "parameters": [{ "in": "query" }] } } } });
        assert_eq!(problem(bad), "`#/paths/~1a/get/parameters/0`: a parameter needs a `name`");
        assert!(parse("openapi: 3.1.0\npaths: {}\n").unwrap()["openapi"] == "3.1.0");
        assert!(parse("{ not json").unwrap_err().starts_with("it is not JSON"));
    }
}
