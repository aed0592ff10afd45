//! `identity = "exchange"`: an HTTP upstream that serves each caller as that caller.
//!
//! Each caller has a connection of its own, whose only credential is what the authorization
//! server issued for the upstream in exchange for the caller's token (RFC 8693, through
//! `mcp_client::auth::OAuth::token_exchange`); the caller's token itself goes to the authorization
//! server alone. A connection of its own (not a header per request on a shared one) because a
//! legacy upstream binds a session to the principal that opened it, and because then no request
//! can ever carry another caller's token: each connection holds one caller's token, and nothing
//! else.
//!
//! A caller is its principal, the client its token was issued to and its scopes: a token
//! exchanged for one of alice's tokens is never used for another of hers with fewer scopes. At
//! most `max_identities` callers are kept; past that, the one unused the longest is let go.

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use mcp_client::Client;
use mcp_client::auth::{OAuth, SubjectToken};
use mcp_server::VerifiedToken;

/// Who a caller is, for the tokens exchanged for it: its principal, the client its token was
/// issued to, and the scopes it holds (sorted).
#[derive(Clone, PartialEq, Eq, Hash)]
struct Caller {
    principal: String,
    client: Option<String>,
    scopes: Vec<String>,
}

impl Caller {
    fn of(principal: &str, token: &VerifiedToken) -> Caller {
        let mut scopes = token.scopes.clone();
        scopes.sort();
        scopes.dedup();
        Caller { principal: principal.to_owned(), client: token.client_id.clone(), scopes }
    }
}

/// One caller's credentials for the upstream and its connection there.
pub(crate) struct Identity {
    /// The caller's token, as it last presented it: what the next exchange trades.
    subject: SubjectToken,
    /// The exchange, and the token it got (kept until it is about to expire).
    pub(super) oauth: OAuth,
    /// Its connection, made at its first request, and again after the upstream's era changed
    /// (a legacy session the upstream forgot is started again by the client itself).
    connection: tokio::sync::Mutex<Option<Client>>,
    /// Its requests in flight (leases count them, as for the shared connection).
    pub(super) in_flight: Arc<AtomicUsize>,
}

impl Identity {
    /// The caller's connection if it is one `usable` accepts, else a new one from `connect`
    /// (which replaces it); the one replaced, to close once its requests have had their time.
    pub(super) async fn connection<F, E>(
        &self,
        usable: impl Fn(&Client) -> bool,
        connect: impl FnOnce(OAuth) -> F,
    ) -> Result<(Client, Option<Client>), E>
    where
        F: std::future::Future<Output = Result<Client, E>>,
    {
        // One connection at a time: a caller's concurrent first requests share it.
        let mut connection = self.connection.lock().await;
        if let Some(client) = connection.as_ref().filter(|client| usable(client)) {
            return Ok((client.clone(), None));
        }
        let client = connect(self.oauth.clone()).await?;
        let replaced = connection.replace(client.clone());
        Ok((client, replaced))
    }

    /// The secrets it holds: the caller's token and the one exchanged for it.
    fn secrets(&self, into: &mut Vec<String>) {
        into.push(self.subject.get().expose().to_owned());
        if let Some(tokens) = self.oauth.tokens() {
            into.push(tokens.access_token.expose().to_owned());
        }
    }
}

/// The callers of one upstream with their credentials and connections, at most `capacity`.
pub(crate) struct Identities {
    capacity: usize,
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    by_caller: HashMap<Caller, (Arc<Identity>, u64)>,
    /// Counts uses: the identity with the smallest last use is the one unused the longest.
    uses: u64,
}

impl Identities {
    pub(crate) fn new(capacity: usize) -> Identities {
        Identities { capacity: capacity.max(1), held: Mutex::default() }
    }

    /// The identity of the caller `principal` presenting `token` (whose `raw` form is what an
    /// exchange trades), made with `exchange` the first time; with the identity let go to make
    /// room, if one was.
    pub(crate) fn of(
        &self,
        principal: &str,
        token: &VerifiedToken,
        raw: &str,
        exchange: impl FnOnce(SubjectToken) -> OAuth,
    ) -> (Arc<Identity>, Option<Arc<Identity>>) {
        let caller = Caller::of(principal, token);
        let mut held = self.held.lock().expect("not poisoned");
        held.uses += 1;
        let used = held.uses;
        if let Some((identity, last)) = held.by_caller.get_mut(&caller) {
            *last = used;
            // Its latest token: an exchange made from now on trades this one.
            identity.subject.set(raw);
            return (Arc::clone(identity), None);
        }
        // A scan of at most `capacity` entries, once per new caller.
        let evicted = if held.by_caller.len() >= self.capacity {
            let oldest = held.by_caller.iter().min_by_key(|(_, (_, last))| *last).map(|(caller, _)| caller.clone());
            oldest.and_then(|caller| held.by_caller.remove(&caller)).map(|(identity, _)| identity)
        } else {
            None
        };
        let subject = SubjectToken::new(raw);
        let identity = Arc::new(Identity {
            oauth: exchange(subject.clone()),
            subject,
            connection: tokio::sync::Mutex::new(None),
            in_flight: Arc::default(),
        });
        held.by_caller.insert(caller, (Arc::clone(&identity), used));
        (identity, evicted)
    }

    /// How many callers are kept now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().expect("not poisoned").by_caller.len()
    }

    /// Every caller's token and the tokens exchanged for them (redacted from the log).
    pub(crate) fn secrets(&self, into: &mut Vec<String>) {
        let held = self.held.lock().expect("not poisoned");
        held.by_caller.values().for_each(|(identity, _)| identity.secrets(into));
    }
}

impl Identity {
    /// Its connection now, if it has one (to close it when the identity is let go).
    pub(super) fn take_connection(&self) -> Option<Client> {
        self.connection.try_lock().ok().and_then(|mut connection| connection.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(client: &str, scopes: &[&str]) -> VerifiedToken {
        let mut claims = serde_json::Map::new();
        claims.insert("client_id".into(), client.into());
        claims.insert("scope".into(), scopes.join(" ").into());
        VerifiedToken::from_claims(claims)
    }

    fn exchange(subject: SubjectToken) -> OAuth {
        OAuth::builder().client_id("gateway").token_exchange(subject).build()
    }

    #[test]
    fn each_caller_has_its_own_identity_and_the_one_unused_longest_goes_first() {
        let identities = Identities::new(2);
        let (alice, _) = identities.of("alice", &token("agent", &["a", "b"]), "alice-1", exchange);
        // The same caller (scopes in another order) with a newer token: the same identity,
        // which now trades the newer token.
        let (again, _) = identities.of("alice", &token("agent", &["b", "a"]), "alice-2", exchange);
        assert!(Arc::ptr_eq(&alice, &again));
        assert_eq!(alice.subject.get().expose(), "alice-2");
        // Fewer scopes, or another client: another caller, never the first one's token.
        let (narrower, _) = identities.of("alice", &token("agent", &["a"]), "alice-3", exchange);
        assert!(!Arc::ptr_eq(&alice, &narrower));
        assert_eq!(identities.len(), 2);
        // Full: a third caller lets go of the one unused the longest (alice with both scopes).
        let (_, evicted) = identities.of("bob", &token("agent", &["a"]), "bob-1", exchange);
        assert!(evicted.is_some_and(|evicted| Arc::ptr_eq(&evicted, &alice)));
        assert_eq!(identities.len(), 2);
        let mut secrets = Vec::new();
        identities.secrets(&mut secrets);
        secrets.sort();
        assert_eq!(secrets, ["alice-3", "bob-1"]);
    }
}
