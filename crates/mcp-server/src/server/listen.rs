//! What a client hears outside its requests: `subscriptions/listen` streams (modern) and a
//! legacy session's notifications, both fed by the change bus.

use super::*;

impl Server {
    /// `subscriptions/listen`: acknowledge what will be honoured, then forward matching changes
    /// (and, with the tasks extension, the states of the caller's tasks it named).
    pub(super) fn listen(
        &self,
        session: &Arc<Session>,
        id: RequestId,
        params: SubscriptionsListenRequestParams,
    ) -> Reply {
        let wanted = params.notifications;
        let mut honoured = mcp_types::SubscriptionFilter::default();
        if self.has_tools() && wanted.tools_list_changed == Some(true) {
            honoured.tools_list_changed = Some(true);
        }
        if self.has_prompts() && wanted.prompts_list_changed == Some(true) {
            honoured.prompts_list_changed = Some(true);
        }
        if self.has_resources() {
            if wanted.resources_list_changed == Some(true) {
                honoured.resources_list_changed = Some(true);
            }
            // Only what the caller may hear of, by the decision `resources/subscribe` makes; each
            // update is checked again when it comes (a subscription also covers sub-resources).
            honoured.resource_subscriptions = wanted.resource_subscriptions.as_ref().map(|uris| {
                let caller = session.principal();
                uris.iter().filter(|uri| self.resource_refusal(uri, caller).is_none()).cloned().collect()
            });
        }
        let task_ids = match TaskSubscriptionNotifications::of(&wanted) {
            Ok(subscription) if self.inner.has_tasks => subscription.task_ids,
            Ok(_) => None,
            Err(error) => {
                let error = ErrorObject::invalid_params(format!(
                    "Invalid params for subscriptions/listen: notifications.taskIds: {error}"
                ));
                return Reply::ready(Outgoing::error(Some(&id), &error));
            }
        };
        if task_ids.is_some() && !ext::declares(&params.meta.client_capabilities, TASKS) {
            let error = missing_capability(&ext::client_capabilities(TASKS));
            return Reply::ready(Outgoing::error_as(Some(&id), &error, Disposition::BadRequest));
        }
        let (sink, rx) = crate::message::sink();
        let mut changes = self.inner.changes.subscribe();
        let store = Arc::clone(&self.inner.task_store);
        let lease = self.inner.options.task_lease;
        let principal = session.principal().clone();
        let server = self.clone();
        let task_id = id.clone();
        let task = tokio::spawn(async move {
            let id = task_id;
            let meta = json!({ SUBSCRIPTION_ID: id });
            // Only the caller's own tasks; others are left out as if unknown.
            let mut task_states = futures::stream::SelectAll::new();
            if let Some(task_ids) = task_ids {
                let mut agreed = Vec::new();
                for task_id in task_ids {
                    let owned = matches!(store.get(&task_id).await, Ok(Some(task)) if task.owner == principal);
                    let watched = if owned {
                        Some(crate::tasks::watch_reaping(Arc::clone(&store), &task_id, lease).await)
                    } else {
                        None
                    };
                    if let Some(Ok(states)) = watched {
                        task_states.push(states);
                        agreed.push(task_id);
                    }
                }
                honoured.extra.insert("taskIds".to_owned(), json!(agreed));
            }
            let ack = json!({
                "jsonrpc": "2.0",
                "method": "notifications/subscriptions/acknowledged",
                "params": { "notifications": honoured, "_meta": meta },
            });
            if sink.send(Outgoing::notification(&ack)).await.is_err() {
                return;
            }
            loop {
                let message = tokio::select! {
                    change = changes.next() => {
                        let Some(change) = change else { return };
                        if change == Change::ResourcesUpdated {
                            // Each subscription (a URI, or a prefix of the URIs it covers) is named once.
                            for uri in honoured.resource_subscriptions.iter().flatten() {
                                if server.resource_refusal(uri, &principal).is_some() {
                                    continue;
                                }
                                let params = json!({ "uri": uri, "_meta": meta });
                                let updated = json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": params });
                                if sink.send(Outgoing::notification(&updated)).await.is_err() {
                                    return;
                                }
                            }
                            continue;
                        }
                        let params = match &change {
                            Change::Tools if honoured.tools_list_changed == Some(true) => json!({ "_meta": meta }),
                            Change::Prompts if honoured.prompts_list_changed == Some(true) => json!({ "_meta": meta }),
                            Change::Resources if honoured.resources_list_changed == Some(true) => {
                                json!({ "_meta": meta })
                            }
                            Change::ResourceUpdated(uri)
                                if honoured.resource_subscriptions.iter().flatten().any(|s| uri.starts_with(s.as_str()))
                                    && server.resource_refusal(uri, &principal).is_none() =>
                            {
                                json!({ "uri": uri, "_meta": meta })
                            }
                            _ => continue,
                        };
                        json!({ "jsonrpc": "2.0", "method": change_method(&change), "params": params })
                    }
                    Some(task) = task_states.next(), if !task_states.is_empty() => {
                        let mut params = to_value(&task.detailed());
                        params["_meta"] = meta.clone();
                        json!({ "jsonrpc": "2.0", "method": "notifications/tasks", "params": params })
                    }
                };
                if sink.send(Outgoing::notification(&message)).await.is_err() {
                    return;
                }
            }
        });
        session.track(id, crate::message::Stop::Task(task.abort_handle()));
        Reply::streaming(rx, task.abort_handle()).long_lived()
    }

    /// The notifications a legacy session receives outside any request: list changes, and
    /// updates of the resources it subscribed to.
    pub fn session_notifications(&self, session: Arc<Session>) -> impl Stream<Item = Outgoing> + Send + 'static {
        let changes = self.inner.changes.subscribe();
        let server = self.clone();
        // Checked when subscribed, and again for each update: what the caller may see can change.
        let visible = move |session: &Session, uri: &str| server.resource_refusal(uri, session.principal()).is_none();
        let updated = |uri: &str| {
            let message =
                json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": { "uri": uri } });
            Outgoing::notification(&message)
        };
        let state = (changes, session, VecDeque::new());
        futures::stream::unfold(state, move |(mut changes, session, mut queued)| {
            let visible = visible.clone();
            async move {
                loop {
                    if let Some(message) = queued.pop_front() {
                        return Some((message, (changes, session, queued)));
                    }
                    let change = changes.next().await?;
                    if !session.is_initialized_legacy() {
                        continue;
                    }
                    let params = match &change {
                        Change::ResourceUpdated(uri) if session.is_subscribed(uri) && visible(&session, uri) => {
                            json!({ "uri": uri })
                        }
                        Change::ResourceUpdated(_) => continue,
                        Change::ResourcesUpdated => {
                            let subscribed =
                                session.read_legacy(|l| l.subscriptions.iter().cloned().collect::<Vec<_>>());
                            queued
                                .extend(subscribed.iter().filter(|uri| visible(&session, uri)).map(|uri| updated(uri)));
                            continue;
                        }
                        _ => json!({}),
                    };
                    let message = json!({ "jsonrpc": "2.0", "method": change_method(&change), "params": params });
                    return Some((Outgoing::notification(&message), (changes, session, queued)));
                }
            }
        })
    }
}

fn change_method(change: &Change) -> &'static str {
    match change {
        Change::Tools => "notifications/tools/list_changed",
        Change::Prompts => "notifications/prompts/list_changed",
        Change::Resources => "notifications/resources/list_changed",
        Change::ResourceUpdated(_) | Change::ResourcesUpdated => "notifications/resources/updated",
    }
}
