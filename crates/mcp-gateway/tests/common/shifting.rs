//! An upstream whose lists the test changes while it runs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use mcp_client::Client;
use mcp_server::dynamic::{ReadFuture, ResourceSource, ToolFuture, ToolSource};
use mcp_server::types::{CallToolRequestParams, ObjectSchema, Resource, ResourceTemplate, Tool};
use mcp_server::{Context, Principal, Server, text_result};
use serde_json::json;

/// Tools, resources and templates that the test changes while the upstream runs; it answers
/// every call and read with `who`, and counts them (and how often its tools were listed: once
/// per page). Its tools and resources have descriptions of `padding` bytes (none when 0).
pub struct Shifting {
    pub who: &'static str,
    pub tools: Mutex<Vec<String>>,
    pub resources: Mutex<Vec<String>>,
    pub templates: Mutex<Vec<String>>,
    pub calls: AtomicUsize,
    pub reads: AtomicUsize,
    pub tool_lists: AtomicUsize,
    pub padding: AtomicUsize,
}

impl Shifting {
    pub fn new(who: &'static str, tools: &[&str], resources: &[&str], templates: &[&str]) -> Arc<Shifting> {
        let owned = |names: &[&str]| Mutex::new(names.iter().map(|n| n.to_string()).collect());
        Arc::new(Shifting {
            who,
            tools: owned(tools),
            resources: owned(resources),
            templates: owned(templates),
            calls: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            tool_lists: AtomicUsize::new(0),
            padding: AtomicUsize::new(0),
        })
    }

    fn description(&self) -> Option<String> {
        let padding = self.padding.load(Ordering::SeqCst);
        (padding > 0).then(|| "x".repeat(padding))
    }

    pub fn server(self: &Arc<Self>) -> Server {
        Server::builder(self.who, "1.0.0")
            .tool_source(Arc::clone(self) as Arc<dyn ToolSource>)
            .resource_source(Arc::clone(self) as Arc<dyn ResourceSource>)
            .build()
            .unwrap()
    }
}

impl ToolSource for Shifting {
    fn tools(&self, _caller: &Principal) -> Arc<[Tool]> {
        self.tool_lists.fetch_add(1, Ordering::SeqCst);
        let description = self.description();
        let tool =
            |name: &String| Tool { description: description.clone(), ..Tool::new(ObjectSchema::default(), name) };
        self.tools.lock().unwrap().iter().map(tool).collect()
    }

    fn call(&self, _ctx: Context, params: CallToolRequestParams) -> ToolFuture {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let arguments = serde_json::to_string(&params.arguments).unwrap();
        Box::pin(std::future::ready(Ok(text_result(format!("{} {arguments}", self.who)))))
    }
}

impl ResourceSource for Shifting {
    fn resources(&self, _caller: &Principal) -> Arc<[Resource]> {
        let resources = self.resources.lock().unwrap();
        let description = self.description();
        let resource = |uri: &String| Resource {
            uri: uri.clone(),
            name: uri.clone(),
            description: description.clone(),
            ..Default::default()
        };
        resources.iter().map(resource).collect()
    }

    fn templates(&self, _caller: &Principal) -> Arc<[ResourceTemplate]> {
        let templates = self.templates.lock().unwrap();
        let template = |t: &String| ResourceTemplate { uri_template: t.clone(), name: t.clone(), ..Default::default() };
        templates.iter().map(template).collect()
    }

    fn read(&self, _ctx: Context, uri: String) -> ReadFuture {
        self.reads.fetch_add(1, Ordering::SeqCst);
        let contents = serde_json::from_value(json!({ "uri": uri, "text": self.who })).unwrap();
        Box::pin(std::future::ready(Ok(vec![contents])))
    }
}

/// The tools `client` lists now (its cache cleared).
pub async fn tool_names(client: &Client) -> Vec<String> {
    client.clear_cache();
    client.all_tools().await.unwrap().into_iter().map(|t| t.name).collect()
}

/// The resources `client` lists now (its cache cleared).
pub async fn resource_uris(client: &Client) -> Vec<String> {
    client.clear_cache();
    client.all_resources().await.unwrap().into_iter().map(|r| r.uri).collect()
}
