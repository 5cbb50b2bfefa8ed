//! Pure: the rules, compiled from their specs ([`Policy::compile`]), and the walk that decides
//! one request ([`Policy::decide`]), or whether a principal may see a thing before any
//! arguments exist ([`Policy::visible`]).
//!
//! A condition that cannot be evaluated (a missing key, a wrong type) never grants access: an
//! allow rule whose condition fails does not apply, a deny rule whose condition fails applies.
//! `has(args.city) && args.city == 'Secret'` is how a condition tests a key that may be absent.

use std::fmt;
use std::sync::Arc;

use crate::servers::glob::{Glob, GlobError};

mod apart;
mod condition;
mod subject;
mod tool_facts;
mod types;
use apart::Apart;
pub use apart::{Applies, ApproveSpec, By, LimitSpec};
pub use condition::{Condition, ConditionError};
pub use subject::Subject;
pub use tool_facts::{remembered as remembered_facts, FactsSource, ToolFacts};

/// What kind of thing a request touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Seeing a tool in `tools/list` and calling it.
    Tools,
    /// A tool's `ui://` page: listed, read, inspected, its status.
    Pages,
    /// Changing a tool's page: `_ui_refine`, `_ui_regenerate`, `_ui_remake`.
    Refinements,
    /// A server's own resources (and resource templates).
    Resources,
    Prompts,
}

impl Kind {
    pub const ALL: [Kind; 5] = [Kind::Tools, Kind::Pages, Kind::Refinements, Kind::Resources, Kind::Prompts];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Pages => "pages",
            Kind::Refinements => "refinements",
            Kind::Resources => "resources",
            Kind::Prompts => "prompts",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }

    /// Which of a rule's name lists names things of this kind.
    /// It is named by a tool (a call, its page, its refinements).
    pub fn is_tool(self) -> bool {
        self.names() == Names::Tools
    }

    fn names(self) -> Names {
        match self {
            Kind::Tools | Kind::Pages | Kind::Refinements => Names::Tools,
            Kind::Resources => Names::Resources,
            Kind::Prompts => Names::Prompts,
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Tools,
    Prompts,
    Resources,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Effect {
    Allow,
    Deny,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Allow => "allow",
            Effect::Deny => "deny",
        }
    }
}

/// One rule as configured (the config layer fills it in; `compile` checks it).
#[derive(Debug, Clone, Default)]
pub struct RuleSpec {
    pub name: Option<String>,
    /// Tool names as hosts see them (for tools, their pages and their refinements).
    pub tools: Option<Vec<String>>,
    pub prompts: Option<Vec<String>>,
    /// Resource URIs as hosts see them.
    pub resources: Option<Vec<String>>,
    /// Server names (as configured).
    pub servers: Option<Vec<String>>,
    pub kinds: Option<Vec<Kind>>,
    pub effect: Option<Effect>,
    /// A CEL expression over `principal`, `server`, `tool`, `name`, `kind`, `transport`, `args`,
    /// `annotations`, `title`.
    pub when: Option<String>,
    /// A quota (`effect: limit`) instead of a decision: the rule counts the calls it matches.
    pub limit: Option<LimitSpec>,
    /// An approval (`effect: approve`) instead of a decision: the calls it matches wait for one.
    pub approve: Option<ApproveSpec>,
}

/// Why a rule cannot be compiled: its index, the field (`when`, `tools[2]`, ...) and what to
/// do. The config layer names it `policy.rules[<index>].<field>`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rule {index} ({name}): {field}: {message}")]
pub struct RuleError {
    pub index: usize,
    pub name: String,
    pub field: String,
    pub message: String,
}

#[derive(Debug)]
pub struct Rule {
    /// Its `name`, else `rule <index>`: what metrics, logs and the audit trail call it.
    pub name: Arc<str>,
    tools: Option<Vec<Glob>>,
    prompts: Option<Vec<Glob>>,
    resources: Option<Vec<Glob>>,
    servers: Option<Vec<Glob>>,
    kinds: u8,
    pub effect: Effect,
    when: Option<Condition>,
}

impl Rule {
    fn compile(index: usize, spec: &RuleSpec) -> Result<Rule, RuleError> {
        let name = spec.name.clone().unwrap_or_else(|| format!("rule {index}"));
        let err = |field: String, message: String| RuleError { index, name: name.clone(), field, message };
        if name.is_empty() || name.len() > 64 || name.chars().any(char::is_control) {
            return Err(err("name".into(), "must be 1 to 64 characters, none of them control characters".into()));
        }
        let globs = |field: &str, list: &Option<Vec<String>>| -> Result<Option<Vec<Glob>>, RuleError> {
            let Some(list) = list else { return Ok(None) };
            if list.is_empty() {
                return Err(err(field.into(), "is empty: it would match nothing; remove it to match every name".into()));
            }
            let compiled: Result<Vec<Glob>, (usize, GlobError)> =
                list.iter().enumerate().map(|(i, p)| Glob::new(p).map_err(|e| (i, e))).collect();
            compiled.map(Some).map_err(|(i, e)| err(format!("{field}[{i}]"), e.to_string()))
        };
        let tools = globs("tools", &spec.tools)?;
        let prompts = globs("prompts", &spec.prompts)?;
        let resources = globs("resources", &spec.resources)?;
        let servers = globs("servers", &spec.servers)?;
        let named = tools.is_some() || prompts.is_some() || resources.is_some();
        let has = |n: Names| match n {
            Names::Tools => tools.is_some(),
            Names::Prompts => prompts.is_some(),
            Names::Resources => resources.is_some(),
        };
        let kinds = match &spec.kinds {
            Some(list) if list.is_empty() => {
                return Err(err("kinds".into(), "is empty: it would match nothing; remove it to match every kind".into()))
            }
            Some(list) => {
                if let Some((i, k)) = list.iter().enumerate().find(|(_, k)| named && !has(k.names())) {
                    let list = match k.names() {
                        Names::Tools => "tools",
                        Names::Prompts => "prompts",
                        Names::Resources => "resources",
                    };
                    let why = format!("{k} is not matched by this rule's names: add a {list:?} list of globs, or remove {k:?}");
                    return Err(err(format!("kinds[{i}]"), why));
                }
                list.iter().fold(0, |m, k| m | k.bit())
            }
            // Names given: the kinds those names name; none: every kind.
            None => Kind::ALL.iter().filter(|k| !named || has(k.names())).fold(0, |m, k| m | k.bit()),
        };
        let Some(effect) = spec.effect else {
            return Err(err("effect".into(), "is required: \"allow\" or \"deny\"".into()));
        };
        let when = match &spec.when {
            Some(text) => Some(Condition::compile(text).map_err(|e| err("when".into(), e.to_string()))?),
            None => None,
        };
        Ok(Rule { name: Arc::from(name.as_str()), tools, prompts, resources, servers, kinds, effect, when })
    }

    /// Whether the rule is about this request (its kinds and names), its condition aside.
    fn matches(&self, s: &Subject) -> bool {
        if self.kinds & s.kind.bit() == 0 {
            return false;
        }
        let names = match s.kind.names() {
            Names::Tools => &self.tools,
            Names::Prompts => &self.prompts,
            Names::Resources => &self.resources,
        };
        let named = |g: &Option<Vec<Glob>>, n: &str| g.as_deref().is_none_or(|g| crate::servers::glob::any(g, n));
        named(names, s.name) && named(&self.servers, s.server)
    }

    fn reads_args(&self) -> bool {
        self.when.as_ref().is_some_and(Condition::reads_args)
    }

    fn reads_tool(&self) -> bool {
        self.when.as_ref().is_some_and(Condition::reads_tool)
    }
}

/// What decided a request: a rule (its index) or the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub effect: Effect,
    pub rule: Option<usize>,
}

impl Verdict {
    pub fn allowed(self) -> bool {
        self.effect == Effect::Allow
    }
}

/// A condition that could not be evaluated on a request (see the module's note).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalFailure {
    pub rule: usize,
    pub error: EvalError,
}

/// Why a condition gave no answer; its kind is logged with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    #[error("the condition gave {0}, not true or false")]
    NotBool(String),
    /// CEL failed (a missing key, an operator on the wrong types, ...).
    #[error("{0}")]
    Execution(String),
    /// A comparison of values of different types (CEL would call it false).
    #[error("the condition {0}")]
    TypeMismatch(String),
}

impl EvalError {
    pub fn kind(&self) -> &'static str {
        match self {
            EvalError::NotBool(_) => "not_bool",
            EvalError::Execution(_) => "execution",
            EvalError::TypeMismatch(_) => "type_mismatch",
        }
    }
}

/// What can be decided of a request before its arguments are known: the verdict, or the
/// first rule whose condition reads them (the walk goes on from there once they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    Decided(Verdict),
    From(usize),
}

/// The rules, compiled, in order, and the default.
pub struct Policy {
    rules: Vec<Rule>,
    /// Quotas (`effect: limit`) and approvals (`approve`), apart: they act on calls the rules
    /// allow, never decide.
    limits: Vec<(Rule, Apart)>,
    default: Effect,
    env: Arc<cel::Env>,
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy").field("rules", &self.rules).field("default", &self.default).finish()
    }
}

impl Policy {
    pub fn compile(default: Effect, specs: &[RuleSpec]) -> Result<Policy, RuleError> {
        let (mut rules, mut limits, mut seen) = (Vec::new(), Vec::new(), std::collections::HashSet::new());
        for (i, spec) in specs.iter().enumerate() {
            let apart = match (&spec.limit, &spec.approve) {
                (Some(l), _) => Some(Apart::Limit(l.clone())),
                (None, Some(a)) => Some(Apart::Approve(a.clone())),
                (None, None) => None,
            };
            let rule = match apart {
                // A condition that cannot be evaluated applies a quota or an approval, as it
                // applies a deny.
                Some(apart) => {
                    let kinds = Some(spec.kinds.clone().unwrap_or_else(|| vec![Kind::Tools]));
                    Rule::compile(i, &RuleSpec { effect: Some(Effect::Deny), kinds, ..spec.clone() }).map(|r| (r, Some(apart)))
                }
                None => Rule::compile(i, spec).map(|r| (r, None)),
            }?;
            if !seen.insert(rule.0.name.clone()) {
                let why = format!(
                    "{:?} names an earlier rule too; rule names must differ (metrics and the audit trail count by them)",
                    rule.0.name
                );
                return Err(RuleError { index: i, name: rule.0.name.to_string(), field: "name".into(), message: why });
            }
            if rule.1.is_some() && rule.0.kinds != Kind::Tools.bit() {
                let why = "a quota or an approval is about tool calls: its kinds are [\"tools\"] (or leave kinds out)".to_string();
                return Err(RuleError { index: i, name: rule.0.name.to_string(), field: "kinds".into(), message: why });
            }
            match rule {
                (r, Some(limit)) => limits.push((r, limit)),
                (r, None) => rules.push(r),
            }
        }
        Ok(Policy { rules, limits, default, env: Arc::new(cel::Env::stdlib()) })
    }

    /// Every rule's name, the quotas' after the others' (as failures index them).
    pub fn all_names(&self) -> impl Iterator<Item = &Arc<str>> {
        self.rules.iter().chain(self.limits.iter().map(|(r, _)| r)).map(|r| &r.name)
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn default_effect(&self) -> Effect {
        self.default
    }

    /// Some condition reads what a tool says of itself: decisions depend on it.
    pub fn reads_tool(&self) -> bool {
        // The quotas' and approvals' conditions too: `approve when annotations.destructiveHint`
        // must see the tool as it is, not as a silent one.
        self.rules.iter().chain(self.limits.iter().map(|(r, _)| r)).any(Rule::reads_tool)
    }

    /// Decides a request whose arguments are known (`s.args`), from rule `from` on.
    pub fn decide_from(&self, from: usize, s: &Subject, failures: &mut Vec<EvalFailure>) -> Verdict {
        for (i, rule) in self.rules.iter().enumerate().skip(from) {
            if rule.matches(s) && self.holds(i, rule, s, failures) {
                return Verdict { effect: rule.effect, rule: Some(i) };
            }
        }
        Verdict { effect: self.default, rule: None }
    }

    /// From rule `from` on, what each rule that does not read the arguments says of a request
    /// whatever its arguments (it matches and holds); None for one that reads them. Cached
    /// with the prefix, so that a call evaluates only the conditions that read its arguments.
    pub fn settled_from(&self, from: usize, s: &Subject, failures: &mut Vec<EvalFailure>) -> Vec<Option<bool>> {
        let s = s.without_args();
        self.rules
            .iter()
            .enumerate()
            .skip(from)
            .map(|(i, r)| (!r.reads_args()).then(|| r.matches(&s) && self.holds(i, r, &s, failures)))
            .collect()
    }

    /// [`Policy::decide_from`] with what [`Policy::settled_from`] found for the same request.
    pub fn decide_settled(&self, from: usize, settled: &[Option<bool>], s: &Subject, failures: &mut Vec<EvalFailure>) -> Verdict {
        for (i, rule) in self.rules.iter().enumerate().skip(from) {
            let holds = match settled.get(i - from) {
                Some(Some(known)) => *known,
                _ => rule.matches(s) && self.holds(i, rule, s, failures),
            };
            if holds {
                return Verdict { effect: rule.effect, rule: Some(i) };
            }
        }
        Verdict { effect: self.default, rule: None }
    }

    /// Decides a request whose arguments are known.
    pub fn decide(&self, s: &Subject, failures: &mut Vec<EvalFailure>) -> Verdict {
        self.decide_from(0, s, failures)
    }

    /// What can be decided without the arguments (`s.args` is ignored).
    pub fn prefix(&self, s: &Subject, failures: &mut Vec<EvalFailure>) -> Prefix {
        let s = s.without_args();
        for (i, rule) in self.rules.iter().enumerate() {
            if !rule.matches(&s) {
                continue;
            }
            if rule.reads_args() {
                return Prefix::From(i);
            }
            if self.holds(i, rule, &s, failures) {
                return Prefix::Decided(Verdict { effect: rule.effect, rule: Some(i) });
            }
        }
        Prefix::Decided(Verdict { effect: self.default, rule: None })
    }

    /// Whether some arguments could be allowed, from `from` on: what a list shows. A rule that
    /// reads the arguments allows (some call may pass it) or is passed over (some call may not
    /// meet it).
    pub fn visible_from(&self, from: usize, s: &Subject, failures: &mut Vec<EvalFailure>) -> bool {
        let s = s.without_args();
        for (i, rule) in self.rules.iter().enumerate().skip(from) {
            if !rule.matches(&s) {
                continue;
            }
            if rule.reads_args() {
                if rule.effect == Effect::Allow {
                    return true;
                }
                continue;
            }
            if self.holds(i, rule, &s, failures) {
                return rule.effect == Effect::Allow;
            }
        }
        self.default == Effect::Allow
    }

    /// Whether the rules deny every tool of `s.server`, whatever its tools are named (they may
    /// not be known yet: a person's own server before its first list). Walking the rules as a
    /// call would: one that names some tools might allow one of them (not denied); the first
    /// server-wide one (no tool names, or `*`) whose condition holds decides; none: the default.
    pub fn denies_whole_server(&self, s: &Subject, failures: &mut Vec<EvalFailure>) -> bool {
        let s = Subject { kind: Kind::Tools, ..s.without_args() };
        for (i, rule) in self.rules.iter().enumerate() {
            if rule.kinds & Kind::Tools.bit() == 0 || !rule.servers.as_deref().is_none_or(|g| crate::servers::glob::any(g, s.server)) {
                continue;
            }
            let every_name = rule.tools.as_deref().is_none_or(|g| g.iter().any(|g| g.as_str() == "*"));
            if !every_name || rule.reads_args() || rule.reads_tool() {
                // It may decide some tool, or some call, otherwise: not denied as a whole.
                if rule.effect == Effect::Allow {
                    return false;
                }
                continue;
            }
            if self.holds(i, rule, &s, failures) {
                return rule.effect == Effect::Deny;
            }
        }
        self.default == Effect::Deny
    }

    fn holds(&self, i: usize, rule: &Rule, s: &Subject, failures: &mut Vec<EvalFailure>) -> bool {
        let Some(when) = &rule.when else { return true };
        match when.eval(&self.env, s) {
            Ok(b) => b,
            Err(error) => {
                failures.push(EvalFailure { rule: i, error });
                // Never grants: a failed allow does not apply; a failed deny does.
                rule.effect == Effect::Deny
            }
        }
    }
}

#[cfg(test)]
mod tests;
