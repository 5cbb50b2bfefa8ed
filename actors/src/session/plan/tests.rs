//! The plan of every method, with a bare server (one behind `--upstream`) and with prefixed
//! servers (a servers file): where it goes, under which names, or why it is refused.

use std::time::Duration;

use actix::prelude::*;
use serde_json::json;

use super::*;
use crate::messages::{RefreshTools, Shutdown, Subscribe as SubscribeMsg, ToolsDiff, Unregister, UpstreamPort};
use crate::metrics::Metrics;
use crate::policy::Kind;
use crate::proxy::hosts::Hosts;
use crate::proxy::router::Router;
use crate::servers::catalog::{Curation, Naming};
use crate::servers::registry::Registry;
use crate::session::access::Access;
use crate::upstream::UpstreamError;

/// An upstream port nobody listens on: the plan never sends anything.
struct Nobody;

impl Actor for Nobody {
    type Context = Context<Self>;
}

impl Handler<RefreshTools> for Nobody {
    type Result = Result<ToolsDiff, UpstreamError>;
    fn handle(&mut self, _: RefreshTools, _: &mut Self::Context) -> Self::Result {
        Ok(ToolsDiff::default())
    }
}

impl Handler<Unregister> for Nobody {
    type Result = ();
    fn handle(&mut self, _: Unregister, _: &mut Self::Context) {}
}

impl Handler<SubscribeMsg> for Nobody {
    type Result = MessageResult<SubscribeMsg>;
    fn handle(&mut self, _: SubscribeMsg, _: &mut Self::Context) -> Self::Result {
        MessageResult(Value::Null)
    }
}

impl Handler<Shutdown> for Nobody {
    type Result = ();
    fn handle(&mut self, _: Shutdown, _: &mut Self::Context) {}
}

fn tool(name: &str) -> Value {
    json!({"name": name, "inputSchema": {"type": "object"}})
}

/// A fleet of `servers` (name, naming, tools, whether it declares resources).
fn fleet(servers: &[(&str, Naming, Vec<Value>, bool)]) -> Arc<Fleet> {
    let metrics = Arc::new(Metrics::new());
    let hosts = Arc::new(Hosts::default());
    let registry = Registry::new(None);
    let fleet = Fleet::new(hosts.clone(), registry.clone());
    let nobody = Nobody.start();
    for (i, (name, naming, tools, resources)) in servers.iter().enumerate() {
        let router = Router::new(
            Arc::from(*name),
            match naming {
                Naming::Prefixed(p) => Some(p.clone()),
                Naming::Bare => None,
            },
            crate::proxy::router::Times::new(Duration::from_secs(5)),
            "test".into(),
            hosts.clone(),
            metrics.clone(),
            crate::proxy::router::Hearers::OnePerson,
        );
        let caps = if *resources { json!({"tools": {}, "resources": {"subscribe": true}}) } else { json!({"tools": {}}) };
        router.publish(crate::messages::Status {
            ready: true,
            tools: crate::messages::tool_list(tools.clone()),
            init: Some(Arc::new(json!({"capabilities": caps}))),
            ..Default::default()
        });
        registry.add_server(Arc::from(*name), naming.clone(), Arc::new(Curation::default()), i);
        registry.set_tools(name, crate::messages::tool_list(tools.clone()));
        let port = UpstreamPort {
            refresh: nobody.clone().recipient(),
            unregister: nobody.clone().recipient(),
            subscribe: nobody.clone().recipient(),
            shutdown: nobody.clone().recipient(),
        };
        fleet.insert(Arc::new(Server {
            name: Arc::from(*name),
            naming: naming.clone(),
            router,
            port,
            required: true,
            transport: "stdio",
            pool: None,
        }));
    }
    fleet
}

fn bare() -> Arc<Fleet> {
    fleet(&[("default", Naming::Bare, vec![tool("echo"), tool("get_forecast")], true)])
}

fn prefixed() -> Arc<Fleet> {
    fleet(&[
        ("weather", Naming::Prefixed(Arc::from("weather")), vec![tool("get_forecast")], false),
        ("memory", Naming::Prefixed(Arc::from("memory")), vec![tool("read_graph")], true),
    ])
}

fn open() -> Access {
    Access {
        policies: Arc::new(crate::policy::Policies::off(Arc::new(Metrics::new()))),
        who: crate::who::Who::anonymous(),
        transport: "stdio",
    }
}

/// Anyone (unauthenticated), under `rules` (allowed by default).
fn under(rules: &[crate::policy::RuleSpec]) -> Access {
    use crate::policy::{Effect, Policy};
    Access {
        policies: Arc::new(crate::policy::Policies::new(
            Some(Arc::new(Policy::compile(Effect::Allow, rules).unwrap())),
            Arc::new(Metrics::new()),
        )),
        who: crate::who::Who::anonymous(),
        transport: "stdio",
    }
}

fn run(fleet: &Fleet, ui: bool, method: &str, params: Value) -> (Plan, Value) {
    run_as(&open(), fleet, ui, method, params)
}

fn run_as(access: &Access, fleet: &Fleet, ui: bool, method: &str, params: Value) -> (Plan, Value) {
    let mut msg = jsonrpc::request(json!(1), method, params);
    let catalog = fleet.catalog();
    let p = plan(&mut msg, fleet, &catalog, Facts { ui, profile: None }, &|_| Ok(()), access);
    (p, msg)
}

fn server_of(p: &Plan) -> &str {
    match p {
        Plan::Forward { server, .. } | Plan::Subscribe { server, .. } => &server.name,
        other => panic!("not to a server: {other:?}"),
    }
}

fn refusal(p: &Plan) -> (i64, String) {
    match p {
        Plan::Refuse(e) => (e["error"]["code"].as_i64().unwrap(), e["error"]["message"].as_str().unwrap().to_string()),
        other => panic!("not refused: {other:?}"),
    }
}

#[actix::test]
async fn answered_here_whatever_the_servers() {
    for f in [bare(), prefixed()] {
        assert!(matches!(run(&f, true, "initialize", json!({})).0, Plan::Initialize));
        assert!(matches!(run(&f, true, "ping", json!({})).0, Plan::Keepalive));
        assert!(matches!(run(&f, true, "logging/setLevel", json!({"level": "info"})).0, Plan::Keepalive));
        assert!(matches!(run(&f, true, "tools/list", json!({})).0, Plan::ToolsList));
        assert!(matches!(run(&f, true, "tools/call", json!({"name": "_ui_refine"})).0, Plan::UiTool));
        assert!(matches!(run(&f, true, "server/discover", json!({})).0, Plan::Discover));
    }
}

#[actix::test]
async fn a_tool_call_goes_to_its_server_under_its_own_name() {
    let (p, msg) = run(&prefixed(), false, "tools/call", json!({"name": "memory__read_graph"}));
    assert_eq!(server_of(&p), "memory");
    assert_eq!(msg["params"]["name"], "read_graph", "named the server's way");
    assert!(matches!(p, Plan::Forward { after: After::ToolResult { ref exposed }, .. } if exposed == "memory__read_graph"));
    // A bare name one server has routes too.
    let (p, msg) = run(&prefixed(), false, "tools/call", json!({"name": "read_graph"}));
    assert_eq!((server_of(&p), msg["params"]["name"].as_str()), ("memory", Some("read_graph")));
    // A host without pages calling a `_ui_*` name calls the server's tool of that name.
    let (p, _) = run(&bare(), false, "tools/call", json!({"name": "_ui_refine"}));
    assert_eq!(server_of(&p), "default");
}

#[actix::test]
async fn names_nobody_has_go_to_the_bare_server_or_are_refused() {
    let (p, msg) = run(&bare(), true, "tools/call", json!({"name": "not_listed_yet"}));
    assert_eq!((server_of(&p), msg["params"]["name"].as_str()), ("default", Some("not_listed_yet")), "the bare server decides");
    let (code, why) = refusal(&run(&prefixed(), true, "tools/call", json!({"name": "not_listed"})).0);
    assert_eq!(code, code::INVALID_PARAMS);
    assert!(why.contains("no server behind this endpoint has a tool named \"not_listed\""), "{why}");
    let (p, _) = run(&bare(), true, "vendor/custom", json!({}));
    assert_eq!(server_of(&p), "default");
    let (code, why) = refusal(&run(&prefixed(), true, "vendor/custom", json!({})).0);
    assert_eq!(code, code::METHOD_NOT_FOUND);
    assert!(why.contains("vendor/custom names no server"), "{why}");
}

#[actix::test]
async fn lists_pass_through_a_bare_server_and_are_joined_from_prefixed_ones() {
    assert!(matches!(run(&bare(), true, "resources/list", json!({})).0, Plan::ResourcesList { from: ListFrom::Bare(Some(_)) }));
    assert!(matches!(run(&prefixed(), true, "resources/list", json!({})).0, Plan::ResourcesList { from: ListFrom::Joined }));
    assert!(matches!(run(&bare(), true, "prompts/list", json!({})).0, Plan::List { key: "prompts", from: ListFrom::Bare(Some(_)), .. }));
    assert!(matches!(run(&prefixed(), true, "resources/templates/list", json!({})).0, Plan::List { from: ListFrom::Joined, .. }));
    // A bare server that declares no resources has no resources of its own to list.
    let quiet = fleet(&[("default", Naming::Bare, vec![tool("echo")], false)]);
    assert!(matches!(run(&quiet, true, "resources/list", json!({})).0, Plan::ResourcesList { from: ListFrom::Bare(None) }));
}

#[actix::test]
async fn a_page_is_read_here_only_by_hosts_that_render_pages() {
    let f = prefixed();
    match run(&f, true, "resources/read", json!({"uri": "ui://weather/get_forecast"})).0 {
        Plan::ReadPage(t) => assert_eq!(t.name, "weather__get_forecast"),
        other => panic!("{other:?}"),
    }
    let (code, why) = refusal(&run(&f, false, "resources/read", json!({"uri": "ui://weather/get_forecast"})).0);
    assert_eq!(code, code::RESOURCE_NOT_FOUND);
    assert!(why.contains("served only to sessions that declare"), "{why}");
    // Left out by a setting: the refusal names it.
    let mut msg = jsonrpc::request(json!(1), "resources/read", json!({"uri": "ui://weather/get_forecast"}));
    let p = plan(&mut msg, &f, &f.catalog(), Facts { ui: true, profile: None }, &|_| Err(NoPage::Server(Arc::from("weather"))), &open());
    assert!(refusal(&p).1.contains("enabledTools of server \"weather\""), "{p:?}");
}

#[actix::test]
async fn a_servers_resource_is_read_from_it_under_its_own_uri() {
    let (p, msg) = run(&prefixed(), true, "resources/read", json!({"uri": "memory://memory+graph"}));
    assert_eq!((server_of(&p), msg["params"]["uri"].as_str()), ("memory", Some("memory://graph")));
    assert!(matches!(p, Plan::Forward { after: After::UrisOut, .. }));
    let (p, msg) = run(&bare(), true, "resources/read", json!({"uri": "file:///x"}));
    assert_eq!((server_of(&p), msg["params"]["uri"].as_str()), ("default", Some("file:///x")), "a bare server's URIs are its own");
    let (code, _) = refusal(&run(&prefixed(), true, "resources/read", json!({"uri": "file:///nobody"})).0);
    assert_eq!(code, code::RESOURCE_NOT_FOUND);
    // A server's own `ui://` app: its answer, or a clear "not found" when it has none.
    let (p, _) = run(&bare(), true, "resources/read", json!({"uri": "ui://widget/own.html"}));
    assert!(matches!(p, Plan::Forward { after: After::ServerUi { .. }, .. }));
    let (code, why) = refusal(&run(&prefixed(), true, "resources/read", json!({"uri": "ui://weather+widget"})).0);
    assert_eq!(code, code::RESOURCE_NOT_FOUND, "weather declares no resources: {why}");
}

#[actix::test]
async fn subscriptions_to_pages_are_the_sessions_and_the_rest_the_servers() {
    assert!(matches!(run(&bare(), true, "resources/subscribe", json!({"uri": "ui://anything"})).0, Plan::SubscribePage { on: true, .. }));
    let (p, msg) = run(&prefixed(), true, "resources/unsubscribe", json!({"uri": "memory://memory+graph"}));
    assert!(matches!(p, Plan::Subscribe { on: false, .. }));
    assert_eq!((server_of(&p), msg["params"]["uri"].as_str()), ("memory", Some("memory://graph")));
    let (code, why) = refusal(&run(&bare(), true, "resources/subscribe", json!({})).0);
    assert_eq!(code, code::INVALID_PARAMS);
    assert!(why.contains("params.uri is required"));
}

#[actix::test]
async fn prompts_and_completions_go_to_their_server() {
    let (p, msg) = run(&prefixed(), true, "prompts/get", json!({"name": "memory__summary"}));
    assert_eq!((server_of(&p), msg["params"]["name"].as_str()), ("memory", Some("summary")));
    let (p, _) = run(&bare(), true, "prompts/get", json!({"name": "anything"}));
    assert_eq!(server_of(&p), "default");
    let (p, msg) = run(&prefixed(), true, "completion/complete", json!({"ref": {"type": "ref/resource", "uri": "memory://memory+t/{x}"}}));
    assert_eq!((server_of(&p), msg["params"]["ref"]["uri"].as_str()), ("memory", Some("memory://t/{x}")));
    let (code, _) = refusal(&run(&prefixed(), true, "completion/complete", json!({"ref": {"type": "ref/prompt", "name": "nobody__x"}})).0);
    assert_eq!(code, code::INVALID_PARAMS);
}

#[test]
fn a_method_needs_the_catalog_only_where_names_are_looked_up() {
    assert!(!Method::of("ping").needs_catalog() && Method::of("resources/read").needs_catalog());
}

/// Rules in force: what each request is checked as (kind, the name hosts see, its server).
#[actix::test]
async fn the_rules_are_asked_with_the_names_hosts_see() {
    use crate::policy::{Effect, Policy, RuleSpec};
    let deny = |spec: RuleSpec| RuleSpec { effect: Some(Effect::Deny), ..spec };
    let globs = |g: &[&str]| Some(g.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let rules = [
        RuleSpec {
            name: Some("no memory calls".into()),
            tools: globs(&["memory__*"]),
            kinds: Some(vec![Kind::Tools]),
            ..deny(Default::default())
        },
        RuleSpec {
            name: Some("no weather pages".into()),
            tools: globs(&["weather__*"]),
            kinds: Some(vec![Kind::Pages]),
            ..deny(Default::default())
        },
        RuleSpec { name: Some("no graph".into()), resources: globs(&["memory://memory+*"]), ..deny(Default::default()) },
        RuleSpec { name: Some("no _ui_list".into()), tools: globs(&["_ui_list"]), ..deny(Default::default()) },
        RuleSpec {
            name: Some("no secret city".into()),
            tools: globs(&["*"]),
            when: Some("has(args.city) && args.city == 'Secret'".into()),
            ..deny(Default::default())
        },
    ];
    let metrics = Arc::new(Metrics::new());
    let access = Access {
        policies: Arc::new(crate::policy::Policies::new(Some(Arc::new(Policy::compile(Effect::Allow, &rules).unwrap())), metrics)),
        who: crate::who::Who::anonymous(),
        transport: "stdio",
    };
    let f = prefixed();
    let denied = |p: Plan| match p {
        Plan::Denied(d) => (d.kind, d.name, d.rule.to_string()),
        other => panic!("not denied: {other:?}"),
    };
    let (p, _) = run_as(&access, &f, true, "tools/call", json!({"name": "memory__read_graph"}));
    assert_eq!(denied(p), (Kind::Tools, "memory__read_graph".into(), "no memory calls".into()));
    let (p, _) = run_as(&access, &f, true, "resources/read", json!({"uri": "ui://weather/get_forecast"}));
    assert_eq!(denied(p), (Kind::Pages, "weather__get_forecast".into(), "no weather pages".into()));
    let (p, _) = run_as(&access, &f, true, "resources/read", json!({"uri": "memory://memory+graph"}));
    assert_eq!(denied(p).1, "memory://memory+graph", "a resource by the URI hosts see");
    let (p, _) = run_as(&access, &f, true, "tools/call", json!({"name": "_ui_list"}));
    assert_eq!(denied(p).2, "no _ui_list");
    let (p, _) = run_as(&access, &f, true, "tools/call", json!({"name": "weather__get_forecast", "arguments": {"city": "Secret"}}));
    assert_eq!(denied(p).2, "no secret city");
    // The rest is planned as without rules.
    let (p, _) = run_as(&access, &f, true, "tools/call", json!({"name": "weather__get_forecast", "arguments": {"city": "Oslo"}}));
    assert!(matches!(p, Plan::Forward { .. }), "{p:?}");
    let err = match run_as(&access, &f, true, "tools/call", json!({"name": "memory__read_graph"})).0 {
        Plan::Denied(d) => d.error(json!(1)),
        _ => unreachable!(),
    };
    let text = err["error"]["message"].as_str().unwrap();
    assert!(text.starts_with("not allowed") && !text.contains("no memory calls"), "the rule is not the caller's to know: {text}");

    // Search mode's call_tool: the rules first, so a denied tool's schema (its types, its
    // enums, that it exists) is never described to the caller.
    use crate::servers::profiles::{Discovery, Profile, ProfileSpec};
    let search =
        Profile::compile(&ProfileSpec { name: "s".into(), tools: vec!["*".into()], discovery: Discovery::Search, ..Default::default() })
            .unwrap();
    let typed = fleet(&[(
        "memory",
        Naming::Prefixed(Arc::from("memory")),
        vec![json!({"name": "read_graph", "inputSchema": {"type": "object", "properties": {"depth": {"enum": ["shallow", "deep"]}}}})],
        true,
    )]);
    let catalog = typed.catalog();
    let call = |args: Value| {
        let mut msg = jsonrpc::request(
            json!(1),
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "memory__read_graph", "arguments": args}}),
        );
        plan(&mut msg, &typed, &catalog, Facts { ui: true, profile: Some(&search) }, &|_| Ok(()), &access)
    };
    assert_eq!(denied(call(json!({"depth": 7}))).2, "no memory calls", "denied before its schema is checked");
    let (code, text) = refusal(&plan(
        &mut jsonrpc::request(
            json!(1),
            "tools/call",
            json!({"name": "call_tool", "arguments": {"name": "memory__read_graph", "arguments": {"depth": 7}}}),
        ),
        &typed,
        &catalog,
        Facts { ui: true, profile: Some(&search) },
        &|_| Ok(()),
        &open(),
    ));
    assert!(code == -32602 && text.contains("/depth"), "allowed: the schema is checked and named: {text}");
}

#[actix::test]
async fn a_method_the_service_does_not_know_is_a_use_of_its_server_under_the_rules() {
    use crate::policy::{Effect, Policy, RuleSpec};
    let as_principal = |name: &str, rules: &[RuleSpec]| Access {
        policies: Arc::new(crate::policy::Policies::new(
            Some(Arc::new(Policy::compile(Effect::Allow, rules).unwrap())),
            Arc::new(Metrics::new()),
        )),
        who: Arc::new(crate::who::Who::new(Arc::from(name), Arc::from(name), Arc::new(json!({})), false)),
        transport: "stdio",
    };
    // Bob is denied every tool (by a rule that names tools only) and every resource.
    let bob_rules = [RuleSpec {
        name: Some("bob sees nothing".into()),
        tools: Some(vec!["*".into()]),
        resources: Some(vec!["*".into()]),
        prompts: Some(vec!["*".into()]),
        when: Some("principal.name == 'bob'".into()),
        effect: Some(Effect::Deny),
        ..Default::default()
    }];
    let f = bare();
    for method in ["x-admin/reset", "resources/somethingNew", "x/y"] {
        let (p, _) = run_as(&as_principal("bob", &bob_rules), &f, false, method, json!({"taskId": "t-1"}));
        match p {
            Plan::Denied(d) => {
                assert!(d.method && d.name == method && d.server.as_deref() == Some("default"), "{d:?}");
                let text = d.error(json!(1))["error"]["message"].as_str().unwrap().to_string();
                assert!(text.starts_with("not allowed") && text.contains(method), "{text}");
            }
            other => panic!("{method}: bob may use nothing of the server, yet it was planned {other:?}"),
        }
        let (p, _) = run_as(&as_principal("alice", &bob_rules), &f, false, method, json!({}));
        assert!(matches!(p, Plan::Forward { after: After::Plain, .. }), "alice may use the server: {method} goes to it ({p:?})");
    }
    // One tool left to him is a use of the server.
    let (p, _) = run_as(
        &as_principal("bob", &[RuleSpec { tools: Some(vec!["echo".into()]), ..bob_rules[0].clone() }]),
        &f,
        false,
        "x-admin/reset",
        json!({}),
    );
    assert!(matches!(p, Plan::Forward { .. }), "{p:?}");
}

#[actix::test]
async fn the_page_of_a_tool_hidden_from_a_person_reads_as_no_page_at_all() {
    use crate::policy::{Effect, RuleSpec};
    let rules = [RuleSpec {
        name: Some("no memory".into()),
        tools: Some(vec!["memory__*".into()]),
        effect: Some(Effect::Deny),
        ..Default::default()
    }];
    let access = under(&rules);
    let f = prefixed();
    for ui in [false, true] {
        let hidden = refusal(&run_as(&access, &f, ui, "resources/read", json!({"uri": "ui://memory/read_graph"})).0);
        let unknown = refusal(&run_as(&access, &f, ui, "resources/read", json!({"uri": "ui://memory/no_such_tool"})).0);
        assert_eq!(hidden.0, unknown.0, "ui {ui}: the same code");
        assert_eq!(hidden.1.replace("read_graph", "X"), unknown.1.replace("no_such_tool", "X"), "ui {ui}: the same words");
        assert!(!hidden.1.contains("memory__read_graph"), "ui {ui}: the tool is not named: {}", hidden.1);
    }
}

/// Every kind of request the rules decide is asked of them under the name hosts see: a server's
/// own page, a subscription (to a page made here, to a server's resource), a prompt, a
/// completion of a prompt's or a resource's argument, and a task (as the call that made it).
/// The requests beside each denied one are allowed: each is asked as its own kind and name.
#[actix::test]
async fn every_kind_the_rules_decide_is_asked_under_its_own_kind_and_name() {
    use crate::policy::{Effect, RuleSpec};
    let deny = |name: &str, spec: RuleSpec| RuleSpec { name: Some(name.into()), effect: Some(Effect::Deny), ..spec };
    let globs = |g: &[&str]| Some(g.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    let rules = [
        deny("no dashboard", RuleSpec { resources: globs(&["ui://dashboard"]), ..Default::default() }),
        deny("no graph", RuleSpec { resources: globs(&["memory://memory+graph"]), ..Default::default() }),
        deny("no weather pages", RuleSpec { tools: globs(&["weather__*"]), kinds: Some(vec![Kind::Pages]), ..Default::default() }),
        deny("no summary", RuleSpec { prompts: globs(&["memory__summary"]), ..Default::default() }),
        deny("no graph calls", RuleSpec { tools: globs(&["memory__read_graph"]), kinds: Some(vec![Kind::Tools]), ..Default::default() }),
    ];
    let access = under(&rules);
    let denied = |p: Plan| match p {
        Plan::Denied(d) => (d.kind, d.name, d.rule.to_string()),
        other => panic!("not denied: {other:?}"),
    };
    let (b, f) = (bare(), prefixed());
    let ask = |fleet: &Fleet, method: &str, params: Value| run_as(&access, fleet, true, method, params).0;

    // A server's own page (not one made here), read.
    assert_eq!(
        denied(ask(&b, "resources/read", json!({"uri": "ui://dashboard"}))),
        (Kind::Resources, "ui://dashboard".into(), "no dashboard".into())
    );
    assert!(matches!(ask(&b, "resources/read", json!({"uri": "ui://other"})), Plan::Forward { after: After::ServerUi { .. }, .. }));
    // Subscriptions: a server's resource by its URI as hosts see it; a page made here as its tool's page.
    assert_eq!(denied(ask(&f, "resources/subscribe", json!({"uri": "memory://memory+graph"}))).2, "no graph");
    assert!(matches!(ask(&f, "resources/subscribe", json!({"uri": "memory://memory+other"})), Plan::Subscribe { .. }));
    assert_eq!(
        denied(ask(&f, "resources/subscribe", json!({"uri": "ui://weather/get_forecast"}))),
        (Kind::Pages, "weather__get_forecast".into(), "no weather pages".into())
    );
    assert!(matches!(ask(&f, "resources/subscribe", json!({"uri": "ui://memory/read_graph"})), Plan::SubscribePage { .. }));
    // A prompt, by its exposed name; a completion of its argument, or of a resource's.
    assert_eq!(
        denied(ask(&f, "prompts/get", json!({"name": "memory__summary"}))),
        (Kind::Prompts, "memory__summary".into(), "no summary".into())
    );
    assert!(matches!(ask(&f, "prompts/get", json!({"name": "memory__other"})), Plan::Forward { .. }));
    let complete = |r: Value| ask(&f, "completion/complete", json!({"ref": r, "argument": {"name": "a", "value": ""}}));
    assert_eq!(denied(complete(json!({"type": "ref/prompt", "name": "memory__summary"}))).2, "no summary");
    assert_eq!(denied(complete(json!({"type": "ref/resource", "uri": "memory://memory+graph"}))).2, "no graph");
    assert!(matches!(complete(json!({"type": "ref/prompt", "name": "memory__other"})), Plan::Forward { .. }));
    assert!(matches!(complete(json!({"type": "ref/resource", "uri": "memory://memory+other"})), Plan::Forward { .. }));
    // A task is the call that made it: a tool the person may no longer call, no task of it.
    let task = |exposed: &str, tool: &str| crate::proxy::tasks::SharedRoute {
        exposed: exposed.into(),
        server: exposed.split(':').next().unwrap().into(),
        upstream: "t-1".into(),
        owner: access.who.key.to_string(),
        tool: tool.into(),
        ttl_ms: 60_000,
    };
    f.hosts().tasks().adopt(task("memory:t-1", "memory__read_graph"));
    f.hosts().tasks().adopt(task("weather:t-1", "weather__get_forecast"));
    assert_eq!(
        denied(ask(&f, "tasks/get", json!({"taskId": "memory:t-1"}))),
        (Kind::Tools, "memory__read_graph".into(), "no graph calls".into())
    );
    assert!(matches!(ask(&f, "tasks/result", json!({"taskId": "weather:t-1"})), Plan::Task { .. }));
}

#[test]
fn every_method_the_service_knows_has_its_own_kind() {
    for (name, m) in [
        ("initialize", Method::Initialize),
        ("ping", Method::Ping),
        ("logging/setLevel", Method::SetLevel),
        ("tools/list", Method::ToolsList),
        ("tools/call", Method::ToolsCall),
        ("resources/list", Method::ResourcesList),
        ("resources/templates/list", Method::TemplatesList),
        ("prompts/list", Method::PromptsList),
        ("resources/read", Method::ResourcesRead),
        ("resources/subscribe", Method::Subscribe),
        ("resources/unsubscribe", Method::Unsubscribe),
        ("prompts/get", Method::PromptsGet),
        ("completion/complete", Method::Complete),
        ("server/discover", Method::Discover),
        ("subscriptions/listen", Method::Listen),
        ("tasks/get", Method::Task),
        ("tasks/result", Method::Task),
        ("tasks/cancel", Method::Task),
        ("tasks/update", Method::Task),
        ("tasks/list", Method::TasksList),
        ("tasks/lists", Method::Other),
        ("Tools/Call", Method::Other),
    ] {
        assert_eq!(Method::of(name), m, "{name}");
    }
}

/// A method that differs from a known one only by case or whitespace is refused as a mistake,
/// not passed on as one the service does not know (issue 60, item 8); a merely unknown one is.
#[actix::test]
async fn a_known_methods_lookalike_is_refused_and_never_forwarded() {
    assert_eq!(Method::lookalike("tools/call"), None, "the method itself is no lookalike");
    assert_eq!(Method::lookalike("x-admin/reset"), None);
    let f = fleet(&[("default", Naming::Bare, vec![json!({"name": "echo", "inputSchema": {"type": "object"}})], false)]);
    for sent in ["Tools/Call", "tools/call ", "TOOLS/CALL\n", " tools /call", "Resources/Read", "tasks/RESULT\t"] {
        assert!(Method::lookalike(sent).is_some(), "{sent:?}");
        let (p, _) = run(&f, false, sent, json!({"name": "echo", "arguments": {}}));
        match p {
            Plan::Refuse(err) => {
                assert_eq!(err["error"]["code"], -32600, "{sent:?}: {err}");
                assert!(err["error"]["message"].as_str().unwrap().contains("only by case or spaces"), "{err}");
            }
            other => panic!("{sent:?} was planned as {other:?}"),
        }
    }
    let (p, _) = run(&f, false, "x-vendor/thing", json!({}));
    assert!(matches!(p, Plan::Forward { .. }), "an unknown method is still a use of the server: {p:?}");
}

/// Only search mode's own `call_tool` has its arguments checked here; any other call, a
/// server's tool named `call_tool` too, is the server's to judge.
#[actix::test]
async fn only_search_modes_call_tool_is_checked_against_the_schema() {
    let typed =
        |name: &str| json!({"name": name, "inputSchema": {"type": "object", "properties": {"depth": {"enum": ["shallow", "deep"]}}}});
    let f = fleet(&[("default", Naming::Bare, vec![typed("call_tool"), typed("read_graph")], false)]);
    for name in ["call_tool", "read_graph"] {
        let (p, msg) = run(&f, true, "tools/call", json!({"name": name, "arguments": {"depth": 7}}));
        assert!(matches!(p, Plan::Forward { after: After::ToolResult { .. }, .. }), "{name}: {p:?}");
        assert_eq!(msg["params"]["arguments"]["depth"], 7, "{name}: as the host sent it");
    }
}

/// In a profile: its search tools (search mode), its call-tool page (search mode, hosts that
/// render pages), and its own tools; nothing outside it.
#[actix::test]
async fn a_profile_routes_its_own_tools_and_its_search_tools_only() {
    use crate::servers::profiles::{Discovery, Profile, ProfileSpec};
    let f = prefixed();
    let catalog = f.catalog();
    let compile = |discovery: Discovery| {
        Profile::compile(&ProfileSpec { name: "p".into(), tools: vec!["weather__*".into()], discovery, ..Default::default() }).unwrap()
    };
    let (search, listed) = (compile(Discovery::Search), compile(Discovery::default()));
    let go = |profile: &Profile, ui: bool, method: &str, params: Value| {
        let mut msg = jsonrpc::request(json!(1), method, params);
        plan(&mut msg, &f, &catalog, Facts { ui, profile: Some(profile) }, &|_| Ok(()), &open())
    };
    for profile in [&search, &listed] {
        let p = go(profile, true, "tools/call", json!({"name": "weather__get_forecast", "arguments": {}}));
        assert_eq!(server_of(&p), "weather");
        let (code, why) = refusal(&go(profile, true, "tools/call", json!({"name": "memory__read_graph", "arguments": {}})));
        assert!(code == code::INVALID_PARAMS && why.contains("no tool named \"memory__read_graph\" in profile"), "{why}");
    }
    assert!(matches!(go(&search, true, "tools/call", json!({"name": "search_tools", "arguments": {"query": "weather"}})), Plan::Search(_)));
    assert_eq!(refusal(&go(&search, true, "tools/call", json!({"name": "describe_tools", "arguments": {}}))).0, code::INVALID_PARAMS);
    assert!(refusal(&go(&listed, true, "tools/call", json!({"name": "search_tools", "arguments": {"query": "weather"}})))
        .1
        .contains("no tool named"));
    let page = json!({"uri": discovery::CALL_TOOL_PAGE});
    assert!(matches!(go(&search, true, "resources/read", page.clone()), Plan::ReadCallToolPage));
    assert!(!matches!(go(&search, false, "resources/read", page.clone()), Plan::ReadCallToolPage), "a host that renders no pages");
    assert!(!matches!(go(&listed, true, "resources/read", page.clone()), Plan::ReadCallToolPage), "not a search profile");
    assert!(!matches!(go(&search, true, "resources/read", json!({"uri": "ui://_ui/other"})), Plan::ReadCallToolPage));
}

/// A profile's hosts subscribe only to what it has: its tools' pages, its servers' resources;
/// leaving a subscription is always allowed.
#[actix::test]
async fn a_profile_subscribes_only_to_what_it_has() {
    use crate::servers::profiles::{Profile, ProfileSpec};
    let f = prefixed();
    let catalog = f.catalog();
    let profile = Profile::compile(&ProfileSpec {
        name: "p".into(),
        servers: Some(vec!["weather".into()]),
        tools: vec!["weather__*".into()],
        ..Default::default()
    })
    .unwrap();
    let go = |method: &str, uri: &str| {
        let mut msg = jsonrpc::request(json!(1), method, json!({"uri": uri}));
        plan(&mut msg, &f, &catalog, Facts { ui: true, profile: Some(&profile) }, &|_| Ok(()), &open())
    };
    assert!(matches!(go("resources/subscribe", "ui://weather/get_forecast"), Plan::SubscribePage { on: true, .. }));
    assert_eq!(refusal(&go("resources/subscribe", "ui://memory/read_graph")).0, code::RESOURCE_NOT_FOUND);
    assert!(matches!(go("resources/unsubscribe", "ui://memory/read_graph"), Plan::SubscribePage { on: false, .. }));
    assert_eq!(refusal(&go("resources/subscribe", "memory://memory+graph")).0, code::RESOURCE_NOT_FOUND);
    assert!(matches!(go("resources/unsubscribe", "memory://memory+graph"), Plan::Subscribe { on: false, .. }));
}

/// With prefixed servers, a `ui://` URI the catalog does not list is no page made here; a task
/// id nobody has (or someone else's) is refused as not found.
#[actix::test]
async fn what_is_not_there_is_refused_as_not_found() {
    let f = prefixed();
    assert_eq!(refusal(&run(&f, true, "resources/subscribe", json!({"uri": "ui://weather/no_such_tool"})).0).0, code::RESOURCE_NOT_FOUND);
    let (code, why) = refusal(&run(&f, true, "tasks/get", json!({"taskId": "weather:nobody's"})).0);
    assert!(code == code::INVALID_PARAMS && why.starts_with("task not found: \"weather:nobody's\""), "{why}");
}
