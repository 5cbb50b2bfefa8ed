//! Resolving settings from flags, environment and config files: every error names its field.

use std::path::PathBuf;

use super::*;
use crate::config::file as config;
use crate::config::file::Provider;
use clap::Parser;
use mcp_gen_ui_actors::upstream::UpstreamSpec;

fn args(v: &[&str]) -> Args {
    Args::try_parse_from(std::iter::once("mcp-gen-ui").chain(v.iter().copied())).unwrap()
}

fn no_env(_: &str) -> Option<String> {
    None
}

#[test]
fn stdio_upstream_is_shell_split() {
    let s = resolve(&args(&["--upstream", "node 'my server.js' --x"]), &no_env).unwrap();
    match &s.upstreams.servers[0].spec {
        UpstreamSpec::Stdio { command, args, .. } => {
            assert_eq!(command, "node");
            assert_eq!(args, &vec!["my server.js", "--x"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn missing_upstream_names_the_field() {
    let e = resolve(&args(&[]), &no_env).unwrap_err();
    assert_eq!(e.field, "upstream");
}

#[test]
fn bad_url_names_the_field() {
    let e = resolve(&args(&["--upstream-url", "localhost:3000/mcp"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--upstream-url", "the flag it came from, not the config file's key");
    let e = resolve(&args(&["--upstream-url", "http://user:s3cret@[bad/mcp"]), &no_env).unwrap_err();
    assert!(!e.message.contains("s3cret") && e.message.contains("***@[bad/mcp"), "{e}");
    let e = resolve(&args(&["--upstream-url", "ftp://x/mcp"]), &no_env).unwrap_err();
    assert!(e.message.contains("http"));
}

#[test]
fn demo_conflicts_with_upstream() {
    let e = resolve(&args(&["--demo", "--upstream", "x"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--demo");
}

#[test]
fn provider_defaults_follow_keys() {
    let s = resolve(&args(&["--demo"]), &no_env).unwrap();
    assert_eq!(s.provider, Provider::Offline);
    let env = |k: &str| (k == "OPENAI_API_KEY").then(|| "sk-test".to_string());
    let s = resolve(&args(&["--demo"]), &env).unwrap();
    assert_eq!(s.provider, Provider::Openai);
    assert!(s.provider_reason.contains("OPENAI_API_KEY"));
    let e = resolve(&args(&["--demo", "--provider", "anthropic"]), &no_env).unwrap_err();
    assert!(e.message.contains("ANTHROPIC_API_KEY"));
}

#[test]
fn timeouts_are_bounded() {
    let e = resolve(&args(&["--demo", "--upstream-timeout-ms", "18446744073709551615"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--upstream-timeout-ms");
    assert_eq!(resolve(&args(&["--demo", "--upstream-timeout-ms", "0"]), &no_env).unwrap_err().field, "--upstream-timeout-ms");
    assert!(resolve(&args(&["--demo", "--upstream-timeout-ms", "86400000"]), &no_env).is_ok());
}

#[test]
fn headers_env_and_listen_are_checked() {
    assert_eq!(
        resolve(&args(&["--upstream-url", "http://h/mcp", "--upstream-header", "nocolon"]), &no_env).unwrap_err().field,
        "--upstream-header"
    );
    assert_eq!(resolve(&args(&["--upstream", "x", "--upstream-env", "=v"]), &no_env).unwrap_err().field, "--upstream-env");
    assert_eq!(resolve(&args(&["--demo", "--listen", "8080"]), &no_env).unwrap_err().field, "--listen");
    assert_eq!(resolve(&args(&["--demo", "--log-level", "loud!!"]), &no_env).unwrap_err().field, "--log-level");
}

#[test]
fn stdout_logs_conflict_with_the_stdio_transport() {
    let dir = std::env::temp_dir().join(format!("mcp-gen-ui-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.json");
    std::fs::write(&file, r#"{"logging": {"destination": "stdout"}}"#).unwrap();
    let path = file.to_str().unwrap();
    assert_eq!(resolve(&args(&["--demo", "--config", path, "--transport", "stdio"]), &no_env).unwrap_err().field, "logging.destination");
    assert!(resolve(&args(&["--demo", "--config", path]), &no_env).unwrap().log_stdout);
    std::fs::remove_dir_all(dir).unwrap();
}

fn write_config(name: &str, text: &str) -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("mcp-gen-ui-auth-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("c.json");
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap().to_string();
    (dir, path)
}

#[test]
fn tokens_come_from_every_source_with_their_labels() {
    let (dir, cfg) = write_config("sources", "");
    std::fs::write(dir.join("tokens"), "# comment\n\nfile-token-000000001\n").unwrap();
    std::fs::write(
        &cfg,
        format!(r#"{{"server": {{"auth": {{"tokens": ["config-token-0000001"], "tokensFile": {:?}}}}}}}"#, dir.join("tokens")),
    )
    .unwrap();
    let env = |k: &str| (k == "MCP_GEN_UI_AUTH_TOKEN").then(|| "env-token-0000000001".to_string());
    let s =
        resolve(&args(&["--demo", "--config", &cfg, "--auth-token", "flag-token-000000001", "--auth-token", "flag-token-000000002"]), &env)
            .unwrap();
    let labels: Vec<&str> = s.auth.tokens.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, vec!["--auth-token[0]", "--auth-token[1]", "MCP_GEN_UI_AUTH_TOKEN", "server.auth.tokens[0]"]);
    assert_eq!(s.auth.file_tokens.len(), 1);
    assert_eq!(s.auth.file_tokens[0].label, "server.auth.tokensFile:3");
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert!(!format!("{:?}", s.auth).contains("flag-token"), "Debug never prints a token");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn an_admin_that_no_token_is_labelled_as_is_warned_about() {
    let (dir, cfg) = write_config("admins", "");
    std::fs::write(dir.join("tokens"), "carol:file-token-000000001\n").unwrap();
    let body = format!(r#"{{"server": {{"auth": {{"admins": ["alice", "carol", "Bob"], "tokensFile": {:?}}}}}}}"#, dir.join("tokens"));
    std::fs::write(&cfg, body).unwrap();
    let s = resolve(
        &args(&["--demo", "--config", &cfg, "--auth-token", "alice:flag-token-000000001", "--auth-token", "bob:flag-token-000000002"]),
        &no_env,
    )
    .unwrap();
    assert!(s.auth.tokens.iter().all(|t| t.named) && s.auth.file_tokens[0].named);
    let about: Vec<&String> = s.warnings.iter().filter(|w| w.contains("server.auth.admins")).collect();
    assert_eq!(about.len(), 1, "{:?}", s.warnings);
    assert!(about[0].contains("\"Bob\""), "labels are case-sensitive: {about:?}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_token_label_that_spells_a_person_not_listing_it_is_refused_at_start() {
    let (dir, cfg) = write_config("people", r#"{"server": {"auth": {"people": {"bob": {"subjects": ["u-316"]}}}}}"#);
    let e = resolve(&args(&["--demo", "--config", &cfg, "--auth-token", "bob:flag-token-000000002"]), &no_env).unwrap_err();
    assert_eq!(e.field, "server.auth.people.bob");
    assert!(e.message.contains("server.auth.people.bob.tokens"), "{e}");
    let listed = r#"{"server": {"auth": {"people": {"bob": {"tokens": ["bob"], "subjects": ["u-316"]}}, "admins": ["bob"]}}}"#;
    std::fs::write(&cfg, listed).unwrap();
    let s = resolve(&args(&["--demo", "--config", &cfg, "--auth-token", "bob:flag-token-000000002"]), &no_env).unwrap();
    assert_eq!(s.auth.people.of_subject("u-316").as_deref(), Some("bob"));
    assert!(s.warnings.iter().all(|w| !w.contains("server.auth.admins")), "a person is an admin's name: {:?}", s.warnings);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn auth_errors_name_the_field_and_never_the_token() {
    let e = resolve(&args(&["--demo", "--auth-token", "has space"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--auth-token");
    assert!(!e.message.contains("has space"), "{e}");
    let e = resolve(&args(&["--demo", "--no-auth", "--auth-token", "flag-token-000000001"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--no-auth");
    assert!(e.message.contains("--auth-token"), "{e}");
    let (dir, cfg) = write_config("missing-file", r#"{"server": {"auth": {"tokensFile": "/nonexistent/tokens"}}}"#);
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.tokensFile");
    std::fs::write(&cfg, r#"{"server": {"auth": {"disabled": true, "tokens": ["config-token-0000001"]}}}"#).unwrap();
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.disabled");
    std::fs::write(&cfg, r#"{"server": {"auth": {"oauth": {"issuer": "http://as", "jwksUrl": "http://as/jwks"}}}}"#).unwrap();
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.oauth.audience");
    std::fs::write(&cfg, r#"{"server": {"auth": {"oauth": {"issuer": "http://as", "audience": "a", "jwksUrl": "http://as/jwks", "requiredScopes": ["a b"]}}}}"#).unwrap();
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.oauth.requiredScopes[0]");
    std::fs::write(&cfg, r#"{"server": {"auth": {"oauth": {"issuer": "http://as", "audience": "a"}}}}"#).unwrap();
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "server.auth.oauth.jwksUrl");
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg, "--oauth-jwks-url", "jwks"]), &no_env).unwrap_err().field, "--oauth-jwks-url");
    let s = resolve(&args(&["--demo", "--config", &cfg, "--oauth-jwks-url", "http://as/keys"]), &no_env).unwrap();
    assert_eq!(s.auth.oauth.unwrap().jwks_url.as_str(), "http://as/keys");
    std::fs::remove_dir_all(dir).unwrap();
    let s =
        resolve(&args(&["--demo", "--oauth-issuer", "http://as", "--oauth-audience", "x", "--oauth-jwks-url", "http://as/jwks"]), &no_env)
            .unwrap();
    assert!(s.auth.configured());
    assert_eq!(resolve(&args(&["--demo", "--oauth-issuer", "http://as"]), &no_env).unwrap_err().field, "server.auth.oauth.audience");
}

#[test]
fn metrics_listen_is_an_address_of_its_own() {
    let s = resolve(&args(&["--demo", "--metrics-listen", "127.0.0.1:9464"]), &no_env).unwrap();
    assert_eq!(s.metrics_listen, Some("127.0.0.1:9464".parse().unwrap()));
    assert_eq!(resolve(&args(&["--demo", "--metrics-listen", "9464"]), &no_env).unwrap_err().field, "--metrics-listen");
    let e = resolve(&args(&["--demo", "--listen", "127.0.0.1:9000", "--metrics-listen", "127.0.0.1:9000"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--metrics-listen");
    let short = resolve(&args(&["--demo", "--auth-token", "short"]), &no_env).unwrap();
    assert!(short.warnings.iter().any(|w| w.contains("--auth-token[0]") && w.contains("16")), "{:?}", short.warnings);
}

#[test]
fn redis_needs_a_url_and_never_quotes_it() {
    let s = resolve(&args(&["--demo", "--redis-url", "redis://:hunter2@cache:6379/2"]), &no_env).unwrap();
    assert_eq!(s.config.cache.kind, config::CacheType::Redis);
    assert_eq!(s.config.cache.redis_url.as_deref(), Some("redis://:hunter2@cache:6379/2"));
    let e = resolve(&args(&["--demo", "--redis-url", "rediss://:hunter2@cache:6379"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--redis-url");
    assert!(!e.message.contains("hunter2"), "{e}");
    let e = resolve(&args(&["--demo", "--redis-url", "http://cache"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--redis-url");
    let e = resolve(&args(&["--demo", "--redis-url", "redis://cache", "--cache-dir", "/tmp/x"]), &no_env).unwrap_err();
    assert_eq!(e.field, "--redis-url");
    let (dir, cfg) = write_config("redis", r#"{"cache": {"type": "redis"}}"#);
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "cache.redisUrl");
    std::fs::write(&cfg, r#"{"cache": {"type": "redis", "redisUrl": "redis://cache", "redisTimeoutMs": 0}}"#).unwrap();
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "cache.redisTimeoutMs");
    std::fs::write(&cfg, r#"{"cache": {"type": "redis", "redisUrl": "redis//cache"}}"#).unwrap();
    assert_eq!(resolve(&args(&["--demo", "--config", &cfg]), &no_env).unwrap_err().field, "cache.redisUrl");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn sse_transport_applies_to_urls_only() {
    let s = resolve(&args(&["--upstream-url", "http://127.0.0.1:1/sse", "--upstream-transport", "sse"]), &no_env).unwrap();
    assert!(matches!(s.upstreams.servers[0].spec, UpstreamSpec::Sse { .. }));
    assert_eq!(resolve(&args(&["--upstream", "x", "--upstream-transport", "sse"]), &no_env).unwrap_err().field, "--upstream-transport");
}
