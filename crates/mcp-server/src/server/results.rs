//! How a result is written for its era: on the modern wire with `resultType` and the server's
//! identity in `_meta`; on the legacy wire without them, or the caching hints.

use super::*;

impl Server {
    /// The response carrying a typed result, encoded directly. On the modern wire the server's
    /// identity goes in its `_meta` (the typed results always carry `resultType`); on the legacy
    /// wire the members it lacks are left out as they are written ([`legacy_wire::Legacy`]).
    pub(crate) fn respond<T: WireResult>(&self, id: &RequestId, era: Era, mut result: T) -> Outgoing {
        match era {
            Era::Modern => {
                if self.inner.options.server_info_in_results {
                    if result.meta().is_none() {
                        return Outgoing::result_with_server_info(id, &result, &self.inner.info_json);
                    }
                    let meta = result.meta().get_or_insert_with(Default::default);
                    if meta.server_info.is_none() {
                        meta.server_info = Some(Box::new(self.inner.info.clone()));
                    }
                }
                Outgoing::result(id, &result)
            }
            Era::Legacy => {
                // The legacy wire has no server identity in `_meta` (and no `_meta` left empty).
                let meta = result.meta();
                if let Some(object) = meta {
                    object.server_info = None;
                    if object.extra.is_empty() {
                        *meta = None;
                    }
                }
                Outgoing::result(id, &legacy_wire::Legacy(&result))
            }
        }
    }

    /// Era-specific result members: `resultType` and server identity on the modern wire; the
    /// legacy wire has neither, nor the caching hints.
    pub(super) fn finish(&self, era: Era, mut result: Value) -> Value {
        let Some(object) = result.as_object_mut() else { return result };
        match era {
            Era::Modern => {
                object.entry("resultType").or_insert_with(|| json!("complete"));
                if self.inner.options.server_info_in_results {
                    let meta = object.entry("_meta").or_insert_with(|| json!({}));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.entry(SERVER_INFO).or_insert_with(|| to_value(&self.inner.info));
                    }
                }
            }
            Era::Legacy => {
                object.remove("resultType");
                object.remove("ttlMs");
                object.remove("cacheScope");
                if let Some(Value::Object(meta)) = object.get_mut("_meta") {
                    meta.remove(SERVER_INFO);
                    if meta.is_empty() {
                        object.remove("_meta");
                    }
                }
            }
        }
        result
    }
}

/// A typed result of the modern schema: it always has `resultType`, and `_meta` for `serverInfo`.
pub(crate) trait WireResult: serde::Serialize {
    fn meta(&mut self) -> &mut Option<mcp_types::ResultMetaObject>;
}

macro_rules! wire_results {
    ($($result:ty),* $(,)?) => {$(
        impl WireResult for $result {
            fn meta(&mut self) -> &mut Option<mcp_types::ResultMetaObject> {
                &mut self.meta
            }
        }
    )*};
}

wire_results!(
    mcp_types::CallToolResult,
    ReadResourceResult,
    mcp_types::GetPromptResult,
    CompleteResult,
    InputRequiredResult,
    DiscoverResult,
    ListToolsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListPromptsResult,
    CreateTaskResult,
    UpdateTaskResult,
    CancelTaskResult,
    ListSkillsResult,
    GetSkillResult,
    ReadResourceDirectoryResult,
);

impl WireResult for GetTaskResult {
    fn meta(&mut self) -> &mut Option<mcp_types::ResultMetaObject> {
        self.meta_mut()
    }
}
