//! The event store: the SSE events of legacy sessions' requests, kept so that a client resumes
//! a stream with `Last-Event-ID` on any instance, not only the one that wrote it.
//!
//! The HTTP transport always keeps each session's recent streams in memory for resumption on
//! the same instance ([`HttpConfig::max_replay_bytes`](crate::http::HttpConfig)). With an
//! [`EventStore`] ([`HttpConfig::event_store`](crate::http::HttpConfig)) it also appends each
//! event there, and a resumption that arrives at an instance which does not hold the stream is
//! served from the store, following the stream until the writing instance finishes it.

use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures::Stream;
use tokio::sync::watch;

use crate::store::{StoreError, StoreFuture};

/// One stored event: its position in its stream (1-based; the event id is `STREAM:POSITION`)
/// and its data, one JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredEvent {
    /// The position in the stream.
    pub position: u64,
    /// The JSON-RPC message.
    pub data: String,
}

/// The events of a stream after a position: those kept, then each new one until the stream is
/// finished. An error ends the feed.
pub type EventFeed = Pin<Box<dyn Stream<Item = Result<StoredEvent, StoreError>> + Send>>;

/// Where the SSE events of legacy sessions are kept for resumption on any instance. Each stream
/// is bounded (the oldest events go first) and forgotten some time after its last event.
pub trait EventStore: std::fmt::Debug + Send + Sync + 'static {
    /// Appends event `position` of stream `stream` of session `session`. The writer calls it in
    /// order of position, for every event with data (positions of stream breaks are skipped).
    fn append<'a>(&'a self, session: &'a str, stream: u64, position: u64, data: &'a str) -> StoreFuture<'a, ()>;

    /// No event will follow: readers end after the last one.
    fn finish<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()>;

    /// The events after `after` still kept, then each new one until the stream is finished;
    /// `None` if the store knows no such stream (never written, or forgotten).
    fn read<'a>(&'a self, session: &'a str, stream: u64, after: u64) -> StoreFuture<'a, Option<EventFeed>>;
}

/// An [`EventStore`] in this process's memory (shared by servers of one process, as in tests):
/// at most `max_events` per stream and `max_streams` streams, the oldest going first.
#[derive(Debug)]
pub struct InMemoryEventStore {
    streams: Arc<Mutex<Streams>>,
    max_events: usize,
    max_streams: usize,
}

#[derive(Debug, Default)]
struct Streams {
    by_key: HashMap<(String, u64), Entry>,
    /// Creation order, for eviction.
    order: VecDeque<(String, u64)>,
}

#[derive(Debug)]
struct Entry {
    events: VecDeque<StoredEvent>,
    /// (last position written, finished)
    progress: watch::Sender<(u64, bool)>,
}

impl InMemoryEventStore {
    /// A store of at most 1,000 events per stream and 10,000 streams.
    pub fn new() -> Self {
        Self::with_limits(1_000, 10_000)
    }

    /// A store of at most `max_events` per stream and `max_streams` streams (each at least one).
    pub fn with_limits(max_events: usize, max_streams: usize) -> Self {
        InMemoryEventStore { streams: Arc::default(), max_events: max_events.max(1), max_streams: max_streams.max(1) }
    }

    fn entry<'a>(&self, streams: &'a mut Streams, session: &str, stream: u64) -> &'a mut Entry {
        let key = (session.to_owned(), stream);
        if !streams.by_key.contains_key(&key) {
            while streams.by_key.len() >= self.max_streams {
                let Some(oldest) = streams.order.pop_front() else { break };
                streams.by_key.remove(&oldest);
            }
            streams.order.push_back(key.clone());
            let entry = Entry { events: VecDeque::new(), progress: watch::channel((0, false)).0 };
            streams.by_key.insert(key.clone(), entry);
        }
        streams.by_key.get_mut(&key).expect("inserted above")
    }
}

impl Default for InMemoryEventStore {
    fn default() -> Self {
        Self::new()
    }
}

impl EventStore for InMemoryEventStore {
    fn append<'a>(&'a self, session: &'a str, stream: u64, position: u64, data: &'a str) -> StoreFuture<'a, ()> {
        let mut streams = self.streams.lock().expect("not poisoned");
        let max_events = self.max_events;
        let entry = self.entry(&mut streams, session, stream);
        entry.events.push_back(StoredEvent { position, data: data.to_owned() });
        while entry.events.len() > max_events {
            entry.events.pop_front();
        }
        entry.progress.send_modify(|progress| progress.0 = progress.0.max(position));
        Box::pin(std::future::ready(Ok(())))
    }

    fn finish<'a>(&'a self, session: &'a str, stream: u64) -> StoreFuture<'a, ()> {
        let mut streams = self.streams.lock().expect("not poisoned");
        self.entry(&mut streams, session, stream).progress.send_modify(|progress| progress.1 = true);
        Box::pin(std::future::ready(Ok(())))
    }

    fn read<'a>(&'a self, session: &'a str, stream: u64, after: u64) -> StoreFuture<'a, Option<EventFeed>> {
        let key = (session.to_owned(), stream);
        let Some(progress) =
            self.streams.lock().expect("not poisoned").by_key.get(&key).map(|e| e.progress.subscribe())
        else {
            return Box::pin(std::future::ready(Ok(None)));
        };
        // The feed looks events up by position at each step: one dropped meanwhile for the
        // bound is skipped, never repeated.
        let streams = Arc::clone(&self.streams);
        let feed = futures::stream::unfold((progress, after), move |(mut progress, mut next)| {
            let (streams, key) = (Arc::clone(&streams), key.clone());
            async move {
                loop {
                    let (_, finished) = *progress.borrow_and_update();
                    let found = {
                        let streams = streams.lock().expect("not poisoned");
                        streams.by_key.get(&key)?.events.iter().find(|event| event.position > next).cloned()
                    };
                    if let Some(event) = found {
                        next = event.position;
                        return Some((Ok(event), (progress, next)));
                    }
                    // Finished and nothing after `next`: nothing will come.
                    if finished || progress.changed().await.is_err() {
                        return None;
                    }
                }
            }
        });
        Box::pin(std::future::ready(Ok(Some(Box::pin(feed) as EventFeed))))
    }
}
