//! The cost of `[[policy]]` rules (four, as a team would write them: the two examples of the
//! README, a rule on an upstream's group and one on destructive tools with step-up scopes):
//!
//! - `policy/compile`: compiling them (once per start);
//! - `policy/check_call`: deciding one `tools/call` with its arguments, the caller's claims
//!   converted once (what every call pays);
//! - `policy/list`: filtering a list of 1,000 and 10,000 tools (the catalogue of
//!   tests/common/catalogue.rs) for one caller, the entries prepared as the index prepares them
//!   (what every `tools/list` pays: linear in the tools).
//!
//! ```text
//! cargo bench -p mcp-gateway --bench policy
//! ```

#[path = "../tests/common/mod.rs"]
#[allow(unused_imports)]
mod common;

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mcp_gateway::PolicyRule;
use mcp_gateway::policy::{Arguments, Caller, Entry, Method, Policy};
use mcp_server::{Principal, VerifiedToken};
use serde_json::json;

fn rules() -> Vec<PolicyRule> {
    let rule = |name: &str, when: &str, allow: &str, scopes: &[&str]| PolicyRule {
        name: name.into(),
        when: Some(when.into()),
        allow: Some(allow.into()),
        deny: None,
        scopes: scopes.iter().map(|s| s.to_string()).collect(),
    };
    vec![
        rule("ops-delete", r#"entry.name.endsWith("_delete")"#, r#""ops" in principal.claims.groups"#, &[]),
        rule(
            "srv-only",
            r#"upstream == "files" && method == "tools/call""#,
            r#"arguments.path.startsWith("/srv")"#,
            &[],
        ),
        rule("vault-ops", r#"upstream == "vault""#, r#""ops" in principal.claims.?groups.orValue([])"#, &[]),
        rule(
            "destructive-needs-write",
            "entry.annotations.?destructiveHint.orValue(false)",
            r#""files:write" in principal.scopes"#,
            &["files:write"],
        ),
    ]
}

fn alice() -> Principal {
    let claims = json!({ "sub": "alice", "groups": ["ops", "dev"], "scope": "mcp files:write", "aud": "gw" });
    Principal::from_token(VerifiedToken::from_claims(claims.as_object().unwrap().clone()))
}

fn policy(c: &mut Criterion) {
    let mut group = c.benchmark_group("policy");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    let rules = rules();
    group.bench_function("compile", |b| b.iter(|| Policy::compile(&rules).unwrap()));
    let policy = Policy::compile(&rules).unwrap();

    let destructive = json!({ "destructiveHint": true });
    let mut delete = Entry::new("tool", "files_delete", "delete", "", Some(destructive), "files");
    policy.decide_ahead(&mut delete, &Method::new("tools/call"));
    let call = Method::new("tools/call");
    group.bench_function("check_call", |b| {
        b.iter(|| {
            // Per call: the caller's claims and the arguments, converted once; the entry is indexed.
            let caller = Caller::new(&alice());
            let arguments = Arguments::new(json!({ "path": "/srv/old" }).as_object().unwrap());
            policy.check(&caller, &call, &delete, Some(&arguments)).unwrap()
        })
    });

    for size in [1_000, 10_000] {
        let entries: Vec<Entry> = common::catalogue::tools(size)
            .iter()
            .map(|tool| {
                let upstream = tool.name.split('_').next().unwrap_or_default();
                // As the index prepares it: what does not depend on the caller decided once.
                let mut entry = Entry::new("tool", &tool.name, &tool.name, "", None, upstream);
                policy.decide_ahead(&mut entry, &call);
                entry
            })
            .collect();
        group.bench_with_input(BenchmarkId::new("list", size), &entries, |b, entries| {
            b.iter(|| {
                let caller = Caller::new(&alice());
                entries.iter().filter(|entry| policy.check(&caller, &call, entry, None).is_ok()).count()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, policy);
criterion_main!(benches);
