//! The caching hints of the lists the gateway serves: the shortest `ttlMs` of the upstreams
//! merged, and `cacheScope: "public"` only when every upstream said public and no upstream's
//! visibility depends on the caller.

use mcp_client::{Client, EraPreference};
use mcp_gateway::Gateway;
use mcp_server::ToolRoute;
use mcp_server::types::{CacheScope, Resource, ResourceTemplate};
use mcp_server::{CacheHints, Context, Error, Options, PromptRoute, ResourceRoute, ResourceTemplateRoute, Server};

use crate::common;
use common::{Text, Upstream, Whom, client, config, introspection, serve};

/// An upstream named `name` with one entry of each kind (`<name>://` URIs), whose lists say
/// `ttl_ms` and `scope`.
fn upstream(name: &str, ttl_ms: u64, scope: CacheScope) -> Server {
    let mut options = Options::default();
    options.list_cache = CacheHints { ttl_ms, scope };
    let resource = Resource { uri: format!("{name}://readme"), name: "readme".into(), ..Default::default() };
    let template =
        ResourceTemplate { uri_template: format!("{name}://doc/{{id}}"), name: "doc".into(), ..Default::default() };
    Server::builder(name, "1.0.0")
        .options(options)
        .tool(ToolRoute::new("echo", |_: Context, Text { text }: Text| async move { Ok::<_, Error>(text) }))
        .prompt(PromptRoute::new("greet", |_: Context, Whom { name }: Whom| async move {
            Ok::<_, Error>(format!("Greet {name}."))
        }))
        .resource(ResourceRoute::new(
            resource,
            |_: Context, _uri: String| async move { Ok::<_, Error>("read".to_owned()) },
        ))
        .resource_template(ResourceTemplateRoute::new(
            template,
            |_: Context, _uri: String, _vars: std::collections::BTreeMap<String, String>| async move {
                Ok::<_, Error>("doc".to_owned())
            },
        ))
        .build()
        .unwrap()
}

/// The `ttlMs` and `cacheScope` of each of the four lists, as `client` gets them.
async fn hints(client: &Client) -> Vec<(u64, CacheScope)> {
    client.clear_cache();
    let of = |ttl: Option<mcp_types::TtlMs>, scope: Option<CacheScope>| (ttl.unwrap().millis(), scope.unwrap());
    let tools = client.list_tools_page(None).await.unwrap();
    let prompts = client.list_prompts_page(None).await.unwrap();
    let resources = client.list_resources_page(None).await.unwrap();
    let templates = client.list_resource_templates_page(None).await.unwrap();
    vec![
        of(tools.ttl_ms, tools.cache_scope),
        of(prompts.ttl_ms, prompts.cache_scope),
        of(resources.ttl_ms, resources.cache_scope),
        of(templates.ttl_ms, templates.cache_scope),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_carry_the_shortest_ttl_of_the_upstreams_and_are_public_when_all_are() {
    let (slow, quick) = (Upstream::start(upstream("slow", 300_000, CacheScope::Public), 0), {
        Upstream::start(upstream("quick", 2_000, CacheScope::Public), 0)
    });
    let gateway = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"slow\"\nurl = \"{}\"\n[[upstream]]\nname = \"quick\"\nurl = \"{}\"\n",
        slow.url, quick.url
    )))
    .await
    .unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    // Both upstreams' entries are in each list, which is as fresh as its quickest upstream says.
    assert_eq!(client.all_tools().await.unwrap().len(), 2);
    assert_eq!(hints(&client).await, [(2_000, CacheScope::Public); 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_upstream_listing_privately_makes_the_merged_lists_private() {
    let open = Upstream::start(upstream("open", 60_000, CacheScope::Public), 0);
    let own = Upstream::start(upstream("own", 30_000, CacheScope::Private), 0);
    let gateway = Gateway::start(&config(&format!(
        "[[upstream]]\nname = \"open\"\nurl = \"{}\"\n[[upstream]]\nname = \"own\"\nurl = \"{}\"\n",
        open.url, own.url
    )))
    .await
    .unwrap();
    let client = client(&serve(&gateway).await, EraPreference::Modern).await;
    assert_eq!(hints(&client).await, [(30_000, CacheScope::Private); 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attack_two_principals_who_see_different_lists_are_told_not_to_share_them() {
    let open = Upstream::start(upstream("open", 60_000, CacheScope::Public), 0);
    let alices = Upstream::start(upstream("alices", 60_000, CacheScope::Public), 0);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let endpoint = introspection(url.clone()).await;
    let issuer = endpoint.trim_end_matches("/introspect");
    let gateway = Gateway::start(&config(&format!(
        "[authorization]\nresource = \"{url}\"\nissuer = \"{issuer}\"\n\
         introspection = {{ client_id = \"gw\", client_secret = \"s\", endpoint = \"{endpoint}\" }}\n\
         [[upstream]]\nname = \"open\"\nurl = \"{}\"\n\
         [[upstream]]\nname = \"alices\"\nurl = \"{}\"\nprincipals = [\"alice\"]\n",
        open.url, alices.url
    )))
    .await
    .unwrap();
    tokio::spawn(mcp_server::http::serve(listener, gateway.server().clone(), gateway.http_config()));
    let as_who = async |who: &str| {
        let builder = Client::builder("caching-test", "1.0.0").era(EraPreference::Modern);
        builder.http_header("Authorization", format!("Bearer {who}")).connect_http(&url).await.unwrap()
    };
    let (alice, bob) = (as_who("alice").await, as_who("bob").await);
    let names = async |client: &Client| {
        client.clear_cache();
        let mut names: Vec<String> = client.all_tools().await.unwrap().into_iter().map(|t| t.name).collect();
        names.sort();
        names
    };
    // The two see different lists: a shared cache must not hand Alice's to Bob.
    assert_eq!(names(&alice).await, ["alices_echo", "open_echo"]);
    assert_eq!(names(&bob).await, ["open_echo"]);
    assert_eq!(hints(&alice).await, [(60_000, CacheScope::Private); 4]);
    assert_eq!(hints(&bob).await, [(60_000, CacheScope::Private); 4]);
}
