//! Policy rules in CEL (`[[policy]]`, `PolicyRule`): compiled once at start into a
//! self-contained `Policy` the catalogue holds, and evaluated on variables prepared once (the
//! entries when the lists are indexed, the caller once per request or list, the arguments once
//! per call) and lent to the interpreter, so that a check re-parses and copies nothing.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, Program, Value};
use mcp_server::Principal;
use serde::Deserialize;

/// One `[[policy]]` table: a rule in CEL, checked before every use of an entry (a call, a
/// prompt, a read, a subscription, a completion) and on every list and `search_tools` result.
///
/// A rule applies to a request when its `when` holds (no `when`: to every request). An `allow`
/// rule that applies refuses what its expression does not hold for; a `deny` rule refuses what
/// it holds for. A request passes when no rule that applies refuses it: rules have no order of
/// precedence (an `allow` never overrides a `deny`, nor grants what an upstream's `scopes` or
/// `principals` refuse), and the first refusing rule in configuration order is the one named.
///
/// Rules fail closed: an expression that fails (a claim the token lacks, a wrong type) or gives
/// no bool refuses, naming the rule (`principal.claims.?groups.orValue([])` reads a claim that
/// may be missing). The one exception is `arguments` where the request has none to check (a
/// list, `search_tools`, a completion, a read, a subscription): a rule that needs them is
/// undecided there and refuses nothing, and the call decides it.
///
/// The variables:
/// - `principal`: `id` (the token's subject, `client:<client_id>`, or `""` for the process on
///   stdio and for callers without `[authorization]`), `sub` and `client_id` when the token has
///   them, `scopes` (a list) and `claims` (every claim of the JWT or of the introspection
///   answer: `groups`, …); without a token `scopes` and `claims` are empty.
/// - `method`: what uses the entry: `tools/call`, `prompts/get`, `resources/read`,
///   `resources/subscribe` or `completion/complete`. A list checks each entry as the method that
///   would use it (a tool as `tools/call`, a resource, template or skill as `resources/read`).
/// - `upstream`: the upstream's name.
/// - `entry`: `kind` (`tool`, `prompt`, `resource`, `template` or `skill`), `name` (as listed),
///   `own_name` (the upstream's own), `uri` (`""` for tools and prompts; the URI read, or in the
///   templates list the `uriTemplate`), `annotations` (a map, empty when none) and `upstream`.
///   Resources, templates and skills are named by their URI, and a skill's files are resources
///   of their URI.
/// - `arguments`: a call's arguments, a prompt's.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyRule {
    /// Named in refusals and in the audit log; unique.
    pub name: String,
    /// When the rule applies (CEL, a bool); none: to every request.
    #[serde(default)]
    pub when: Option<String>,
    /// What a request the rule applies to must satisfy (CEL, a bool). Give `allow` or `deny`.
    #[serde(default)]
    pub allow: Option<String>,
    /// What a request the rule applies to must not satisfy (CEL, a bool).
    #[serde(default)]
    pub deny: Option<String>,
    /// Scopes that let a caller pass this rule: refusing a caller whose token lacks one of them is
    /// a 403 `insufficient_scope` naming them (with the upstream's own), so that it can step up.
    /// None: a refusal is a JSON-RPC error naming the rule.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// The compiled rules: a self-contained value, shared by the catalogue.
pub struct Policy {
    /// Tells the entries it decided ahead ([`Policy::decide_ahead`]) from another policy's.
    id: u64,
    rules: Vec<Rule>,
    env: Arc<Env>,
    /// Whether a rule reads `principal`: then the lists differ from caller to caller.
    reads_principal: bool,
}

struct Rule {
    name: String,
    when: Option<Program>,
    test: Program,
    /// A `deny` rule: refuses what `test` holds for.
    deny: bool,
    /// Whether `when` and `test` read neither `principal` nor `arguments`: then, for an entry and
    /// the method that uses it, they are decided once, when the lists are indexed.
    when_ahead: bool,
    test_ahead: bool,
    scopes: Vec<String>,
}

/// Why a rule refused a request.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    /// The rule's name.
    pub rule: String,
    /// The rule's `scopes`, when the caller's token lacks one of them.
    pub step_up: Option<Vec<String>>,
    /// Why, for the audit log: the rule said no, or its expression failed.
    pub why: String,
}

impl Refusal {
    /// The error the caller gets: 403 `insufficient_scope` naming every scope needed (`base`, the
    /// upstream's and the entry's, and the rule's) where stepping up would help, else `-32600`
    /// naming the rule.
    pub fn error(&self, base: &[String]) -> mcp_server::Error {
        match &self.step_up {
            Some(scopes) => {
                let mut needed = base.to_vec();
                needed.extend(scopes.iter().filter(|s| !base.contains(s)).cloned());
                mcp_server::Error::InsufficientScope(needed)
            }
            None => mcp_server::Error::Rpc(
                mcp_types::ErrorObject::invalid_request(format!(
                    "Forbidden by the gateway's policy rule `{}`",
                    self.rule
                ))
                .with_data(serde_json::json!({ "policy": self.rule })),
            ),
        }
    }
}

impl Policy {
    /// No rules: everything passes, nothing is evaluated.
    pub(crate) fn none() -> Policy {
        Policy { id: 0, rules: Vec::new(), env: Arc::new(Env::default()), reads_principal: false }
    }

    /// Compiles the rules, refusing the first that does not compile (naming it, the field, and
    /// where in the expression), two rules of one name, and a rule with neither or both of
    /// `allow` and `deny`.
    pub fn compile(rules: &[PolicyRule]) -> Result<Policy, String> {
        let mut env = Env::stdlib();
        env.add_extension(cel::extensions::strings).map_err(|e| format!("policy: {e}"))?;
        let mut compiled = Vec::with_capacity(rules.len());
        let mut names = std::collections::BTreeSet::new();
        for rule in rules {
            let name = &rule.name;
            if name.is_empty() {
                return Err("a [[policy]] rule has an empty `name`".into());
            }
            if !names.insert(name.as_str()) {
                return Err(format!("two [[policy]] rules are named `{name}`"));
            }
            let (test, deny) = match (&rule.allow, &rule.deny) {
                (Some(allow), None) => (("allow", allow), false),
                (None, Some(deny)) => (("deny", deny), true),
                _ => return Err(format!("policy rule `{name}`: give one of `allow` and `deny`")),
            };
            if let Some(bad) = rule.scopes.iter().find(|scope| !mcp_server::auth::is_scope_token(scope)) {
                return Err(format!("policy rule `{name}`: the scope {bad:?} is not an OAuth scope-token"));
            }
            let program = |(field, source): (&str, &String)| {
                env.compile(source).map_err(|errors| {
                    let first = errors.errors.first();
                    // Both counted from 1, within the expression.
                    let (line, column) = first.map_or((1, 1), |e| (e.pos.0.max(1) as usize, e.pos.1.max(1) as usize));
                    let message = first.map_or_else(|| errors.to_string(), |e| e.msg.clone());
                    let text = source.lines().nth(line - 1).unwrap_or_default();
                    format!(
                        "policy rule `{name}`: `{field}` at line {line}, column {column}: {message}\n    {text}\n    {:>column$}",
                        "^"
                    )
                })
            };
            let when = rule.when.as_ref().map(|when| program(("when", when))).transpose()?;
            let test = program(test)?;
            let ahead = |program: &Program| {
                let references = program.references();
                !references.has_variable("principal") && !references.has_variable("arguments")
            };
            let (when_ahead, test_ahead) = (when.as_ref().is_some_and(ahead), ahead(&test));
            let scopes = rule.scopes.clone();
            compiled.push(Rule { name: name.clone(), when, test, deny, when_ahead, test_ahead, scopes });
        }
        let reads = |program: &Program| program.references().has_variable("principal");
        let reads_principal = compiled.iter().any(|r| reads(&r.test) || r.when.as_ref().is_some_and(reads));
        static COMPILED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let id = COMPILED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(Policy { id, rules: compiled, env: Arc::new(env), reads_principal })
    }

    /// Whether there is any rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether what the lists show may differ from one caller to another.
    pub fn reads_principal(&self) -> bool {
        self.reads_principal
    }

    /// Every rule's scopes (for the scopes the endpoint's metadata lists).
    pub(crate) fn scopes(&self) -> impl Iterator<Item = &String> {
        self.rules.iter().flat_map(|rule| &rule.scopes)
    }

    /// Checks `method` on `entry` for `caller`, with the request's arguments (none: undecided for
    /// rules that need them). The first rule that refuses, in configuration order.
    pub fn check(
        &self,
        caller: &Caller,
        method: &Method,
        entry: &Entry,
        arguments: Option<&Arguments>,
    ) -> Result<(), Refusal> {
        if self.rules.is_empty() {
            return Ok(());
        }
        let vars = Vars {
            principal: Some(caller.value.as_ref()),
            method: method.value.as_ref(),
            upstream: entry.upstream.as_ref(),
            entry: entry.value.as_ref(),
            arguments: arguments.map(|a| a.0.as_ref()),
        };
        let mut context = Context::with_env(Arc::clone(&self.env));
        context.set_variable_resolver(&vars);
        let undecided = arguments.is_none();
        let ahead = entry.ahead.as_ref().filter(|ahead| ahead.policy == self.id && ahead.method == method.name);
        for (at, rule) in self.rules.iter().enumerate() {
            let applies = match (&rule.when, ahead.and_then(|ahead| ahead.when[at])) {
                (None, _) => Ok(true),
                (Some(_), Some(known)) => Ok(known),
                (Some(when), None) => outcome(when.execute(&context), undecided, "when"),
            };
            let field = if rule.deny { "deny" } else { "allow" };
            let verdict = match applies {
                Ok(true) => match ahead.and_then(|ahead| ahead.test[at]) {
                    Some(known) => Ok(known),
                    None => outcome(rule.test.execute(&context), undecided, field),
                }
                .map(|holds| holds != rule.deny),
                Ok(false) | Err(None) => Ok(true),
                Err(Some(error)) => Err(Some(error)),
            };
            let why = match verdict {
                Ok(true) | Err(None) => continue,
                Ok(false) if rule.deny => format!("policy rule `{}` denies it", rule.name),
                Ok(false) => format!("policy rule `{}` does not allow it", rule.name),
                Err(Some(error)) => {
                    tracing::debug!(rule = rule.name, %error, "a policy rule failed: refused");
                    format!("policy rule `{}` failed, which refuses: {error}", rule.name)
                }
            };
            let step_up = caller.lacks(&rule.scopes).then(|| rule.scopes.clone());
            return Err(Refusal { rule: rule.name.clone(), step_up, why });
        }
        Ok(())
    }
}

impl Policy {
    /// Decides for `entry`, used by `method`, what the rules decide whatever the caller and the
    /// arguments (most `when`s: the entry's name, upstream, annotations), so that a list of
    /// thousands evaluates only what depends on who asks. What fails is left to each check, to
    /// be refused with its error there.
    pub fn decide_ahead(&self, entry: &mut Entry, method: &Method) {
        if !self.rules.iter().any(|rule| rule.when_ahead || rule.test_ahead) {
            return;
        }
        let vars = Vars {
            principal: None,
            method: method.value.as_ref(),
            upstream: entry.upstream.as_ref(),
            entry: entry.value.as_ref(),
            arguments: None,
        };
        let mut context = Context::with_env(Arc::clone(&self.env));
        context.set_variable_resolver(&vars);
        let known = |ahead: bool, program: Option<&Program>| match (ahead, program.map(|p| p.execute(&context))) {
            (true, Some(Ok(Value::Bool(holds)))) => Some(holds),
            _ => None,
        };
        let when = self.rules.iter().map(|rule| known(rule.when_ahead, rule.when.as_ref())).collect();
        let test = self.rules.iter().map(|rule| known(rule.test_ahead, Some(&rule.test))).collect();
        entry.ahead = Some(Ahead { policy: self.id, method: method.name, when, test });
    }
}

/// A bool, or why not: `None` when the expression is undecided (it needs `arguments`, which the
/// request has none of), else the failure.
fn outcome(result: Result<Value, ExecutionError>, undecided: bool, field: &str) -> Result<bool, Option<String>> {
    match result {
        Ok(Value::Bool(holds)) => Ok(holds),
        Ok(other) => Err(Some(format!("`{field}` gave {:?}, not a bool", other.type_of()))),
        Err(ExecutionError::UndeclaredReference(name)) if undecided && name.as_str() == "arguments" => Err(None),
        Err(error) => Err(Some(format!("`{field}`: {error}"))),
    }
}

/// The variables of one evaluation, lent to the interpreter (nothing is copied per rule).
struct Vars<'a> {
    /// None when deciding ahead, for programs that do not read it.
    principal: Option<&'a dyn Val>,
    method: &'a dyn Val,
    upstream: &'a dyn Val,
    entry: &'a dyn Val,
    arguments: Option<&'a dyn Val>,
}

impl VariableResolver for Vars<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        let value = match variable {
            "principal" => self.principal?,
            "method" => self.method,
            "upstream" => self.upstream,
            "entry" => self.entry,
            "arguments" => self.arguments?,
            _ => return None,
        };
        Some(CowVal::Borrowed(value))
    }
}

/// The `principal` of the requests of one caller, converted once per request (or list).
pub struct Caller {
    value: Box<dyn Val>,
    /// The token's scopes; none without a token (then no scope would help).
    scopes: Option<Vec<String>>,
}

impl Caller {
    pub fn new(principal: &Principal) -> Caller {
        let mut fields: HashMap<Key, Value> = HashMap::new();
        fields.insert("id".into(), principal.as_str().into());
        let token = principal.token();
        if let Some(sub) = token.and_then(|t| t.subject.as_deref()) {
            fields.insert("sub".into(), sub.into());
        }
        if let Some(client) = token.and_then(|t| t.client_id.as_deref()) {
            fields.insert("client_id".into(), client.into());
        }
        let scopes: Vec<String> = token.map(|t| t.scopes.clone()).unwrap_or_default();
        fields.insert("scopes".into(), Value::List(Arc::new(scopes.iter().map(|s| s.as_str().into()).collect())));
        let claims = token.map(|t| object(&t.claims)).unwrap_or_else(|| Value::Map(Map { map: Arc::default() }));
        fields.insert("claims".into(), claims);
        Caller { value: boxed(Value::Map(Map { map: Arc::new(fields) })), scopes: token.map(|_| scopes) }
    }

    /// Whether the caller has a token that lacks one of `scopes`.
    fn lacks(&self, scopes: &[String]) -> bool {
        !scopes.is_empty() && self.scopes.as_ref().is_some_and(|have| scopes.iter().any(|s| !have.contains(s)))
    }
}

/// What uses an entry: the value of `method`.
pub struct Method {
    name: &'static str,
    value: Box<dyn Val>,
}

impl Method {
    pub fn new(method: &'static str) -> Method {
        Method { name: method, value: boxed(method.into()) }
    }

    /// One of the methods that use entries, built once (a list checks thousands of entries).
    pub fn of(method: &'static str) -> &'static Method {
        const USING: [&str; 5] =
            ["tools/call", "prompts/get", "resources/read", "resources/subscribe", "completion/complete"];
        static BUILT: std::sync::OnceLock<Vec<Method>> = std::sync::OnceLock::new();
        let built = BUILT.get_or_init(|| USING.iter().map(|method| Method::new(method)).collect());
        built.iter().find(|built| built.name == method).expect("a method that uses entries")
    }
}

/// A request's `arguments`, converted once.
pub struct Arguments(Box<dyn Val>);

impl Arguments {
    pub fn new(arguments: &serde_json::Map<String, serde_json::Value>) -> Arguments {
        Arguments(boxed(object(arguments)))
    }

    /// A prompt's arguments (strings).
    pub fn strings(arguments: &std::collections::BTreeMap<String, String>) -> Arguments {
        let map: HashMap<Key, Value> = arguments.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
        Arguments(boxed(Value::Map(Map { map: Arc::new(map) })))
    }
}

/// An entry as the rules see it (`entry`, and `upstream`): built when the lists are indexed, not
/// per request.
pub struct Entry {
    value: Box<dyn Val>,
    upstream: Box<dyn Val>,
    ahead: Option<Ahead>,
}

/// What a policy's rules decide for an entry whatever the caller ([`Policy::decide_ahead`]): by
/// rule, `when` and `allow`/`deny` (None: decided at each check).
struct Ahead {
    policy: u64,
    method: &'static str,
    when: Vec<Option<bool>>,
    test: Vec<Option<bool>>,
}

impl Entry {
    /// `kind` (`tool`, `prompt`, `resource`, `template`, `skill`), the listed name and the
    /// upstream's own, the URI (`""` for tools and prompts), the annotations (JSON) and the
    /// upstream.
    pub fn new(
        kind: &'static str,
        name: &str,
        own_name: &str,
        uri: &str,
        annotations: Option<serde_json::Value>,
        upstream: &str,
    ) -> Entry {
        let annotations = match annotations {
            Some(serde_json::Value::Object(annotations)) => object(&annotations),
            _ => Value::Map(Map { map: Arc::default() }),
        };
        let fields: HashMap<Key, Value> = HashMap::from([
            ("kind".into(), kind.into()),
            ("name".into(), name.into()),
            ("own_name".into(), own_name.into()),
            ("uri".into(), uri.into()),
            ("annotations".into(), annotations),
            ("upstream".into(), upstream.into()),
        ]);
        Entry { value: boxed(Value::Map(Map { map: Arc::new(fields) })), upstream: boxed(upstream.into()), ahead: None }
    }
}

/// The rules' view of every entry of an index, kind by kind (empty without rules).
#[derive(Default)]
pub(crate) struct Indexed {
    pub(crate) tools: Entries,
    pub(crate) prompts: Entries,
    pub(crate) resources: Entries,
    pub(crate) templates: Entries,
    pub(crate) skills: Entries,
}

/// The entries of one kind, by listed name.
#[derive(Default)]
pub(crate) struct Entries {
    entries: Vec<Entry>,
    at: HashMap<String, usize>,
}

impl Entries {
    /// `entries` by their listed names (a tool's or prompt's name, a URI).
    pub(crate) fn new(entries: impl Iterator<Item = (String, Entry)>) -> Entries {
        let mut built = Entries::default();
        for (name, entry) in entries {
            built.at.insert(name, built.entries.len());
            built.entries.push(entry);
        }
        built
    }

    /// The entry listed as `name`.
    pub(crate) fn named(&self, name: &str) -> Option<&Entry> {
        self.at.get(name).map(|&at| &self.entries[at])
    }
}

/// A JSON object as a CEL map; integers stay integers.
fn object(object: &serde_json::Map<String, serde_json::Value>) -> Value {
    Value::Map(Map { map: Arc::new(object.iter().map(|(k, v)| (k.as_str().into(), json(v))).collect()) })
}

fn json(value: &serde_json::Value) -> Value {
    use serde_json::Value as Json;
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Json::String(s) => s.as_str().into(),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(json).collect())),
        Json::Object(map) => object(map),
    }
}

/// A value as the interpreter holds its variables. Every value built here (maps, lists,
/// strings, numbers, bools, null) has such a form.
fn boxed(value: Value) -> Box<dyn Val> {
    Box::<dyn Val>::try_from(value).expect("JSON-like values convert")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(name: &str, when: Option<&str>, allow: &str) -> PolicyRule {
        PolicyRule {
            name: name.into(),
            when: when.map(Into::into),
            allow: Some(allow.into()),
            deny: None,
            scopes: vec![],
        }
    }

    fn caller(claims: serde_json::Value) -> Caller {
        let token = mcp_server::VerifiedToken::from_claims(claims.as_object().unwrap().clone());
        Caller::new(&Principal::from_token(token))
    }

    fn call() -> Method {
        Method::new("tools/call")
    }

    fn tool(name: &str) -> Entry {
        Entry::new("tool", name, name.trim_start_matches("files_"), "", None, "files")
    }

    #[test]
    fn the_two_examples_decide_as_written() {
        let policy = Policy::compile(&[
            rule("ops-delete", Some(r#"entry.name.endsWith("_delete")"#), r#""ops" in principal.claims.groups"#),
            rule(
                "srv-only",
                Some(r#"entry.upstream == "files" && method == "tools/call""#),
                r#"arguments.path.startsWith("/srv")"#,
            ),
        ])
        .unwrap();
        let ops = caller(json!({"sub": "alice", "groups": ["ops"]}));
        let dev = caller(json!({"sub": "bob", "groups": ["dev"]}));
        let nobody = caller(json!({"sub": "eve"}));
        let path = |p: &str| Arguments::new(json!({ "path": p }).as_object().unwrap());
        let (delete, read) = (tool("files_delete"), tool("files_read"));
        assert_eq!(policy.check(&ops, &call(), &delete, Some(&path("/srv/a"))), Ok(()));
        let refused = policy.check(&dev, &call(), &delete, Some(&path("/srv/a"))).unwrap_err();
        assert_eq!((refused.rule.as_str(), refused.step_up.is_none()), ("ops-delete", true));
        // No `groups` claim: the rule fails, which refuses.
        let failed = policy.check(&nobody, &call(), &delete, Some(&path("/srv/a"))).unwrap_err();
        assert!(failed.why.contains("No such key: groups"), "{failed:?}");
        let outside = policy.check(&ops, &call(), &read, Some(&path("/etc/passwd"))).unwrap_err();
        assert_eq!(outside.rule, "srv-only");
        // No `path` at all: refused, not a way around the rule.
        let missing = Arguments::new(&serde_json::Map::new());
        assert!(policy.check(&ops, &call(), &read, Some(&missing)).is_err());
        // Listing: the arguments are unknown, so `srv-only` is undecided; `ops-delete` is not.
        assert_eq!(policy.check(&dev, &call(), &read, None), Ok(()));
        assert!(policy.check(&dev, &call(), &delete, None).is_err());
        assert!(policy.reads_principal());
    }

    #[test]
    fn deny_rules_refuse_what_they_hold_for_and_scopes_make_it_a_step_up() {
        let deny = PolicyRule {
            name: "no-destructive".into(),
            when: None,
            allow: None,
            deny: Some(r#"entry.annotations.?destructiveHint.orValue(false) && !("admin" in principal.scopes)"#.into()),
            scopes: vec!["admin".into()],
        };
        let policy = Policy::compile(&[deny]).unwrap();
        let destructive = Entry::new("tool", "x_rm", "rm", "", Some(json!({"destructiveHint": true})), "x");
        let harmless = Entry::new("tool", "x_ls", "ls", "", Some(json!({"readOnlyHint": true})), "x");
        let user = caller(json!({"sub": "u", "scope": "mcp"}));
        let admin = caller(json!({"sub": "a", "scope": "mcp admin"}));
        let refused = policy.check(&user, &call(), &destructive, None).unwrap_err();
        assert_eq!(refused.step_up, Some(vec!["admin".to_owned()]));
        assert_eq!(
            refused.error(&["mcp".into()]),
            mcp_server::Error::InsufficientScope(vec!["mcp".into(), "admin".into()])
        );
        assert_eq!(policy.check(&admin, &call(), &destructive, None), Ok(()));
        assert_eq!(policy.check(&user, &call(), &harmless, None), Ok(()));
        // Without a token no scope would help: the rule is named.
        let stdio = Caller::new(&Principal::anonymous());
        let named = policy.check(&stdio, &call(), &destructive, None).unwrap_err();
        assert_eq!(named.step_up, None);
        let mcp_server::Error::Rpc(error) = named.error(&[]) else { panic!("{named:?}") };
        assert_eq!(error.message, "Forbidden by the gateway's policy rule `no-destructive`");
        assert!(policy.reads_principal());
    }

    #[test]
    fn a_syntax_error_is_refused_with_the_rule_and_where() {
        let error = Policy::compile(&[rule("bad", None, "entry.name = 'x'")]).err().unwrap();
        assert!(error.starts_with("policy rule `bad`: `allow` at line 1, column 12: "), "{error}");
        assert!(error.ends_with("\n    entry.name = 'x'\n               ^"), "{error}");
        let error = Policy::compile(&[rule("two-lines", Some("true &&\n  entry.name !"), "true")]).err().unwrap();
        assert!(error.starts_with("policy rule `two-lines`: `when` at line 2, column 14: "), "{error}");
        let twice = Policy::compile(&[rule("a", None, "true"), rule("a", None, "true")]).err().unwrap();
        assert_eq!(twice, "two [[policy]] rules are named `a`");
        let neither = PolicyRule { allow: None, ..rule("n", None, "true") };
        assert!(Policy::compile(&[neither]).err().unwrap().contains("give one of `allow` and `deny`"));
    }

    #[test]
    fn what_is_decided_ahead_decides_as_each_check_would() {
        let rules = [
            rule("ops-delete", Some(r#"entry.name.endsWith("_delete")"#), r#""ops" in principal.claims.groups"#),
            rule("srv-only", Some(r#"upstream == "files""#), r#"arguments.path.startsWith("/srv")"#),
            PolicyRule {
                allow: None,
                deny: Some(r#"entry.own_name == "format""#.into()),
                ..rule("no-format", None, "")
            },
            rule("fails", Some(r#"entry.name == "broken""#), "entry.nothing"),
        ];
        let policy = Policy::compile(&rules).unwrap();
        let other = Policy::compile(&rules).unwrap();
        let callers = [caller(json!({"sub": "a", "groups": ["ops"]})), caller(json!({"sub": "b", "groups": []}))];
        let path = Arguments::new(json!({ "path": "/etc" }).as_object().unwrap());
        for name in ["files_delete", "files_read", "disk_format", "broken", "other_delete"] {
            let upstream = name.split('_').next().unwrap();
            let own = name.trim_start_matches(&format!("{upstream}_")).to_owned();
            let entry = || Entry::new("tool", name, &own, "", None, upstream);
            let (plain, mut ahead, mut elsewhere) = (entry(), entry(), entry());
            policy.decide_ahead(&mut ahead, &call());
            // Decided ahead by another policy: not taken for this one's.
            other.decide_ahead(&mut elsewhere, &call());
            for caller in &callers {
                for arguments in [None, Some(&path)] {
                    let expected = policy.check(caller, &call(), &plain, arguments);
                    assert_eq!(policy.check(caller, &call(), &ahead, arguments), expected, "{name}");
                    assert_eq!(policy.check(caller, &call(), &elsewhere, arguments), expected, "{name}");
                    // Another method than the one decided ahead is evaluated.
                    let read = Method::new("resources/read");
                    assert_eq!(
                        policy.check(caller, &read, &ahead, arguments),
                        policy.check(caller, &read, &plain, arguments)
                    );
                }
            }
        }
        assert!(policy.check(&callers[0], &call(), &tool("broken"), None).unwrap_err().why.contains("fails"));
    }

    #[test]
    fn a_result_that_is_not_a_bool_refuses() {
        let policy = Policy::compile(&[rule("name", None, "entry.name")]).unwrap();
        let refused = policy.check(&caller(json!({"sub": "a"})), &call(), &tool("t"), None);
        assert!(refused.unwrap_err().why.contains("not a bool"));
    }
}
