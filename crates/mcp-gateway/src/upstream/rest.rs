//! An OpenAPI upstream kept up (`crate::openapi`): its document loaded at start, again when a
//! call could not reach the API (down, and retried with backoff, while that fails), its
//! operations listed as its tools; and its calls, sent with its credentials.

use std::sync::Arc;

use mcp_client::auth::OAuth;
use mcp_types::{CallToolResult, JsonObject};

use super::attempt::{Attempt, Unavailable};
use super::{Change, FIRST_BACKOFF, LAST_BACKOFF, Lists, Report, Upstream};
use crate::openapi::{Api, MAX_DOCUMENT_BYTES, Source};

/// Redirects followed for one request, each within the origin it started at.
const MAX_REDIRECTS: usize = 5;

impl Upstream {
    /// The API of an OpenAPI upstream, while its document is loaded.
    pub(crate) fn api(&self) -> Option<Arc<Api>> {
        self.members[0].state.lock().expect("not poisoned").api.clone()
    }

    /// A call of this OpenAPI upstream's operation `tool`: within its concurrency limit and
    /// `timeout_secs`; what is wrong with the arguments, an HTTP error status and a response over
    /// `max_response_bytes` are tool errors, a request that did not reach the API fails naming
    /// the upstream (and has the document loaded again).
    pub(crate) async fn call_operation(
        &self,
        caller: &mcp_server::Principal,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, mcp_server::Error> {
        let name = self.name();
        let oauth = self.oauth_for(caller).map_err(mcp_server::Error::internal)?;
        let Some(api) = self.api() else {
            let why = self.up().err().unwrap_or_default();
            return Err(mcp_server::Error::internal(format!("upstream `{name}` is unavailable: {why}")));
        };
        let _slot = self.slot().await.map_err(mcp_server::Error::internal)?;
        let request = match api.request(tool, arguments) {
            Ok(request) => request,
            Err(refused) => return Ok(crate::openapi::tool_error(refused)),
        };
        let what = format!("the call to {tool}");
        let timeout = self.config.timeout();
        let secrets = self.secrets();
        let call = async {
            let response = self.send(api.http(), api.base(), oauth.as_ref(), request).await?;
            api.answer(tool, response, |text| crate::failure::redact(text, &secrets)).await.map_err(transport)
        };
        let error = match tokio::time::timeout(timeout, call).await {
            Ok(Ok(result)) => return Ok(result),
            Ok(Err(error)) => error,
            Err(_) => mcp_client::Error::Timeout { method: "tools/call".to_owned(), after: timeout },
        };
        if matches!(error, mcp_client::Error::Transport { .. } | mcp_client::Error::Timeout { .. }) {
            self.suspect();
        }
        let failure = self.failure(&what, &error);
        Err(mcp_server::Error::internal(format!("upstream `{name}` failed {what}: {failure}")))
    }

    /// Sends `request` to the API at `base` with this upstream's credentials: its `headers`, and
    /// `oauth`'s token (the gateway's own from `[upstream.oauth]`, or one exchanged for the
    /// caller's: `Upstream::oauth_for`; a 401 answered by getting one, as for an MCP upstream:
    /// the API's Protected Resource Metadata must name the configured issuer). The one place
    /// where an OpenAPI upstream's requests get credentials.
    async fn send(
        &self,
        http: &reqwest::Client,
        base: &reqwest::Url,
        oauth: Option<&OAuth>,
        mut request: reqwest::Request,
    ) -> Result<reqwest::Response, mcp_client::Error> {
        for (name, value) in &self.config.headers {
            let invalid =
                || mcp_client::Error::Protocol(format!("the configured header `{name}` is not a valid header"));
            let name = reqwest::header::HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            let mut value = reqwest::header::HeaderValue::from_str(value).map_err(|_| invalid())?;
            value.set_sensitive(true);
            request.headers_mut().insert(name, value);
        }
        let Some(oauth) = oauth else { return http.execute(request).await.map_err(transport) };
        let service = tower::Layer::layer(&oauth.layer(base.clone()), http.clone());
        tower::ServiceExt::oneshot(service, request).await.map_err(|error| match error.downcast() {
            Ok(auth) => mcp_client::Error::Auth(*auth),
            Err(error) => match error.downcast::<reqwest::Error>() {
                Ok(error) => transport(*error),
                Err(error) => mcp_client::Error::Transport { message: error.to_string(), source: Some(error) },
            },
        })
    }
}

/// A request that did not get its answer.
fn transport(error: reqwest::Error) -> mcp_client::Error {
    mcp_client::Error::Transport { message: "the request to the API failed".to_owned(), source: Some(Box::new(error)) }
}

/// The HTTP client of an OpenAPI upstream: idle connections kept `idle_connection_secs`,
/// redirects followed only within the origin a request started at (its credentials stay there).
fn client(upstream: &Upstream) -> Result<reqwest::Client, String> {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt.previous().first().is_none_or(|first| first.origin() == attempt.url().origin());
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else if same_origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    reqwest::Client::builder()
        .pool_idle_timeout(upstream.config.idle_connection())
        .redirect(policy)
        .build()
        .map_err(|e| format!("the HTTP client could not be built: {e}"))
}

/// Keeps an OpenAPI upstream's document loaded: at start, and again each time a call could not
/// reach the API; while loading fails, it is down and tried again with backoff.
pub(super) async fn supervise(upstream: &Upstream, report: &Report) {
    let member = &upstream.members[0];
    let name = upstream.name();
    let mut backoff = FIRST_BACKOFF;
    let mut unavailable = Unavailable::default();
    loop {
        match load(upstream).await {
            Ok(api) => {
                unavailable = Unavailable::default();
                backoff = FIRST_BACKOFF;
                for problem in &api.left_out {
                    tracing::warn!(upstream = name, %problem, "an operation of the OpenAPI document is left out");
                }
                tracing::info!(upstream = name, tools = api.tools().len(), "upstream up (its OpenAPI document loaded)");
                let lists = Lists { tools: api.tools().to_vec(), ..Lists::default() };
                {
                    let mut state = member.state.lock().expect("not poisoned");
                    state.api = Some(Arc::new(api));
                    state.lists = Arc::new(lists);
                    state.down_because = None;
                }
                member.attempts.send_modify(|n| *n += 1);
                report(Change::Lists);
                member.suspect.notified().await;
                tracing::info!(upstream = name, "a call did not reach the API: loading its OpenAPI document again");
            }
            Err(failure) => {
                let was_up = member.state.lock().expect("not poisoned").is_up();
                if let Some(unsaid) = unavailable.due(&failure.told) {
                    member.set_down(failure.say(upstream, name, unsaid, backoff));
                }
                if was_up {
                    report(Change::Lists);
                }
                member.attempts.send_modify(|n| *n += 1);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(LAST_BACKOFF);
            }
        }
    }
}

/// The upstream's API as its document says now, within its bounds (`max_entries` tools,
/// `max_list_bytes` of them as JSON: over either it is degraded).
async fn load(upstream: &Upstream) -> Result<Api, Attempt> {
    let config = &upstream.config;
    let openapi = config.openapi.clone().unwrap_or_default();
    let invalid = |why: String| Attempt::plain(format!("its OpenAPI document {openapi} is invalid: {why}"));
    let source = Source::of(&openapi).map_err(invalid)?;
    let http = client(upstream).map_err(Attempt::plain)?;
    let text = match &source {
        Source::Url(url) => {
            let fetching = fetch(upstream, &http, url);
            match tokio::time::timeout(config.timeout(), fetching).await {
                Ok(fetched) => fetched?,
                Err(_) => {
                    let error = mcp_client::Error::Timeout { method: "GET".to_owned(), after: config.timeout() };
                    return Err(Attempt::failed(upstream, "fetching its OpenAPI document failed", &error));
                }
            }
        }
        Source::File(path) => {
            let path = path.clone();
            let reading = tokio::task::spawn_blocking(move || read_file(&path)).await;
            let read = reading.unwrap_or_else(|e| Err(e.to_string()));
            read.map_err(|why| Attempt::plain(format!("reading its OpenAPI document {openapi} failed: {why}")))?
        }
    };
    // Reading a large document and expanding its references is CPU work: off the async workers.
    let (config, source) = (config.clone(), source.clone());
    let built = tokio::task::spawn_blocking(move || Api::new(&text, &source, &config, http)).await;
    let api = built.unwrap_or_else(|e| Err(e.to_string())).map_err(invalid)?;
    let (max_entries, max_bytes) = (upstream.config.max_entries(), upstream.config.max_list_bytes());
    let bytes: usize = api.tools().iter().map(|tool| serde_json::to_vec(tool).map_or(0, |json| json.len())).sum();
    let over = if api.tools().len() > max_entries {
        Some(format!("its OpenAPI document has more than {max_entries} operations (`max_entries`)"))
    } else if bytes > max_bytes {
        Some(format!("its tools take more than {max_bytes} bytes of JSON (`max_list_bytes`)"))
    } else {
        None
    };
    match over {
        Some(why) => Err(Attempt { told: format!("degraded: {why}"), detail: why, degraded: true }),
        None => Ok(api),
    }
}

/// The document at `url`, with the upstream's credentials when it is at `base_url`'s origin.
async fn fetch(upstream: &Upstream, http: &reqwest::Client, url: &reqwest::Url) -> Result<String, Attempt> {
    let failed = |error: &mcp_client::Error| Attempt::failed(upstream, "fetching its OpenAPI document failed", error);
    let accept = "application/json, application/yaml;q=0.9, */*;q=0.5";
    let request =
        http.get(url.clone()).header(reqwest::header::ACCEPT, accept).build().map_err(|e| failed(&transport(e)))?;
    let base = upstream.config.base_url.as_deref().and_then(|base| reqwest::Url::parse(base).ok());
    let response = match base {
        Some(base) if base.origin() == url.origin() => {
            upstream.send(http, &base, upstream.oauth.as_ref(), request).await
        }
        _ => http.execute(request).await.map_err(transport),
    }
    .map_err(|e| failed(&e))?;
    let status = response.status();
    if !status.is_success() {
        return Err(failed(&mcp_client::Error::HttpStatus { status: status.as_u16(), body: String::new() }));
    }
    let too_long = response.content_length().is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64);
    let (body, cut) = match too_long {
        true => (Vec::new(), true),
        false => crate::openapi::read(response, MAX_DOCUMENT_BYTES).await.map_err(|e| failed(&transport(e)))?,
    };
    if cut {
        return Err(Attempt::plain(format!("its OpenAPI document is larger than {MAX_DOCUMENT_BYTES} bytes")));
    }
    String::from_utf8(body).map_err(|_| Attempt::plain("its OpenAPI document is not UTF-8 text".to_owned()))
}

/// A document's file, within the bound.
fn read_file(path: &std::path::Path) -> Result<String, String> {
    let size = std::fs::metadata(path).map_err(|e| e.to_string())?.len();
    if size > MAX_DOCUMENT_BYTES as u64 {
        return Err(format!("it is larger than {MAX_DOCUMENT_BYTES} bytes"));
    }
    std::fs::read_to_string(path).map_err(|e| e.to_string())
}

impl Attempt {
    /// A failure the gateway itself tells (nothing the upstream wrote), in the log as told.
    fn plain(told: String) -> Attempt {
        Attempt { detail: told.clone(), told, degraded: false }
    }
}
