//! `requestState`: the answers a multi-round request has collected, carried by the client and
//! sealed with HMAC-SHA256 so that the server needs no memory between rounds and rejects a state
//! that was altered, replayed onto another request, or is too old.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::store::StoreFuture;

type HmacSha256 = Hmac<Sha256>;

/// One key that seals `requestState`; a [`StateKeyring`] holds several, by id. Servers behind a
/// load balancer share their keys.
#[derive(Clone)]
pub struct StateKey([u8; 32]);

impl StateKey {
    /// A key from the operating system's random source (the default: one per process).
    pub fn random() -> Self {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).expect("the operating system's random source is available");
        StateKey(key)
    }

    /// A key derived from shared secret bytes (use at least 32 random bytes).
    pub fn from_secret(secret: &[u8]) -> Self {
        StateKey(Sha256::digest(secret).into())
    }
}

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(..)")
    }
}

/// What a sealed state holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Sealed {
    /// The request it belongs to: method, name or URI, and a digest of the arguments.
    #[serde(rename = "b")]
    pub binding: String,
    /// Seconds since the Unix epoch when it was issued.
    #[serde(rename = "t")]
    pub issued: u64,
    /// The input responses collected in earlier rounds, by key.
    #[serde(rename = "a")]
    pub answers: BTreeMap<String, Value>,
    /// A digest of the principal it was issued to, if the transport named one.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// Random, so that every state issued is distinct (single use is tracked by it).
    #[serde(rename = "n", default)]
    pub nonce: u64,
    /// What the handler kept for its next round (`Context::save`).
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub saved: Option<Value>,
}

/// Why a state was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StateError {
    Malformed,
    /// Sealed with a key the ring no longer holds (or never held).
    UnknownKey,
    BadSignature,
    OtherRequest,
    OtherPrincipal,
    Expired,
    AlreadyUsed,
    /// Older than what the replay cache still remembers: it may have been used.
    Forgotten,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StateError::Malformed => "requestState is not a state this server issued",
            StateError::UnknownKey => {
                "requestState was sealed with a key this server no longer accepts (StateKeyring); \
                 send the request again without it"
            }
            StateError::BadSignature => "requestState failed its integrity check",
            StateError::OtherRequest => "requestState belongs to a different request",
            StateError::OtherPrincipal => "requestState was issued to another principal",
            StateError::Expired => "requestState has expired; send the request again without it",
            StateError::AlreadyUsed => "requestState was already used (Options::state_single_use)",
            StateError::Forgotten => {
                "requestState is older than the used states this server still remembers \
                 (Options::state_replay_cache); send the request again without it"
            }
        })
    }
}

/// Identifies a request across rounds: the same method, target and arguments.
pub(crate) fn binding(method: &str, target: &str, arguments: &Value) -> String {
    let mut digest = Sha256::new();
    digest.update(method.as_bytes());
    digest.update([0]);
    digest.update(target.as_bytes());
    digest.update([0]);
    // serde_json's map is ordered by key, so equal arguments encode to equal bytes.
    digest.update(serde_json::to_vec(arguments).unwrap_or_default());
    URL_SAFE_NO_PAD.encode(&digest.finalize()[..18])
}

/// What a state stores of the principal it was issued to.
pub(crate) fn principal_digest(principal: &str) -> String {
    URL_SAFE_NO_PAD.encode(&Sha256::digest(principal.as_bytes())[..18])
}

pub(crate) fn nonce() -> u64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the operating system's random source is available");
    u64::from_le_bytes(bytes)
}

/// The single-use states already used, remembered until they expire (behind
/// [`InMemoryUsedStates`]). Bounded: when full, the oldest is forgotten and every state issued at
/// or before it is refused from then on, so a replay is never accepted.
#[derive(Debug)]
pub(crate) struct ReplayCache {
    capacity: usize,
    used: BTreeSet<(u64, u64)>,
    horizon: Option<u64>,
}

impl ReplayCache {
    pub fn new(capacity: usize) -> Self {
        ReplayCache { capacity, used: BTreeSet::new(), horizon: None }
    }

    /// Records the first use of `state`; whether it was used before, or may have been.
    pub fn first_use(&mut self, state: StateUse, now: u64) -> UseVerdict {
        // Entries are ordered by issue time; every entry shares one lifetime, so those issued
        // before the oldest still valid one have expired.
        let max_age = state.expires_secs.saturating_sub(state.issued_secs);
        let oldest_valid = now.saturating_sub(max_age);
        while self.used.first().is_some_and(|&(issued, _)| issued < oldest_valid) {
            self.used.pop_first();
        }
        if self.horizon.is_some_and(|horizon| state.issued_secs <= horizon) {
            return UseVerdict::Forgotten;
        }
        if !self.used.insert((state.issued_secs, state.nonce)) {
            return UseVerdict::Repeated;
        }
        while self.used.len() > self.capacity {
            let Some((issued, _)) = self.used.pop_first() else { break };
            self.horizon = Some(self.horizon.map_or(issued, |horizon| horizon.max(issued)));
        }
        UseVerdict::First
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.used.len()
    }
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl StateKey {
    fn mac(&self) -> HmacSha256 {
        HmacSha256::new_from_slice(&self.0).expect("HMAC takes keys of any length")
    }
}

/// The keys that seal and open `requestState`, each under an id. A state is sealed with the
/// current key and names its id; it opens with any key still in the ring. To rotate without
/// refusing the states of exchanges under way: [`insert`](Self::insert) the new key on every
/// instance, then [`rotate`](Self::rotate) to it, and [`remove`](Self::remove) the old one once
/// [`Options::state_max_age`](crate::Options::state_max_age) has passed.
///
/// A clone shares the ring: the server keeps one and changes made through any clone apply at
/// once.
#[derive(Clone)]
pub struct StateKeyring(Arc<RwLock<Ring>>);

struct Ring {
    current: String,
    keys: BTreeMap<String, StateKey>,
}

/// The id [`ServerBuilder::state_key`](crate::ServerBuilder::state_key) gives its single key.
pub(crate) const SINGLE_KEY_ID: &str = "0";

impl StateKeyring {
    /// A ring holding `key` under `id`, sealing with it.
    pub fn new(id: impl Into<String>, key: StateKey) -> Self {
        let id = id.into();
        StateKeyring(Arc::new(RwLock::new(Ring { current: id.clone(), keys: BTreeMap::from([(id, key)]) })))
    }

    /// Accepts states sealed with `key` under `id` from now on, without sealing with it (a key
    /// already held under `id` is replaced).
    pub fn insert(&self, id: impl Into<String>, key: StateKey) {
        self.0.write().expect("not poisoned").keys.insert(id.into(), key);
    }

    /// Seals with `key`, under `id`, from now on; the keys held before still open their states.
    pub fn rotate(&self, id: impl Into<String>, key: StateKey) {
        let id = id.into();
        let mut ring = self.0.write().expect("not poisoned");
        ring.keys.insert(id.clone(), key);
        ring.current = id;
    }

    /// Stops accepting the states sealed under `id`; returns whether the ring held it. The current
    /// key cannot be removed ([`rotate`](Self::rotate) away from it first): `false`.
    pub fn remove(&self, id: &str) -> bool {
        let mut ring = self.0.write().expect("not poisoned");
        ring.current != id && ring.keys.remove(id).is_some()
    }

    /// The id of the key that seals.
    pub fn current_id(&self) -> String {
        self.0.read().expect("not poisoned").current.clone()
    }

    /// The ids of every key held, in order.
    pub fn ids(&self) -> Vec<String> {
        self.0.read().expect("not poisoned").keys.keys().cloned().collect()
    }

    /// `key-id.body.tag`, all base64url; the tag covers the key id and the body.
    pub(crate) fn seal(&self, sealed: &Sealed) -> String {
        let ring = self.0.read().expect("not poisoned");
        let key_id = URL_SAFE_NO_PAD.encode(ring.current.as_bytes());
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(sealed).expect("state encodes"));
        let signed = format!("{key_id}.{body}");
        let mut mac = ring.keys[&ring.current].mac();
        mac.update(signed.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{signed}.{tag}")
    }

    pub(crate) fn open(
        &self,
        state: &str,
        binding: &str,
        principal: Option<&str>,
        max_age: Duration,
    ) -> Result<Sealed, StateError> {
        let (signed, tag) = state.rsplit_once('.').ok_or(StateError::Malformed)?;
        let (key_id, body) = signed.split_once('.').ok_or(StateError::Malformed)?;
        let key_id = URL_SAFE_NO_PAD.decode(key_id).map_err(|_| StateError::Malformed)?;
        let key_id = String::from_utf8(key_id).map_err(|_| StateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| StateError::BadSignature)?;
        let mut mac = {
            let ring = self.0.read().expect("not poisoned");
            ring.keys.get(&key_id).ok_or(StateError::UnknownKey)?.mac()
        };
        mac.update(signed.as_bytes());
        mac.verify_slice(&tag).map_err(|_| StateError::BadSignature)?;
        let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| StateError::Malformed)?;
        let sealed: Sealed = serde_json::from_slice(&bytes).map_err(|_| StateError::Malformed)?;
        if sealed.binding != binding {
            return Err(StateError::OtherRequest);
        }
        if sealed.principal.as_deref() != principal {
            return Err(StateError::OtherPrincipal);
        }
        if now_secs().saturating_sub(sealed.issued) > max_age.as_secs() {
            return Err(StateError::Expired);
        }
        Ok(sealed)
    }
}

impl From<StateKey> for StateKeyring {
    /// A ring of one key.
    fn from(key: StateKey) -> Self {
        StateKeyring::new(SINGLE_KEY_ID, key)
    }
}

impl std::fmt::Debug for StateKeyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ring = self.0.read().expect("not poisoned");
        f.debug_struct("StateKeyring").field("current", &ring.current).field("ids", &ring.keys.keys()).finish()
    }
}

/// One use of a single-use `requestState` ([`Options::state_single_use`](crate::Options)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateUse {
    /// When the state was issued (seconds since the Unix epoch).
    pub issued_secs: u64,
    /// The state's random nonce: with `issued_secs`, it names the state.
    pub nonce: u64,
    /// When the state expires and need not be remembered any more (seconds since the Unix epoch).
    pub expires_secs: u64,
}

/// Whether a state was used before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UseVerdict {
    /// Its first use: accept it.
    First,
    /// It was used before: refuse it.
    Repeated,
    /// The store may have forgotten that it was used (it made room): refuse it.
    Forgotten,
}

/// Remembers the single-use states already used ([`Options::state_single_use`](crate::Options)),
/// until they expire. Instances behind a load balancer share one store, so that a state used on
/// one is refused on all; [`InMemoryUsedStates`] (the default) remembers for one process.
pub trait UsedStateStore: Send + Sync + 'static {
    /// Records `state` as used and says whether it was used before; atomic across every
    /// instance sharing the store.
    fn first_use(&self, state: StateUse) -> StoreFuture<'_, UseVerdict>;
}

/// The default [`UsedStateStore`]: this process's memory, bounded. When full, the oldest entry is
/// forgotten and every state issued at or before it is refused from then on, so a replay is
/// never accepted.
#[derive(Debug)]
pub struct InMemoryUsedStates(Mutex<ReplayCache>);

impl InMemoryUsedStates {
    /// A store remembering at most `capacity` used states.
    pub fn with_capacity(capacity: usize) -> Self {
        InMemoryUsedStates(Mutex::new(ReplayCache::new(capacity)))
    }
}

impl UsedStateStore for InMemoryUsedStates {
    fn first_use(&self, state: StateUse) -> StoreFuture<'_, UseVerdict> {
        let verdict = self.0.lock().expect("not poisoned").first_use(state, now_secs());
        Box::pin(std::future::ready(Ok(verdict)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Sealed {
        Sealed {
            saved: None,
            binding: binding("tools/call", "t", &serde_json::json!({"a": 1})),
            issued: now_secs(),
            answers: BTreeMap::from([("k".to_owned(), serde_json::json!({"action": "accept"}))]),
            principal: None,
            nonce: nonce(),
        }
    }

    #[test]
    fn a_sealed_state_opens_with_the_same_key_and_binding() {
        let key = StateKeyring::from(StateKey::random());
        let sealed = sample();
        let state = key.seal(&sealed);
        assert_eq!(key.open(&state, &sealed.binding, None, Duration::from_secs(60)), Ok(sealed));
    }

    #[test]
    fn tampering_another_key_another_request_and_age_are_refused() {
        let key = StateKeyring::from(StateKey::random());
        let sealed = sample();
        let state = key.seal(&sealed);
        let hour = Duration::from_secs(3600);
        assert_eq!(key.open(&format!("{state}-TAMPERED"), &sealed.binding, None, hour), Err(StateError::BadSignature));
        let (signed, tag) = state.rsplit_once('.').unwrap();
        let altered = format!("{}A.{tag}", &signed[..signed.len() - 1]);
        assert_eq!(key.open(&altered, &sealed.binding, None, hour), Err(StateError::BadSignature));
        assert_eq!(
            StateKeyring::from(StateKey::random()).open(&state, &sealed.binding, None, hour),
            Err(StateError::BadSignature)
        );
        assert_eq!(key.open("no-dot", &sealed.binding, None, hour), Err(StateError::Malformed));
        let other = binding("tools/call", "t", &serde_json::json!({"a": 2}));
        assert_eq!(key.open(&state, &other, None, hour), Err(StateError::OtherRequest));
        let old = key.seal(&Sealed { issued: now_secs() - 7200, ..sample() });
        assert_eq!(key.open(&old, &sealed.binding, None, hour), Err(StateError::Expired));
    }

    #[test]
    fn a_state_issued_to_one_principal_is_refused_for_another() {
        let key = StateKeyring::from(StateKey::random());
        let alice = principal_digest("alice");
        let sealed = Sealed { principal: Some(alice.clone()), ..sample() };
        let state = key.seal(&sealed);
        let hour = Duration::from_secs(3600);
        assert_eq!(key.open(&state, &sealed.binding, Some(&alice), hour), Ok(sealed.clone()));
        let bob = principal_digest("bob");
        assert_eq!(key.open(&state, &sealed.binding, Some(&bob), hour), Err(StateError::OtherPrincipal));
        assert_eq!(key.open(&state, &sealed.binding, None, hour), Err(StateError::OtherPrincipal));
        // A state issued without a principal is not accepted from a named one either.
        let anonymous = key.seal(&sample());
        assert_eq!(key.open(&anonymous, &sealed.binding, Some(&alice), hour), Err(StateError::OtherPrincipal));
    }

    fn used(sealed: &Sealed) -> StateUse {
        StateUse { issued_secs: sealed.issued, nonce: sealed.nonce, expires_secs: sealed.issued + 3600 }
    }

    #[test]
    fn the_replay_cache_refuses_a_second_use_and_stays_within_its_capacity() {
        let now = now_secs();
        let mut cache = ReplayCache::new(3);
        let states: Vec<Sealed> = (0..5).map(|age| Sealed { issued: now - 10 + age, ..sample() }).collect();
        assert_eq!(cache.first_use(used(&states[0]), now), UseVerdict::First);
        assert_eq!(cache.first_use(used(&states[0]), now), UseVerdict::Repeated);
        for state in &states[1..] {
            assert_eq!(cache.first_use(used(state), now), UseVerdict::First);
        }
        assert_eq!(cache.len(), 3);
        // The two oldest were forgotten: they, and anything issued before them, are refused.
        assert_eq!(cache.first_use(used(&states[0]), now), UseVerdict::Forgotten);
        assert_eq!(cache.first_use(used(&states[1]), now), UseVerdict::Forgotten);
        assert_eq!(cache.first_use(used(&states[4]), now), UseVerdict::Repeated);
        // Expired entries are dropped as time passes.
        let later = now + 3600 + 60;
        let fresh = Sealed { issued: later, ..sample() };
        assert_eq!(cache.first_use(used(&fresh), later), UseVerdict::First);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_ring_opens_with_every_key_it_holds_and_refuses_a_removed_one() {
        let ring = StateKeyring::new("old", StateKey::random());
        let sealed = sample();
        let hour = Duration::from_secs(3600);
        let by_old = ring.seal(&sealed);
        ring.rotate("new", StateKey::random());
        assert_eq!(ring.current_id(), "new");
        let by_new = ring.seal(&sealed);
        assert_eq!(ring.open(&by_old, &sealed.binding, None, hour), Ok(sealed.clone()));
        assert_eq!(ring.open(&by_new, &sealed.binding, None, hour), Ok(sealed.clone()));
        assert!(!ring.remove("new"), "the current key stays");
        assert!(ring.remove("old"));
        assert_eq!(ring.ids(), ["new"]);
        assert_eq!(ring.open(&by_old, &sealed.binding, None, hour), Err(StateError::UnknownKey));
        // A state naming the current key's id but signed by another key is still refused.
        let (_, rest) = by_old.split_once('.').unwrap();
        let relabelled = format!("{}.{rest}", URL_SAFE_NO_PAD.encode("new"));
        assert_eq!(ring.open(&relabelled, &sealed.binding, None, hour), Err(StateError::BadSignature));
        // A key inserted without rotating opens states but does not seal them.
        let other = StateKeyring::new("next", StateKey::from_secret(b"next"));
        let by_next = other.seal(&sealed);
        ring.insert("next", StateKey::from_secret(b"next"));
        assert_eq!(ring.open(&by_next, &sealed.binding, None, hour), Ok(sealed.clone()));
        assert_eq!(ring.current_id(), "new");
    }

    #[test]
    fn a_shared_secret_gives_the_same_key_on_every_instance() {
        let state = StateKeyring::from(StateKey::from_secret(b"shared")).seal(&sample());
        assert!(
            StateKeyring::from(StateKey::from_secret(b"shared"))
                .open(&state, &sample().binding, None, Duration::from_secs(60))
                .is_ok()
        );
    }
}
