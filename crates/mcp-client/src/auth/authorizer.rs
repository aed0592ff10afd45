//! Where the user is sent to authorize: the application's part of the authorization code flow.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use url::Url;

use super::error::AuthError;

/// Takes the user through authorization: receives the authorization URL and returns the
/// redirect URL the authorization server sent the user agent to (carrying `code`, `state` and
/// possibly `iss`, or `error`).
pub trait Authorizer: Send + Sync + 'static {
    /// Shows `authorization_url` to the user (or follows it) and returns the redirect URL.
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, AuthError>>;

    /// The redirect URI this authorizer listens on, used when the [`OAuth`](super::OAuth)
    /// builder was given none.
    fn redirect_uri(&self) -> Option<Url> {
        None
    }
}

/// Shows the authorization URL to the user (opens a browser, prints it…).
type OpenUrl = Arc<dyn Fn(&Url) -> Result<(), String> + Send + Sync>;

/// For desktop applications: listens on `127.0.0.1:<port>`, hands the authorization URL to a
/// callback (typically "open it in the browser"), and waits for the browser to come back to
/// `http://127.0.0.1:<port>/callback`, answering it with a short page.
#[derive(Clone)]
pub struct LoopbackAuthorizer {
    port: u16,
    path: String,
    timeout: Duration,
    open: OpenUrl,
}

impl std::fmt::Debug for LoopbackAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopbackAuthorizer").field("port", &self.port).field("timeout", &self.timeout).finish()
    }
}

impl LoopbackAuthorizer {
    /// `open` shows the authorization URL to the user; the redirect is awaited for at most
    /// five minutes.
    pub fn new(port: u16, open: impl Fn(&Url) -> Result<(), String> + Send + Sync + 'static) -> Self {
        LoopbackAuthorizer { port, path: "/callback".into(), timeout: Duration::from_secs(300), open: Arc::new(open) }
    }

    /// How long to wait for the redirect (default five minutes).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub fn redirect_url(&self) -> Url {
        Url::parse(&format!("http://127.0.0.1:{}{}", self.port, self.path)).expect("a loopback URL")
    }

    async fn wait_for_redirect(&self, listener: tokio::net::TcpListener) -> Result<Url, AuthError> {
        loop {
            let (mut stream, _) = listener.accept().await.map_err(|e| AuthError::Authorizer(e.to_string()))?;
            let mut buffer = Vec::new();
            let mut chunk = [0u8; 1024];
            // The request line and headers; the body (if any) does not matter.
            while !buffer.windows(4).any(|w| w == b"\r\n\r\n") && buffer.len() < 16 * 1024 {
                match stream.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                }
            }
            let request = String::from_utf8_lossy(&buffer);
            let target = request.lines().next().and_then(|line| line.split(' ').nth(1)).unwrap_or("");
            let redirect = self.redirect_url().join(target).ok().filter(|url| url.path() == self.path);
            let (status, page) = match &redirect {
                Some(_) => ("200 OK", "Authorization complete. You can close this window."),
                None => ("404 Not Found", "Not found."),
            };
            let html = format!("<!doctype html><title>{page}</title><p>{page}</p>");
            let response = format!(
                "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
                html.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            let _ = stream.shutdown().await;
            if let Some(redirect) = redirect {
                return Ok(redirect);
            }
        }
    }
}

impl Authorizer for LoopbackAuthorizer {
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, AuthError>> {
        Box::pin(async move {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", self.port))
                .await
                .map_err(|e| AuthError::Authorizer(format!("cannot listen on 127.0.0.1:{}: {e}", self.port)))?;
            (self.open)(&authorization_url).map_err(AuthError::Authorizer)?;
            tokio::time::timeout(self.timeout, self.wait_for_redirect(listener))
                .await
                .map_err(|_| AuthError::Authorizer(format!("no redirect within {:?}", self.timeout)))?
        })
    }

    fn redirect_uri(&self) -> Option<Url> {
        Some(self.redirect_url())
    }
}

/// For automated and test authorization servers that redirect at once without a user: GETs
/// the authorization URL without following redirects and returns the `Location` it answers
/// with. Not for real users, who need to log in and consent.
#[derive(Debug, Clone)]
pub struct HeadlessAuthorizer {
    http: reqwest::Client,
}

impl Default for HeadlessAuthorizer {
    fn default() -> Self {
        Self::new()
    }
}

impl HeadlessAuthorizer {
    /// An authorizer with its own HTTP client (redirects not followed).
    pub fn new() -> Self {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .expect("a reqwest client without TLS options");
        HeadlessAuthorizer { http }
    }
}

impl Authorizer for HeadlessAuthorizer {
    fn authorize(&self, authorization_url: Url) -> BoxFuture<'_, Result<Url, AuthError>> {
        Box::pin(async move {
            let endpoint = endpoint_of(&authorization_url);
            let response = self
                .http
                .get(authorization_url.clone())
                .send()
                .await
                .map_err(|e| AuthError::Authorizer(format!("GET {endpoint}: {e}")))?;
            let location =
                response.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).ok_or_else(|| {
                    AuthError::Authorizer(format!("{endpoint} answered {} without a redirect", response.status()))
                })?;
            authorization_url
                .join(location)
                .map_err(|e| AuthError::Authorizer(format!("{endpoint} redirected to an invalid URL: {e}")))
        })
    }
}

/// The URL without its query, for messages (the query carries `state` and the challenge).
pub(crate) fn endpoint_of(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    url.set_fragment(None);
    url.to_string()
}
