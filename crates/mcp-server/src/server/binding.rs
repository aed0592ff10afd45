//! What binds a `requestState` to the request it was given for.

use super::*;

/// What binds a `requestState` to its request: the method, the name or URI, and the arguments.
pub(super) struct Binding {
    method: &'static str,
    target: String,
    arguments: Value,
}

impl Binding {
    /// The binding of a request that can carry a `requestState`.
    pub(super) fn of(call: &Decoded) -> Option<Binding> {
        Some(match call {
            Decoded::CallTool(p, text) => Binding {
                method: "tools/call",
                target: p.name.clone(),
                arguments: match text {
                    Some(text) => decoded::arguments_from_text(text).map(Value::Object).unwrap_or_default(),
                    None => p.arguments.clone().map(Value::Object).unwrap_or_default(),
                },
            },
            Decoded::GetPrompt(p) => Binding {
                method: "prompts/get",
                target: p.name.clone(),
                arguments: serde_json::to_value(&p.arguments).unwrap_or_default(),
            },
            Decoded::Read(p) => Binding { method: "resources/read", target: p.uri.clone(), arguments: Value::Null },
            _ => return None,
        })
    }

    pub(super) fn digest(&self) -> String {
        state::binding(self.method, &self.target, &self.arguments)
    }
}
