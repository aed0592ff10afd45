//! Why an attempt to bring an upstream up failed, and when that is said in the log: what both
//! kinds of supervisor (an MCP upstream's, `supervise`; an OpenAPI upstream's, `rest`) report.

use std::time::Duration;

use super::Upstream;

/// Why an attempt to bring an upstream up failed: what a caller is told (no text of the
/// upstream's), and what the log keeps (its error chain, credentials redacted).
pub(super) struct Attempt {
    pub(super) told: String,
    pub(super) detail: String,
    /// Over a bound: up, but left out.
    pub(super) degraded: bool,
}

impl Attempt {
    pub(super) fn failed(upstream: &Upstream, what: &str, error: &mcp_client::Error) -> Attempt {
        Attempt {
            told: format!("{what}: {}", crate::failure::kind(error)),
            detail: crate::failure::redact(&crate::failure::error_chain(error), &upstream.secrets()),
            degraded: false,
        }
    }

    /// Says the failure in the log (under a new request id, or as degraded); what a caller is
    /// told of it.
    pub(super) fn say(self, upstream: &Upstream, name: &str, unsaid: u64, retry_in: Duration) -> String {
        let target = upstream.target();
        let (told, detail) = (self.told, self.detail);
        if self.degraded {
            tracing::error!(upstream = %name, %target, %detail, unsaid, "upstream degraded: its entries are left out");
            return told;
        }
        let id = crate::failure::request_id();
        tracing::warn!(
            upstream = %name, %target, request_id = %id, %told, error = ?detail, ?retry_in, unsaid,
            "upstream unavailable (said again at most once a minute while it stays so)"
        );
        format!("{told} (request id {id})")
    }
}

/// When an upstream that stays unavailable is said in the log: at its first failure, when the
/// failure changes, and at most once a minute otherwise (an upstream down for a day is not a
/// line per retry).
#[derive(Default)]
pub(super) struct Unavailable {
    said: Option<(std::time::Instant, String)>,
    unsaid: u64,
}

impl Unavailable {
    const EVERY: Duration = Duration::from_secs(60);

    /// `Some(attempts left unsaid since the last line)` when this failure is to be said.
    pub(super) fn due(&mut self, told: &str) -> Option<u64> {
        match &self.said {
            Some((at, said)) if said == told && at.elapsed() < Self::EVERY => {
                self.unsaid += 1;
                None
            }
            _ => {
                self.said = Some((std::time::Instant::now(), told.to_owned()));
                Some(std::mem::take(&mut self.unsaid))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_is_said_first_when_it_changes_and_not_again_within_a_minute() {
        let mut unavailable = Unavailable::default();
        let said: Vec<Option<u64>> = ["refused", "refused", "refused", "timeout", "timeout", "refused"]
            .into_iter()
            .map(|told| unavailable.due(told))
            .collect();
        assert_eq!(said, [Some(0), None, None, Some(2), None, Some(1)]);
        unavailable.said.as_mut().unwrap().0 -= Unavailable::EVERY;
        assert_eq!(unavailable.due("refused"), Some(0));
    }
}
