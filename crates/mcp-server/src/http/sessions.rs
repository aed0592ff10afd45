//! The legacy sessions an instance holds: its table (capped, with a share per client), the
//! session store behind it (other instances' sessions, saved changes), the sweeper that closes
//! idle ones, and a session's standalone GET stream and its DELETE.

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

/// The legacy standalone stream: session notifications outside any request.
pub(super) async fn get(shared: Arc<Shared>, headers: &HeaderMap, principal: &Principal) -> Response {
    let Some(session_id) = header_str(headers, &SESSION_HEADER) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    if header_str(headers, &header::ACCEPT).is_some_and(|a| !a.contains("text/event-stream") && !a.contains("*/*")) {
        return error(StatusCode::NOT_ACCEPTABLE, None, "Accept must allow text/event-stream");
    }
    let (session, logs) = match shared.resolve(session_id).await {
        Ok(Some((session, _))) if session.principal() != principal => return other_principal(None),
        Ok(Some(found)) => found,
        Ok(None) => return error(StatusCode::NOT_FOUND, None, "Session not found"),
        Err(e) => return json_response(StatusCode::SERVICE_UNAVAILABLE, &Outgoing::error(None, &store_error(&e))),
    };
    // `Last-Event-ID: stream:n` resumes that request's stream after its n-th event.
    let last_event = header_str(headers, &LAST_EVENT_ID_HEADER).and_then(|last| {
        let (stream, position) = last.split_once(':')?;
        Some((stream.parse::<u64>().ok()?, position.parse::<usize>().ok()?))
    });
    // Every stream of the session ends with it.
    let closed = {
        let session = Arc::clone(&session);
        async move { session.closed().await }
    };
    if let Some((stream, position)) = last_event {
        let local = logs.lock().expect("not poisoned").find(stream);
        if let Some(log) = local {
            return sse_events(log.read(stream, position).take_until(closed));
        }
        // Written on another instance, perhaps: the event store has it.
        if let Some(store) = &shared.config.event_store {
            match store.read(session_id, stream, position as u64).await {
                Ok(Some(feed)) => {
                    let events = feed.take_while(move |event| {
                        if let Err(error) = event {
                            tracing::warn!(%error, stream, "a resumed SSE stream ended early");
                        }
                        std::future::ready(event.is_ok())
                    });
                    let events = events.filter_map(move |event| {
                        std::future::ready(event.ok().map(|event| Event {
                            id: Some(format!("{stream}:{}", event.position)),
                            retry: None,
                            data: event.data,
                        }))
                    });
                    return sse_events(events.take_until(closed));
                }
                Ok(None) => {}
                Err(e) => {
                    let error = ErrorObject::internal_error(format!("The event store failed: {e}"));
                    return json_response(StatusCode::SERVICE_UNAVAILABLE, &Outgoing::error(None, &error));
                }
            }
        }
    }
    sse(shared.server.session_notifications(session).take_until(closed))
}

pub(super) async fn delete(shared: Arc<Shared>, headers: &HeaderMap, principal: &Principal) -> Response {
    let Some(session_id) = header_str(headers, &SESSION_HEADER) else {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    };
    // Only the session's own principal may end it, wherever it was opened.
    let idle = shared.config.session_idle;
    match shared.resolve(session_id).await {
        Ok(Some((session, _))) if session.principal() != principal => return other_principal(None),
        Ok(_) => {}
        Err(e) => return json_response(StatusCode::SERVICE_UNAVAILABLE, &Outgoing::error(None, &store_error(&e))),
    }
    let removed = shared.sessions.lock().expect("not poisoned").remove(session_id);
    if let Some(entry) = &removed {
        entry.session.close();
    }
    // Opened on another instance perhaps: the store knows.
    let store = shared.server.session_store();
    let outcome = async {
        let known = removed.is_some() || store.load(session_id, idle).await?.is_some();
        store.remove(session_id).await?;
        Ok::<_, StoreError>(known)
    };
    match outcome.await {
        Ok(true) => StatusCode::OK.into_response(),
        Ok(false) => error(StatusCode::NOT_FOUND, None, "Session not found"),
        Err(e) => json_response(StatusCode::SERVICE_UNAVAILABLE, &Outgoing::error(None, &store_error(&e))),
    }
}
