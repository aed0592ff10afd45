//! [`ServerBuilder`]: the handlers and settings a [`Server`] is built from, checked once.

use super::*;

/// Why [`ServerBuilder::build`] refused its input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(String);

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BuildError {}

impl From<crate::skills::SkillError> for BuildError {
    fn from(error: crate::skills::SkillError) -> Self {
        BuildError(error.to_string())
    }
}

/// Collects handlers and settings; [`ServerBuilder::build`] checks them.
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<ToolRoute>,
    tool_source: Option<Arc<dyn crate::dynamic::ToolSource>>,
    prompt_source: Option<Arc<dyn crate::dynamic::PromptSource>>,
    resource_source: Option<Arc<dyn crate::dynamic::ResourceSource>>,
    resources: Vec<ResourceRoute>,
    templates: Vec<ResourceTemplateRoute>,
    prompts: Vec<PromptRoute>,
    completion: Option<CompletionFn>,
    options: Options,
    keyring: Option<StateKeyring>,
    used_states: Option<Arc<dyn UsedStateStore>>,
    task_store: Option<Arc<dyn TaskStore>>,
    change_bus: Option<Arc<dyn ChangeBus>>,
    session_store: Option<Arc<dyn SessionStore>>,
    skills: Vec<SkillRoute>,
    skill_source: Option<Arc<dyn crate::dynamic::SkillSource>>,
    skill_directory_read: bool,
    ui_resources: Vec<crate::apps::UiResource>,
    app_state: AppState,
    layers: Vec<crate::middleware::BoxLayer>,
}

impl ServerBuilder {
    pub(super) fn new(info: Implementation) -> Self {
        ServerBuilder {
            info,
            instructions: None,
            tools: Vec::new(),
            tool_source: None,
            prompt_source: None,
            resource_source: None,
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            completion: None,
            options: Options::default(),
            keyring: None,
            used_states: None,
            task_store: None,
            change_bus: None,
            session_store: None,
            skills: Vec::new(),
            skill_source: None,
            ui_resources: Vec::new(),
            skill_directory_read: true,
            app_state: AppState::default(),
            layers: Vec::new(),
        }
    }

    /// Shares `state` with every handler, which borrows it with [`Context::state`]: one value
    /// per type (a second value of the same type replaces the first). Put what handlers
    /// change behind a lock inside it (`Mutex`, `RwLock`, a database pool).
    ///
    /// ```
    /// use std::sync::Mutex;
    /// use mcp_server::{Context, Error, Server, ToolRoute};
    ///
    /// #[derive(Default)]
    /// struct Counter(Mutex<u64>);
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Step { by: u64 }
    ///
    /// let server = Server::builder("counter", "1.0.0")
    ///     .state(Counter::default())
    ///     .tool(ToolRoute::new("count", |ctx: Context, step: Step| async move {
    ///         let mut count = ctx.state::<Counter>()?.0.lock().unwrap();
    ///         *count += step.by;
    ///         Ok::<_, Error>(count.to_string())
    ///     }))
    ///     .build()
    ///     .unwrap();
    /// assert!(server.state::<Counter>().is_some());
    /// ```
    pub fn state<S: Send + Sync + 'static>(mut self, state: S) -> Self {
        self.app_state.insert(state);
        self
    }

    /// Wraps every request that reaches the application (tool calls, reads, prompts, completions
    /// and the four lists) in a tower [`Layer`](tower::Layer) over a
    /// [`McpService`](crate::middleware::McpService), on every transport. Each call wraps the
    /// layers added before it (as axum's `Router::layer`): the last one added runs first. See
    /// [`middleware`](crate::middleware) for how a layer's errors reach the client.
    ///
    /// ```
    /// use std::time::Duration;
    /// use mcp_server::{Server, ToolRoute, middleware};
    ///
    /// let server = Server::builder("demo", "1.0.0")
    ///     .tool(ToolRoute::new("hello", |_ctx, _: mcp_server::NoArguments| async { Ok("hi") }))
    ///     .layer(tower::limit::ConcurrencyLimitLayer::new(64))
    ///     .layer(middleware::timeout(Duration::from_secs(30)))
    ///     .build()
    ///     .unwrap();
    /// # let _ = server;
    /// ```
    pub fn layer(mut self, layer: impl crate::middleware::McpLayer) -> Self {
        self.layers.push(crate::middleware::McpLayer::into_erased(layer).0);
        self
    }

    /// Text for the model on how to use this server: `instructions` in the `initialize` and
    /// `server/discover` results.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Tools known only while serving (a proxy's, a plugin host's): listed after the routes and
    /// called for every name no route has; see [`ToolSource`](crate::dynamic::ToolSource). The
    /// server declares `tools` (with `listChanged`) even while the source has none.
    pub fn tool_source(mut self, source: Arc<dyn crate::dynamic::ToolSource>) -> Self {
        self.tool_source = Some(source);
        self
    }

    /// Prompts known only while serving, as [`tool_source`](Self::tool_source) is for tools; see
    /// [`PromptSource`](crate::dynamic::PromptSource). The server declares `prompts`.
    pub fn prompt_source(mut self, source: Arc<dyn crate::dynamic::PromptSource>) -> Self {
        self.prompt_source = Some(source);
        self
    }

    /// Resources and templates known only while serving, as [`tool_source`](Self::tool_source)
    /// is for tools; see [`ResourceSource`](crate::dynamic::ResourceSource). The server declares
    /// `resources`.
    pub fn resource_source(mut self, source: Arc<dyn crate::dynamic::ResourceSource>) -> Self {
        self.resource_source = Some(source);
        self
    }

    /// Registers a tool. [`build`](Self::build) refuses a name registered twice, a name outside
    /// the spec's characters and an input schema that is not valid JSON Schema.
    pub fn tool(mut self, tool: ToolRoute) -> Self {
        self.tools.push(tool);
        self
    }

    /// Registers a resource with a fixed URI, listed by `resources/list` and read by
    /// `resources/read`.
    pub fn resource(mut self, resource: ResourceRoute) -> Self {
        self.resources.push(resource);
        self
    }

    /// Registers a URI template (RFC 6570), listed by `resources/templates/list`; a
    /// `resources/read` of a URI that no fixed resource or skill claims goes to the first template
    /// it matches. [`build`](Self::build) refuses a template with an unclosed or stray brace, an
    /// empty `{}`, or no `{variable}` at all, and one registered twice.
    pub fn resource_template(mut self, template: ResourceTemplateRoute) -> Self {
        self.templates.push(template);
        self
    }

    /// Registers a prompt, listed by `prompts/list` and rendered by `prompts/get`.
    pub fn prompt(mut self, prompt: PromptRoute) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Answers `completion/complete` for prompt arguments and template variables.
    pub fn completion<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Context, CompleteRequestParams) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<mcp_types::CompleteResultCompletion, Error>> + Send + 'static,
    {
        self.completion = Some(Arc::new(move |ctx, params| Box::pin(handler(ctx, params))));
        self
    }

    /// Replaces the [`Options`] (default: [`Options::default`]).
    pub fn options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }

    /// The key that seals `requestState` (default: random per process; share one across replicas):
    /// a [`StateKeyring`] of one key.
    pub fn state_key(mut self, key: StateKey) -> Self {
        self.keyring = Some(StateKeyring::from(key));
        self
    }

    /// The keys that seal and open `requestState`, rotatable while serving through any clone of
    /// `keyring` (or [`Server::state_keyring`]).
    pub fn state_keyring(mut self, keyring: StateKeyring) -> Self {
        self.keyring = Some(keyring);
        self
    }

    /// Where the used single-use states are remembered (with [`Options::state_single_use`];
    /// default: an [`InMemoryUsedStates`] of [`Options::state_replay_cache`] entries). Share one
    /// store across replicas so that a state used on one is refused on all.
    pub fn used_state_store(mut self, store: Arc<dyn UsedStateStore>) -> Self {
        self.used_states = Some(store);
        self
    }

    /// Where tasks live (default: an [`InMemoryTaskStore`]; share one store across replicas).
    pub fn task_store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// What carries list changes and resource updates to listeners (default: an
    /// [`InMemoryChangeBus`](crate::InMemoryChangeBus)). Share one bus across instances so that
    /// a change announced on one reaches the listeners of all.
    pub fn change_bus(mut self, bus: Arc<dyn ChangeBus>) -> Self {
        self.change_bus = Some(bus);
        self
    }

    /// Where the HTTP transport keeps legacy sessions (default: an [`InMemorySessionStore`]).
    /// Share one store across instances so that any of them serves a session opened on another.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.session_store = Some(store);
        self
    }

    /// Serves a skill (the `io.modelcontextprotocol/skills` extension): its files become
    /// resources, `skills/list` and `skills/get` list it, and the extension is declared.
    /// SEP-2640 defines no skills notification of its own: a change to the skills served is
    /// announced as a resource change ([`Server::notify_resources_list_changed`],
    /// [`Server::notify_resource_updated`]).
    pub fn skill(mut self, skill: SkillRoute) -> Self {
        self.skills.push(skill);
        self
    }

    /// Serves every skill of `skills` (e.g. [`SkillRoute::scan`]).
    pub fn skills(mut self, skills: impl IntoIterator<Item = SkillRoute>) -> Self {
        self.skills.extend(skills);
        self
    }

    /// Skills known only while serving, as [`tool_source`](Self::tool_source) is for tools; see
    /// [`SkillSource`](crate::dynamic::SkillSource). The server declares the skills extension;
    /// their files are read through the [`resource_source`](Self::resource_source).
    pub fn skill_source(mut self, source: Arc<dyn crate::dynamic::SkillSource>) -> Self {
        self.skill_source = Some(source);
        self
    }

    /// Whether to answer `resources/directory/read` for the skills' directories and declare
    /// `directoryRead` (default: yes).
    pub fn skill_directory_read(mut self, enabled: bool) -> Self {
        self.skill_directory_read = enabled;
        self
    }

    /// Serves an MCP App's interface (the `io.modelcontextprotocol/ui` extension, declared in
    /// both eras): a `ui://` resource of MIME type `text/html;profile=mcp-app` that tools link
    /// to with [`ToolRoute::ui`].
    pub fn ui_resource(mut self, resource: crate::apps::UiResource) -> Self {
        self.ui_resources.push(resource);
        self
    }

    /// Checks names, schemas and `x-mcp-header` annotations, and builds the server.
    pub fn build(mut self) -> Result<Server, BuildError> {
        let has_ui = !self.ui_resources.is_empty();
        let ui_routes = crate::apps::routes(std::mem::take(&mut self.ui_resources), &self.tools).map_err(BuildError)?;
        self.resources.extend(ui_routes);
        let mut skill_index = super::RouteIndex::default();
        let mut directories: BTreeMap<String, BTreeMap<String, mcp_types::Resource>> = BTreeMap::new();
        for (index, skill) in self.skills.iter().enumerate() {
            if skill_index.insert(skill.uri(), index).is_some() {
                return Err(BuildError(format!("skill `{}` is registered twice", skill.uri())));
            }
            for resource in skill.inner.resources() {
                let inner = Arc::clone(&skill.inner);
                let path = resource.uri[skill.inner.root.len() + 1..].to_owned();
                self.resources.push(ResourceRoute::new(resource, move |ctx, _uri| {
                    let inner = Arc::clone(&inner);
                    let path = path.clone();
                    async move { inner.read(ctx, &path).await }
                }));
            }
            add_directories(&mut directories, &skill.inner);
        }
        let mut tools = Vec::with_capacity(self.tools.len());
        let mut tool_index = super::RouteIndex::default();
        for route in self.tools {
            let name = route.tool.name.clone();
            if let Some(error) = &route.schema_error {
                return Err(BuildError(format!("tool `{name}`: {error}")));
            }
            if name.is_empty()
                || name.len() > 128
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
            {
                return Err(BuildError(format!("tool name `{name}` must be 1-128 characters of A-Z a-z 0-9 _ - .")));
            }
            if tool_index.insert(name.clone(), tools.len()).is_some() {
                return Err(BuildError(format!("tool `{name}` is registered twice")));
            }
            let schema = route.tool.input_schema.to_value();
            let validator = ArgumentValidator::new(&schema)
                .map_err(|e| BuildError(format!("tool `{name}`: inputSchema is not a valid JSON Schema: {e}")))?;
            let headers = header_params(&schema).map_err(|e| BuildError(format!("tool `{name}`: {e}")))?;
            tools.push(ToolEntry { route, validator, headers: headers.into() });
        }
        let mut resource_index = super::RouteIndex::default();
        for (index, route) in self.resources.iter().enumerate() {
            if resource_index.insert(route.resource.uri.clone(), index).is_some() {
                return Err(BuildError(format!("resource `{}` is registered twice", route.resource.uri)));
            }
        }
        let mut template_uris = std::collections::HashSet::new();
        for route in &self.templates {
            let template = &route.template.uri_template;
            crate::routes::UriPattern::check(template)
                .map_err(|why| BuildError(format!("resource template `{template}` {why}")))?;
            if !template_uris.insert(template) {
                return Err(BuildError(format!("resource template `{template}` is registered twice")));
            }
        }
        let mut prompt_index = super::RouteIndex::default();
        for (index, route) in self.prompts.iter().enumerate() {
            if let Some(error) = &route.schema_error {
                return Err(BuildError(format!("prompt `{}`: {error}", route.prompt.name)));
            }
            if prompt_index.insert(route.prompt.name.clone(), index).is_some() {
                return Err(BuildError(format!("prompt `{}` is registered twice", route.prompt.name)));
            }
        }
        let scoped = tools.iter().map(|t| ("tool", &t.route.tool.name, &t.route.scopes));
        let scoped = scoped
            .chain(self.resources.iter().map(|r| ("resource", &r.resource.uri, &r.scopes)))
            .chain(self.templates.iter().map(|r| ("resource template", &r.template.uri_template, &r.scopes)))
            .chain(self.prompts.iter().map(|r| ("prompt", &r.prompt.name, &r.scopes)));
        for (kind, name, scopes) in scoped {
            if let Some(scope) = scopes.invalid() {
                return Err(BuildError(format!(
                    "{kind} `{name}`: the scope name {scope:?} is not an RFC 6749 scope-token \
                     (no space, quote, backslash or control character)"
                )));
            }
        }
        if self.options.page_size == 0 {
            return Err(BuildError("page_size must be at least 1".into()));
        }
        if self.options.max_in_flight == 0 {
            return Err(BuildError("max_in_flight must be at least 1".into()));
        }
        let mut capabilities = ServerCapabilities { logging: Some(Map::new()), ..Default::default() };
        if !tools.is_empty() || self.tool_source.is_some() {
            capabilities.tools = Some(ToolsCapability { list_changed: Some(true), ..Default::default() });
        }
        if !self.resources.is_empty() || !self.templates.is_empty() || self.resource_source.is_some() {
            capabilities.resources =
                Some(ResourcesCapability { list_changed: Some(true), subscribe: Some(true), ..Default::default() });
        }
        if !self.prompts.is_empty() || self.prompt_source.is_some() {
            capabilities.prompts = Some(PromptsCapability { list_changed: Some(true), ..Default::default() });
        }
        if self.completion.is_some() {
            capabilities.completions = Some(Map::new());
        }
        let has_tasks = tools.iter().any(|entry| entry.route.task_support != TaskSupport::Forbidden)
            || self.tool_source.as_ref().is_some_and(|source| source.offers_tasks());
        if has_tasks {
            capabilities.extensions.get_or_insert_with(Default::default).insert(TASKS.to_owned(), Map::new());
        }
        if has_ui {
            capabilities.extensions.get_or_insert_with(Default::default).insert(APPS.to_owned(), Map::new());
        }
        if !self.skill_directory_read {
            directories.clear();
        }
        let source_directories = self.skill_directory_read && self.skill_source.is_some();
        if !self.skills.is_empty() || self.skill_source.is_some() {
            let directory_read = !directories.is_empty() || source_directories;
            let settings = SkillsSettings { directory_read: directory_read.then_some(true), ..Default::default() };
            capabilities
                .extensions
                .get_or_insert_with(Default::default)
                .insert(SKILLS.to_owned(), settings.to_object());
        }
        let changes = self.change_bus.unwrap_or_else(|| Arc::new(InMemoryChangeBus::new()));
        let route_scopes: crate::routes::Scopes = (tools.iter().map(|t| &t.route.scopes))
            .chain(self.resources.iter().map(|r| &r.scopes))
            .chain(self.templates.iter().map(|t| &t.scopes))
            .chain(self.prompts.iter().map(|p| &p.scopes))
            .flat_map(|scopes| scopes.0.iter().cloned())
            .collect();
        let has_route_scopes = !route_scopes.0.is_empty();
        let has_route_layers = tools.iter().any(|t| t.route.service.is_some())
            || self.resources.iter().any(|r| r.service.is_some())
            || self.templates.iter().any(|t| t.service.is_some())
            || self.prompts.iter().any(|p| p.service.is_some());
        let base = || {
            crate::middleware::service(|request: crate::middleware::McpRequest| async move {
                let server = request.ctx.server().clone();
                server.serve_call(request.id, request.ctx, request.call).await
            })
        };
        let layer = self
            .layers
            .into_iter()
            .fold(None, |inner: Option<crate::middleware::McpService>, layer| Some(layer(inner.unwrap_or_else(base))));
        // The scopes routes declare are checked on the same seam, before the application's layers.
        let layer = match layer {
            _ if !has_route_scopes => layer,
            Some(layered) => Some(crate::middleware::route_scopes(layered)),
            None => Some(crate::middleware::route_scopes(base())),
        };
        Ok(Server {
            inner: Arc::new(ServerInner {
                layer,
                has_route_layers,
                info_json: serde_json::to_string(&self.info).expect("an Implementation encodes"),
                info: self.info,
                instructions: self.instructions,
                capabilities,
                tools,
                tool_index,
                tool_source: self.tool_source,
                prompt_source: self.prompt_source,
                resource_source: self.resource_source,
                resources: self.resources,
                resource_index,
                templates: self.templates,
                prompts: self.prompts,
                prompt_index,
                completion: self.completion,
                used_states: self
                    .used_states
                    .unwrap_or_else(|| Arc::new(InMemoryUsedStates::with_capacity(self.options.state_replay_cache))),
                options: self.options,
                keyring: self.keyring.unwrap_or_else(|| StateKeyring::from(StateKey::random())),
                changes,
                has_tasks,
                running_tasks: Default::default(),
                route_scopes,
                task_store: self.task_store.unwrap_or_else(|| Arc::new(InMemoryTaskStore::new())),
                session_store: self.session_store.unwrap_or_else(|| Arc::new(InMemorySessionStore::new())),
                skills: self.skills,
                skill_index,
                skill_source: self.skill_source,
                source_directories,
                directories: directories
                    .into_iter()
                    .map(|(uri, children)| (uri, children.into_values().collect()))
                    .collect(),
                app_state: self.app_state,
            }),
        })
    }
}

/// Records every directory above each file of `skill` (`skill://a`, `skill://a/b`, …) with its
/// direct children.
fn add_directories(directories: &mut BTreeMap<String, BTreeMap<String, mcp_types::Resource>>, skill: &SkillInner) {
    for (path, size) in skill.file_paths() {
        let full = format!("{}/{path}", skill.root);
        let Some(tail) = full.strip_prefix("skill://") else { continue };
        let segments: Vec<&str> = tail.split('/').collect();
        for depth in 1..segments.len() {
            let dir = format!("skill://{}", segments[..depth].join("/"));
            let child = format!("{dir}/{}", segments[depth]);
            let resource = if depth + 1 == segments.len() {
                let mut resource = skill.file_resource(path, Some(size));
                resource.uri = child.clone();
                resource
            } else {
                mcp_types::Resource {
                    uri: child.clone(),
                    name: segments[depth].to_owned(),
                    mime_type: Some(DIRECTORY_MIME_TYPE.to_owned()),
                    ..Default::default()
                }
            };
            directories.entry(dir).or_default().entry(child).or_insert(resource);
        }
    }
}
