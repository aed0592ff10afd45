//! The cost of `catalogue = "search"` over 1,000 and 10,000 tools (the catalogue of
//! tests/common/catalogue.rs: a dozen known tools among generated ones of many services):
//!
//! - `index/build`: building the BM25 index (what the gateway does once per change of the merged
//!   tool list, on a blocking thread);
//! - `index/query`: one query of the in-process index (a dozen natural queries, in turn);
//! - `gateway/list_plain`: `tools/list` of every tool through the gateway in plain mode, over
//!   loopback HTTP (all pages), what a client pays without search;
//! - `gateway/search_tools`: one `search_tools` call through the gateway in search mode.
//!
//! ```text
//! cargo bench -p mcp-gateway --bench search
//! ```

#[path = "../tests/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use std::sync::Arc;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcp_client::EraPreference;
use mcp_gateway::Gateway;
use mcp_gateway::search::ToolIndex;
use serde_json::json;

use common::catalogue::{self, KNOWN};

const SIZES: [usize; 2] = [1_000, 10_000];

fn index(c: &mut Criterion) {
    let mut group = c.benchmark_group("index");
    group.sample_size(10).measurement_time(Duration::from_secs(5));
    for size in SIZES {
        let tools: Arc<[mcp_types::Tool]> = Arc::from(catalogue::tools(size));
        group.bench_with_input(BenchmarkId::new("build", size), &tools, |b, tools| {
            b.iter(|| ToolIndex::new(Arc::clone(tools)))
        });
        let index = ToolIndex::new(Arc::clone(&tools));
        let mut queries = KNOWN.iter().map(|known| known.query).cycle();
        group.bench_with_input(BenchmarkId::new("query", size), &index, |b, index| {
            b.iter(|| index.search(queries.next().unwrap(), 5, |_| true))
        });
    }
    group.finish();
}

fn gateway(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut group = c.benchmark_group("gateway");
    group.sample_size(10).measurement_time(Duration::from_secs(8));
    for size in SIZES {
        // Four upstreams, each listing a quarter (under its max_entries of 10,000).
        let lists = catalogue::split(catalogue::tools(size), 4);
        let upstreams: Vec<common::Upstream> = lists
            .into_iter()
            .enumerate()
            .map(|(at, tools)| common::Upstream::start(catalogue::server(&format!("u{at}"), tools), 0))
            .collect();
        for mode in ["plain", "search"] {
            let mut toml = format!("catalogue = \"{mode}\"\n");
            for (at, upstream) in upstreams.iter().enumerate() {
                toml.push_str(&format!("[[upstream]]\nname = \"u{at}\"\nurl = \"{}\"\nprefix = \"\"\n", upstream.url));
            }
            let (gateway, client) = runtime.block_on(async {
                let gateway = Gateway::start(&common::config(&toml)).await.unwrap();
                let client = common::client(&common::serve(&gateway).await, EraPreference::Modern).await;
                (gateway, client)
            });
            if mode == "plain" {
                group.bench_function(BenchmarkId::new("list_plain", size), |b| {
                    b.iter(|| {
                        runtime.block_on(async {
                            client.clear_cache();
                            let tools = client.all_tools().await.unwrap();
                            assert!(tools.len() >= size);
                        })
                    })
                });
            } else {
                let mut queries = KNOWN.iter().map(|known| known.query).cycle();
                group.bench_function(BenchmarkId::new("search_tools", size), |b| {
                    b.iter(|| {
                        let query = queries.next().unwrap();
                        runtime.block_on(async {
                            let found = client.call_tool("search_tools", json!({ "query": query })).await.unwrap();
                            assert!(found.structured_content.is_some());
                        })
                    })
                });
            }
            runtime.block_on(async move {
                drop(client);
                drop(gateway);
            });
        }
        drop(upstreams);
    }
    group.finish();
}

criterion_group!(benches, index, gateway);
criterion_main!(benches);
