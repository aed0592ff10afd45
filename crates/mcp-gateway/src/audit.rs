//! The audit log (`audit = "stderr"` or a file's path): one JSON line per request the gateway
//! serves from its upstreams (a call, a prompt, a read, a list), saying who asked, what, what was
//! decided, how long it took and how it failed.

use std::io::Write;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Instant, SystemTime};

use mcp_server::Principal;
use mcp_server::middleware::{McpLayer, McpRequest, McpResponse, McpService, tower};
use serde_json::Value;
use tower::ServiceExt as _;

use crate::live::Live;

/// Where the lines go.
pub(crate) struct Audit {
    out: Mutex<Box<dyn Write + Send>>,
}

impl Audit {
    /// `to` is `stderr` or a file's path, opened to append (created if missing): a file that
    /// cannot be opened is a start error, not a log silently lost.
    pub(crate) fn open(to: &str) -> Result<Audit, String> {
        let out: Box<dyn Write + Send> = match to {
            "stderr" => Box::new(std::io::stderr()),
            path => Box::new(
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
                    .map_err(|e| format!("audit: cannot open {path} to append: {e}"))?,
            ),
        };
        Ok(Audit { out: Mutex::new(out) })
    }

    /// Writes one line. A failed write is logged, not returned: the request it describes has
    /// been served either way.
    fn write(&self, line: &Value) {
        // One write per line, so that lines stay whole in a file several processes append to.
        let mut out = self.out.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Err(error) = out.write_all(format!("{line}\n").as_bytes()).and_then(|()| out.flush()) {
            tracing::error!(%error, "the audit log could not be written");
        }
    }
}

/// The layer that writes a line for every request that reaches the gateway's catalogue (calls,
/// prompts, reads, completions, the four lists): who, which upstream (as the catalogue routes the
/// request: `Catalogue::decide`), what, whether it was refused before reaching an upstream and
/// why (and the `[[policy]]` rule that refused it), how long it took, and its error.
pub(crate) fn layer(audit: Arc<Audit>, live: Weak<Live>) -> impl McpLayer {
    tower::layer::layer_fn(move |inner: McpService| {
        let (audit, live) = (Arc::clone(&audit), live.clone());
        tower::service_fn(move |request: McpRequest| {
            let (audit, inner) = (Arc::clone(&audit), inner.clone());
            let caller = request.principal().clone();
            let (method, name) = (request.method(), request.call.target().map(str::to_owned));
            let decision = live.upgrade().map(|live| live.get().decide(&caller, &request.call)).unwrap_or_default();
            let crate::catalogue::Decision { upstream, denied, rule } = decision;
            async move {
                let started = Instant::now();
                let outcome = inner.oneshot(request).await;
                let error = match &outcome {
                    Ok(McpResponse::CallTool(result)) if result.is_error == Some(true) => {
                        Some((Value::Null, "the tool answered with isError".to_owned()))
                    }
                    Ok(_) => None,
                    Err(error) => Some(match error.downcast_ref::<mcp_server::Error>() {
                        Some(mcp_server::Error::Rpc(object)) => {
                            (serde_json::to_value(&object.code).unwrap_or_default(), object.message.clone())
                        }
                        Some(other) => (Value::Null, format!("{other:?}")),
                        None => (Value::Null, error.to_string()),
                    }),
                };
                audit.write(&serde_json::json!({
                    "time": rfc3339(SystemTime::now()),
                    "principal": principal(&caller),
                    "upstream": upstream,
                    "method": method,
                    "name": name,
                    "decision": if denied.is_some() { "denied" } else { "allowed" },
                    "reason": denied,
                    "rule": rule,
                    "duration_ms": started.elapsed().as_secs_f64() * 1000.0,
                    "error": error.map(|(code, message)| serde_json::json!({ "code": code, "message": message })),
                }));
                outcome
            }
        })
    })
}

/// The caller's subject (or `client:<id>`); none for the process that started the gateway over
/// stdio, or an HTTP caller without authorization.
fn principal(caller: &Principal) -> Option<&str> {
    (!caller.is_anonymous()).then(|| caller.as_str())
}

/// `time` in RFC 3339, UTC, to the millisecond (`2026-07-28T12:00:00.000Z`).
fn rfc3339(time: SystemTime) -> String {
    let since = time.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let (days, secs) = ((since.as_secs() / 86_400) as i64, since.as_secs() % 86_400);
    // Howard Hinnant's days-to-civil: the proleptic Gregorian date of a day count.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        since.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc_3339_in_utc() {
        let at =
            |secs: u64, millis: u64| SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(secs * 1000 + millis);
        assert_eq!(rfc3339(at(0, 0)), "1970-01-01T00:00:00.000Z");
        // 2024-02-29 (a leap day) 23:59:59.999, and the next day.
        assert_eq!(rfc3339(at(1_709_251_199, 999)), "2024-02-29T23:59:59.999Z");
        assert_eq!(rfc3339(at(1_709_251_200, 0)), "2024-03-01T00:00:00.000Z");
        assert_eq!(rfc3339(at(1_785_240_000, 5)), "2026-07-28T12:00:00.005Z");
    }
}
