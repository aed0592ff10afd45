//! `gateway http URL` or `gateway stdio COMMAND [ARGS…]`: the workspace's mcp-gateway in front of
//! one upstream, its tools keeping their names, served over HTTP on a loopback port whose URL it
//! prints, as `ours http` does (the driver's `gateway` cell).

/// The allocator the `mcp-gateway` binary uses (its default `mimalloc` feature).
#[global_allocator]
static ALLOCATOR: mcp_gateway::Mimalloc = mcp_gateway::Mimalloc;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quoted = |items: &[String]| items.iter().map(|item| format!("{item:?}")).collect::<Vec<_>>().join(", ");
    let upstream = match args.first().map(String::as_str) {
        Some("http") if args.len() == 2 => format!("url = {:?}", args[1]),
        Some("stdio") if args.len() > 1 => format!("command = [{}]", quoted(&args[1..])),
        _ => panic!("usage: gateway http URL | gateway stdio COMMAND [ARGS…]"),
    };
    let toml = format!("[[upstream]]\nname = \"upstream\"\nprefix = \"\"\n{upstream}\n");
    let config = mcp_gateway::Config::from_toml(&toml).expect("a valid configuration");
    let gateway = mcp_gateway::Gateway::start(&config).await.expect("the gateway starts");
    assert_eq!(gateway.connected(), ["upstream"], "the upstream answers");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    println!("http://{}/mcp", listener.local_addr()?);
    mcp_server::http::serve(listener, gateway.server().clone(), mcp_server::http::HttpConfig::default()).await
}
