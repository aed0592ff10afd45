//! Server-sent events: their encoding, the keep-alive comments of idle streams, and the replay
//! logs that let a legacy client resume a stream with `Last-Event-ID`.

use super::*;

/// The recent SSE streams of a legacy session, kept so that a client can resume one, within a
/// byte budget ([`HttpConfig::max_replay_bytes`]) shared by all of them, and the budget of every
/// session together ([`HttpConfig::max_replay_bytes_total`]).
pub(super) struct Logs {
    next: u64,
    streams: VecDeque<(u64, Arc<StreamLog>)>,
    bytes: usize,
    budget: ReplayBudget,
}

/// How many bytes one session's logs may keep, and all sessions' together (`kept` counts them).
pub(super) struct ReplayBudget {
    pub(super) session: usize,
    pub(super) total: usize,
    pub(super) kept: Arc<std::sync::atomic::AtomicUsize>,
}

const LOGS_PER_SESSION: usize = 32;

impl Logs {
    /// With `shared` (an event store), stream numbers start at random, so that the streams one
    /// session has on several instances never share a number.
    pub(super) fn new(budget: ReplayBudget, shared: bool) -> Self {
        let mut next = 0;
        if shared {
            let mut bytes = [0u8; 8];
            if getrandom::fill(&mut bytes).is_ok() {
                // 52 bits: event ids stay exact numbers for JavaScript clients.
                next = u64::from_le_bytes(bytes) >> 12;
            }
        }
        Logs { next, streams: VecDeque::new(), bytes: 0, budget }
    }

    fn kept(&mut self, added: usize) {
        self.bytes += added;
        self.budget.kept.fetch_add(added, std::sync::atomic::Ordering::Relaxed);
    }

    fn freed(&mut self, freed: usize) {
        self.bytes -= freed;
        self.budget.kept.fetch_sub(freed, std::sync::atomic::Ordering::Relaxed);
    }

    fn over_budget(&self) -> bool {
        self.bytes > self.budget.session
            || self.budget.kept.load(std::sync::atomic::Ordering::Relaxed) > self.budget.total
    }

    pub(super) fn open(&mut self) -> (u64, Arc<StreamLog>) {
        self.next += 1;
        let log =
            Arc::new(StreamLog { retained: Mutex::new(Retained::default()), progress: watch::channel((0, false)).0 });
        if self.streams.len() == LOGS_PER_SESSION
            && let Some((_, oldest)) = self.streams.pop_front()
        {
            let freed = oldest.forget();
            self.freed(freed);
        }
        self.streams.push_back((self.next, Arc::clone(&log)));
        (self.next, log)
    }

    pub(super) fn find(&self, stream: u64) -> Option<Arc<StreamLog>> {
        self.streams.iter().find(|(id, _)| *id == stream).map(|(_, log)| Arc::clone(log))
    }

    /// Appends `entry` to `log`, one of this session's streams, and returns its event number;
    /// over either budget, the oldest entries of the session go, the one just written last (an
    /// entry larger than the budget is not kept).
    pub(super) fn push(&mut self, log: &StreamLog, entry: Option<String>) -> usize {
        let (position, added) = log.append(entry);
        self.kept(added);
        while self.over_budget() {
            let Some(freed) = self.streams.iter().find_map(|(_, stream)| stream.evict_front()) else { break };
            self.freed(freed);
        }
        position
    }
}

impl Drop for Logs {
    /// The session is gone: nothing of it can be resumed.
    fn drop(&mut self) {
        let freed: usize = self.streams.iter().map(|(_, stream)| stream.forget()).sum();
        self.budget.kept.fetch_sub(freed, std::sync::atomic::Ordering::Relaxed);
    }
}

/// One request's messages on a legacy session, independent of the HTTP connection that
/// carries them (a legacy disconnect is not a cancellation). `None` marks a stream break.
pub(super) struct StreamLog {
    retained: Mutex<Retained>,
    /// (entries written, finished)
    progress: watch::Sender<(usize, bool)>,
}

/// The entries of a stream still kept: the first `dropped` are gone.
#[derive(Default)]
struct Retained {
    dropped: usize,
    entries: VecDeque<Option<String>>,
    bytes: usize,
    /// No longer one of the session's streams: nothing is kept.
    forgotten: bool,
}

impl StreamLog {
    /// Adds an entry; its event number, and the bytes now kept for it.
    fn append(&self, entry: Option<String>) -> (usize, usize) {
        let mut retained = self.retained.lock().expect("not poisoned");
        let size = entry.as_ref().map_or(0, String::len);
        let kept = if retained.forgotten {
            retained.dropped += 1;
            0
        } else {
            retained.entries.push_back(entry);
            retained.bytes += size;
            size
        };
        let written = retained.dropped + retained.entries.len();
        self.progress.send_modify(|progress| progress.0 = written);
        (written, kept)
    }

    /// Drops the oldest kept entry; the bytes freed.
    fn evict_front(&self) -> Option<usize> {
        let mut retained = self.retained.lock().expect("not poisoned");
        if retained.entries.is_empty() {
            return None;
        }
        let size = retained.entries.pop_front().flatten().map_or(0, |json| json.len());
        retained.dropped += 1;
        retained.bytes -= size;
        Some(size)
    }

    /// Drops every entry for good; the bytes freed.
    fn forget(&self) -> usize {
        let mut retained = self.retained.lock().expect("not poisoned");
        retained.forgotten = true;
        retained.dropped += retained.entries.len();
        retained.entries.clear();
        std::mem::take(&mut retained.bytes)
    }

    pub(super) fn finish(&self) {
        self.progress.send_modify(|progress| progress.1 = true);
    }

    /// Events after event number `from` (event id `stream:n` is entry n-1), to the end. Events
    /// dropped from the replay budget are skipped, with a warning naming the limit.
    pub(super) fn read(self: Arc<Self>, stream: u64, from: usize) -> impl Stream<Item = Event> + Send {
        let progress = self.progress.subscribe();
        futures::stream::unfold((self, progress, from), move |(log, mut progress, mut next)| async move {
            loop {
                let (len, done) = *progress.borrow_and_update();
                if next < len {
                    let (entry, skipped) = {
                        let retained = log.retained.lock().expect("not poisoned");
                        let skipped = retained.dropped.saturating_sub(next);
                        next += skipped;
                        (retained.entries.get(next - retained.dropped).cloned(), skipped)
                    };
                    if skipped > 0 {
                        tracing::warn!(
                            stream,
                            skipped,
                            "a resumed stream misses events dropped for HttpConfig::max_replay_bytes"
                        );
                    }
                    let Some(entry) = entry else { continue };
                    next += 1;
                    match entry {
                        Some(json) => {
                            let event = Event { id: Some(format!("{stream}:{next}")), retry: None, data: json };
                            return Some((event, (log, progress, next)));
                        }
                        None => continue,
                    }
                }
                if done || progress.changed().await.is_err() {
                    return None;
                }
            }
        })
    }
}

pub(super) fn sse(messages: impl Stream<Item = Outgoing> + Send + 'static) -> Response {
    sse_events(messages.filter(|message| std::future::ready(message.is_message())).map(|m| Event::data(m.json)))
}

/// One server-sent event.
pub(super) struct Event {
    pub(super) id: Option<String>,
    pub(super) retry: Option<Duration>,
    pub(super) data: String,
}

impl Event {
    fn data(data: String) -> Self {
        Event { id: None, retry: None, data }
    }

    fn encode(&self) -> String {
        use std::fmt::Write;
        // Sized for one data line (JSON is written on one line): the data is copied once.
        let mut text = String::with_capacity(self.data.len() + 64);
        if let Some(id) = &self.id {
            let _ = writeln!(text, "id: {id}");
        }
        if let Some(retry) = self.retry {
            let _ = writeln!(text, "retry: {}", retry.as_millis());
        }
        // Always a data line, so that an empty priming event is still dispatched by clients.
        for line in self.data.split('\n') {
            text.push_str("data: ");
            text.push_str(line);
            text.push('\n');
        }
        text.push('\n');
        text
    }
}

const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// What an idle stream is sent every [`KEEP_ALIVE`].
pub(super) const KEEP_ALIVE_COMMENT: &[u8] = b":\n\n";

/// An SSE response; a comment line every 15 s keeps idle streams (subscriptions) open.
pub(super) fn sse_events(events: impl Stream<Item = Event> + Send + 'static) -> Response {
    let events = Box::pin(events);
    let body = futures::stream::unfold(events, |mut events| async move {
        let chunk = tokio::select! {
            // An event that is ready goes out without arming the keep-alive timer.
            biased;
            event = events.next() => event?.encode(),
            () = tokio::time::sleep(KEEP_ALIVE) => String::from_utf8_lossy(KEEP_ALIVE_COMMENT).into_owned(),
        };
        Some((Ok::<_, Infallible>(chunk), events))
    });
    let mut response = Response::new(Body::from_stream(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_written_as_its_fields_then_one_data_line_per_line_of_its_data() {
        let event = Event { id: Some("s1:4".into()), retry: Some(Duration::from_millis(1500)), data: "a\nb".into() };
        assert_eq!(event.encode(), "id: s1:4\nretry: 1500\ndata: a\ndata: b\n\n");
        assert_eq!(Event::data(r#"{"jsonrpc":"2.0"}"#.into()).encode(), "data: {\"jsonrpc\":\"2.0\"}\n\n");
        // The priming event: no data, still one (empty) data line.
        assert_eq!(
            Event { id: Some("s1:0".into()), retry: None, data: String::new() }.encode(),
            "id: s1:0\ndata: \n\n"
        );
    }
}
