//! Every request the gateway sends an upstream has a span (`mcp.gateway.upstream`) naming the
//! upstream, the method and the upstream's own name for the target.

use std::sync::{Arc, Mutex};

use mcp_client::Client;
use mcp_gateway::{Config, Gateway};
use mcp_server::{Context, Error, Server, ToolRoute};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt as _;

/// Records the fields of every `mcp.gateway.upstream` span.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={:?} ", field.name(), value));
    }

    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!("{}={} ", field.name(), value));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Recorder {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _id: &tracing::span::Id,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        if attrs.metadata().name() == "mcp.gateway.upstream" {
            let mut fields = Fields(String::new());
            attrs.record(&mut fields);
            self.0.lock().unwrap().push(fields.0.trim_end().to_owned());
        }
    }
}

/// Two integers.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

// One thread, so that every task (servers, gateway, client) records into this test's subscriber.
#[tokio::test]
async fn each_upstream_request_has_a_span_naming_the_upstream() {
    let recorder = Recorder::default();
    let _default = tracing::subscriber::set_default(tracing_subscriber::registry().with(recorder.clone()));
    let upstream = Server::builder("adder", "1.0.0")
        .tool(ToolRoute::new(
            "add",
            |_: Context, Pair { a, b }: Pair| async move { Ok::<_, Error>((a + b).to_string()) },
        ))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(listener, upstream, Default::default()));
    let config = Config::from_toml(&format!("[[upstream]]\nname = \"a\"\nurl = \"{url}\"\n")).unwrap();
    let gateway = Gateway::start(&config).await.unwrap();
    let gateway_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gateway_url = format!("http://{}/mcp", gateway_listener.local_addr().unwrap());
    tokio::spawn(mcp_server::http::serve(gateway_listener, gateway.server().clone(), Default::default()));
    let client = Client::builder("spans", "1.0.0").connect_http(&gateway_url).await.unwrap();
    client.call_tool("a_add", json!({"a": 1, "b": 2})).await.unwrap();
    let spans = recorder.0.lock().unwrap().clone();
    assert!(spans.iter().any(|s| s == "upstream=a method=tools/call target=add"), "{spans:?}");
}
