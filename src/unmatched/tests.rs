use super::*;
use crate::config::file::DiscoveryConfig;

fn curation(allow: &[&str], deny: &[&str]) -> Curation {
    let globs = |l: &[&str]| l.iter().map(|p| Glob::new(p).unwrap()).collect();
    Curation { allow: globs(allow), deny: globs(deny), ..Default::default() }
}

fn server(name: &str, c: Curation) -> ServerNames {
    ServerNames { name: name.into(), prefix: name.into(), curation: c, at: format!("servers.{name}") }
}

fn rule(servers: Option<&[&str]>, tools: Option<&[&str]>, effect: EffectConfig) -> RuleConfig {
    let list = |l: Option<&[&str]>| l.map(|l| l.iter().map(|s| s.to_string()).collect());
    RuleConfig { servers: list(servers), tools: list(tools), effect: Some(effect), ..Default::default() }
}

fn scope(servers: Vec<ServerNames>, rules: Vec<RuleConfig>) -> Scope {
    Scope { servers, bare: false, rules, profiles: BTreeMap::new(), own_tools: vec!["_ui_refine".into(), "search_tools".into()] }
}

#[test]
fn a_server_glob_that_matches_no_server_is_named_with_what_was_meant() {
    let s = scope(
        vec![server("files", Curation::default()), server("memory", Curation::default())],
        vec![
            rule(Some(&["file"]), None, EffectConfig::Deny),
            rule(Some(&["mem*"]), None, EffectConfig::Allow),
            rule(None, Some(&["file__*", "files__read_*", "_ui_*", "*"]), EffectConfig::Deny),
        ],
    );
    let w = statically(&s);
    assert_eq!(w.len(), 2, "{w:#?}");
    assert!(w[0].starts_with("policy.rules[0].servers[0]: \"file\" matches no server (the servers are files, memory)"), "{w:#?}");
    assert!(w[0].contains("denies nothing") && w[0].contains("did you mean \"files\"?"), "{w:#?}");
    assert!(w[1].starts_with("policy.rules[2].tools[0]: \"file__*\" names no server's tools"), "{w:#?}");
}

#[test]
fn profiles_and_resources_are_checked_by_their_server() {
    let mut s = scope(vec![server("files", Curation::default())], vec![]);
    s.rules.push(RuleConfig {
        resources: Some(vec!["ui://file/*".into(), "file://files+/srv/*".into(), "ui://files/*".into(), "*".into()]),
        effect: Some(EffectConfig::Deny),
        ..Default::default()
    });
    s.profiles.insert(
        "small".into(),
        ProfileConfig {
            servers: Some(vec!["filez".into()]),
            tools: vec!["memory__*".into(), "files__*".into()],
            discovery: DiscoveryConfig::List,
            ..Default::default()
        },
    );
    let w = statically(&s);
    assert_eq!(w.len(), 3, "{w:#?}");
    assert!(w[0].starts_with("policy.rules[0].resources[0]: \"ui://file/*\" names the server \"file\""), "{w:#?}");
    assert!(w[1].starts_with("profiles.small.servers[0]"), "{w:#?}");
    assert!(w[2].starts_with("profiles.small.tools[0]: \"memory__*\""), "{w:#?}");
}

#[test]
fn one_server_behind_upstream_is_named_default_and_its_tools_wait_for_its_list() {
    let mut s =
        scope(vec![server("default", Curation::default())], vec![rule(Some(&["weather"]), Some(&["get_forcast"]), EffectConfig::Deny)]);
    s.bare = true;
    let w = statically(&s);
    assert_eq!(w.len(), 1, "only the server name is known: {w:#?}");
    assert!(w[0].contains("the servers are default"), "{w:#?}");
    let listed = HashMap::from([("default".to_string(), Listed { own: vec!["get_forecast".into()], shown: vec!["get_forecast".into()] })]);
    let w = with_tools(&s, &listed);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(w[0].contains("\"get_forcast\" matches no tool hosts are shown") && w[0].contains("did you mean \"get_forecast\"?"), "{w:#?}");
}

#[test]
fn per_server_globs_are_checked_against_its_own_list() {
    let fs = ["read_file", "write_file", "edit_file", "move_file"];
    let mut c = curation(&["read_*", "list_*"], &["edit_files", "write_*"]);
    c.rename.insert("read_fil".into(), "cat".into());
    let s = scope(vec![server("files", c)], vec![rule(None, Some(&["files__edit_files", "files__*"]), EffectConfig::Deny)]);
    let listed = HashMap::from([(
        "files".to_string(),
        Listed { own: fs.iter().map(|t| t.to_string()).collect(), shown: vec!["files__read_file".into()] },
    )]);
    let w = with_tools(&s, &listed);
    assert_eq!(w.len(), 4, "{w:#?}");
    assert!(w[0].starts_with("servers.files.tools.allow[1]: \"list_*\" matches no tool of files (4 listed): it shows nothing"), "{w:#?}");
    assert!(w[1].starts_with("servers.files.tools.deny[0]: \"edit_files\"") && w[1].ends_with("did you mean \"edit_file\"?"), "{w:#?}");
    assert!(w[2].starts_with("servers.files.rename.read_fil"), "{w:#?}");
    assert!(w[3].starts_with("policy.rules[0].tools[0]: \"files__edit_files\" matches no tool hosts are shown"), "{w:#?}");
    assert!(with_tools(&s, &HashMap::new()).is_empty(), "a server that has not listed is not judged");
}
