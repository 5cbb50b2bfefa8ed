//! Builds the running service from its settings: every singleton actor (each under a
//! `Supervisor`), the router, the server's supervisor on an arbiter of its own, and what every
//! host session is given. Nothing here handles a request.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr, Supervisor};
use mcp_gen_ui_actors::generation::cache_key::ConfigFingerprint;
use mcp_gen_ui_actors::generation::llm::stream::Limits;
use mcp_gen_ui_actors::generation::llm::{Anthropic, Ollama, OpenAi, SharedLlm};
use mcp_gen_ui_actors::generation::pipeline::{Deps, GenSettings};
use mcp_gen_ui_actors::generation::prompts::{Prompts, PROMPT_VERSION};
use mcp_gen_ui_actors::generation::queue::GenerationQueue;
use mcp_gen_ui_actors::generation::templates::{UiPages, TEMPLATE_VERSION};
use mcp_gen_ui_actors::generation::warm::{self, WarmProgress, Warmer};
use mcp_gen_ui_actors::mcp::ui_meta::AppsSdk;
use mcp_gen_ui_actors::messages::ToolsUpdated;
use mcp_gen_ui_actors::metrics::Metrics;
use mcp_gen_ui_actors::policy::remembered_facts;
use mcp_gen_ui_actors::proxy::hosts::Hosts;
use mcp_gen_ui_actors::servers::fleet::Fleet;
use mcp_gen_ui_actors::servers::registry::Registry;
use mcp_gen_ui_actors::session::deps::{self, SessionDeps, SessionLimits};
use mcp_gen_ui_actors::store::learned_shapes::LearnedShapes;
use mcp_gen_ui_actors::store::ready_pages::ReadyPages;
use mcp_gen_ui_actors::store::redis::{RedisSettings, RedisStore, LEASE_TTL};
use mcp_gen_ui_actors::store::refinements::Refinements;
use mcp_gen_ui_actors::store::replica_sync;
use mcp_gen_ui_actors::store::ui_cache::{CacheSettings, UiCache};

use crate::config;
use crate::config::file::Provider;
use crate::config::settings::Settings;
use crate::governance::Governance;
use crate::upstreams::ServerSet;

/// The provider client, or None for offline.
/// The provider client, or None for offline.
fn llm_client(settings: &Settings) -> Option<SharedLlm> {
    let llm = &settings.config.llm;
    let key = settings.api_key.clone().map(|k| k.0);
    let (base, model) = (llm.base_url.as_deref(), llm.model.as_deref());
    match settings.provider {
        Provider::Offline => None,
        Provider::Anthropic => Some(Arc::new(Anthropic::new(base, key, model))),
        Provider::Openai => Some(Arc::new(OpenAi::new(base, key, model))),
        Provider::Ollama => Some(Arc::new(Ollama::new(base, key, model))),
    }
}

/// What `run` keeps besides the sessions' dependencies: the running servers (to reload and
/// shut them down).
pub struct Upstream {
    pub servers: Arc<tokio::sync::Mutex<ServerSet>>,
    /// `cache.type: redis`: the store shared with the other replicas (its health is in /readyz).
    pub shared: Option<RedisStore>,
}

/// The store shared by replicas (`cache.type: redis`), connected lazily: a Redis that is down
/// at start only means this replica starts alone.
fn shared_store(settings: &Settings, metrics: &Arc<Metrics>) -> Option<RedisStore> {
    let c = &settings.config.cache;
    if !c.enabled || c.kind != config::file::CacheType::Redis {
        return None;
    }
    let redis = RedisSettings {
        url: c.redis_url.clone()?,
        prefix: c.redis_key_prefix.clone(),
        timeout: Duration::from_millis(c.redis_timeout_ms),
        lease_ttl: LEASE_TTL,
    };
    match RedisStore::open(redis, metrics.clone()) {
        Ok(s) => {
            s.start();
            Some(s)
        }
        Err(why) => {
            tracing::error!(component = "main", event = "redis_unusable", error = ?why, "cache.redisUrl cannot be used: this replica shares nothing");
            None
        }
    }
}

/// Starts every actor: cache, refinements, generation queue, the servers' supervisors.
/// Singletons start once, before any HTTP worker, so every worker shares the same addresses.
pub fn start_actors(settings: &Settings, prompts: Arc<Prompts>, metrics: Arc<Metrics>, gov: &Governance) -> (SessionDeps, Upstream) {
    let cfg = &settings.config;
    let llm = llm_client(settings);
    metrics.preinit(settings.provider.name(), llm.as_ref().map(|l| l.model()).unwrap_or(""));
    let fingerprint = ConfigFingerprint {
        prompt_version: PROMPT_VERSION.to_string(),
        prompts_hash: prompts.hash.clone(),
        template_version: TEMPLATE_VERSION.to_string(),
        provider: settings.provider.name().to_string(),
        model: llm.as_ref().map(|l| l.model().to_string()).unwrap_or_default(),
        temperature: cfg.llm.temperature,
        style_guide: cfg.generation.style_guide.clone().unwrap_or_default(),
    };
    let shared = shared_store(settings, &metrics);
    let stores = stores(settings, &metrics, &shared);
    let approvals = approvals(&shared);
    let registry = Registry::new(stores.pages.clone());
    // Before any server lists: every list is judged against the pins.
    registry.pin_with(gov.pins.clone());
    let fleet = Fleet::new(Arc::new(Hosts::default()), registry);
    crate::pins::start(settings, &gov.pins, gov.audit(), metrics.clone(), shared.clone(), &fleet);
    // Rules that read what a tool says of itself (its annotations, its title) learn it from
    // the catalog as it is now.
    let catalog_of = fleet.clone();
    gov.policies.learn_tools_from(remembered_facts(move |name: &str| catalog_of.catalog().tool(name).map(|t| t.def.clone())));
    share_tasks(settings, &fleet, &shared);
    // Hosts hear of a page written after they were shown the provisional one, here and (through
    // replica_sync) on the other replicas.
    let page_changed = announcer(&fleet);
    let queue = GenerationQueue::new(
        UiCache::port(&stores.cache),
        Refinements::port(&stores.refinements),
        generation_deps(settings, llm, prompts, &metrics),
        fingerprint.hash(),
        cfg.cache.enabled,
        cfg.generation.max_concurrent_generations,
        settings.export_dir.clone(),
    )
    .with_state_dir(stores.dir.as_deref())
    .with_pages(stores.pages.clone())
    .with_shapes(stores.shapes.clone())
    .with_shared(shared.clone())
    .with_written(Some(page_changed.clone()));
    let queue = Supervisor::start(move |_| queue);
    let mut listeners = vec![queue.clone().recipient()];
    let enabled_tools: Option<Arc<std::collections::HashSet<String>>> =
        cfg.generation.enabled_tools.as_ref().map(|t| Arc::new(t.iter().cloned().collect()));
    let warm = warmer(settings, &fleet, &queue, &metrics, enabled_tools.clone());
    if let Some((addr, _)) = &warm {
        listeners.push(addr.clone().recipient());
    }
    let servers = start_servers(settings, &fleet, &metrics, listeners);
    if let Some(s) = &shared {
        sync_replicas(s, &stores, page_changed, gov, &fleet, &approvals);
    }
    let deps = SessionDeps {
        fleet,
        queue: GenerationQueue::port(&queue),
        refinements: Refinements::port(&stores.refinements),
        sessions: None,
        metrics,
        idle_limit: settings.session_idle_timeout,
        enabled_tools,
        pages: stores.pages,
        shape_artifacts: cfg.results.shaping == config::file::Shaping::Artifacts,
        shapes: stores.shapes,
        ui_domain: cfg.ui.domain.as_deref().map(Arc::from),
        apps_sdk: match cfg.ui.apps_sdk {
            config::file::AppsSdkMode::Off => AppsSdk::Off,
            config::file::AppsSdkMode::Declared => AppsSdk::Declared,
            config::file::AppsSdkMode::Undeclared => AppsSdk::Undeclared,
        },
        llm_windows: Default::default(),
        notification_buckets: Default::default(),
        policies: gov.policies.clone(),
        audit: gov.audit(),
        profiles: gov.profiles.clone(),
        quotas: quotas(&shared),
        approvals: approvals.clone(),
        warm: warm.map(|(_, progress)| progress),
        // Several people: a person who is not an admin shapes only their own pages, so that no one
        // can make a page someone else sees do what they may not (issue 42).
        personal_scope: cfg.refinements.scope == config::file::RefinementScope::Principal || settings.several_people(),
        limits: SessionLimits {
            max_in_flight: cfg.limits.max_in_flight_per_session,
            llm_calls_per_minute: cfg.limits.llm_calls_per_minute,
            tools_per_page: cfg.limits.tools_per_page,
            notifications_per_second: cfg.limits.host_notifications_per_second,
            max_batch: cfg.limits.max_batch_messages,
        },
    };
    (deps, Upstream { servers: Arc::new(tokio::sync::Mutex::new(servers)), shared })
}

/// Each person's share of tasks, and (with replicas) the tasks every replica finds.
fn share_tasks(settings: &Settings, fleet: &Arc<Fleet>, shared: &Option<RedisStore>) {
    let limits = &settings.config.limits;
    fleet.hosts().tasks().set_limits(mcp_gen_ui_actors::proxy::tasks::TaskLimits {
        per_person: limits.tasks_per_person,
        watches_per_person: limits.task_watches_per_person,
    });
    if let Some(s) = shared {
        // A task made through one replica is found through another.
        fleet.hosts().tasks().set_share(Arc::new(s.clone()));
    }
}

/// Other replicas' refinements, regenerated pages, accepted tools and approval decisions reach
/// this one's tables and hosts.
fn sync_replicas(
    shared: &RedisStore,
    stores: &Stores,
    page_changed: Arc<dyn Fn(&str) + Send + Sync>,
    gov: &Governance,
    fleet: &Arc<Fleet>,
    approvals: &Arc<mcp_gen_ui_actors::policy::approvals::Approvals>,
) {
    let targets = replica_sync::Targets {
        pages: stores.pages.clone(),
        forget: stores.cache.clone().recipient(),
        page_changed,
        pin_accepted: crate::pins::accepted_elsewhere(&gov.pins, fleet),
        approval_decided: {
            let (approvals, fleet) = (approvals.clone(), fleet.clone());
            Arc::new(move || {
                approvals.decided_elsewhere();
                fleet.announce_page(mcp_gen_ui_actors::session::ui_tools::APPROVALS_PAGE);
            })
        },
    };
    replica_sync::start(shared, targets);
}

/// Where `approve` rules hold calls: Redis when replicas share one, else here.
fn approvals(shared: &Option<RedisStore>) -> Arc<mcp_gen_ui_actors::policy::approvals::Approvals> {
    let a = mcp_gen_ui_actors::policy::approvals::Approvals::new();
    if let Some(s) = shared {
        a.share(s.clone());
    }
    a
}

/// Where `limit` rules count calls: Redis when replicas share one, else here.
fn quotas(shared: &Option<RedisStore>) -> Arc<mcp_gen_ui_actors::policy::quotas::Quotas> {
    let q = mcp_gen_ui_actors::policy::quotas::Quotas::new();
    if let Some(s) = shared {
        q.share(s.clone());
    }
    q
}

/// Where pages and what shapes them are kept.
struct Stores {
    /// The cache folder (`cache.type: filesystem`).
    dir: Option<std::path::PathBuf>,
    cache: Addr<UiCache>,
    refinements: Addr<Refinements>,
    /// Ready ui:// read results, shared by every session (none with the cache off).
    pages: Option<Arc<ReadyPages>>,
    /// What tools' results look like, learnt from hosts' calls (generation.learnResultShape).
    shapes: Option<Arc<LearnedShapes>>,
}

fn stores(settings: &Settings, metrics: &Arc<Metrics>, shared: &Option<RedisStore>) -> Stores {
    let cfg = &settings.config;
    let dir = settings.cache_dir().map(std::path::Path::to_path_buf);
    let cache = UiCache::new(
        CacheSettings {
            max_entries: cfg.cache.max_entries,
            max_entry_bytes: cfg.cache.max_entry_size_bytes,
            max_total_bytes: cfg.cache.max_total_size_bytes,
            ttl: cfg.cache.ttl_seconds.map(Duration::from_secs),
            dir: dir.clone(),
        },
        metrics.clone(),
    )
    .with_shared(shared.clone());
    // Singletons run under a supervisor: one that stops (a contained panic) starts again with
    // the same address, so nobody holding it notices beyond the answer that failed.
    let cache = Supervisor::start(move |_| cache);
    let shapes = cfg.generation.learn_result_shape.then(|| LearnedShapes::new(dir.as_deref()));
    let pages = cfg.cache.enabled.then(|| ReadyPages::with_ttl(cfg.cache.ttl_seconds.map(Duration::from_secs)));
    let refinements_actor = Refinements::new(dir.clone(), metrics.clone()).with_pages(pages.clone()).with_shared(shared.clone());
    let refinements = Supervisor::start(move |_| refinements_actor);
    Stores { dir, cache, refinements, pages, shapes }
}

/// What one generation needs: the provider, the prompts, the templates, the settings.
fn generation_deps(settings: &Settings, llm: Option<SharedLlm>, prompts: Arc<Prompts>, metrics: &Arc<Metrics>) -> Deps {
    let cfg = &settings.config;
    Deps {
        llm,
        prompts,
        pages: Arc::new(UiPages::new()),
        metrics: metrics.clone(),
        settings: GenSettings {
            read_wait: Duration::from_millis(cfg.generation.timeout_ms),
            ceiling: Duration::from_millis(cfg.generation.max_generation_ms),
            limits: Limits {
                first_token: Duration::from_millis(cfg.generation.first_token_ms),
                stall: Duration::from_millis(cfg.generation.stall_ms),
            },
            max_retries: cfg.generation.max_retries,
            temperature: cfg.llm.temperature,
            max_tokens: cfg.llm.max_tokens,
            theme: cfg.generation.theme.clone().unwrap_or_else(|| "light".into()),
            debug_dir: settings.debug_dir.clone(),
            redact: cfg.logging.redact_sensitive_data,
            fallback_ttl: Duration::from_secs(cfg.cache.fallback_ttl_secs),
            style_guide: cfg.generation.style_guide.clone(),
        },
        pace: Default::default(),
    }
}

/// The upstream servers, started; with per-principal servers, each person's credentials (read
/// again as their file changes) and the reaper of idle connections.
fn start_servers(
    settings: &Settings,
    fleet: &Arc<Fleet>,
    metrics: &Arc<Metrics>,
    listeners: Vec<actix::Recipient<ToolsUpdated>>,
) -> ServerSet {
    let cfg = &settings.config;
    let refresh = cfg.tool_refresh.enabled.then(|| Duration::from_millis(cfg.tool_refresh.interval_ms));
    let ps = &settings.principal_secrets;
    let secrets = crate::principals::Secrets::new(match &ps.file {
        // Checked when the settings were read; a file that changed since is read as it is now.
        Some(f) => crate::principals::load_secrets(f).unwrap_or_default(),
        None => Default::default(),
    });
    let principals = crate::upstreams::Principals {
        secrets: secrets.clone(),
        total: mcp_gen_ui_actors::servers::principals::Total::new(ps.max_processes),
        idle: ps.idle,
    };
    let mut servers =
        ServerSet::new(fleet.clone(), metrics.clone(), settings.upstreams.bare, listeners, refresh, principals, settings.several_people());
    servers.start_all(settings.upstreams.servers.clone());
    if settings.upstreams.servers.iter().any(|s| s.per_principal.is_some()) {
        crate::principals::reap_idle(fleet.clone());
        if let Some(f) = ps.file.clone() {
            if let Err(e) = crate::principals::watch(f, secrets, fleet.clone()) {
                tracing::error!(component = "principals", event = "watch_failed", error = %e, "the principal secrets file will not be read again: {e}");
            }
        }
    }
    servers
}

/// Tells every connected host that the page of the tool it names changed: `resources/updated`
/// to its subscribers, `resources/list_changed` to UI hosts.
fn announcer(fleet: &Arc<Fleet>) -> Arc<dyn Fn(&str) + Send + Sync> {
    let hosts_fleet = fleet.clone();
    Arc::new(move |tool: &str| {
        let Some(uri) = hosts_fleet.catalog().tool(tool).map(|t| t.page.clone()) else { return };
        hosts_fleet.announce_page(&uri);
    })
}

/// `generation.warm`: the warmer, told of every tool list change, and its progress; None when off.
fn warmer(
    settings: &Settings,
    fleet: &Arc<Fleet>,
    queue: &Addr<GenerationQueue>,
    metrics: &Arc<Metrics>,
    enabled: Option<Arc<std::collections::HashSet<String>>>,
) -> Option<(Addr<Warmer>, Arc<WarmProgress>)> {
    let cfg = &settings.config;
    let globs = config::settings::generation::warm_globs(cfg).ok().flatten()?;
    if !cfg.cache.enabled {
        return None; // nothing would keep what it made
    }
    let catalog = fleet.clone();
    // The tools hosts would get a page for, among those the globs name.
    let select: warm::Selection = Arc::new(move |name: &str| {
        let gets_page = catalog.catalog().tool(name).is_some_and(|t| deps::page_rule(t, enabled.as_deref()).is_ok());
        gets_page && globs.iter().any(|g| g.matches(name))
    });
    let progress = Arc::new(WarmProgress::default());
    let w = Warmer::new(GenerationQueue::port(queue), select, cfg.generation.warm_calls_per_minute, progress.clone(), metrics.clone());
    Some((w.start(), progress))
}
