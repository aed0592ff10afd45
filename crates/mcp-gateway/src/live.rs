//! The catalogue in service. Each request takes the catalogue current when it arrives and is
//! served by it to the end; a reload builds the next catalogue whole (the upstreams that stayed,
//! the new ones connected first) and swaps it in, so that no request sees half of one
//! configuration and half of another, and none in flight is dropped.

use std::sync::{Arc, RwLock};

use mcp_server::dynamic::{
    AnswerFuture, PromptFuture, PromptSource, ReadFuture, RelayCall, RelayFuture, ResourceSource, SkillSource,
    ToolFuture, ToolSource,
};
use mcp_server::{Context, Principal, TaskSupport};
use mcp_types::ext::skills::Skill;
use mcp_types::http_headers::HeaderParam;
use mcp_types::{CallToolRequestParams, GetPromptRequestParams, Prompt, Resource, ResourceTemplate, Tool};

use crate::catalogue::Catalogue;

/// The catalogue the downstream server serves now.
pub(crate) struct Live {
    current: RwLock<Arc<Catalogue>>,
}

impl Live {
    pub(crate) fn new(catalogue: Arc<Catalogue>) -> Live {
        Live { current: RwLock::new(catalogue) }
    }

    /// The catalogue now; a request keeps it until it is answered.
    pub(crate) fn get(&self) -> Arc<Catalogue> {
        Arc::clone(&self.current.read().expect("not poisoned"))
    }

    /// Serves `next` from the next request on; returns the one it replaces.
    pub(crate) fn replace(&self, next: Arc<Catalogue>) -> Arc<Catalogue> {
        std::mem::replace(&mut *self.current.write().expect("not poisoned"), next)
    }
}

impl ToolSource for Live {
    fn tools(&self, caller: &Principal) -> Arc<[Tool]> {
        self.get().tools(caller)
    }

    fn lists_depend_on_caller(&self) -> bool {
        ToolSource::lists_depend_on_caller(&*self.get())
    }

    fn list_ttl_ms(&self) -> Option<u64> {
        ToolSource::list_ttl_ms(&*self.get())
    }

    fn call(&self, ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        self.get().call(ctx, params)
    }

    fn answer(&self, ctx: Context, params: CallToolRequestParams) -> AnswerFuture {
        self.get().answer(ctx, params)
    }

    fn relays(&self) -> bool {
        self.get().relays()
    }

    fn relay(&self, call: RelayCall<'_>) -> RelayFuture {
        self.get().relay(call)
    }

    fn tool(&self, name: &str, caller: &Principal) -> Option<Tool> {
        self.get().tool(name, caller)
    }

    fn header_params(&self, name: &str, caller: &Principal) -> Option<Arc<[HeaderParam]>> {
        self.get().header_params(name, caller)
    }

    fn lists_tool(&self, name: &str, caller: &Principal) -> bool {
        self.get().lists_tool(name, caller)
    }

    fn task_support(&self, tool: &str) -> TaskSupport {
        self.get().task_support(tool)
    }

    fn offers_tasks(&self) -> bool {
        self.get().offers_tasks()
    }
}

impl PromptSource for Live {
    fn prompts(&self, caller: &Principal) -> Arc<[Prompt]> {
        self.get().prompts(caller)
    }

    fn lists_depend_on_caller(&self) -> bool {
        PromptSource::lists_depend_on_caller(&*self.get())
    }

    fn list_ttl_ms(&self) -> Option<u64> {
        PromptSource::list_ttl_ms(&*self.get())
    }

    fn get(&self, ctx: Context, params: GetPromptRequestParams) -> PromptFuture {
        PromptSource::get(&*Live::get(self), ctx, params)
    }

    fn lists_prompt(&self, name: &str, caller: &Principal) -> bool {
        self.get().lists_prompt(name, caller)
    }
}

impl ResourceSource for Live {
    fn resources(&self, caller: &Principal) -> Arc<[Resource]> {
        self.get().resources(caller)
    }

    fn templates(&self, caller: &Principal) -> Arc<[ResourceTemplate]> {
        self.get().templates(caller)
    }

    fn lists_depend_on_caller(&self) -> bool {
        ResourceSource::lists_depend_on_caller(&*self.get())
    }

    fn list_ttl_ms(&self) -> Option<u64> {
        ResourceSource::list_ttl_ms(&*self.get())
    }

    fn read(&self, ctx: Context, uri: String) -> ReadFuture {
        self.get().read(ctx, uri)
    }

    fn serves(&self, uri: &str, caller: &Principal) -> bool {
        self.get().serves(uri, caller)
    }
}

impl SkillSource for Live {
    fn skills(&self, caller: &Principal) -> Arc<[Skill]> {
        self.get().skills(caller)
    }

    fn lists_depend_on_caller(&self) -> bool {
        SkillSource::lists_depend_on_caller(&*self.get())
    }
}
