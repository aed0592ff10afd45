//! What a stdio upstream's process sees of the environment: its own `env` and `PATH`, not the
//! gateway's secrets nor another upstream's `env`, unless it asks to inherit (`inherit_env`).
//!
//! This file holds one test, because it sets a variable of the test process: the gateway's
//! environment is that process's.

use std::collections::BTreeMap;

mod common;
use common::config;

/// The environment a process wrote with `env` (a line per variable; values here hold no newline).
fn written(path: &std::path::Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().filter_map(|line| line.split_once('=')).map(|(k, v)| (k.to_owned(), v.to_owned())).collect()
}

#[test]
fn attack_a_stdio_upstream_reads_neither_the_gateways_secret_nor_another_upstreams_env() {
    // SAFETY: the one test of this binary, before any thread of its own (the runtime) starts; the
    // harness's threads do not read the environment meanwhile.
    unsafe { std::env::set_var("GATEWAY_SECRET", "the-gateways-own-secret") };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let dir = std::env::temp_dir().join(format!("mcp-gateway-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Each upstream is a shell that writes its environment to a file, then becomes this
        // crate's binary serving an empty configuration over stdio: a real upstream that must
        // start with what it is given.
        let empty = dir.join("empty.toml");
        std::fs::write(&empty, "").unwrap();
        let upstream = |name: &str| {
            let script = format!(
                "env > '{}'; exec '{}' --stdio --config '{}'",
                dir.join(format!("{name}.env")).display(),
                env!("CARGO_BIN_EXE_mcp-gateway"),
                empty.display()
            );
            serde_json::Value::from(vec!["sh".to_owned(), "-c".to_owned(), script])
        };
        let gateway = mcp_gateway::Gateway::start(&config(&format!(
            "[[upstream]]\nname = \"a\"\ncommand = {}\nenv = {{ A_SECRET = \"a-secret\" }}\n\
             [[upstream]]\nname = \"b\"\ncommand = {}\n\
             [[upstream]]\nname = \"open\"\ncommand = {}\ninherit_env = true\n",
            upstream("a"),
            upstream("b"),
            upstream("open"),
        )))
        .await
        .unwrap();
        // Each started on what it was given, and serves.
        let states = gateway.upstreams();
        assert!(states.iter().all(|(_, state)| state.is_ok()), "{states:?}");
        let (a, b, open) = (written(&dir.join("a.env")), written(&dir.join("b.env")), written(&dir.join("open.env")));
        let path = std::env::var("PATH").unwrap();

        // `b` has `PATH` and nothing of the gateway's or `a`'s (the shell adds `PWD`, `SHLVL`
        // and `_` of its own).
        let b_names: Vec<&str> =
            b.keys().map(String::as_str).filter(|name| !["PWD", "SHLVL", "_", "OLDPWD"].contains(name)).collect();
        assert_eq!(b_names, ["PATH"], "{b:?}");
        assert_eq!(b["PATH"], path);
        assert!(!b.contains_key("GATEWAY_SECRET") && !b.contains_key("A_SECRET"), "{b:?}");
        // `a` has its own `env`, still not the gateway's secret.
        assert_eq!(a.get("A_SECRET").map(String::as_str), Some("a-secret"));
        assert!(!a.contains_key("GATEWAY_SECRET"), "{a:?}");
        // `inherit_env = true` opts back in: the gateway's environment, and not `a`'s `env`.
        assert_eq!(open.get("GATEWAY_SECRET").map(String::as_str), Some("the-gateways-own-secret"));
        assert!(!open.contains_key("A_SECRET"), "{open:?}");
        drop(gateway);
        std::fs::remove_dir_all(&dir).ok();
    });
}
