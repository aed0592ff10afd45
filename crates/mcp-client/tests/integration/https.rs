//! HTTPS (feature `rustls`): an mcp-server behind TLS on 127.0.0.1 with a self-signed
//! certificate, trusted through a `reqwest::Client` given to `ClientBuilder::http_client`.
#![cfg(feature = "rustls")]

use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use mcp_client::types::{JsonObject, ObjectSchema, Tool};
use mcp_client::{Client, Era};
use mcp_server::{Context, Server, ToolRoute};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

/// Serves `server` over TLS for `localhost`; returns the URL and the certificate (PEM).
async fn serve_https(server: Server) -> (String, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("a self-signed certificate");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(vec![cert.cert.der().clone()], key)
        .expect("a valid TLS configuration");
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a loopback port");
    let port = listener.local_addr().unwrap().port();
    let router = mcp_server::http::router(server, mcp_server::http::HttpConfig::default());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let (acceptor, router) = (acceptor.clone(), router.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let service = TowerToHyperService::new(router);
                let _ = auto::Builder::new(TokioExecutor::new()).serve_connection(TokioIo::new(tls), service).await;
            });
        }
    });
    (format!("https://localhost:{port}/mcp"), cert.cert.pem())
}

fn server() -> Server {
    let tool = Tool::new(ObjectSchema::default(), "secure");
    Server::builder("tls", "1.0")
        .tool(ToolRoute::raw(tool, |_: Context, _: JsonObject| async { Ok::<_, mcp_server::Error>("over TLS") }))
        .build()
        .expect("a valid server")
}

#[tokio::test]
async fn both_eras_over_https_with_a_trusted_certificate() {
    let (url, pem) = serve_https(server()).await;
    let root = reqwest::Certificate::from_pem(pem.as_bytes()).expect("a PEM certificate");
    let http = reqwest::Client::builder().tls_certs_merge([root]).build().expect("an HTTPS client");
    for era in [mcp_client::EraPreference::Modern, mcp_client::EraPreference::Legacy] {
        let client =
            Client::builder("test", "1.0").era(era).http_client(http.clone()).connect_http(&url).await.unwrap();
        assert_eq!(client.era(), if era == mcp_client::EraPreference::Modern { Era::Modern } else { Era::Legacy });
        let result = client.call_tool("secure", ()).await.expect("the call succeeds over TLS");
        assert_eq!(serde_json::to_value(&result.content).unwrap()[0]["text"], "over TLS");
        client.close().await;
    }
}

#[tokio::test]
async fn an_untrusted_certificate_is_a_transport_error() {
    let (url, _) = serve_https(server()).await;
    let Err(error) = Client::builder("test", "1.0").connect_http(&url).await else {
        panic!("a self-signed certificate must not be trusted by default");
    };
    assert!(matches!(error, mcp_client::Error::Transport { .. }), "{error:?}");
}
