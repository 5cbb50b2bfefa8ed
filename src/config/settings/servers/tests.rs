use super::*;

const D: Defaults = Defaults { request_timeout_ms: 120_000, max_message_bytes: 16 << 20, max_tools: 10_000, max_tool_list_bytes: 16 << 20 };

fn env(k: &str) -> Option<String> {
    match k {
        "TOKEN" => Some("t0k".into()),
        "HOME" => Some("/home/u".into()),
        _ => None,
    }
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mcp-gen-ui-servers-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("servers.json");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_claude_desktop_file_as_it_is() {
    let p = write(
        "claude",
        r#"{"mcpServers": {
            "memory": {"command": "npx", "alwaysAllow": ["read_graph"], "args": ["-y", "@modelcontextprotocol/server-memory"], "env": {"MEMORY_FILE_PATH": "${HOME}/m.jsonl"}},
            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${env:TOKEN}"}},
            "old": {"command": "x", "disabled": true}
        }}"#,
    );
    let Read { servers, warnings, disabled, notes } = read_file(&p, "--servers-file", &env, D).unwrap();
    assert_eq!(servers.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["memory", "remote"], "in the file's order");
    match &servers[0].spec {
        UpstreamSpec::Stdio { command, args, env, .. } => {
            assert_eq!((command.as_str(), args.len()), ("npx", 2));
            assert_eq!(env, &vec![("MEMORY_FILE_PATH".to_string(), "/home/u/m.jsonl".to_string())]);
        }
        other => panic!("{other:?}"),
    }
    match &servers[1].spec {
        UpstreamSpec::StreamableHttp { headers, .. } => assert_eq!(headers[0].1, "Bearer t0k"),
        other => panic!("{other:?}"),
    }
    assert_eq!(disabled, ["old"], "kept in the file, not started, and not a warning");
    assert!(warnings.is_empty(), "a file used as it is passes --strict: {warnings:?}");
    assert!(notes.iter().any(|n| n.contains("alwaysAllow (memory)")), "one note names another client's keys: {notes:?}");
}

#[test]
fn a_misspelt_key_of_ours_is_named_with_its_server_and_what_it_meant() {
    let p = write(
        "slip",
        r#"{"mcpServers": {"files": {"command": "x", "tols": {"deny": ["write_file"]}, "autoApprove": [], "disabledTools": ["rm"]}}}"#,
    );
    let Read { warnings, notes, .. } = read_file(&p, "--servers-file", &env, D).unwrap();
    let slip = warnings.iter().find(|w| w.contains("tols")).expect("a warning for the slip");
    assert!(slip.contains("mcpServers.files.tols") && slip.contains("did you mean `tools`?"), "{slip}");
    // Another client's key whose loss changes nothing here is a note; one that would
    // (a tool it disabled is served) stays a warning.
    assert!(notes.iter().any(|n| n.contains("autoApprove (files)")), "{notes:?}");
    assert!(warnings.iter().any(|w| w.contains("disabledTools") && !w.contains("tols")), "{warnings:?}");
}

#[test]
fn a_vs_code_file_and_our_own_fields() {
    let p = write(
        "vscode",
        r#"{"inputs": [], "servers": {"fs": {"type": "stdio", "command": "node", "args": ["fs.js"],
            "tools": {"allow": ["read_*"], "deny": ["read_secret"]}, "rename": {"read_file": "cat"},
            "descriptions": {"read_file": "Reads"}, "enabledTools": ["read_*"], "requestTimeoutMs": 5000, "required": false,
            "timeout": 3}}}"#,
    );
    let servers = read_file(&p, "--servers-file", &env, D).unwrap().servers;
    let s = &servers[0];
    assert_eq!((s.request_timeout, s.required), (Duration::from_secs(5), false), "ours win over Cline's timeout");
    assert_eq!(s.curation.rename["read_file"], "cat");
    assert!(s.curation.shows("read_file") && !s.curation.shows("read_secret") && !s.curation.shows("write_file"));
}

#[test]
fn errors_name_the_file_the_server_and_the_field() {
    let e =
        read_file(&write("input", r#"{"servers": {"gh": {"command": "x", "env": {"T": "${input:token}"}}}}"#), "--servers-file", &env, D)
            .unwrap_err();
    assert!(e.field.ends_with("servers.gh.env.T"), "{e}");
    assert!(e.message.contains("env:NAME"), "{e}");
    let e = read_file(&write("type", r#"{"mcpServers": {"x": {"type": "websocket", "url": "ws://a"}}}"#), "--servers-file", &env, D)
        .unwrap_err();
    assert!(e.field.ends_with("mcpServers.x.type"), "{e}");
    let e = read_file(&write("clash", r#"{"mcpServers": {"a b": {"command": "x"}, "a.b": {"command": "y"}}}"#), "--servers-file", &env, D)
        .unwrap_err();
    assert!(e.message.contains("a b") && e.message.contains("a.b"), "both names: {e}");
    let e = read_file(&write("neither", r#"{"something": {}}"#), "--servers-file", &env, D).unwrap_err();
    assert!(e.message.contains("mcpServers"), "{e}");
    let e = read_file(&write("args", r#"{"mcpServers": {"x": {"command": "x", "args": "not a list"}}}"#), "--servers-file", &env, D)
        .unwrap_err();
    assert!(e.field.ends_with("mcpServers.x.args"), "{e}");
}

#[test]
fn server_names_that_could_take_anothers_tool_names_are_refused() {
    for (name, what) in [("a__b", "a__b"), ("a..b", "a__b"), ("x___y", "x___y")] {
        let file = format!(r#"{{"mcpServers": {{"a": {{"command": "x"}}, "{name}": {{"command": "y"}}}}}}"#);
        let e = read_file(&write(&format!("sep-{}", what.len()), &file), "--servers-file", &env, D).unwrap_err();
        assert!(e.field.ends_with(&format!("mcpServers.{name}")), "{e}");
        assert!(e.message.contains("may not contain \"__\"") && e.message.contains(what), "{e}");
    }
    let bad = read_file(
        &write("glob", r#"{"mcpServers": {"a": {"command": "x", "tools": {"allow": ["ok_*", ""]}}}}"#),
        "--servers-file",
        &env,
        D,
    )
    .unwrap_err();
    assert!(bad.field.ends_with("mcpServers.a.tools.allow[1]") && bad.message.contains("is empty"), "{bad}");
}
