//! Methods and messages: each request and notification with its params and result, and the
//! message unions keyed by `method`.

use super::*;

impl<'a> Builder<'a> {
    fn find_struct(&self, name: &str) -> Option<&StructDef> {
        self.items.iter().find_map(|i| match i {
            Item::Struct(s) if s.name == name => Some(s),
            _ => None,
        })
    }

    fn find_union(&self, schema_name: &str) -> Option<&UnionDef> {
        self.items.iter().find_map(|i| match i {
            Item::Union(u) if u.schema_name.as_deref() == Some(schema_name) => Some(u),
            _ => None,
        })
    }

    /// Every request and notification type with its method, params and result.
    pub(super) fn methods(&self) -> anyhow::Result<(Vec<Method>, Vec<Method>)> {
        let mut requests = Vec::new();
        let mut notifications = Vec::new();
        let mut seen = BTreeSet::new();
        for (union, is_request) in [
            ("ClientRequest", true),
            ("ServerRequest", true),
            ("InputRequest", true),
            ("ClientNotification", false),
            ("ServerNotification", false),
        ] {
            let Some(u) = self.find_union(union) else { continue };
            for v in &u.variants {
                let Ty::Named(ty) = &v.ty else { continue };
                if !seen.insert(ty.clone()) {
                    continue;
                }
                let s = self.find_struct(ty).with_context(|| format!("{union} member {ty} is not a struct"))?;
                let method = s
                    .consts
                    .iter()
                    .find(|c| c.json == "method")
                    .and_then(|c| c.value.as_str())
                    .with_context(|| format!("{ty} has no method const"))?
                    .to_owned();
                let params = s.fields.iter().find(|f| f.json == "params").map(|f| f.ty.clone()).unwrap_or(Ty::Object);
                let result = if is_request { Some(self.result_of(ty)) } else { None };
                let m = Method { method, ty: ty.clone(), params, result };
                if is_request { requests.push(m) } else { notifications.push(m) }
            }
        }
        // An extension's schema has no message unions: every object with a `method` is one of
        // its messages, a request when it has an `id`.
        if !self.defs.contains_key("ClientRequest") {
            for item in &self.items {
                let Item::Struct(s) = item else { continue };
                let Some(method) = s.consts.iter().find(|c| c.json == "method").and_then(|c| c.value.as_str()) else {
                    continue;
                };
                if !seen.insert(s.name.clone()) {
                    continue;
                }
                let params = s.fields.iter().find(|f| f.json == "params").map(|f| f.ty.clone()).unwrap_or(Ty::Object);
                let is_request = s.fields.iter().any(|f| f.json == "id");
                let result = is_request.then(|| self.result_of(&s.name));
                let m = Method { method: method.to_owned(), ty: s.name.clone(), params, result };
                if is_request { requests.push(m) } else { notifications.push(m) }
            }
        }
        Ok((requests, notifications))
    }

    fn result_of(&self, request: &str) -> Ty {
        let base = request.trim_end_matches("Request");
        let outcome = format!("{base}Outcome");
        if self.kinds.get(&outcome) == Some(&Kind::Union) {
            return Ty::Named(outcome);
        }
        let result = format!("{base}Result");
        if self.kinds.contains_key(&result) {
            return Ty::Named(result);
        }
        if self.kinds.contains_key("EmptyResult") {
            return Ty::Named("EmptyResult".into());
        }
        Ty::Named("ResultBase".into())
    }

    pub(super) fn messages(&self) -> Vec<MessageDef> {
        let has = |n: &str| self.find_union(n).is_some();
        let request_with_id = self
            .find_union("ClientRequest")
            .and_then(|u| u.variants.first())
            .and_then(|v| if let Ty::Named(n) = &v.ty { self.find_struct(n) } else { None })
            .is_some_and(|s| s.fields.iter().any(|f| f.json == "id"));
        if !request_with_id {
            return Vec::new();
        }
        let mut out = Vec::new();
        if has("ClientNotification") {
            out.push(MessageDef {
                name: "ClientMessage".into(),
                doc: "Any message a client sends, decoded straight into its typed form: requests and \
                      notifications by `method`, responses by the presence of `result` or `error`."
                    .into(),
                request: has("ClientRequest").then(|| "ClientRequest".into()),
                notification: "ClientNotification".into(),
                responses: has("ServerRequest"),
            });
        }
        if has("ServerNotification") {
            out.push(MessageDef {
                name: "ServerMessage".into(),
                doc: "Any message a server sends, decoded straight into its typed form. A response's \
                      `result` is decoded generically; decode it by the method of the request it \
                      answers with [`crate::Request::Result`]."
                    .into(),
                request: has("ServerRequest").then(|| "ServerRequest".into()),
                notification: "ServerNotification".into(),
                responses: true,
            });
        }
        out
    }
}
