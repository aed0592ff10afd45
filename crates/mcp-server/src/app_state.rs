//! The application's own state, shared by every handler: one value per type, given to
//! [`ServerBuilder::state`](crate::ServerBuilder::state) and borrowed with
//! [`Context::state`](crate::Context::state).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// One value of each type, looked up by type.
#[derive(Clone, Default)]
pub(crate) struct AppState {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl AppState {
    pub(crate) fn insert<S: Send + Sync + 'static>(&mut self, value: S) {
        self.values.insert(TypeId::of::<S>(), Arc::new(value));
    }

    pub(crate) fn get<S: Send + Sync + 'static>(&self) -> Option<&S> {
        self.values.get(&TypeId::of::<S>()).and_then(|value| value.downcast_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_per_type_the_last_one_given() {
        let mut state = AppState::default();
        state.insert(1_u32);
        state.insert(2_u32);
        state.insert(String::from("notes"));
        assert_eq!(state.get::<u32>(), Some(&2));
        assert_eq!(state.get::<String>().map(String::as_str), Some("notes"));
        assert!(state.get::<u64>().is_none());
    }
}
