//! The four lists (`tools/list`, `resources/list`, `resources/templates/list`, `prompts/list`):
//! their pages, with the entries the request's token may not call left out when asked.

use super::*;

impl Server {
    pub(crate) fn list_tools(
        &self,
        principal: impl FnOnce() -> Principal,
        cursor: Option<String>,
    ) -> Result<ListToolsResult, ErrorObject> {
        let source = self.inner.tool_source.as_ref().map(|s| |caller: &Principal| s.tools(caller));
        let (tools, next) = self.page_listed(
            principal,
            cursor,
            &self.inner.tools,
            |t| &t.route.scopes,
            |t| t.route.tool.clone(),
            source,
        )?;
        let scope = self.list_scope(self.inner.tool_source.as_ref().is_some_and(|s| s.lists_depend_on_caller()));
        let mut result = ListToolsResult::new(
            scope,
            tools,
            self.list_ttl(self.inner.tool_source.as_ref().and_then(|s| s.list_ttl_ms()), !self.inner.tools.is_empty()),
        );
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) fn list_resources(
        &self,
        principal: impl FnOnce() -> Principal,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorObject> {
        let source = self.inner.resource_source.as_ref().map(|s| |caller: &Principal| s.resources(caller));
        let (resources, next) =
            self.page_listed(principal, cursor, &self.inner.resources, |r| &r.scopes, |r| r.resource.clone(), source)?;
        let scope = self.list_scope(self.inner.resource_source.as_ref().is_some_and(|s| s.lists_depend_on_caller()));
        let mut result = ListResourcesResult::new(
            scope,
            resources,
            self.list_ttl(
                self.inner.resource_source.as_ref().and_then(|s| s.list_ttl_ms()),
                !self.inner.resources.is_empty(),
            ),
        );
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) fn list_templates(
        &self,
        principal: impl FnOnce() -> Principal,
        cursor: Option<String>,
    ) -> Result<ListResourceTemplatesResult, ErrorObject> {
        let source = self.inner.resource_source.as_ref().map(|s| |caller: &Principal| s.templates(caller));
        let (templates, next) =
            self.page_listed(principal, cursor, &self.inner.templates, |t| &t.scopes, |t| t.template.clone(), source)?;
        let scope = self.list_scope(self.inner.resource_source.as_ref().is_some_and(|s| s.lists_depend_on_caller()));
        let mut result = ListResourceTemplatesResult::new(
            scope,
            templates,
            self.list_ttl(
                self.inner.resource_source.as_ref().and_then(|s| s.list_ttl_ms()),
                !self.inner.templates.is_empty(),
            ),
        );
        result.next_cursor = next;
        Ok(result)
    }

    pub(crate) fn list_prompts(
        &self,
        principal: impl FnOnce() -> Principal,
        cursor: Option<String>,
    ) -> Result<ListPromptsResult, ErrorObject> {
        let source = self.inner.prompt_source.as_ref().map(|s| |caller: &Principal| s.prompts(caller));
        let (prompts, next) =
            self.page_listed(principal, cursor, &self.inner.prompts, |p| &p.scopes, |p| p.prompt.clone(), source)?;
        let scope = self.list_scope(self.inner.prompt_source.as_ref().is_some_and(|s| s.lists_depend_on_caller()));
        let mut result = ListPromptsResult::new(
            scope,
            prompts,
            self.list_ttl(
                self.inner.prompt_source.as_ref().and_then(|s| s.list_ttl_ms()),
                !self.inner.prompts.is_empty(),
            ),
        );
        result.next_cursor = next;
        Ok(result)
    }

    /// The `cacheScope` of a list: the configured one, but `private` whenever the list may differ
    /// from one caller to the next (entries left out by scope, or a source that says its lists
    /// depend on the caller), so that no shared cache hands one caller's list to another.
    pub(super) fn list_scope(&self, source_depends_on_caller: bool) -> CacheScope {
        let by_scopes = self.inner.options.list_only_permitted && self.has_route_scopes();
        if by_scopes || source_depends_on_caller { CacheScope::Private } else { self.inner.options.list_cache.scope }
    }

    /// The `ttlMs` of a list: the source's when it says one (no longer than the configured one
    /// when the server's own routes of that kind are in the list too), else the configured one.
    fn list_ttl(&self, source: Option<u64>, routes: bool) -> u64 {
        let configured = self.inner.options.list_cache.ttl_ms;
        match source {
            Some(ttl) if routes => ttl.min(configured),
            Some(ttl) => ttl,
            None => configured,
        }
    }

    /// The `cacheScope` of `skills/list` and `skills/get`, as [`list_scope`](Self::list_scope).
    pub(super) fn skills_scope(&self) -> CacheScope {
        self.list_scope(self.inner.skill_source.as_ref().is_some_and(|s| s.lists_depend_on_caller()))
    }

    /// A page of the routes the caller may use followed, when the server has a source of this
    /// kind, by the source's entries for that caller: one list, one cursor.
    fn page_listed<T, U: Clone>(
        &self,
        principal: impl FnOnce() -> Principal,
        cursor: Option<String>,
        items: &[T],
        scopes: impl Fn(&T) -> &Scopes,
        item: impl Fn(&T) -> U,
        source: Option<impl FnOnce(&Principal) -> std::sync::Arc<[U]>>,
    ) -> Result<(Vec<U>, Option<String>), ErrorObject> {
        let Some(source) = source else { return self.page_permitted(principal, cursor, items, scopes, item) };
        let caller = principal();
        let mut all: Vec<U> = self.permitted(|| caller.clone(), items, scopes).into_iter().map(item).collect();
        all.extend(source(&caller).iter().cloned());
        self.page(cursor, &all, Clone::clone)
    }

    /// A page of a list, leaving out (with [`Options::list_only_permitted`]) the entries whose
    /// scopes the request's token does not grant.
    fn page_permitted<T, U>(
        &self,
        principal: impl FnOnce() -> Principal,
        cursor: Option<String>,
        items: &[T],
        scopes: impl Fn(&T) -> &Scopes,
        item: impl Fn(&T) -> U,
    ) -> Result<(Vec<U>, Option<String>), ErrorObject> {
        if !self.inner.options.list_only_permitted || !self.has_route_scopes() {
            return self.page(cursor, items, item);
        }
        let permitted = self.permitted(principal, items, scopes);
        self.page(cursor, &permitted, |entry| item(entry))
    }

    /// The entries of a list the caller may call (all of them unless
    /// [`Options::list_only_permitted`] leaves out those whose scopes its token lacks).
    fn permitted<'a, T>(
        &self,
        principal: impl FnOnce() -> Principal,
        items: &'a [T],
        scopes: impl Fn(&T) -> &Scopes,
    ) -> Vec<&'a T> {
        if !self.inner.options.list_only_permitted || !self.has_route_scopes() {
            return items.iter().collect();
        }
        let principal = principal();
        match principal.token() {
            None => items.iter().collect(),
            Some(token) => {
                items.iter().filter(|entry| scopes(entry).0.iter().all(|scope| token.has_scope(scope))).collect()
            }
        }
    }

    pub(super) fn page<T, U>(
        &self,
        cursor: Option<String>,
        items: &[T],
        item: impl Fn(&T) -> U,
    ) -> Result<(Vec<U>, Option<String>), ErrorObject> {
        let start = match cursor {
            None => 0,
            Some(cursor) => base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(&cursor)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .and_then(|text| text.strip_prefix("offset:").and_then(|n| n.parse::<usize>().ok()))
                .filter(|&start| start <= items.len())
                .ok_or_else(|| ErrorObject::invalid_params(format!("Invalid cursor: {cursor}")))?,
        };
        let end = (start + self.inner.options.page_size).min(items.len());
        let next = (end < items.len())
            .then(|| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("offset:{end}")));
        Ok((items[start..end].iter().map(item).collect(), next))
    }
}
