//! `check --connect`: what `check` cannot see without the servers. Starts every server as a run
//! would (the same credentials, environment and bounds; no host edge), waits for their lists
//! (bounded), checks every tool name of the configuration against what is served (with "did you
//! mean"), prints each server's tools with what they say of themselves, and what each configured
//! person may call, then stops them all. With `--strict` any finding is an error.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::policy::{Kind, Subject, ToolFacts};
use mcp_gen_ui_actors::servers::fleet::Fleet;
use mcp_gen_ui_actors::who::Who;

use crate::config::settings::Settings;
use crate::{governance, unmatched, wiring};

/// How long the servers have, together, to list their tools.
pub const WAIT: Duration = Duration::from_secs(30);

pub async fn run(settings: Settings, prompts: Arc<mcp_gen_ui_actors::generation::prompts::Prompts>, strict: bool) -> ExitCode {
    let metrics = Arc::new(if settings.upstreams.bare { Metrics::new() } else { Metrics::per_server() });
    let gov = governance::Governance::start(&settings, &metrics, None, Vec::new());
    let (deps, upstream) = wiring::start_actors(&settings, prompts, metrics, &gov);
    let found = unmatched::at_start::check(deps.fleet.clone(), unmatched::Scope::of(&settings), WAIT).await;
    let people = people(&settings);
    print!("{}", report(&deps.fleet, &gov, &people, &found));
    upstream.servers.lock().await.shutdown().await;
    let findings = found.unmatched.len() + found.not_listed.len();
    if strict && findings > 0 {
        eprintln!("mcp-gen-ui check --connect: {findings} finding(s) above are errors with --strict: the configuration is not valid");
        return ExitCode::from(2);
    }
    ExitCode::SUCCESS
}

/// The people the configuration names by their tokens (a JWT's people cannot be listed ahead).
fn people(s: &Settings) -> Vec<Arc<Who>> {
    let a = &s.auth;
    if a.disabled || !a.configured() {
        return vec![Who::anonymous()];
    }
    let mut names = BTreeSet::new();
    for t in a.tokens.iter().chain(&a.file_tokens).filter(|t| t.named) {
        let (key, name) = match a.people.of_token(&t.label) {
            Some(p) => (format!("person {p}"), p.to_string()),
            None => (format!("token {}", t.label), t.label.clone()),
        };
        names.insert((key, name));
    }
    let claims = Arc::new(serde_json::Value::Object(Default::default()));
    names
        .into_iter()
        .map(|(key, name)| {
            let admin = a.admins.contains(&name);
            Arc::new(Who::new(Arc::from(key), Arc::from(name), claims.clone(), admin).from_source(mcp_gen_ui_actors::who::Source::Token))
        })
        .collect()
}

fn report(fleet: &Fleet, gov: &governance::Governance, people: &[Arc<Who>], found: &unmatched::at_start::Found) -> String {
    let mut out = String::from("mcp-gen-ui check --connect: the servers, as they answered\n");
    let catalog = fleet.catalog();
    for server in fleet.servers().iter() {
        let status = server.router.status();
        let state = if server.pool.is_some() {
            "per person: started for each person, not here"
        } else if status.ready {
            "listed"
        } else {
            "did not list its tools in time"
        };
        let tools: Vec<_> = catalog.tools().iter().filter(|t| t.server == server.name).collect();
        let _ = writeln!(out, "  server {} ({state}): {} tool(s)", server.name, tools.len());
        for t in tools {
            let f = ToolFacts::of(&t.def);
            let says = if f.read_only {
                "reads only"
            } else if f.destructive {
                "may destroy"
            } else {
                "may write"
            };
            let _ =
                writeln!(out, "    {:<40} {says}{}", t.name, if f.title.is_empty() { String::new() } else { format!(" ({})", f.title) });
        }
    }
    if gov.policies.is_on() {
        let _ = writeln!(out, "  who may call what (each person's tools of {}):", catalog.tools().len());
        for who in people {
            let allowed: Vec<&str> = catalog
                .tools()
                .iter()
                .filter(|t| {
                    let s = Subject {
                        kind: Kind::Tools,
                        name: &t.name,
                        server: &t.server,
                        who,
                        transport: "streamable-http",
                        args: None,
                        tool: None,
                    };
                    gov.policies.visible(&s)
                })
                .map(|t| t.name.as_str())
                .collect();
            let _ = writeln!(out, "    {:<16} {} of {}: {}", who.name, allowed.len(), catalog.tools().len(), allowed.join(", "));
        }
    }
    for w in &found.unmatched {
        let _ = writeln!(out, "  warning:   {w}");
    }
    for s in &found.not_listed {
        let _ = writeln!(out, "  warning:   server {s} did not list its tools within {} s: its names were not checked", WAIT.as_secs());
    }
    if found.unmatched.is_empty() && found.not_listed.is_empty() {
        let _ = writeln!(out, "  every configured tool name matches a tool the servers serve");
    }
    out
}
