//! `requestState`: the answers a multi-round request has collected, carried by the client and
//! sealed with HMAC-SHA256 so that the server needs no memory between rounds and rejects a state
//! that was altered, replayed onto another request, or is too old.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The key that seals `requestState`. Servers behind a load balancer share one key.
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
}

/// Why a state was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StateError {
    Malformed,
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

/// The single-use states already used, remembered until they expire. Bounded: when full, the
/// oldest is forgotten and every state issued at or before it is refused from then on, so a
/// replay is never accepted.
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

    /// Records the first use of `sealed`; an error if it was used before, or may have been.
    pub fn first_use(&mut self, sealed: &Sealed, max_age: Duration, now: u64) -> Result<(), StateError> {
        let oldest_valid = now.saturating_sub(max_age.as_secs());
        while self.used.first().is_some_and(|&(issued, _)| issued < oldest_valid) {
            self.used.pop_first();
        }
        if self.horizon.is_some_and(|horizon| sealed.issued <= horizon) {
            return Err(StateError::Forgotten);
        }
        if !self.used.insert((sealed.issued, sealed.nonce)) {
            return Err(StateError::AlreadyUsed);
        }
        while self.used.len() > self.capacity {
            let Some((issued, _)) = self.used.pop_first() else { break };
            self.horizon = Some(self.horizon.map_or(issued, |horizon| horizon.max(issued)));
        }
        Ok(())
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

    pub(crate) fn seal(&self, sealed: &Sealed) -> String {
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(sealed).expect("state encodes"));
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{body}.{tag}")
    }

    pub(crate) fn open(
        &self,
        state: &str,
        binding: &str,
        principal: Option<&str>,
        max_age: Duration,
    ) -> Result<Sealed, StateError> {
        let (body, tag) = state.split_once('.').ok_or(StateError::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| StateError::BadSignature)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Sealed {
        Sealed {
            binding: binding("tools/call", "t", &serde_json::json!({"a": 1})),
            issued: now_secs(),
            answers: BTreeMap::from([("k".to_owned(), serde_json::json!({"action": "accept"}))]),
            principal: None,
            nonce: nonce(),
        }
    }

    #[test]
    fn a_sealed_state_opens_with_the_same_key_and_binding() {
        let key = StateKey::random();
        let sealed = sample();
        let state = key.seal(&sealed);
        assert_eq!(key.open(&state, &sealed.binding, None, Duration::from_secs(60)), Ok(sealed));
    }

    #[test]
    fn tampering_another_key_another_request_and_age_are_refused() {
        let key = StateKey::random();
        let sealed = sample();
        let state = key.seal(&sealed);
        let hour = Duration::from_secs(3600);
        assert_eq!(key.open(&format!("{state}-TAMPERED"), &sealed.binding, None, hour), Err(StateError::BadSignature));
        let (body, tag) = state.split_once('.').unwrap();
        let altered = format!("{}A.{tag}", &body[..body.len() - 1]);
        assert_eq!(key.open(&altered, &sealed.binding, None, hour), Err(StateError::BadSignature));
        assert_eq!(StateKey::random().open(&state, &sealed.binding, None, hour), Err(StateError::BadSignature));
        assert_eq!(key.open("no-dot", &sealed.binding, None, hour), Err(StateError::Malformed));
        let other = binding("tools/call", "t", &serde_json::json!({"a": 2}));
        assert_eq!(key.open(&state, &other, None, hour), Err(StateError::OtherRequest));
        let old = key.seal(&Sealed { issued: now_secs() - 7200, ..sample() });
        assert_eq!(key.open(&old, &sealed.binding, None, hour), Err(StateError::Expired));
    }

    #[test]
    fn a_state_issued_to_one_principal_is_refused_for_another() {
        let key = StateKey::random();
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

    #[test]
    fn the_replay_cache_refuses_a_second_use_and_stays_within_its_capacity() {
        let hour = Duration::from_secs(3600);
        let now = now_secs();
        let mut cache = ReplayCache::new(3);
        let states: Vec<Sealed> = (0..5).map(|age| Sealed { issued: now - 10 + age, ..sample() }).collect();
        assert_eq!(cache.first_use(&states[0], hour, now), Ok(()));
        assert_eq!(cache.first_use(&states[0], hour, now), Err(StateError::AlreadyUsed));
        for state in &states[1..] {
            assert_eq!(cache.first_use(state, hour, now), Ok(()));
        }
        assert_eq!(cache.len(), 3);
        // The two oldest were forgotten: they, and anything issued before them, are refused.
        assert_eq!(cache.first_use(&states[0], hour, now), Err(StateError::Forgotten));
        assert_eq!(cache.first_use(&states[1], hour, now), Err(StateError::Forgotten));
        assert_eq!(cache.first_use(&states[4], hour, now), Err(StateError::AlreadyUsed));
        // Expired entries are dropped as time passes.
        let later = now + 3600 + 60;
        let fresh = Sealed { issued: later, ..sample() };
        assert_eq!(cache.first_use(&fresh, hour, later), Ok(()));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_shared_secret_gives_the_same_key_on_every_instance() {
        let state = StateKey::from_secret(b"shared").seal(&sample());
        assert!(
            StateKey::from_secret(b"shared").open(&state, &sample().binding, None, Duration::from_secs(60)).is_ok()
        );
    }
}
