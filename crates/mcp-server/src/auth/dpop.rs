//! DPoP proofs (RFC 9449) for tokens bound to a key: the proof's signature by the key it
//! carries, that key's thumbprint against the token's `cnf.jkt`, the request it was made for,
//! its age, and that it was not seen before.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use jsonwebtoken::jwk::{Jwk, ThumbprintHash};
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use super::jwt::{accepted_algorithm, jose_header};
use super::{ProofUse, ReplayStore};
use crate::store::StoreError;

/// The proof algorithms accepted (the metadata's `dpop_signing_alg_values_supported`).
pub(super) const ALGORITHMS: &[&str] = &["ES256", "ES384", "RS256", "PS256"];

/// Longest proof read.
const MAX_PROOF_BYTES: usize = 8 * 1024;

/// What the proof must match.
pub(super) struct Expected<'a> {
    pub method: &'a str,
    /// The resource's URL: the `htu` of a proof for the endpoint (RFC 9449 §4.3: without query
    /// and fragment).
    pub url: &'a str,
    pub access_token: &'a str,
    pub jkt: &'a str,
    pub iat_window: Duration,
}

/// A proof that verified, to be recorded against replay.
pub(super) struct Proof {
    /// The thumbprint of the proof's key.
    pub key: String,
    pub jti: String,
    /// When its `iat` is out of the window (seconds since the epoch).
    pub until: u64,
}

/// Verifies `proof` (all but its replay); the error says why it is refused.
pub(super) fn verify(proof: &str, expected: &Expected<'_>) -> Result<Proof, String> {
    if proof.len() > MAX_PROOF_BYTES {
        return Err(format!("the DPoP proof exceeds {MAX_PROOF_BYTES} bytes"));
    }
    let header = jose_header(proof).map_err(|e| format!("the DPoP proof is malformed ({e})"))?;
    if header.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
        return Err("the DPoP proof's typ is not dpop+jwt".to_owned());
    }
    let alg_name = header.get("alg").and_then(Value::as_str).unwrap_or_default();
    let alg = ALGORITHMS
        .contains(&alg_name)
        .then(|| accepted_algorithm(alg_name))
        .flatten()
        .ok_or_else(|| format!("the DPoP proof's algorithm `{alg_name}` is not accepted"))?;
    let jwk_value = header.get("jwk").ok_or("the DPoP proof carries no jwk")?;
    if jwk_value.get("d").is_some() {
        return Err("the DPoP proof's jwk holds a private key".to_owned());
    }
    let jwk: Jwk = serde_json::from_value(jwk_value.clone()).map_err(|_| "the DPoP proof's jwk is not a public key")?;
    let key = DecodingKey::from_jwk(&jwk).map_err(|_| "the DPoP proof's jwk is not a usable public key")?;
    if key.family() != alg.family() {
        return Err("the DPoP proof's jwk does not fit its algorithm".to_owned());
    }
    let thumbprint = jwk.thumbprint(ThumbprintHash::SHA256).map_err(|_| "the DPoP proof's jwk has no thumbprint")?;
    if thumbprint != expected.jkt {
        return Err("the DPoP proof is signed by another key than the token is bound to".to_owned());
    }
    let mut validation = Validation::new(alg);
    validation.algorithms = vec![alg];
    validation.validate_exp = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    let claims = jsonwebtoken::decode::<Map<String, Value>>(proof, &key, &validation)
        .map_err(|_| "the DPoP proof's signature does not verify".to_owned())?
        .claims;
    let claim = |name: &str| claims.get(name).and_then(Value::as_str);
    if claim("htm") != Some(expected.method) {
        return Err(format!("the DPoP proof is for another method than {}", expected.method));
    }
    let htu = claim("htu").ok_or("the DPoP proof has no htu")?;
    if without_query(htu) != without_query(expected.url) {
        return Err("the DPoP proof is for another URL".to_owned());
    }
    let ath = B64URL.encode(Sha256::digest(expected.access_token.as_bytes()));
    if claim("ath") != Some(ath.as_str()) {
        return Err("the DPoP proof's ath is not the hash of this access token".to_owned());
    }
    let iat = claims.get("iat").and_then(Value::as_u64).ok_or("the DPoP proof has no iat")?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    let window = expected.iat_window.as_secs();
    if iat + window < now || iat > now + window {
        return Err(format!("the DPoP proof's iat is more than {window} s from now"));
    }
    let jti = claim("jti").filter(|jti| !jti.is_empty() && jti.len() <= 256).ok_or("the DPoP proof has no jti")?;
    Ok(Proof { key: thumbprint, jti: jti.to_owned(), until: iat + 2 * window })
}

fn without_query(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or_default()
}

/// The `jti`s of proofs seen within the window, bounded in all and per key: one client (one
/// DPoP key) may hold at most a sixteenth of the room, so that it cannot crowd out the others.
pub(super) struct ReplayCache {
    capacity: usize,
    per_key: usize,
    seen: Mutex<Seen>,
}

#[derive(Default)]
struct Seen {
    /// `"<key thumbprint> <jti>"` of every proof remembered.
    proofs: HashSet<String>,
    /// The same, with when each may be forgotten (seconds since the epoch), oldest first, and
    /// the length of its thumbprint.
    order: VecDeque<(u64, String, usize)>,
    /// Proofs remembered per key thumbprint.
    by_key: HashMap<String, usize>,
}

impl ReplayCache {
    pub(super) fn new(capacity: usize) -> Self {
        ReplayCache { capacity, per_key: (capacity / 16).max(1), seen: Mutex::new(Seen::default()) }
    }

    fn record_at(&self, key: &str, jti: &str, until: u64, now: u64) -> ProofUse {
        let mut seen = self.seen.lock().expect("not poisoned");
        while seen.order.front().is_some_and(|(expiry, _, _)| *expiry <= now) {
            let (_, old, key_len) = seen.order.pop_front().expect("just looked");
            seen.proofs.remove(&old);
            if let Some(count) = seen.by_key.get_mut(&old[..key_len]) {
                *count -= 1;
                if *count == 0 {
                    seen.by_key.remove(&old[..key_len]);
                }
            }
        }
        let proof = format!("{key} {jti}");
        if seen.proofs.contains(&proof) {
            return ProofUse::Replayed;
        }
        if seen.by_key.get(key).is_some_and(|&count| count >= self.per_key) || seen.proofs.len() >= self.capacity {
            return ProofUse::TooMany;
        }
        seen.proofs.insert(proof.clone());
        seen.order.push_back((until, proof, key.len()));
        *seen.by_key.entry(key.to_owned()).or_default() += 1;
        ProofUse::First
    }
}

impl ReplayStore for ReplayCache {
    fn record<'a>(&'a self, key: &'a str, jti: &'a str, until: u64) -> BoxFuture<'a, Result<ProofUse, StoreError>> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        Box::pin(std::future::ready(Ok(self.record_at(key, jti, until, now))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jti_is_accepted_once_within_its_window() {
        let cache = ReplayCache::new(32);
        assert_eq!(cache.record_at("k", "a", 100, 10), ProofUse::First);
        assert_eq!(cache.record_at("k", "a", 100, 20), ProofUse::Replayed);
        assert_eq!(cache.record_at("k", "b", 100, 20), ProofUse::First);
        // Key k holds its share (32 / 16 = 2); another key still has room.
        assert_eq!(cache.record_at("k", "c", 100, 20), ProofUse::TooMany);
        assert_eq!(cache.record_at("other", "c", 100, 20), ProofUse::First);
        // Past their window, they are forgotten and room is made.
        assert_eq!(cache.record_at("k", "c", 300, 200), ProofUse::First);
        assert_eq!(cache.record_at("k", "a", 300, 200), ProofUse::First);
    }

    #[test]
    fn the_whole_cache_is_bounded_across_keys() {
        let cache = ReplayCache::new(16);
        for key in 0..16 {
            assert_eq!(cache.record_at(&key.to_string(), "j", 100, 10), ProofUse::First);
        }
        assert_eq!(cache.record_at("16", "j", 100, 10), ProofUse::TooMany);
    }
}
