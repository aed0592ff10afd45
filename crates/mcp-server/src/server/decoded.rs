//! What a decoded request names, for spans and metrics, and the `_meta` it carries.

use super::*;

impl Decoded {
    pub(super) fn method(&self) -> &'static str {
        match self {
            Decoded::Discover => "server/discover",
            Decoded::Health => "health",
            Decoded::ListTools(_) => "tools/list",
            Decoded::ListResources(_) => "resources/list",
            Decoded::ListTemplates(_) => "resources/templates/list",
            Decoded::ListPrompts(_) => "prompts/list",
            Decoded::CallTool(..) => "tools/call",
            Decoded::Read(_) => "resources/read",
            Decoded::GetPrompt(_) => "prompts/get",
            Decoded::Complete(_) => "completion/complete",
            Decoded::Listen(_) => "subscriptions/listen",
            Decoded::Task(TaskRequest::Get(_), _) => "tasks/get",
            Decoded::Task(TaskRequest::Cancel(_), _) => "tasks/cancel",
            Decoded::Task(TaskRequest::Update(..), _) => "tasks/update",
            Decoded::ListSkills(_) => "skills/list",
            Decoded::GetSkill(_) => "skills/get",
            Decoded::ReadDirectory(_) => "resources/directory/read",
        }
    }

    pub(super) fn target(&self) -> Option<&str> {
        match self {
            Decoded::CallTool(p, _) => Some(&p.name),
            Decoded::Read(p) => Some(&p.uri),
            Decoded::GetPrompt(p) => Some(&p.name),
            Decoded::GetSkill(uri) => Some(uri),
            Decoded::ReadDirectory(p) => Some(&p.uri),
            _ => None,
        }
    }
}

/// A copy of the `_meta` of a request that carries one; an empty one for the rest.
pub(super) fn call_meta(call: &Decoded) -> RequestMetaObject {
    match call {
        Decoded::CallTool(p, _) => p.meta.clone(),
        Decoded::Read(p) => p.meta.clone(),
        Decoded::GetPrompt(p) => p.meta.clone(),
        Decoded::Complete(p) => p.meta.clone(),
        Decoded::Listen(p) => p.meta.clone(),
        Decoded::Task(_, meta) => meta.clone(),
        // Layers see the lists with the caller's capabilities.
        Decoded::ListTools(listing)
        | Decoded::ListResources(listing)
        | Decoded::ListTemplates(listing)
        | Decoded::ListPrompts(listing) => listing.meta.clone(),
        // Served without handlers, so nothing reads their `_meta`.
        Decoded::Discover
        | Decoded::Health
        | Decoded::ListSkills(_)
        | Decoded::GetSkill(_)
        | Decoded::ReadDirectory(_) => RequestMetaObject::default(),
    }
}

/// Arguments the lane left as text, read as the generated decode reads them (the lane takes
/// only text that serde_json reads the same way: `lane::reads_as_decoded`).
pub(super) fn arguments_from_text(text: &serde_json::value::RawValue) -> Result<mcp_types::JsonObject, Error> {
    serde_json::from_str(text.get()).map_err(|e| Error::invalid_params(format!("Invalid params: at `arguments`: {e}")))
}

/// A tool call's params with its arguments read, when the lane left them as text.
pub(super) fn arguments_read(
    mut params: CallToolRequestParams,
    text: Option<Box<serde_json::value::RawValue>>,
) -> Result<CallToolRequestParams, Error> {
    if let Some(text) = text {
        params.arguments = Some(arguments_from_text(&text)?);
    }
    Ok(params)
}
