//! Legacy HTTP sessions in Redis.

use std::time::Duration;

use mcp_server::tasks::StoreFuture;
use mcp_server::{SessionRecord, SessionStore};

use crate::connection::{Redis, millis};

impl Redis {
    /// The legacy session store of this deployment.
    pub fn session_store(&self) -> RedisSessionStore {
        RedisSessionStore(self.clone())
    }
}

const SESSIONS: &str = "session store";

/// Legacy HTTP sessions in Redis: `PREFIXsession:ID` holds the [`SessionRecord`] as JSON and
/// expires after the session's idle time; each use (`GETEX`, or `PEXPIRE` where the record is
/// not needed) starts it again.
#[derive(Clone, Debug)]
pub struct RedisSessionStore(Redis);

impl SessionStore for RedisSessionStore {
    fn save<'a>(&'a self, id: &'a str, record: &'a SessionRecord, idle: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = serde_json::to_string(record).map_err(|e| self.0.error(SESSIONS, e))?;
            let mut set = redis::cmd("SET");
            set.arg(self.0.key("session", id)).arg(json).arg("PX").arg(millis(idle));
            self.0.query::<()>(SESSIONS, &set).await
        })
    }

    fn load<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let mut get = redis::cmd("GETEX");
            get.arg(self.0.key("session", id)).arg("PX").arg(millis(idle));
            let json: Option<String> = self.0.query(SESSIONS, &get).await?;
            json.map(|json| {
                serde_json::from_str(&json)
                    .map_err(|e| self.0.error(SESSIONS, format!("session {id} is not a session record: {e}")))
            })
            .transpose()
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move { self.0.query::<()>(SESSIONS, redis::cmd("DEL").arg(self.0.key("session", id))).await })
    }

    /// `PEXPIRE`: the record is neither sent nor decoded.
    fn touch<'a>(&'a self, id: &'a str, idle: Duration) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(self.0.key("session", id)).arg(millis(idle));
            Ok(self.0.query::<i64>(SESSIONS, &expire).await? == 1)
        })
    }
}
