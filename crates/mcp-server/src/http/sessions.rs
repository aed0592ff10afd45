//! The legacy sessions an instance holds: its table (capped, with a share per client), the
//! session store behind it (other instances' sessions, saved changes), and the sweeper that
//! closes idle ones.

use super::*;

/// [`HttpConfig::max_sessions_per_client`] (in the range JSON-RPC leaves to servers).
pub(super) const SESSION_SHARE_FULL: i64 = -32000;

impl Shared {
    fn session(&self, id: &str) -> Option<(Arc<Session>, Arc<Mutex<Logs>>)> {
        let mut sessions = self.sessions.lock().expect("not poisoned");
        match sessions.touch(id, self.config.session_idle, Instant::now()) {
            Ok(found) => found.map(|entry| (Arc::clone(&entry.session), Arc::clone(&entry.logs))),
            Err(expired) => {
                expired.session.close();
                None
            }
        }
    }

    /// The 429 for a client that already holds [`HttpConfig::max_sessions_per_client`]
    /// sessions, if it does.
    pub(super) fn share_refusal(&self, client: &ClientKey, id: Option<&mcp_types::RequestId>) -> Option<Response> {
        let has_room =
            self.sessions.lock().expect("not poisoned").has_room_for(client, self.config.max_sessions_per_client);
        (!has_room).then(|| self.share_refusal_response(id))
    }

    pub(super) fn share_refusal_response(&self, id: Option<&mcp_types::RequestId>) -> Response {
        let error = ErrorObject::new(
            SESSION_SHARE_FULL,
            format!(
                "This client already holds {} sessions (HttpConfig::max_sessions_per_client); \
                 end one with DELETE or let one idle out",
                self.config.max_sessions_per_client
            ),
        );
        json_response(StatusCode::TOO_MANY_REQUESTS, &Outgoing::error(id, &error))
    }

    /// The session `id`, from this instance or, opened on another, from the session store
    /// (every use restarts its idle time there). `None`: unknown, ended or idle too long.
    pub(super) async fn resolve(&self, id: &str) -> Result<Option<(Arc<Session>, Arc<Mutex<Logs>>)>, StoreError> {
        let store = self.server.session_store();
        let ended_elsewhere = || {
            // Ended elsewhere (DELETE on another instance, eviction): so it is here.
            if let Some(entry) = self.sessions.lock().expect("not poisoned").remove(id) {
                entry.session.close();
            }
            Ok(None)
        };
        // Held here: the store is only asked whether it still has the session.
        if let Some(found) = self.session(id) {
            return if store.touch(id, self.config.session_idle).await? { Ok(Some(found)) } else { ended_elsewhere() };
        }
        let Some(record) = store.load(id, self.config.session_idle).await? else { return ended_elsewhere() };
        // Opened on another instance: held here too, whatever this client's share.
        let evicted = self.keep(id.to_owned(), Session::restore(record), ClientKey::Unknown, false).unwrap_or_default();
        self.forget(evicted).await;
        Ok(self.session(id))
    }

    /// Saves the session's record if this message changed it (`before` is the session's
    /// [`Session::revision`] when the message came).
    pub(super) async fn persist(&self, id: &str, session: &Session, before: u64) -> Result<(), StoreError> {
        if session.revision() == before {
            return Ok(());
        }
        match session.record() {
            Some(after) => self.server.session_store().save(id, &after, self.config.session_idle).await,
            None => Ok(()),
        }
    }

    /// Registers a session `initialize` just opened for `client`, here and in the store;
    /// returns its id, or `ShareFull` when the client's share filled meanwhile.
    pub(super) async fn insert(
        &self,
        session: Arc<Session>,
        record: &SessionRecord,
        client: ClientKey,
    ) -> Result<Result<String, ShareFull>, StoreError> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the operating system's random source is available");
        let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let store = self.server.session_store();
        if let Err(e) = store.save(&id, record, self.config.session_idle).await {
            session.close();
            return Err(e);
        }
        match self.keep(id.clone(), Arc::clone(&session), client, true) {
            Ok(evicted) => {
                session.set_http_id(&id);
                self.forget(evicted).await;
                Ok(Ok(id))
            }
            Err(ShareFull) => {
                session.close();
                store.remove(&id).await?;
                Ok(Err(ShareFull))
            }
        }
    }

    /// Holds `session` on this instance, closing the least recently used ones beyond
    /// `max_sessions`; returns their ids. With `within_share`, refused when `client` already
    /// holds its share.
    fn keep(
        &self,
        id: String,
        session: Arc<Session>,
        client: ClientKey,
        within_share: bool,
    ) -> Result<Vec<String>, ShareFull> {
        let shared_events = self.config.event_store.is_some();
        let budget = ReplayBudget {
            session: self.config.max_replay_bytes,
            total: self.config.max_replay_bytes_total,
            kept: Arc::clone(&self.replay_bytes),
        };
        let logs = Arc::new(Mutex::new(Logs::new(budget, shared_events)));
        let share = within_share.then_some(self.config.max_sessions_per_client);
        let evicted = self.sessions.lock().expect("not poisoned").insert(
            id,
            Entry { session, logs },
            client,
            self.config.max_sessions,
            share,
            Instant::now(),
        )?;
        Ok(evicted
            .into_iter()
            .map(|(id, entry)| {
                entry.session.close();
                id
            })
            .collect())
    }

    /// Evicted sessions end everywhere: `max_sessions` bounds the store too.
    async fn forget(&self, evicted: Vec<String>) {
        for id in evicted {
            if let Err(error) = self.server.session_store().remove(&id).await {
                tracing::warn!(session = %id, %error, "an evicted session stays in the session store until idle");
            }
        }
    }

    fn close_expired(&self) {
        let idle = self.sessions.lock().expect("not poisoned").take_idle(self.config.session_idle, Instant::now());
        for (_, entry) in idle {
            entry.session.close();
        }
    }

    /// Closes idle sessions even when no request comes to notice them.
    pub(super) fn start_sweeper(self: &Arc<Self>) {
        self.sweeper.call_once(|| {
            let shared = Arc::downgrade(self);
            let every = (self.config.session_idle / 2).clamp(Duration::from_millis(50), Duration::from_secs(60));
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(every);
                ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    ticks.tick().await;
                    let Some(shared) = shared.upgrade() else { return };
                    shared.close_expired();
                }
            });
        });
    }
}

/// The 403 for a request on a legacy session that another principal opened.
pub(super) fn other_principal(id: Option<&mcp_types::RequestId>) -> Response {
    let error =
        ErrorObject::invalid_request("This session belongs to another principal; send initialize to open your own");
    json_response(StatusCode::FORBIDDEN, &Outgoing::error_as(id, &error, Disposition::BadRequest))
}

/// The `-32603` for a session store that failed.
pub(super) fn store_error(error: &StoreError) -> ErrorObject {
    ErrorObject::internal_error(format!("The session store failed: {error}"))
}
