use std::sync::Arc;

use serde_json::{json, Value};

use super::*;
use crate::who::Who;

fn who(name: &str, claims: Value) -> Who {
    Who::new(Arc::from(name), Arc::from(name), Arc::new(claims), false)
}

fn spec(tools: &[&str], effect: Effect, when: Option<&str>) -> RuleSpec {
    RuleSpec {
        tools: Some(tools.iter().map(|s| s.to_string()).collect()),
        effect: Some(effect),
        when: when.map(str::to_string),
        ..Default::default()
    }
}

fn call<'a>(w: &'a Who, tool: &'a str, args: Option<&'a Value>) -> Subject<'a> {
    Subject { kind: Kind::Tools, name: tool, server: "weather", who: w, transport: "streamable-http", args, tool: None }
}

fn decide(p: &Policy, s: &Subject) -> Verdict {
    p.decide(s, &mut Vec::new())
}

/// The example, with `has()` guarding the key a call may not have.
fn example() -> Policy {
    Policy::compile(
        Effect::Deny,
        &[
            spec(&["weather__*"], Effect::Allow, Some("principal.name == 'alice' || 'ops' in principal.claims.groups")),
            spec(&["*"], Effect::Deny, Some("has(args.city) && args.city == 'Secret'")),
            spec(&["memory__*"], Effect::Allow, None),
        ],
    )
    .unwrap()
}

#[test]
fn the_first_rule_that_matches_and_holds_decides() {
    let p = example();
    let alice = who("alice", json!({}));
    let ops = who("bob", json!({"groups": ["ops"]}));
    let dev = who("carol", json!({"groups": ["dev"]}));
    assert_eq!(decide(&p, &call(&alice, "weather__get_forecast", None)), Verdict { effect: Effect::Allow, rule: Some(0) });
    assert!(decide(&p, &call(&ops, "weather__get_forecast", None)).allowed());
    // carol is not alice and not in ops: the weather rule does not hold; nothing else allows.
    assert_eq!(decide(&p, &call(&dev, "weather__get_forecast", None)), Verdict { effect: Effect::Deny, rule: None });
    let secret = json!({"city": "Secret"});
    assert_eq!(decide(&p, &call(&dev, "memory__read", Some(&secret))), Verdict { effect: Effect::Deny, rule: Some(1) });
    assert_eq!(decide(&p, &call(&dev, "memory__read", Some(&json!({"city": "Oslo"})))).rule, Some(2));
}

#[test]
fn globs_name_servers_and_kinds_narrow() {
    let rule =
        RuleSpec { servers: Some(vec!["mem*".into()]), kinds: Some(vec![Kind::Pages]), effect: Some(Effect::Deny), ..Default::default() };
    let p = Policy::compile(Effect::Allow, &[rule]).unwrap();
    let w = who("x", json!({}));
    let page = Subject { kind: Kind::Pages, server: "memory", ..call(&w, "memory__read", None) };
    assert!(!decide(&p, &page).allowed());
    assert!(decide(&p, &Subject { kind: Kind::Tools, ..page }).allowed(), "the tool itself is not a page");
    assert!(decide(&p, &Subject { server: "weather", ..page }).allowed(), "another server");
}

#[test]
fn names_given_limit_the_kinds() {
    // A rule naming tools is not about prompts or resources.
    let p = Policy::compile(Effect::Allow, &[spec(&["*"], Effect::Deny, None)]).unwrap();
    let w = who("x", json!({}));
    let prompt = Subject { kind: Kind::Prompts, ..call(&w, "anything", None) };
    assert!(decide(&p, &prompt).allowed());
    assert!(!decide(&p, &Subject { kind: Kind::Refinements, ..prompt }).allowed(), "a tool's refinements are named by the tool");
    let r = RuleSpec { tools: Some(vec!["*".into()]), kinds: Some(vec![Kind::Prompts]), effect: Some(Effect::Deny), ..Default::default() };
    let e = Policy::compile(Effect::Allow, &[r]).unwrap_err();
    assert_eq!((e.index, e.field.as_str()), (0, "kinds[0]"));
    assert!(e.message.contains("\"prompts\" list"), "{e}");
}

#[test]
fn conditions_that_fail_never_grant() {
    let w = who("x", json!({}));
    // No groups claim: the allow rule cannot be evaluated and does not apply.
    let p = Policy::compile(Effect::Deny, &[spec(&["*"], Effect::Allow, Some("'ops' in principal.claims.groups"))]).unwrap();
    let mut failures = Vec::new();
    assert!(!p.decide(&call(&w, "t", None), &mut failures).allowed());
    assert_eq!(failures.len(), 1);
    assert!(matches!(failures[0].error, EvalError::Execution(_)) && failures[0].error.to_string().contains("groups"), "{failures:?}");
    // The same failure in a deny rule denies.
    let p = Policy::compile(Effect::Allow, &[spec(&["*"], Effect::Deny, Some("!('ops' in principal.claims.groups)"))]).unwrap();
    assert!(!decide(&p, &call(&w, "t", None)).allowed());
    // Not a boolean: a failure too.
    let p = Policy::compile(Effect::Deny, &[spec(&["*"], Effect::Allow, Some("principal.name"))]).unwrap();
    assert!(!decide(&p, &call(&w, "t", None)).allowed());
}

#[test]
fn every_variable_is_there() {
    let w = Who::new(Arc::from("key"), Arc::from("alice"), Arc::new(json!({"scope": "a b"})), true);
    let when = "principal.name == 'alice' && principal.admin && principal.claims.scope.contains('b') && server == 'weather' \
                && tool == 'weather__x' && name == tool && kind == 'tools' && transport == 'streamable-http' && args.n > 2";
    let p = Policy::compile(Effect::Deny, &[spec(&["*"], Effect::Allow, Some(when))]).unwrap();
    let args = json!({"n": 3});
    let mut failures = Vec::new();
    assert!(p.decide(&call(&w, "weather__x", Some(&args)), &mut failures).allowed(), "{failures:?}");
}

#[test]
fn a_rule_that_does_not_compile_is_named_with_its_position() {
    let e = Policy::compile(Effect::Allow, &[spec(&["*"], Effect::Allow, None), spec(&["*"], Effect::Deny, Some("principal.name == "))])
        .unwrap_err();
    assert_eq!((e.index, e.field.as_str()), (1, "when"));
    assert!(e.message.starts_with("line 1, column 19:"), "{e}");
    let e = Policy::compile(Effect::Allow, &[spec(&["*"], Effect::Deny, Some("user.name == 'x'"))]).unwrap_err();
    assert!(e.message.contains("\"user\" is not a variable") && e.message.contains("column 1"), "{e}");
    let e = Policy::compile(Effect::Allow, &[spec(&["a", ""], Effect::Deny, None)]).unwrap_err();
    assert_eq!(e.field, "tools[1]");
    let e = Policy::compile(Effect::Allow, &[RuleSpec { tools: Some(vec!["*".into()]), ..Default::default() }]).unwrap_err();
    assert_eq!(e.field, "effect");
    let named = |n: &str| RuleSpec { name: Some(n.into()), ..spec(&["*"], Effect::Deny, None) };
    let e = Policy::compile(Effect::Allow, &[named("a"), named("a")]).unwrap_err();
    assert_eq!((e.index, e.field.as_str()), (1, "name"));
}

#[test]
fn what_is_known_before_the_arguments() {
    let p = example();
    let alice = who("alice", json!({}));
    let dev = who("carol", json!({"groups": []}));
    let mut f = Vec::new();
    // alice's weather calls are decided by rule 0 whatever the arguments.
    assert_eq!(p.prefix(&call(&alice, "weather__x", None), &mut f), Prefix::Decided(Verdict { effect: Effect::Allow, rule: Some(0) }));
    // carol's memory calls depend on rule 1, which reads them.
    assert_eq!(p.prefix(&call(&dev, "memory__read", None), &mut f), Prefix::From(1));
    // A list shows what some call could be allowed: rule 1 might not hold, rule 2 allows.
    assert!(p.visible_from(0, &call(&dev, "memory__read", None), &mut f));
    assert!(!p.visible_from(0, &call(&dev, "weather__x", None), &mut f));
    let only_if = Policy::compile(Effect::Deny, &[spec(&["*"], Effect::Allow, Some("has(args.ok)"))]).unwrap();
    assert!(only_if.visible_from(0, &call(&dev, "t", None), &mut f), "an allow that reads the arguments may hold");
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn a_whole_server_is_denied_only_when_no_tool_of_it_could_be_allowed() {
    let server_rule = |effect: Effect, when: Option<&str>| RuleSpec {
        servers: Some(vec!["secret".into()]),
        effect: Some(effect),
        when: when.map(str::to_string),
        ..Default::default()
    };
    fn on<'a>(w: &'a Who, server: &'a str) -> Subject<'a> {
        Subject { kind: Kind::Tools, name: "", server, who: w, transport: "stdio", args: None, tool: None }
    }
    let (bob, alice) = (&who("bob", json!({})), &who("alice", json!({})));
    let p = Policy::compile(Effect::Allow, &[server_rule(Effect::Deny, Some("principal.name == 'bob'"))]).unwrap();
    assert!(p.denies_whole_server(&on(bob, "secret"), &mut Vec::new()));
    assert!(!p.denies_whole_server(&on(alice, "secret"), &mut Vec::new()));
    assert!(!p.denies_whole_server(&on(bob, "shared"), &mut Vec::new()), "another server");
    // Default deny: a server no rule lets anyone near is denied; one whose tools a rule names may not be.
    let p = Policy::compile(Effect::Deny, &[spec(&["github__create_*"], Effect::Allow, Some("principal.name == 'alice'"))]).unwrap();
    assert!(!p.denies_whole_server(&on(bob, "github"), &mut Vec::new()), "a rule naming tools might allow one");
    let p = Policy::compile(Effect::Deny, &[server_rule(Effect::Allow, Some("principal.name == 'alice'"))]).unwrap();
    assert!(p.denies_whole_server(&on(bob, "secret"), &mut Vec::new()) && !p.denies_whole_server(&on(alice, "secret"), &mut Vec::new()));
    // A deny naming some tools leaves the rest to later rules.
    let p = Policy::compile(Effect::Allow, &[spec(&["secret__drop_*"], Effect::Deny, None)]).unwrap();
    assert!(!p.denies_whole_server(&on(bob, "secret"), &mut Vec::new()));
}

#[test]
fn a_value_of_the_wrong_type_makes_a_deny_rule_deny() {
    let alice = who("alice", json!({"groups": ["ops"]}));
    let denies = |when: &str, args: Value| {
        let p = Policy::compile(Effect::Allow, &[spec(&["*"], Effect::Deny, Some(when))]).unwrap();
        !decide(&p, &call(&alice, "weather__get_forecast", Some(&args))).allowed()
    };
    // Equality: CEL says false across types; here a wrong type is no pass.
    for wrong in [json!(["Secret"]), json!(null), json!(5), json!(true), json!({"name": "Secret"})] {
        assert!(denies("args.city == 'Secret'", json!({"city": wrong.clone()})), "== with {wrong}");
        assert!(denies("args.city != 'Oslo'", json!({"city": wrong.clone()})), "!= with {wrong}");
    }
    assert!(denies("args.days == 3", json!({"days": "3"})), "a number against a string");
    assert!(denies("args.ok == true", json!({"ok": "true"})));
    assert!(denies("args.tags == ['a']", json!({"tags": "a"})));
    // Ordering and membership.
    assert!(denies("args.days > 7", json!({"days": "30"})));
    assert!(denies("args.days <= 7", json!({"days": [1]})));
    assert!(denies("args.city in ['Secret', 'Vault']", json!({"city": 5})));
    assert!(denies("args.city in {'Secret': 1}", json!({"city": ["Secret"]})));
    assert!(denies("'Secret' in args.cities", json!({"cities": "Secret Oslo"})));
    assert!(denies("args.city.startsWith('Sec')", json!({"city": 7})));
    // The right types decide as CEL says; numbers compare across kinds; null is a check.
    assert!(denies("args.city == 'Secret'", json!({"city": "Secret"})));
    assert!(!denies("args.city == 'Secret'", json!({"city": "Oslo"})));
    assert!(!denies("args.days == 3", json!({"days": 4})) && denies("args.days == 3", json!({"days": 3.0})));
    assert!(!denies("args.city in ['Secret', 'Vault']", json!({"city": "Oslo"})));
    assert!(denies("args.city == null", json!({"city": null})) && !denies("args.city == null", json!({"city": "Oslo"})));
    assert!(!denies("has(args.city) && args.city == 'Secret'", json!({})), "an absent key the condition tests for");
    // An allow rule with a wrong type does not grant.
    let p = Policy::compile(Effect::Deny, &[spec(&["*"], Effect::Allow, Some("args.city != 'Secret'"))]).unwrap();
    assert!(!decide(&p, &call(&alice, "t", Some(&json!({"city": ["Secret"]})))).allowed());
    assert!(decide(&p, &call(&alice, "t", Some(&json!({"city": "Oslo"})))).allowed());
    // A claim of the wrong type, too.
    let p = Policy::compile(Effect::Deny, &[spec(&["*"], Effect::Allow, Some("principal.claims.groups == 'ops'"))]).unwrap();
    assert!(!decide(&p, &call(&alice, "t", None)).allowed());
}

/// A comparison is looked at wherever it sits (in a list, a map, a map's field): CEL would
/// call each of these false and let a deny rule pass; the failure names both types.
#[test]
fn a_wrong_type_is_found_wherever_the_comparison_sits() {
    let alice = who("alice", json!({}));
    let decide_with = |when: &str, args: Value| {
        let p = Policy::compile(Effect::Allow, &[spec(&["*"], Effect::Deny, Some(when))]).unwrap();
        let mut failures = Vec::new();
        let allowed = p.decide(&call(&alice, "t", Some(&args)), &mut failures).allowed();
        (allowed, failures.into_iter().map(|f| f.error.to_string()).collect::<Vec<_>>())
    };
    for when in ["[args.city == 'Secret'][0]", "{'k': args.city == 'Secret'}['k']", "{'k': args.city == 'Secret'}.k"] {
        assert_eq!(
            decide_with(when, json!({"city": true})),
            (false, vec!["the condition compares a bool with a string".to_string()]),
            "{when}"
        );
        assert_eq!(decide_with(when, json!({"city": "Oslo"})), (true, vec![]), "{when}: the right type decides as CEL says");
    }
    assert_eq!(
        decide_with("args.city in {'Secret': 1}", json!({"city": true})),
        (false, vec!["the condition looks for a bool among strings".to_string()])
    );
    assert_eq!(decide_with("args.city in {'Secret': 1}", json!({"city": "Oslo"})), (true, vec![]));
    // A list or a map is never a number, whatever their places in CEL's own list of types.
    assert!(!decide_with("args.days == [3]", json!({"days": 3})).0);
    assert!(!decide_with("args.days == {'a': 3}", json!({"days": 3})).0);
}

/// The whole-server question is about tools, whatever kind the caller's subject names.
#[test]
fn a_whole_server_is_asked_about_its_tools() {
    let bob = who("bob", json!({}));
    let p = Policy::compile(
        Effect::Allow,
        &[RuleSpec {
            servers: Some(vec!["secret".into()]),
            effect: Some(Effect::Deny),
            when: Some("kind == 'tools'".into()),
            ..Default::default()
        }],
    )
    .unwrap();
    let s = Subject { kind: Kind::Resources, name: "", server: "secret", who: &bob, transport: "stdio", args: None, tool: None };
    assert!(p.denies_whole_server(&s, &mut Vec::new()));
}

fn quota(tools: &[&str], when: Option<&str>) -> RuleSpec {
    let limit = LimitSpec { calls: 3, per_secs: 60, per_label: "minute".into(), by: vec![By::Person] };
    RuleSpec { name: Some(format!("q {tools:?}")), limit: Some(limit), ..spec(tools, Effect::Allow, when) }
}

#[test]
fn quotas_count_what_they_match_and_never_decide() {
    let p = Policy::compile(
        Effect::Allow,
        &[
            quota(&["weather__*"], Some("!principal.admin")),
            spec(&["weather__secret"], Effect::Deny, None),
            quota(&["*"], Some("args.n > 1")),
        ],
    )
    .unwrap();
    assert_eq!(p.rules().len(), 1, "a quota is not among the rules that decide");
    let bob = who("bob", json!({}));
    let admin = Who::new(Arc::from("carol"), Arc::from("carol"), Arc::new(json!({})), true);
    assert!(decide(&p, &call(&bob, "weather__get", None)).allowed(), "the quota decides nothing");
    let names = |s: &Subject| p.limits(s, &mut Vec::new()).into_iter().map(|a| a.rule.to_string()).collect::<Vec<_>>();
    let args = json!({"n": 1});
    assert_eq!(names(&call(&bob, "weather__get", Some(&args))), ["q [\"weather__*\"]"]);
    assert!(names(&call(&admin, "weather__get", Some(&args))).is_empty(), "admins exempt by a when");
    // A condition that cannot be evaluated applies the quota (it never grants).
    let mut failures = Vec::new();
    assert_eq!(p.limits(&call(&admin, "x", None), &mut failures).len(), 1);
    assert_eq!(failures.len(), 1);
    assert_eq!(p.all_names().count(), 3);
    // A quota is about tool calls only.
    let bad = RuleSpec { kinds: Some(vec![Kind::Pages]), ..quota(&["*"], None) };
    let e = Policy::compile(Effect::Allow, &[bad]).unwrap_err();
    assert_eq!(e.field, "kinds", "{e}");
    let dup = Policy::compile(
        Effect::Allow,
        &[quota(&["a"], None), RuleSpec { name: Some("q [\"a\"]".into()), ..spec(&["b"], Effect::Deny, None) }],
    );
    assert_eq!(dup.unwrap_err().field, "name", "a quota's name is a rule name");
}

#[test]
fn settled_rules_decide_as_the_walk_does() {
    let p = Policy::compile(
        Effect::Deny,
        &[
            spec(&["*"], Effect::Deny, Some("has(args.city) && args.city == 'Secret'")),
            spec(&["weather__*"], Effect::Deny, Some("principal.name == 'mallory'")),
            spec(&["*"], Effect::Allow, Some("has(args.n) && args.n > 2")),
            spec(&["weather__*"], Effect::Allow, Some("'ops' in principal.claims.groups")),
            spec(&["other__*"], Effect::Allow, None),
        ],
    )
    .unwrap();
    for w in [who("mallory", json!({})), who("bob", json!({"groups": ["ops"]})), who("carol", json!({}))] {
        for args in [json!({"city": "Secret"}), json!({"city": "Lisbon"}), json!({"n": 3}), json!({})] {
            let s = call(&w, "weather__get", Some(&args));
            let Prefix::From(i) = p.prefix(&s, &mut Vec::new()) else { panic!("the first rule reads the arguments") };
            let settled = p.settled_from(i, &s, &mut Vec::new());
            assert_eq!(settled.iter().filter(|x| x.is_none()).count(), 2, "the two rules that read the arguments are left to each call");
            assert_eq!(p.decide_settled(i, &settled, &s, &mut Vec::new()), p.decide_from(i, &s, &mut Vec::new()), "{} {args}", w.name);
        }
    }
}

#[test]
fn a_quota_or_an_approval_that_reads_annotations_makes_the_policy_read_the_tool() {
    let approve = RuleSpec {
        name: Some("destructive needs an admin".into()),
        approve: Some(ApproveSpec { admins: true, expires_secs: 60, ..Default::default() }),
        when: Some("annotations.destructiveHint".into()),
        effect: Some(Effect::Allow),
        ..Default::default()
    };
    let p = Policy::compile(Effect::Allow, &[approve]).unwrap();
    assert!(p.reads_tool(), "else every tool is judged as a silent (destructive) one");
    let quiet = Policy::compile(Effect::Allow, &[quota(&["*"], Some("principal.name == 'bob'"))]).unwrap();
    assert!(!quiet.reads_tool());
}
