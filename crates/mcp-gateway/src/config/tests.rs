//! The configuration's reading and checks.

use super::*;

#[test]
fn reads_both_kinds_of_upstream_and_names_their_tools() {
    let config = Config::from_toml(
        r#"
        listen = "127.0.0.1:0"
        [[upstream]]
        name = "files"
        command = ["files-server", "/srv"]
        [[upstream]]
        name = "notes"
        url = "http://127.0.0.1:9000/mcp"
        headers = { Authorization = "Bearer t" }
        prefix = ""
        rename = { search = "notes_search" }
        era = "legacy"
        "#,
    )
    .unwrap();
    assert_eq!(config.upstreams[0].listed_name("read"), "files_read");
    assert_eq!(config.upstreams[1].listed_name("add"), "add");
    assert_eq!(config.upstreams[1].listed_name("search"), "notes_search");
    assert_eq!(config.upstreams[1].headers["Authorization"], "Bearer t");
    assert_eq!((config.upstreams[0].era, config.upstreams[1].era), (Era::Auto, Era::Legacy));
}

#[test]
fn refuses_what_cannot_be_served() {
    let refused = |toml: &str| Config::from_toml(toml).unwrap_err();
    assert!(
        refused("[[upstream]]\nname = \"a\"\n").contains("upstream `a` needs a `command`, a `url` or an `openapi`")
    );
    assert!(
        refused("[[upstream]]\nname = \"a\"\nurl = \"http://x\"\n[[upstream]]\nname = \"a\"\nurl = \"http://y\"\n")
            .contains("two upstreams are named `a`")
    );
    assert!(refused("[[upstream]]\nname = \"a\"\ncommand = []\n").contains("`command` is empty"));
    assert!(refused("lisen = \"x\"\n").contains("unknown field `lisen`"));
    let scoped = "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\nscopes = [\"s\"]\n";
    assert!(refused(scoped).contains("upstream `a` restricts its callers"), "{}", refused(scoped));
    // A scope name that a challenge could not carry (issue 42): refused at load, named.
    let quoted = "[authorization]\nresource = \"r\"\nissuer = \"i\"\n[[upstream]]\nname = \"a\"\n\
                  url = \"http://x\"\nentry_scopes = { t = [\"a\\\"b\"] }\n";
    assert!(refused(quoted).contains(r#"the scope "a\"b" is not an OAuth scope-token"#), "{}", refused(quoted));
    let spaced = "[authorization]\nresource = \"r\"\nissuer = \"i\"\nrequired_scopes = [\"a b\"]\n";
    assert!(refused(spaced).contains("required_scopes: \"a b\" is not"), "{}", refused(spaced));
    let stdio_oauth =
        "[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\noauth = { client_id = \"c\", client_secret = \"s\" }\n";
    assert!(refused(stdio_oauth).contains("`oauth` is for HTTP upstreams"));
    let unpinned =
        "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\noauth = { client_id = \"c\", client_secret = \"s\" }\n";
    assert!(refused(unpinned).contains("upstream `a`: `[upstream.oauth]` needs `issuer`"), "{}", refused(unpinned));
    assert!(refused("[[upstream]]\nname = \"a\"\ncommand = [\"x\"]\npool = 0\n").contains("at least 1"));
    let http_inherit = "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\ninherit_env = true\n";
    assert!(refused(http_inherit).contains("upstream `a`: `inherit_env` is for stdio upstreams"));
    let http_pool = "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\npool = 2\n";
    assert!(refused(http_pool).contains("`pool` is for stdio upstreams"));
    let no_bytes = "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\nmax_list_bytes = 0\n";
    assert!(refused(no_bytes).contains("upstream `a`: `max_list_bytes` must be at least 1"), "{}", refused(no_bytes));
    let negative = "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\nmax_list_bytes = -1\n";
    assert!(refused(negative).contains("max_list_bytes"), "{}", refused(negative));
    // A `Duration` holds no infinity, NaN or negative: said at load, not a panic at start.
    for (field, value) in [("timeout_secs", "inf"), ("idle_connection_secs", "nan"), ("relist_delay_secs", "-1")] {
        let toml = format!("[[upstream]]\nname = \"a\"\nurl = \"http://x\"\n{field} = {value}\n");
        let expected = format!("upstream `a`: `{field}` must be a finite number of seconds, at least 0");
        assert!(refused(&toml).contains(&expected), "{}", refused(&toml));
    }
    assert!(refused("task_after_secs = inf\n").contains("`task_after_secs` must be a finite number"));
    // A policy rule: a misspelt field, neither `allow` nor `deny`, one that does not compile.
    assert!(refused("[[policy]]\nname = \"a\"\nalow = \"true\"\n").contains("unknown field `alow`"));
    assert!(refused("[[policy]]\nname = \"a\"\n").contains("policy rule `a`: give one of `allow` and `deny`"));
    let broken = refused("[[policy]]\nname = \"a\"\ndeny = \"entry.name ==\"\n");
    assert!(broken.starts_with("policy rule `a`: `deny` at line 1, column 14: "), "{broken}");
}

#[test]
fn the_example_in_the_module_docs_is_a_valid_configuration() {
    let source = include_str!("../config.rs");
    let example: String = source
        .lines()
        .map_while(|line| line.strip_prefix("//!"))
        .skip_while(|line| line.trim() != "```toml")
        .skip(1)
        .take_while(|line| line.trim() != "```")
        .map(|line| format!("{}\n", line.strip_prefix(' ').unwrap_or(line)))
        .collect();
    let config = Config::from_toml(&example).unwrap_or_else(|e| panic!("{e}\n{example}"));
    let identities: Vec<Identity> = config.upstreams.iter().map(|u| u.identity).collect();
    assert_eq!(identities, [Identity::Gateway, Identity::Gateway, Identity::Exchange, Identity::Gateway]);
    let names: Vec<&str> = config.policies.iter().map(|rule| rule.name.as_str()).collect();
    assert_eq!(names, ["ops-delete", "srv-only"]);
}

#[test]
fn acting_as_the_caller_needs_a_callers_token_and_a_client_to_exchange_it_as() {
    let refused = |toml: &str| Config::from_toml(toml).unwrap_err();
    let authorization = "[authorization]\nresource = \"r\"\nissuer = \"https://as\"\n";
    let oauth = "oauth = { issuer = \"https://as\", client_id = \"gw\", client_secret = \"s\" }\n";
    let exchange = |rest: &str| format!("[[upstream]]\nname = \"a\"\nidentity = \"exchange\"\n{rest}");
    let stdio = format!("{authorization}{}", exchange(&format!("command = [\"x\"]\n{oauth}")));
    assert!(refused(&stdio).contains("`identity = \"exchange\"` is for HTTP upstreams"), "{}", refused(&stdio));
    let anonymous = exchange(&format!("url = \"http://x\"\n{oauth}"));
    assert!(refused(&anonymous).contains("needs an `[authorization]` section"), "{}", refused(&anonymous));
    let clientless = format!("{authorization}{}", exchange("url = \"http://x\"\n"));
    assert!(refused(&clientless).contains("needs `[upstream.oauth]`"), "{}", refused(&clientless));
    let standing_in = format!(
        "{authorization}{}",
        exchange(&format!("url = \"http://x\"\nheaders = {{ authorization = \"Bearer t\" }}\n{oauth}"))
    );
    assert!(refused(&standing_in).contains("would stand in for it"), "{}", refused(&standing_in));
    let none_kept = format!("{authorization}{}", exchange(&format!("url = \"http://x\"\nmax_identities = 0\n{oauth}")));
    assert!(refused(&none_kept).contains("`max_identities` must be at least 1"), "{}", refused(&none_kept));
    let misplaced = "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\nmax_identities = 5\n";
    assert!(refused(misplaced).contains("`max_identities` is for `identity = \"exchange\"`"));
    assert!(
        refused("[[upstream]]\nname = \"a\"\nurl = \"http://x\"\nidentity = \"caller\"\n").contains("unknown variant")
    );

    let config = Config::from_toml(&format!(
        "{authorization}{}",
        exchange(&format!("url = \"http://x\"\nheaders = {{ x-tenant = \"blue\" }}\n{oauth}"))
    ))
    .unwrap();
    assert_eq!(config.upstreams[0].identity, Identity::Exchange);
    assert_eq!(config.upstreams[0].max_identities(), 1000);
    assert_eq!(
        Config::from_toml("[[upstream]]\nname = \"a\"\nurl = \"http://x\"\n").unwrap().upstreams[0].identity,
        Identity::Gateway
    );
}

#[test]
fn reads_an_openapi_upstream_and_refuses_its_fields_elsewhere() {
    let config = Config::from_toml(
        r#"
        [[upstream]]
        name = "pets"
        openapi = "https://pets.example/openapi.json"
        base_url = "https://pets.example/v1"
        headers = { X-Api-Key = "k" }
        max_response_bytes = 4096
        oauth = { issuer = "https://auth.example", client_id = "gw", client_secret = "s" }
        "#,
    )
    .unwrap();
    let pets = &config.upstreams[0];
    assert_eq!(pets.openapi.as_deref(), Some("https://pets.example/openapi.json"));
    assert_eq!((pets.base_url.as_deref(), pets.max_response_bytes()), (Some("https://pets.example/v1"), 4096));
    assert_eq!(
        Config::from_toml("[[upstream]]\nname = \"a\"\nopenapi = \"a.json\"\n").unwrap().upstreams[0]
            .max_response_bytes(),
        1 << 20
    );
    let refused = |toml: &str| Config::from_toml(toml).unwrap_err();
    let both = "[[upstream]]\nname = \"a\"\nopenapi = \"a.json\"\nurl = \"http://x\"\n";
    assert!(refused(both).contains("upstream `a` has `openapi` and a `command` or `url`"), "{}", refused(both));
    let stray = "[[upstream]]\nname = \"a\"\nurl = \"http://x\"\nbase_url = \"http://y\"\n";
    assert!(refused(stray).contains("upstream `a`: `base_url` is for OpenAPI upstreams"), "{}", refused(stray));
    let ftp = "[[upstream]]\nname = \"a\"\nopenapi = \"a.json\"\nbase_url = \"ftp://y\"\n";
    assert!(refused(ftp).contains("`base_url` must be an http:// or https:// URL"), "{}", refused(ftp));
    let zero = "[[upstream]]\nname = \"a\"\nopenapi = \"a.json\"\nmax_response_bytes = 0\n";
    assert!(refused(zero).contains("`max_response_bytes` must be at least 1"), "{}", refused(zero));
    let pooled = "[[upstream]]\nname = \"a\"\nopenapi = \"a.json\"\npool = 2\n";
    assert!(refused(pooled).contains("`pool` is for stdio upstreams"), "{}", refused(pooled));
}

#[test]
fn reads_the_authorization_and_who_may_use_each_upstream() {
    let config = Config::from_toml(
        r#"
        [authorization]
        resource = "https://gw.example/mcp"
        issuer = "https://auth.example"
        required_scopes = ["mcp"]
        introspection = { client_id = "gw", client_secret = "s" }
        [[upstream]]
        name = "notes"
        url = "http://127.0.0.1:9000/mcp"
        scopes = ["notes"]
        principals = ["alice"]
        entry_scopes = { delete = ["notes:write"] }
        oauth = { issuer = "https://auth.example", client_id = "gw", client_secret = "s2", scopes = ["notes"] }
        "#,
    )
    .unwrap();
    let authorization = config.authorization.as_ref().unwrap();
    assert_eq!(authorization.required_scopes, ["mcp"]);
    assert_eq!(authorization.introspection.as_ref().unwrap().client_id, "gw");
    let notes = &config.upstreams[0];
    assert!(notes.restricts_callers());
    assert_eq!(notes.entry_scopes["delete"], ["notes:write"]);
    assert_eq!(notes.oauth.as_ref().unwrap().scopes, ["notes"]);
}
