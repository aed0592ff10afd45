//! The HTTP of the OAuth exchanges that every flow and grant shares: endpoint URLs from metadata,
//! bounded response bodies, JSON documents.

use reqwest::header::ACCEPT;
use serde_json::Value;
use url::Url;

use super::error::AuthError;

/// Largest token, registration or metadata response read.
const MAX_RESPONSE: usize = 1024 * 1024;

pub(crate) fn endpoint_url(endpoint: Option<&str>, name: &str) -> Result<Url, AuthError> {
    let endpoint = endpoint.ok_or_else(|| AuthError::InvalidMetadata(format!("the metadata has no {name}")))?;
    Url::parse(endpoint).map_err(|e| AuthError::InvalidMetadata(format!("{name} {endpoint:?} is not a URL: {e}")))
}

/// Reads a response body up to [`MAX_RESPONSE`]; never fails.
pub(crate) async fn read_text(response: reqwest::Response) -> String {
    crate::body::read_capped(response, MAX_RESPONSE).await
}

/// Fetches a JSON document (metadata); `None` for anything but a 200 with JSON.
pub(crate) async fn fetch_json(http: &reqwest::Client, url: &Url) -> Result<Value, String> {
    let response =
        http.get(url.clone()).header(ACCEPT, "application/json").send().await.map_err(|e| format!("GET {url}: {e}"))?;
    let status = response.status();
    if !status.is_success() {
        return Err(format!("GET {url}: HTTP {status}"));
    }
    serde_json::from_str(&read_text(response).await).map_err(|e| format!("GET {url}: not JSON: {e}"))
}
