//! A small protected server on mcp-server (features `auth`, `otel`): `protected ISSUER URL
//! [ADDR]` serves the `add` tool over Streamable HTTP at ADDR (default 127.0.0.1:8080) as URL, an
//! OAuth 2.1 resource server that takes JWT access tokens of ISSUER (keys from its JWKS, found
//! through its metadata) for URL with the scope `mcp:tools`, and sends its spans and metrics
//! where the `OTEL_*` variables say (OTLP over HTTP by default).

use mcp_server::auth::{JwtVerifier, ResourceServer, VerifyError};
use mcp_server::{Context, Error, Server, ToolRoute};

/// Two integers to add.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [issuer, url, rest @ ..] = args.as_slice() else {
        return Err("usage: protected ISSUER URL [ADDR]".into());
    };
    let addr = rest.first().map_or("127.0.0.1:8080", String::as_str);

    let telemetry = mcp_server::otel::init()?;
    let server = Server::builder("protected", "1.0.0")
        .tool(
            ToolRoute::new("add", |_: Context, Add { a, b }: Add| async move { Ok::<_, Error>((a + b).to_string()) })
                .description("Adds two integers"),
        )
        .build()?;
    let authorization = ResourceServer::builder(url.as_str(), JwtVerifier::new(issuer.as_str(), url.as_str()))
        .authorization_server(issuer.as_str())
        .required_scopes(["mcp:tools"])
        .try_build()?;
    if let Err(VerifyError::Misconfigured(why)) = authorization.check().await {
        return Err(why.into());
    }
    let mut config = mcp_server::http::HttpConfig::default();
    config.authorization = Some(authorization);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    mcp_server::http::serve(listener, server, config).await?;
    telemetry.shutdown()?;
    Ok(())
}
