//! The legacy sessions one HTTP instance holds, by id: the least recently used goes first when
//! the table is full, idle ones leave by time (a sweep from the oldest end, never a scan on
//! insert), and each client holds at most its share, so that one client cannot push out the
//! sessions of everyone else. Every operation is O(log n).

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::time::{Duration, Instant};

use crate::principal::Principal;

/// Who opened a session, for the per-client share: the principal an auth layer named, else the
/// remote address; `Unknown` (no auth layer, no connection info) has no share of its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum ClientKey {
    Principal(Principal),
    Address(IpAddr),
    Unknown,
}

impl ClientKey {
    pub fn new(principal: &Principal, address: Option<IpAddr>) -> Self {
        match (principal.is_anonymous(), address) {
            (false, _) => ClientKey::Principal(principal.clone()),
            (true, Some(address)) => ClientKey::Address(address),
            (true, None) => ClientKey::Unknown,
        }
    }
}

/// The client already holds its share ([`crate::http::HttpConfig::max_sessions_per_client`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct ShareFull;

pub(crate) struct SessionTable<T> {
    /// By session id. The ids are the server's own random ones (a caller only names one it was
    /// given), so a fast hash is safe: no caller chooses the keys. Looked up on every request.
    slots: HashMap<String, Slot<T>, foldhash::fast::RandomState>,
    /// Least recently used first. The counter orders uses within one clock tick.
    by_use: BTreeMap<(Instant, u64), String>,
    per_client: HashMap<ClientKey, usize>,
    uses: u64,
}

struct Slot<T> {
    value: T,
    used: (Instant, u64),
    client: ClientKey,
}

impl<T> Default for SessionTable<T> {
    fn default() -> Self {
        SessionTable { slots: HashMap::default(), by_use: BTreeMap::new(), per_client: HashMap::new(), uses: 0 }
    }
}

impl<T> SessionTable<T> {
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Sessions `client` holds.
    pub fn held_by(&self, client: &ClientKey) -> usize {
        self.per_client.get(client).copied().unwrap_or(0)
    }

    /// Whether `client` may open one more session.
    pub fn has_room_for(&self, client: &ClientKey, share: usize) -> bool {
        *client == ClientKey::Unknown || self.held_by(client) < share.max(1)
    }

    fn next_use(&mut self, now: Instant) -> (Instant, u64) {
        self.uses += 1;
        (now, self.uses)
    }

    /// The session `id`, marked used now; a session idle longer than `idle` is taken out
    /// instead and returned as `Err` (for the caller to close).
    pub fn touch(&mut self, id: &str, idle: Duration, now: Instant) -> Result<Option<&T>, T> {
        let Some(used) = self.slots.get(id).map(|slot| slot.used) else { return Ok(None) };
        if now.saturating_duration_since(used.0) > idle {
            return Err(self.remove(id).expect("present"));
        }
        let next = self.next_use(now);
        let indexed = self.by_use.remove(&used).expect("indexed");
        self.by_use.insert(next, indexed);
        let slot = self.slots.get_mut(id).expect("present");
        slot.used = next;
        Ok(Some(&slot.value))
    }

    /// Adds a session for `client`. With `share`, refused when the client already holds that
    /// many; otherwise the least recently used sessions beyond `capacity - 1` are taken out
    /// first and returned (for the caller to close and forget). An id already held keeps its
    /// session (two requests restoring the same session from the store at once): `value` is
    /// dropped and nothing is evicted.
    pub fn insert(
        &mut self,
        id: String,
        value: T,
        client: ClientKey,
        capacity: usize,
        share: Option<usize>,
        now: Instant,
    ) -> Result<Vec<(String, T)>, ShareFull> {
        if let Some(share) = share
            && !self.has_room_for(&client, share)
        {
            return Err(ShareFull);
        }
        if self.slots.contains_key(&id) {
            return Ok(Vec::new());
        }
        let mut evicted = Vec::new();
        while self.slots.len() >= capacity.max(1) {
            let Some((_, oldest)) = self.by_use.first_key_value() else { break };
            let oldest = oldest.clone();
            let value = self.remove(&oldest).expect("indexed");
            evicted.push((oldest, value));
        }
        let used = self.next_use(now);
        *self.per_client.entry(client.clone()).or_default() += 1;
        self.by_use.insert(used, id.clone());
        self.slots.insert(id, Slot { value, used, client });
        Ok(evicted)
    }

    pub fn remove(&mut self, id: &str) -> Option<T> {
        let slot = self.slots.remove(id)?;
        self.by_use.remove(&slot.used);
        if let Some(count) = self.per_client.get_mut(&slot.client) {
            *count -= 1;
            if *count == 0 {
                self.per_client.remove(&slot.client);
            }
        }
        Some(slot.value)
    }

    /// Takes out every session idle longer than `idle`, oldest first.
    pub fn take_idle(&mut self, idle: Duration, now: Instant) -> Vec<(String, T)> {
        let mut taken = Vec::new();
        while let Some((&(used, _), id)) = self.by_use.first_key_value()
            && now.saturating_duration_since(used) > idle
        {
            let id = id.clone();
            let value = self.remove(&id).expect("indexed");
            taken.push((id, value));
        }
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(last: u8) -> ClientKey {
        ClientKey::Address(IpAddr::from([127, 0, 0, last]))
    }

    #[test]
    fn the_least_recently_used_session_leaves_first() {
        let mut table = SessionTable::default();
        let start = Instant::now();
        for (n, id) in ["a", "b", "c"].into_iter().enumerate() {
            let at = start + Duration::from_millis(n as u64);
            assert!(table.insert(id.to_owned(), n, address(1), 3, None, at).unwrap().is_empty());
        }
        assert_eq!(table.touch("a", Duration::from_secs(60), start + Duration::from_millis(5)), Ok(Some(&0)));
        let evicted = table.insert("d".to_owned(), 3, address(1), 3, None, start + Duration::from_millis(6)).unwrap();
        assert_eq!(evicted, vec![("b".to_owned(), 1)]);
        assert_eq!(table.len(), 3);
        assert_eq!(table.held_by(&address(1)), 3);
    }

    #[test]
    fn an_id_already_held_keeps_its_session() {
        let mut table = SessionTable::default();
        let now = Instant::now();
        table.insert("a".to_owned(), 1, address(1), 1, None, now).unwrap();
        assert_eq!(table.insert("a".to_owned(), 2, address(1), 1, None, now), Ok(Vec::new()));
        assert_eq!(table.touch("a", Duration::from_secs(60), now), Ok(Some(&1)));
        assert_eq!(table.held_by(&address(1)), 1);
    }

    #[test]
    fn uses_within_one_clock_tick_keep_their_order() {
        let mut table = SessionTable::default();
        let now = Instant::now();
        for id in ["a", "b", "c"] {
            table.insert(id.to_owned(), (), ClientKey::Unknown, 3, None, now).unwrap();
        }
        table.touch("a", Duration::from_secs(60), now).unwrap();
        let evicted = table.insert("d".to_owned(), (), ClientKey::Unknown, 3, None, now).unwrap();
        assert_eq!(evicted.into_iter().map(|(id, ())| id).collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn a_client_at_its_share_is_refused_and_others_are_not() {
        let mut table = SessionTable::default();
        let now = Instant::now();
        for n in 0..4 {
            table.insert(format!("greedy-{n}"), (), address(1), 100, Some(4), now).unwrap();
        }
        assert_eq!(table.insert("greedy-4".to_owned(), (), address(1), 100, Some(4), now), Err(ShareFull));
        assert!(table.insert("other".to_owned(), (), address(2), 100, Some(4), now).is_ok());
        // A session ending makes room again.
        assert!(table.remove("greedy-0").is_some());
        assert!(table.insert("greedy-4".to_owned(), (), address(1), 100, Some(4), now).is_ok());
        // Without connection info or principal there is no share to hold.
        for n in 0..10 {
            table.insert(format!("unknown-{n}"), (), ClientKey::Unknown, 100, Some(4), now).unwrap();
        }
        assert_eq!(table.held_by(&ClientKey::Unknown), 10);
    }

    #[test]
    fn idle_sessions_leave_by_time_oldest_first() {
        let mut table = SessionTable::default();
        let start = Instant::now();
        let idle = Duration::from_secs(10);
        for n in 0..5u64 {
            table.insert(format!("s{n}"), n, address(1), 100, None, start + Duration::from_secs(n)).unwrap();
        }
        let taken = table.take_idle(idle, start + Duration::from_millis(12_500));
        assert_eq!(taken, vec![("s0".to_owned(), 0), ("s1".to_owned(), 1), ("s2".to_owned(), 2)]);
        assert_eq!(table.held_by(&address(1)), 2);
        // A session found idle when touched is taken out too.
        assert_eq!(table.touch("s3", idle, start + Duration::from_secs(30)), Err(3));
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn a_principal_is_its_own_client_whatever_its_address() {
        let alice = Principal::new("alice");
        assert_eq!(ClientKey::new(&alice, Some(IpAddr::from([127, 0, 0, 1]))), ClientKey::Principal(alice));
        assert_eq!(
            ClientKey::new(&Principal::anonymous(), Some(IpAddr::from([127, 0, 0, 1]))),
            ClientKey::Address(IpAddr::from([127, 0, 0, 1]))
        );
        assert_eq!(ClientKey::new(&Principal::anonymous(), None), ClientKey::Unknown);
    }
}
