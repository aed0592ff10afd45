//! Smoke test of the tests' OAuth authorization server (`tests/auth/provider.mjs`, started by
//! [`mcp_tests::oidc::OidcProvider`]): it starts, serves RFC 8414 metadata for its own issuer, hands
//! out its signing key, and stops when killed. Needs `cargo xtask test` (Node.js, oidc-provider).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use mcp_tests::oidc::OidcProvider;
use serde_json::Value;

/// A plain HTTP/1.0 GET (no chunked bodies) of `url` (`http://host:port/path`): (status, body).
fn get(url: &str) -> std::io::Result<(u16, String)> {
    let rest = url.strip_prefix("http://").expect("an http URL");
    let (host, path) = rest.split_once('/').map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut stream = TcpStream::connect(host)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {host}\r\nAccept: application/json\r\n\r\n")?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").expect("a complete HTTP response");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).expect("a status line");
    Ok((status, body.to_string()))
}

#[test]
fn provider_serves_rfc8414_metadata_and_stops() {
    let mut provider = OidcProvider::start();
    assert!(provider.issuer.starts_with("http://127.0.0.1:"), "{}", provider.issuer);
    assert!(provider.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"), "{}", provider.key_pem);

    for document in ["oauth-authorization-server", "openid-configuration"] {
        let (status, body) = get(&format!("{}/.well-known/{document}", provider.issuer)).unwrap();
        assert_eq!(status, 200, "{document}: {body}");
        let metadata: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(metadata["issuer"], provider.issuer.as_str(), "{document}");
        assert!(metadata["jwks_uri"].is_string(), "{document}: {metadata}");
        assert!(metadata["registration_endpoint"].is_string(), "{document}: {metadata}");
        assert_eq!(metadata["code_challenge_methods_supported"], serde_json::json!(["S256"]), "{document}");
    }

    let (status, body) = get(&format!("{}/jwks", provider.issuer)).unwrap();
    assert_eq!(status, 200, "{body}");
    let jwks: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(jwks["keys"][0]["kid"], mcp_tests::oidc::KEY_ID, "{jwks}");
    assert!(jwks["keys"][0].get("d").is_none(), "the JWKS must not publish the private key: {jwks}");

    let jwks_uri = format!("{}/jwks", provider.issuer);
    provider.kill();
    provider.kill();
    assert!(get(&jwks_uri).is_err(), "the provider still answers after kill");
}
