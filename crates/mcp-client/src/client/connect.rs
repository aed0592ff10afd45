//! Connecting: the transport a [`ClientBuilder`] asks for, then negotiation.

use super::Client;
use super::options::ClientBuilder;
use crate::core::Core;
use crate::error::Error;
use crate::transport::Transport;

impl ClientBuilder {
    /// Spawns the server and negotiates.
    #[cfg(feature = "stdio")]
    pub async fn connect_stdio(self, command: crate::transport::stdio::StdioCommand) -> Result<Client, Error> {
        let core = Core::new(self.handlers.clone(), self.limits.clone());
        let transport = crate::transport::stdio::StdioTransport::spawn(command, &core).await?;
        let client = Client::assemble(self, core, Transport::Stdio(transport));
        client.negotiate().await?;
        Ok(client)
    }

    /// Connects to a Streamable HTTP endpoint (falling back to HTTP+SSE if needed) and
    /// negotiates.
    #[cfg(feature = "http")]
    pub async fn connect_http(self, url: &str) -> Result<Client, Error> {
        let url = reqwest::Url::parse(url).map_err(|e| Error::transport(format!("invalid URL {url:?}: {e}")))?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &self.http_headers {
            let name = reqwest::header::HeaderName::try_from(name.as_str())
                .map_err(|e| Error::transport(format!("invalid header name {name:?}: {e}")))?;
            let value = reqwest::header::HeaderValue::try_from(value.as_str())
                .map_err(|e| Error::transport(format!("invalid value for header {name}: {e}")))?;
            headers.insert(name, value);
        }
        let core = Core::new(self.handlers.clone(), self.limits.clone());
        let (http, lean) = match &self.http_client {
            Some(client) => (client.clone(), None),
            None => {
                let http = default_http_client(&url, self.http_idle_timeout);
                let lean = crate::transport::lean::LeanSender::for_endpoint(&url, http.clone(), self.http_idle_timeout);
                (http, lean)
            }
        };
        let service = match &lean {
            Some(lean) => crate::layer::boxed(lean.clone()),
            None => crate::layer::reqwest_service(http.clone()),
        };
        // OAuth innermost: its proof and token are made for the request as it finally goes out.
        #[cfg(feature = "auth")]
        let (service, lean) = match &self.oauth {
            Some(oauth) => (crate::layer::boxed(tower::Layer::layer(&oauth.layer(url.clone()), service)), None),
            None => (service, lean),
        };
        // With no layer around it, the lean sender is called directly too (see `HttpTransport`).
        let lean = lean.filter(|_| self.http_layers.is_empty());
        let service = self.http_layers.wrap(service);
        let transport = crate::transport::http::HttpTransport::new(http, url, headers, service, lean);
        let client = Client::assemble(self, core, Transport::Http(transport));
        client.negotiate().await?;
        Ok(client)
    }
}

/// `reqwest::Client::new()` with the builder's pool idle timeout, except that a plain `http://`
/// endpoint gets a client that loads no root certificates: loading the platform's costs
/// milliseconds and hundreds of file reads at start, for a connection that never does TLS (an
/// `https://` redirect from it then fails).
#[cfg(feature = "http")]
fn default_http_client(url: &reqwest::Url, idle: std::time::Duration) -> reqwest::Client {
    #[cfg(feature = "rustls")]
    if url.scheme() == "http"
        && let Ok(client) =
            reqwest::Client::builder().pool_idle_timeout(idle).tls_certs_only(std::iter::empty()).build()
    {
        return client;
    }
    let _ = url;
    reqwest::Client::builder().pool_idle_timeout(idle).build().unwrap_or_else(|_| reqwest::Client::new())
}
