//! The policy in force, shared by every session and the edge: swapped whole on a reload, its
//! decisions cached per principal (key, name, claims), kind, name, server and transport. What
//! can be decided before a call's arguments are known is cached; a call pays a hash and a
//! lookup, and evaluates only the rules from the first that reads its arguments on.

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, RwLock};
use std::time::{SystemTime, UNIX_EPOCH};

use prometheus::IntCounter;

use super::quota::Quota;
use super::rules::{Effect, EvalFailure, FactsSource, Policy, Prefix, Subject, ToolFacts, Verdict};
use crate::metrics::Metrics;

/// Decisions remembered per policy version (a principal's view of 5,000 tools of each kind fits
/// many times; past it the least used go).
const CACHED_DECISIONS: u64 = 200_000;
/// A failing condition is logged at most this often per rule (it is counted every time).
const FAILURE_LOG_EVERY_SECS: u64 = 60;

/// What the rules said of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    /// The rule that decided, by name; `default` when none did.
    pub rule: Arc<str>,
}

#[derive(Clone)]
struct Known {
    prefix: Prefix,
    /// Whether a list shows it (some call could be allowed).
    visible: bool,
    /// With a prefix that stops at a rule reading the arguments: what the rules from there
    /// that do not read them say (`Policy::settled_from`).
    settled: Option<Arc<[Option<bool>]>>,
}

struct Live {
    policy: Arc<Policy>,
    /// Some condition reads what a tool says of itself (looked up for each decision made).
    reads_tool: bool,
    cache: moka::sync::Cache<u128, Known>,
    /// Per rule, then the default: the decision counters, resolved once.
    allow: Vec<IntCounter>,
    deny: Vec<IntCounter>,
    /// Calls refused by a quota, per rule.
    limited: Vec<IntCounter>,
    names: Vec<Arc<str>>,
    errors: Vec<IntCounter>,
    last_logged: Vec<AtomicU64>,
}

impl Live {
    fn new(policy: Arc<Policy>, metrics: &Metrics) -> Live {
        // The rules', then the quotas' (as failures index them), then the default.
        let mut names: Vec<Arc<str>> = policy.all_names().cloned().collect();
        names.push(Arc::from("default"));
        let counter =
            |outcome: &str, of: &[Arc<str>]| of.iter().map(|n| metrics.access.policy_decisions.with_label_values(&[n, outcome])).collect();
        let (rules, quotas) = names.split_at(policy.rules().len());
        let decided: Vec<Arc<str>> = rules.iter().chain(names.last()).cloned().collect();
        let errors = names[..names.len() - 1].iter().map(|n| metrics.access.policy_condition_errors.with_label_values(&[n])).collect();
        Live {
            reads_tool: policy.reads_tool(),
            cache: moka::sync::Cache::new(CACHED_DECISIONS),
            allow: counter("allow", &decided),
            deny: counter("deny", &decided),
            limited: counter("limited", &quotas[..quotas.len() - 1]),
            errors,
            last_logged: names[..names.len() - 1].iter().map(|_| AtomicU64::new(0)).collect(),
            names,
            policy,
        }
    }

    fn known(&self, s: &Subject) -> Known {
        let key = key(s);
        if let Some(k) = self.cache.get(&key) {
            return k;
        }
        let mut failures = Vec::new();
        let prefix = self.policy.prefix(s, &mut failures);
        let (visible, settled) = match prefix {
            Prefix::Decided(v) => (v.allowed(), None),
            Prefix::From(i) => {
                (self.policy.visible_from(i, s, &mut failures), Some(Arc::from(self.policy.settled_from(i, s, &mut failures))))
            }
        };
        self.failed(&failures, s);
        let k = Known { prefix, visible, settled };
        self.cache.insert(key, k.clone());
        k
    }

    fn failed(&self, failures: &[EvalFailure], s: &Subject) {
        for f in failures {
            self.errors[f.rule].inc();
            let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
            let last = &self.last_logged[f.rule];
            if now.saturating_sub(last.load(Ordering::Relaxed)) >= FAILURE_LOG_EVERY_SECS && last.swap(now, Ordering::Relaxed) != now {
                tracing::warn!(
                    component = "policy",
                    event = "condition_failed",
                    rule = %self.names[f.rule],
                    kind = s.kind.as_str(),
                    principal = %s.who.name,
                    error = %f.error,
                    error_kind = f.error.kind(),
                    "the condition of rule {:?} could not be evaluated ({}); it does not grant: an allow rule does not apply, a deny rule denies (use has() for keys that may be absent)",
                    self.names[f.rule],
                    f.error
                );
            }
        }
    }

    fn count(&self, v: Verdict) -> Decision {
        let i = v.rule.unwrap_or(self.allow.len() - 1);
        let allowed = v.effect == Effect::Allow;
        if allowed { &self.allow[i] } else { &self.deny[i] }.inc();
        let name = if v.rule.is_some() { self.names[i].clone() } else { self.names[self.names.len() - 1].clone() };
        Decision { allowed, rule: name }
    }
}

/// The key of a request's cached decision: 128 bits from two hashers with random keys (a
/// collision, which would lend one request another's decision, cannot be aimed at).
fn key(s: &Subject) -> u128 {
    static HASHERS: LazyLock<(std::collections::hash_map::RandomState, std::collections::hash_map::RandomState)> =
        LazyLock::new(|| (Default::default(), Default::default()));
    let half = |b: &std::collections::hash_map::RandomState| {
        b.hash_one((&*s.who.key, &*s.who.name, s.who.claims_digest, s.who.admin, s.kind, s.name, s.server, s.transport, s.tool))
    };
    (u128::from(half(&HASHERS.0)) << 64) | u128::from(half(&HASHERS.1))
}

/// The policy in force (None: no `policy` configured, everything allowed, nothing counted).
pub struct Policies {
    live: RwLock<Option<Arc<Live>>>,
    metrics: Arc<Metrics>,
    /// Where a tool's annotations and title are learnt (the catalog), once wired.
    facts: std::sync::OnceLock<FactsSource>,
}

impl Policies {
    pub fn new(policy: Option<Arc<Policy>>, metrics: Arc<Metrics>) -> Policies {
        let live = policy.map(|p| Arc::new(Live::new(p, &metrics)));
        Policies { live: RwLock::new(live), metrics, facts: std::sync::OnceLock::new() }
    }

    /// No rules: everything is allowed.
    pub fn off(metrics: Arc<Metrics>) -> Policies {
        Policies::new(None, metrics)
    }

    /// A reload: the new rules decide from now on, nothing remembered from the old ones.
    pub fn replace(&self, policy: Option<Arc<Policy>>) {
        let live = policy.map(|p| Arc::new(Live::new(p, &self.metrics)));
        *self.live.write().unwrap_or_else(|e| e.into_inner()) = live;
    }

    /// Where the rules learn what a tool says of itself (set once, by the wiring).
    pub fn learn_tools_from(&self, source: FactsSource) {
        let _ = self.facts.set(source);
    }

    /// `s` with what its tool says of itself, when a condition reads it: the tool as it is
    /// listed now (a changed annotation is a new decision: the facts are in its cache key), and
    /// a name no server has is a silent tool.
    fn with_facts<R>(&self, live: &Live, s: &Subject, then: impl FnOnce(&Subject) -> R) -> R {
        if !live.reads_tool || !s.kind.is_tool() || s.tool.is_some() {
            return then(s);
        }
        let facts = self.facts.get().and_then(|source| source(s.name)).unwrap_or_else(ToolFacts::unknown);
        then(&Subject { tool: Some(&facts), ..*s })
    }

    fn current(&self) -> Option<Arc<Live>> {
        self.live.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn is_on(&self) -> bool {
        self.current().is_some()
    }

    /// A call, a read or a refinement: allowed or not, and by which rule (counted).
    pub fn check(&self, s: &Subject) -> Decision {
        let Some(live) = self.current() else { return Decision { allowed: true, rule: Arc::from("default") } };
        let verdict = self.with_facts(&live, s, |s| {
            let known = live.known(s);
            match known.prefix {
                Prefix::Decided(v) => v,
                Prefix::From(i) => {
                    let mut failures = Vec::new();
                    let v = live.policy.decide_settled(i, known.settled.as_deref().unwrap_or_default(), s, &mut failures);
                    live.failed(&failures, s);
                    v
                }
            }
        });
        live.count(verdict)
    }

    /// The quotas an allowed call counts against (none without `limit` rules: nothing asked).
    pub fn quotas(&self, s: &Subject) -> Vec<Quota> {
        let Some(live) = self.current().filter(|l| l.policy.has_limits()) else { return Vec::new() };
        self.with_facts(&live, s, |s| {
            let mut failures = Vec::new();
            let found: Vec<Quota> = live
                .policy
                .limits(s, &mut failures)
                .into_iter()
                .map(|a| {
                    let i = live.names.iter().position(|n| n == a.rule).unwrap_or(0);
                    let q = live.limited.get(i.saturating_sub(live.policy.rules().len())).cloned();
                    Quota::of(a, s, q)
                })
                .collect();
            live.failed(&failures, s);
            found
        })
    }

    /// The approval an allowed call waits for (the first `approve` rule it matches), if any.
    pub fn approval(&self, s: &Subject) -> Option<(Arc<str>, super::rules::ApproveSpec)> {
        let live = self.current().filter(|l| l.policy.has_approvals())?;
        self.with_facts(&live, s, |s| {
            let mut failures = Vec::new();
            let found = live.policy.approval(s, &mut failures).map(|(r, a)| (r.clone(), a.clone()));
            live.failed(&failures, s);
            found
        })
    }

    /// Whether some rule holds calls for approval (the approval tools are listed then).
    pub fn has_approvals(&self) -> bool {
        self.current().is_some_and(|l| l.policy.has_approvals())
    }

    /// Whether a list shows it to this principal: some call of it could be allowed.
    pub fn visible(&self, s: &Subject) -> bool {
        self.current().is_none_or(|live| self.with_facts(&live, s, |s| live.known(s).visible))
    }

    /// Whether the rules deny this principal every tool of `s.server` (see
    /// `Policy::denies_whole_server`; asked rarely, so not cached).
    pub fn denies_whole_server(&self, s: &Subject) -> bool {
        self.current().is_some_and(|live| {
            let mut failures = Vec::new();
            let denied = live.policy.denies_whole_server(s, &mut failures);
            live.failed(&failures, s);
            denied
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::policy::{Kind, RuleSpec};
    use crate::who::Who;

    fn policies(when: &str) -> (Policies, Arc<Metrics>) {
        let spec = RuleSpec {
            name: Some("ops only".into()),
            tools: Some(vec!["*".into()]),
            effect: Some(Effect::Allow),
            when: Some(when.into()),
            ..Default::default()
        };
        let metrics = Arc::new(Metrics::new());
        (Policies::new(Some(Arc::new(Policy::compile(Effect::Deny, &[spec]).unwrap())), metrics.clone()), metrics)
    }

    fn subject<'a>(w: &'a Who, args: Option<&'a serde_json::Value>) -> Subject<'a> {
        Subject { kind: Kind::Tools, name: "t", server: "s", who: w, transport: "stdio", args, tool: None }
    }

    #[test]
    fn decisions_follow_the_claims_not_only_the_key() {
        let (p, metrics) = policies("'ops' in principal.claims.groups");
        let ops = Who::new(Arc::from("sub=1"), Arc::from("1"), Arc::new(json!({"groups": ["ops"]})), false);
        let dev = Who::new(Arc::from("sub=1"), Arc::from("1"), Arc::new(json!({"groups": ["dev"]})), false);
        assert!(p.check(&subject(&ops, None)).allowed);
        assert!(p.visible(&subject(&ops, None)));
        let d = p.check(&subject(&dev, None));
        assert_eq!(d, Decision { allowed: false, rule: Arc::from("default") });
        assert!(!p.visible(&subject(&dev, None)));
        let text = metrics.render();
        assert!(text.contains(r#"mcp_gen_ui_policy_decisions_total{outcome="allow",rule="ops only"} 1"#), "{text}");
        assert!(text.contains(r#"mcp_gen_ui_policy_decisions_total{outcome="deny",rule="default"} 1"#), "{text}");
    }

    #[test]
    fn arguments_are_read_on_every_call() {
        let (p, _) = policies("has(args.city) && args.city != 'Secret'");
        let w = Who::new(Arc::from("a"), Arc::from("a"), Arc::new(json!({})), false);
        let (oslo, secret) = (json!({"city": "Oslo"}), json!({"city": "Secret"}));
        for _ in 0..2 {
            assert!(p.check(&subject(&w, Some(&oslo))).allowed);
            assert!(!p.check(&subject(&w, Some(&secret))).allowed);
        }
        assert!(p.visible(&subject(&w, None)));
    }

    #[test]
    fn a_reload_forgets_what_the_old_rules_decided() {
        let (p, metrics) = policies("principal.name == 'a'");
        let w = Who::new(Arc::from("a"), Arc::from("a"), Arc::new(json!({})), false);
        assert!(p.check(&subject(&w, None)).allowed);
        let deny = RuleSpec { tools: Some(vec!["t".into()]), effect: Some(Effect::Deny), ..Default::default() };
        p.replace(Some(Arc::new(Policy::compile(Effect::Allow, &[deny]).unwrap())));
        assert!(!p.check(&subject(&w, None)).allowed);
        p.replace(None);
        assert!(p.check(&subject(&w, None)).allowed && !p.is_on());
        drop(metrics);
    }

    #[test]
    fn failures_are_counted() {
        let (p, metrics) = policies("principal.claims.groups.size() > 0");
        let w = Who::new(Arc::from("a"), Arc::from("a"), Arc::new(json!({})), false);
        assert!(!p.check(&subject(&w, None)).allowed);
        assert!(metrics.render().contains(r#"mcp_gen_ui_policy_condition_errors_total{rule="ops only"} 1"#));
    }

    #[test]
    fn a_rule_over_annotations_follows_the_tool_as_it_is_listed_now() {
        use std::sync::Mutex;
        // `t` is read-only until its server says otherwise; the list is the catalog's.
        let listed: Arc<Mutex<serde_json::Value>> = Arc::new(Mutex::new(json!({"name": "t", "annotations": {"readOnlyHint": true}})));
        let (p, _) = policies("annotations.readOnlyHint && title != 'Forbidden'");
        let source = listed.clone();
        p.learn_tools_from(Arc::new(move |name: &str| (name == "t").then(|| ToolFacts::of(&source.lock().unwrap()))));
        let w = Who::new(Arc::from("a"), Arc::from("a"), Arc::new(json!({})), false);
        assert!(p.check(&subject(&w, None)).allowed && p.visible(&subject(&w, None)), "a read-only tool");
        *listed.lock().unwrap() = json!({"name": "t", "annotations": {"readOnlyHint": false}});
        assert!(!p.check(&subject(&w, None)).allowed && !p.visible(&subject(&w, None)), "changed: a new decision, not the cached one");
        *listed.lock().unwrap() = json!({"name": "t"});
        assert!(!p.check(&subject(&w, None)).allowed, "a silent tool may write (the specification's default)");
        *listed.lock().unwrap() = json!({"name": "t", "title": "Forbidden", "annotations": {"readOnlyHint": true}});
        assert!(!p.check(&subject(&w, None)).allowed, "its title is read too");
        let unknown = Subject { name: "nobody-has-it", ..subject(&w, None) };
        assert!(!p.check(&unknown).allowed, "a name no server has is a silent tool");
    }
}
