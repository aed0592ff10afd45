//! The single-use `requestState`s already used, in Redis.

use mcp_server::tasks::StoreFuture;
use mcp_server::{StateUse, UseVerdict, UsedStateStore};

use crate::connection::{Redis, now_ms};

impl Redis {
    /// The store of used single-use `requestState`s of this deployment.
    pub fn used_state_store(&self) -> RedisUsedStates {
        RedisUsedStates(self.clone())
    }
}

const USED_STATES: &str = "used-state store";

/// The used single-use `requestState`s in Redis: one `PREFIXused-state:ISSUED.NONCE` key each,
/// set only if absent and expiring with the state, so the first use on any instance wins and
/// nothing is ever forgotten early ([`UseVerdict::Forgotten`] is never returned).
#[derive(Clone, Debug)]
pub struct RedisUsedStates(Redis);

impl UsedStateStore for RedisUsedStates {
    fn first_use(&self, state: StateUse) -> StoreFuture<'_, UseVerdict> {
        Box::pin(async move {
            let key = self.0.key("used-state", &format!("{}.{}", state.issued_secs, state.nonce));
            // An expiry already past would make the key vanish at once and accept a replay.
            let now_secs = now_ms() / 1000;
            let expires = state.expires_secs.max(now_secs + 1);
            let mut set = redis::cmd("SET");
            set.arg(key).arg(1).arg("NX").arg("EXAT").arg(expires);
            let first: Option<String> = self.0.query(USED_STATES, &set).await?;
            Ok(if first.is_some() { UseVerdict::First } else { UseVerdict::Repeated })
        })
    }
}
