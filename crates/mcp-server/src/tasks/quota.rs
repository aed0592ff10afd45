//! How many tasks each client has running on this instance, so that one client cannot take
//! every slot of the task store ([`Options::max_running_tasks_per_client`](crate::Options)).

use std::net::IpAddr;

use crate::principal::Principal;
use crate::shares::Shares;

/// Whose quota a task counts against: its principal, else (anonymous over HTTP) the remote
/// address; anonymous callers without one share the anonymous principal's.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum QuotaKey {
    Principal(Principal),
    Address(IpAddr),
}

impl QuotaKey {
    pub(crate) fn new(principal: &Principal, remote: Option<IpAddr>) -> Self {
        match remote {
            Some(address) if principal.is_anonymous() => QuotaKey::Address(address),
            _ => QuotaKey::Principal(principal.clone()),
        }
    }

    /// The client as an error message names it.
    pub(crate) fn describe(&self) -> String {
        match self {
            QuotaKey::Principal(principal) if principal.is_anonymous() => "anonymous callers".to_owned(),
            QuotaKey::Principal(principal) => principal.as_str().to_owned(),
            QuotaKey::Address(address) => format!("anonymous callers from {address}"),
        }
    }
}

/// The running tasks of every client of this instance.
pub(crate) type RunningTasks = Shares<QuotaKey>;

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn each_client_has_its_own_quota_and_gets_its_slots_back() {
        let tasks = Arc::new(RunningTasks::default());
        let alice = QuotaKey::new(&Principal::new("alice"), None);
        let held: Vec<_> = (0..2).map(|_| tasks.admit(alice.clone(), 2).unwrap()).collect();
        assert!(tasks.admit(alice.clone(), 2).is_none());
        assert!(tasks.admit(QuotaKey::new(&Principal::new("bob"), None), 2).is_some());
        drop(held);
        assert!(tasks.is_empty(), "no entry left for a client with nothing running");
        assert!(tasks.admit(alice, 2).is_some());
    }

    #[test]
    fn anonymous_callers_are_told_apart_by_address() {
        let anonymous = Principal::anonymous();
        let one = QuotaKey::new(&anonymous, Some([10, 0, 0, 1].into()));
        let two = QuotaKey::new(&anonymous, Some([10, 0, 0, 2].into()));
        assert_ne!(one, two);
        assert_eq!(QuotaKey::new(&Principal::new("alice"), Some([10, 0, 0, 1].into())).describe(), "alice");
        assert_eq!(one.describe(), "anonymous callers from 10.0.0.1");
    }
}
