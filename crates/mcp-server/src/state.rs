//! `requestState`: the answers a multi-round request has collected, carried by the client and
//! sealed with HMAC-SHA256 so that the server needs no memory between rounds and rejects a state
//! that was altered, replayed onto another request, or is too old.

use std::collections::BTreeMap;
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
}

/// Why a state was refused.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StateError {
    Malformed,
    BadSignature,
    OtherRequest,
    Expired,
}

impl std::fmt::Display for StateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StateError::Malformed => "requestState is not a state this server issued",
            StateError::BadSignature => "requestState failed its integrity check",
            StateError::OtherRequest => "requestState belongs to a different request",
            StateError::Expired => "requestState has expired; send the request again without it",
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

    pub(crate) fn open(&self, state: &str, binding: &str, max_age: Duration) -> Result<Sealed, StateError> {
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
        }
    }

    #[test]
    fn a_sealed_state_opens_with_the_same_key_and_binding() {
        let key = StateKey::random();
        let sealed = sample();
        let state = key.seal(&sealed);
        assert_eq!(key.open(&state, &sealed.binding, Duration::from_secs(60)), Ok(sealed));
    }

    #[test]
    fn tampering_another_key_another_request_and_age_are_refused() {
        let key = StateKey::random();
        let sealed = sample();
        let state = key.seal(&sealed);
        let hour = Duration::from_secs(3600);
        assert_eq!(key.open(&format!("{state}-TAMPERED"), &sealed.binding, hour), Err(StateError::BadSignature));
        let (body, tag) = state.split_once('.').unwrap();
        let altered = format!("{}A.{tag}", &body[..body.len() - 1]);
        assert_eq!(key.open(&altered, &sealed.binding, hour), Err(StateError::BadSignature));
        assert_eq!(StateKey::random().open(&state, &sealed.binding, hour), Err(StateError::BadSignature));
        assert_eq!(key.open("no-dot", &sealed.binding, hour), Err(StateError::Malformed));
        let other = binding("tools/call", "t", &serde_json::json!({"a": 2}));
        assert_eq!(key.open(&state, &other, hour), Err(StateError::OtherRequest));
        let old = key.seal(&Sealed { issued: now_secs() - 7200, ..sample() });
        assert_eq!(key.open(&old, &sealed.binding, hour), Err(StateError::Expired));
    }

    #[test]
    fn a_shared_secret_gives_the_same_key_on_every_instance() {
        let state = StateKey::from_secret(b"shared").seal(&sample());
        assert!(StateKey::from_secret(b"shared").open(&state, &sample().binding, Duration::from_secs(60)).is_ok());
    }
}
