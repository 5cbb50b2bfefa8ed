//! The metrics reference (`docs/reference/metrics.md`, `--print-metrics-reference`): every
//! family the registry really builds (its name, type, labels and help come from
//! `Metrics::families`, with one server and with several), and, from the table here, when its
//! series appear. A unit test fails when the shipped page is stale or a family has no entry
//! here; `tests/e2e/test_metrics_reference.py` holds the page to a running service's
//! `/metrics` in each main configuration.

use std::fmt::Write as _;

use mcp_gen_ui_actors::metrics::{Family, Metrics, PREFIX};

/// What makes a family's series exist from the start (they are at zero, or at their value).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Feature {
    /// An LLM provider other than `offline`.
    Provider,
    /// Traces exported to a collector.
    Tracing,
    /// Rules in `policy`.
    Rules,
}

impl Feature {
    const ALL: [Feature; 3] = [Feature::Provider, Feature::Tracing, Feature::Rules];

    fn code(self) -> &'static str {
        match self {
            Feature::Provider => "provider",
            Feature::Tracing => "tracing",
            Feature::Rules => "rules",
        }
    }

    fn meaning(self) -> &'static str {
        match self {
            Feature::Provider => {
                "an LLM provider other than `offline` (`llm.provider`, `--provider`, or an API key in the environment): one series per outcome or direction for its provider and model"
            }
            Feature::Tracing => "traces exported (`OTEL_EXPORTER_OTLP_ENDPOINT` or `tracing.endpoint`)",
            Feature::Rules => "rules in `policy` (or `\"default\": \"deny\"`): one series per rule, and `default`",
        }
    }
}

/// When a family's series appear.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Appears {
    /// From the first scrape, in every configuration.
    Start,
    /// From the first scrape when the feature is on.
    StartWith(Feature),
    /// Not before it first happens.
    Once(&'static str),
}

/// Each family (without the prefix), when it appears, and what it counts with, if a feature.
const ENTRIES: &[(&str, Appears, Option<&str>)] = &[
    ("requests_total", Appears::Start, None),
    ("upstream_call_duration_seconds", Appears::Once("the service has sent a server a request (its handshake, soon after start)"), None),
    ("upstream_restarts_total", Appears::Start, None),
    ("upstream_connected", Appears::Start, None),
    ("host_sessions", Appears::Start, None),
    ("ui_reads_total", Appears::Start, None),
    ("generation_duration_seconds", Appears::Once("a page has been made or a template served for a tool"), None),
    ("cache_hits_total", Appears::Start, None),
    ("cache_misses_total", Appears::Start, None),
    ("cache_entries", Appears::Start, None),
    ("cache_bytes", Appears::Start, None),
    ("fallbacks_total", Appears::Start, None),
    ("llm_requests_total", Appears::StartWith(Feature::Provider), None),
    ("llm_requests_by_tool_total", Appears::Once("the provider has been asked about a tool's page"), Some("a provider")),
    ("llm_tokens_total", Appears::StartWith(Feature::Provider), None),
    ("generations_in_flight", Appears::Start, None),
    ("generations_queued", Appears::Start, None),
    ("upstream_bad_frames_total", Appears::Start, None),
    ("upstream_timeouts_total", Appears::Start, None),
    ("kept_back_total", Appears::Start, None),
    ("tasks_total", Appears::Once("a call has made a task"), None),
    ("tasks_bridged_total", Appears::Once("the service has run a task-only tool as a task for a host that does not speak tasks"), None),
    ("server_requests_refused_total", Appears::Once("a server's request has been answered with an error instead of reaching a host"), None),
    ("tool_calls_total", Appears::Once("a tool of a server's has been called (or refused by the rules)"), None),
    ("tool_call_duration_seconds", Appears::Once("a tool of a server's has been called (or refused by the rules)"), None),
    ("approvals_total", Appears::Once("a call has been held by an approve rule"), None),
    ("tool_changes_total", Appears::Once("a server's tool has changed since it was pinned, or a new tool was held"), None),
    ("actor_restarts_total", Appears::Start, None),
    ("dropped_messages_total", Appears::Start, None),
    ("refusals_total", Appears::Start, None),
    ("shape_regenerations_total", Appears::Start, Some("`generation.learnResultShape`")),
    ("redis_errors_total", Appears::Start, Some("`cache.type: redis` (`--redis-url`)")),
    ("redis_connected", Appears::Start, Some("`cache.type: redis` (`--redis-url`)")),
    ("lease_waits_total", Appears::Start, Some("`cache.type: redis` (`--redis-url`)")),
    ("lease_takeovers_total", Appears::Start, Some("`cache.type: redis` (`--redis-url`)")),
    ("warm_pages", Appears::Once("the warmer has the servers' tools"), Some("`generation.warm`")),
    ("trace_spans_dropped_total", Appears::StartWith(Feature::Tracing), None),
    ("policy_decisions_total", Appears::StartWith(Feature::Rules), None),
    ("policy_condition_errors_total", Appears::StartWith(Feature::Rules), None),
    ("audit_lines_total", Appears::Start, Some("`audit.file` or `audit.stdout` (and `otlp_dropped` with traces' log export)")),
    ("principal_connections", Appears::Once("a person's own connection has been asked for"), Some("`perPrincipal` servers")),
    ("principal_starts_total", Appears::Once("a person's own connection has been asked for"), Some("`perPrincipal` servers")),
    ("token_exchanges_total", Appears::Once("a token has been exchanged for a person"), Some("`tokenExchange`")),
    ("principal_tool_lists_differ_total", Appears::Once("a person's connection listed other tools"), Some("`perPrincipal` servers")),
    ("build_info", Appears::Start, None),
];

/// The entry of a family, by its full name.
fn entry(name: &str) -> Option<&'static (&'static str, Appears, Option<&'static str>)> {
    ENTRIES.iter().find(|(n, _, _)| format!("{PREFIX}_{n}") == name)
}

fn appears_cell(a: Appears, with: Option<&str>) -> String {
    let when = match a {
        Appears::Start => "at start".to_string(),
        Appears::StartWith(f) => format!("at start with `{}`", f.code()),
        Appears::Once(what) => format!("once {what}"),
    };
    match with {
        Some(w) => format!("{when}; counts with {w}"),
        None => when,
    }
}

/// The labels of a family with several servers, those it has only then marked.
fn labels_cell(several: &Family, one: Option<&Family>) -> String {
    if several.labels.is_empty() {
        return "none".into();
    }
    several
        .labels
        .iter()
        .map(|l| match one {
            Some(o) if !o.labels.contains(l) => format!("`{l}` (several servers)"),
            _ => format!("`{l}`"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The page, from the families the registry builds; an error names the families without an
/// entry in `ENTRIES` (and entries of no family).
pub fn render() -> Result<String, MissingEntries> {
    let (one, several) = (Metrics::new(), Metrics::per_server());
    let mut families: Vec<&Family> = several.families().iter().collect();
    families.sort_by(|a, b| a.name.cmp(&b.name));
    let missing: Vec<String> = families.iter().filter(|f| entry(&f.name).is_none()).map(|f| f.name.clone()).collect();
    let unknown: Vec<String> =
        ENTRIES.iter().map(|(n, _, _)| format!("{PREFIX}_{n}")).filter(|n| !families.iter().any(|f| &f.name == n)).collect();
    if !missing.is_empty() || !unknown.is_empty() {
        return Err(MissingEntries { missing, unknown });
    }
    let mut out = String::new();
    let _ = writeln!(out, "# Metrics reference\n");
    let _ = writeln!(
        out,
        "Every metric family `/metrics` can have, generated from the registry the service builds \
(`mcp-gen-ui --print-metrics-reference`; `cargo test` fails when this page is stale or a family \
has no entry, and `tests/e2e/test_metrics_reference.py` compares it with a running service's \
`/metrics` offline, with a provider, with traces, and with several people and servers). How to \
scrape them is under [Scraping metrics](../operations.md#scraping-metrics).\n"
    );
    let _ = writeln!(
        out,
        "**Labels** marked *(several servers)* are there with a servers file or `servers`; with one \
server behind `--upstream` its series carry no `server` label.\n"
    );
    let _ = writeln!(
        out,
        "**Appears**: *at start*: its series whose labels are known at start (every reason, outcome, \
method, server, ...) are there from the first scrape, at zero or at their value; *at start with* \
a feature: so when that feature is on, and absent otherwise; *once* something happens: absent \
until then. *Counts with* names the feature without which it stays at zero.\n"
    );
    for f in Feature::ALL {
        let _ = writeln!(out, "- `{}`: {}", f.code(), f.meaning());
    }
    let _ = writeln!(out, "\n| name | type | labels | appears | help |\n|---|---|---|---|---|");
    for f in families {
        let (_, appears, with) = entry(&f.name).expect("checked above");
        let single = one.families().iter().find(|o| o.name == f.name);
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} |",
            f.name,
            f.kind,
            labels_cell(f, single),
            appears_cell(*appears, *with),
            f.help.replace('|', "\\|")
        );
    }
    Ok(out)
}

/// Families the registry has and the table here does not, or the other way round.
#[derive(Debug, thiserror::Error)]
#[error(
    "the metrics reference is incomplete: families without an entry in src/metrics_reference.rs: [{}]; entries of no family: [{}]",
    missing.join(", "),
    unknown.join(", ")
)]
pub struct MissingEntries {
    missing: Vec<String>,
    unknown: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_has_an_entry_and_the_shipped_page_is_current() {
        let page = render().unwrap_or_else(|e| panic!("{e}: add it to ENTRIES (when its series appear)"));
        // Read at run time: the image's compile stage builds the binary, not the book.
        let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference/metrics.md")).expect("the shipped page");
        assert_eq!(
            shipped, page,
            "docs/reference/metrics.md is stale: run `cargo run -- --print-metrics-reference > docs/reference/metrics.md`"
        );
    }

    #[test]
    fn a_family_without_an_entry_is_named() {
        assert!(entry("mcp_gen_ui_requests_total").is_some());
        assert!(entry("mcp_gen_ui_not_a_family_total").is_none());
        let e = MissingEntries { missing: vec!["mcp_gen_ui_new_total".into()], unknown: vec![] };
        assert!(e.to_string().contains("mcp_gen_ui_new_total"), "{e}");
    }

    #[test]
    fn labels_of_several_servers_only_are_marked() {
        let (one, several) = (Metrics::new(), Metrics::per_server());
        let find = |m: &Metrics, n: &str| m.families().iter().find(|f| f.name == n).cloned().unwrap();
        let name = "mcp_gen_ui_upstream_call_duration_seconds";
        assert_eq!(labels_cell(&find(&several, name), Some(&find(&one, name))), "`server` (several servers), `method`");
        let name = "mcp_gen_ui_cache_hits_total";
        assert_eq!(labels_cell(&find(&several, name), Some(&find(&one, name))), "none");
        assert_eq!(find(&several, "mcp_gen_ui_upstream_call_duration_seconds").kind, "histogram");
    }
}
