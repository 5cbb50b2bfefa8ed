//! One generation, start to finish, as a plain async function: classify, ask the LLM, retry
//! with backoff, post-process, and fall back to the template. The budget is a wall-clock
//! deadline across all of it; when it runs out the in-flight request future is dropped (which
//! closes the provider connection) and the template is returned.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;

use serde_json::Value;

use crate::generation::llm::{ErrorCode, LlmError, LlmRequest, SharedLlm};
use crate::generation::prompts::{parse_classification, PromptExtras, Prompts, PROMPT_VERSION};
use crate::generation::templates::{UiPages, TEMPLATE_VERSION};
use crate::generation::{debug_files, postprocess};
use crate::metrics::Metrics;
use crate::page::UiType;
use crate::page::{now_ms, transient_reason, PageKind, UiEntry, ENTRY_FORMAT};
use crate::trace::{attr, Attr, Kind, Span};

#[derive(Debug, Clone)]
pub struct GenSettings {
    pub budget: Duration,
    pub max_retries: u32,
    pub temperature: f64,
    pub max_tokens: u32,
    pub theme: String,
    /// `--debug`: write each prompt, raw answer and page here.
    pub debug_dir: Option<std::path::PathBuf>,
    /// `logging.redactSensitiveData`: logged prompts and answers are cut short.
    pub redact: bool,
    /// `cache.fallbackTtlSecs`: how long a page served for a transient failure is kept.
    pub fallback_ttl: Duration,
    /// `generation.styleGuide`: the operator's extra instructions for every page.
    pub style_guide: Option<String>,
}

/// Appended to the prompt after a rejected page, before what was wrong with it.
const REPAIR_NOTE: &str = "\n\nYour previous answer could not be used: ";

/// Writes a debug artefact; failures only warn (debugging must not break serving).
fn shorten(s: &str, redact: bool) -> &str {
    if !redact {
        return s;
    }
    match s.char_indices().nth(2000) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// What a generation needs; everything is owned so the future is `'static`.
pub struct Job {
    pub key: String,
    pub tool: Value,
    pub refinements: Vec<String>,
    pub request_id: String,
    /// The generation's span: each LLM request is its child.
    pub trace: crate::trace::TraceCx,
    pub deadline: Instant,
    /// A classification remembered for this tool hash, if any.
    pub known_type: Option<UiType>,
    /// The shape of this tool's results as hosts saw them (`generation.learnResultShape`).
    pub result_shape: Option<Value>,
}

pub struct Deps {
    pub llm: Option<SharedLlm>,
    pub prompts: Arc<Prompts>,
    pub pages: Arc<UiPages>,
    pub metrics: Arc<Metrics>,
    pub settings: GenSettings,
}

/// How a generation ended, for the queue (which remembers classifications).
pub struct Outcome {
    pub entry: UiEntry,
    pub classified: Option<UiType>,
}

/// Backoff before retry `attempt` (0-based): 1 s doubling, at most 5 s.
pub fn backoff(attempt: u32) -> Duration {
    Duration::from_secs(1u64 << attempt.min(3)).min(Duration::from_secs(5))
}

/// How long to wait before the next attempt, or None when the wait does not fit the budget.
/// A provider's Retry-After is honoured only as given: retrying earlier just fails again.
pub fn next_wait(err: &LlmError, attempt: u32, remaining: Duration) -> Option<Duration> {
    let wait = err.retry_after.unwrap_or_else(|| backoff(attempt));
    (wait < remaining).then_some(wait)
}

struct Ctx<'a> {
    job: &'a Job,
    deps: &'a Deps,
    started: Instant,
    input_tokens: u64,
    output_tokens: u64,
}

impl Ctx<'_> {
    fn entry(&self, html: String, kind: PageKind, reason: Option<String>, ui_type: Option<UiType>) -> UiEntry {
        let (provider, model) = match &self.deps.llm {
            Some(l) => (l.provider().to_string(), l.model().to_string()),
            None => ("offline".to_string(), String::new()),
        };
        UiEntry {
            format: ENTRY_FORMAT,
            key: self.job.key.clone(),
            tool_name: self.job.tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string(),
            html,
            kind,
            ui_type,
            generated_at: now_ms(),
            duration_ms: self.started.elapsed().as_millis() as u64,
            provider,
            model,
            prompt_version: PROMPT_VERSION.to_string(),
            template_version: TEMPLATE_VERSION.to_string(),
            fallback_reason: reason,
            warnings: Vec::new(),
            repairs: Vec::new(),
            request_id: self.job.request_id.clone(),
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            expires_at: None,
        }
    }

    /// The template page, rendered on the blocking pool (a large schema makes a large form).
    async fn fallback(&self, reason: &str, detail: &str, ui_type: Option<UiType>) -> UiEntry {
        let (pages, tool) = (self.deps.pages.clone(), self.job.tool.clone());
        let rendered = tokio::task::spawn_blocking(move || pages.try_template_page(&tool)).await;
        self.fallback_with(rendered.ok().and_then(Result::ok), reason, detail, ui_type)
    }

    /// The fallback entry around a rendered template page (None: the emergency page).
    fn fallback_with(&self, template: Option<String>, reason: &str, detail: &str, ui_type: Option<UiType>) -> UiEntry {
        let tool_name = self.job.tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let (html, kind) = match template {
            Some(h) => (h, PageKind::Template),
            None => (self.deps.pages.emergency_page(tool_name), PageKind::Emergency),
        };
        self.deps.metrics.fallbacks.with_label_values(&[reason]).inc();
        if !matches!(reason, "offline" | "minimal") {
            tracing::warn!(component = "generation", event = "fallback", request_id = %self.job.request_id, tool_name, reason, detail, level = kind.level(), "serving the template UI instead of a generated one");
        }
        let mut e = self.entry(html, kind, Some(reason.to_string()), ui_type);
        if transient_reason(reason) {
            e.expires_at = Some(now_ms().saturating_add(self.deps.settings.fallback_ttl.as_millis() as u64));
        }
        if !detail.is_empty() {
            e.warnings.push(detail.to_string());
        }
        e
    }

    fn remaining(&self) -> Duration {
        self.job.deadline.saturating_duration_since(Instant::now())
    }

    /// One LLM call bounded by what is left of the budget; records tokens and outcome.
    async fn ask(&mut self, system: String, user: String, max_tokens: u32) -> Result<String, LlmError> {
        let llm = self.deps.llm.clone().expect("ask is only called with a provider");
        let span = Span::start_with(format!("chat {}", llm.model()), Kind::Client, &self.job.trace, || {
            vec![
                Attr::new(attr::GENAI_OPERATION, "chat"),
                Attr::new(attr::GENAI_PROVIDER, llm.provider()),
                Attr::new(attr::GENAI_MODEL, llm.model().to_string()),
                Attr::new(attr::GENAI_MAX_TOKENS, i64::from(max_tokens)),
                Attr::new(attr::REQUEST_ID, self.job.request_id.clone()),
            ]
        });
        let req = LlmRequest {
            system,
            user,
            max_tokens,
            temperature: self.deps.settings.temperature,
            request_id: self.job.request_id.clone(),
            trace: span.cx(),
        };
        let labels = |outcome: &str| [llm.provider().to_string(), llm.model().to_string(), outcome.to_string()];
        let asked = Instant::now();
        let res = match tokio::time::timeout(self.remaining(), llm.complete(req)).await {
            Ok(r) => r,
            // Dropping the future dropped the request: the provider sees its connection close.
            Err(_) => {
                Err(LlmError::new(ErrorCode::Timeout, format!("no answer within the {} ms budget", self.deps.settings.budget.as_millis())))
            }
        };
        let outcome = res.as_ref().err().map(|e| e.code.as_str()).unwrap_or("ok");
        tracing::info!(
            component = "llm",
            event = "llm_call",
            provider = llm.provider(),
            model = llm.model(),
            outcome,
            duration_ms = asked.elapsed().as_millis() as u64,
            "LLM request finished"
        );
        match &res {
            Ok(r) => {
                span.set(attr::GENAI_INPUT_TOKENS, r.input_tokens as i64);
                span.set(attr::GENAI_OUTPUT_TOKENS, r.output_tokens as i64);
            }
            Err(e) => span.fail(e.code.as_str(), e.message.clone()),
        }
        drop(span);
        match &res {
            Ok(r) => {
                self.input_tokens += r.input_tokens;
                self.output_tokens += r.output_tokens;
                let [p, m, _] = labels("ok");
                self.deps.metrics.llm_tokens.with_label_values(&[&p, &m, "input"]).inc_by(r.input_tokens);
                self.deps.metrics.llm_tokens.with_label_values(&[&p, &m, "output"]).inc_by(r.output_tokens);
                self.deps.metrics.llm_requests.with_label_values(&labels("ok").each_ref().map(String::as_str)).inc();
            }
            Err(e) => self.deps.metrics.llm_requests.with_label_values(&labels(e.code.as_str()).each_ref().map(String::as_str)).inc(),
        }
        res.map(|r| r.text)
    }
}

/// [`run`], with any panic inside it contained: the read gets the template (reason `internal`,
/// kept only for the fallback TTL) and the caller, the queue, keeps serving.
pub async fn run_contained(job: Job, deps: Arc<Deps>) -> Outcome {
    let (key, tool, request_id, deadline) = (job.key.clone(), job.tool.clone(), job.request_id.clone(), job.deadline);
    match std::panic::AssertUnwindSafe(run(job, deps.clone())).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(p) => {
            let why = crate::contain::panic_message(p.as_ref());
            tracing::error!(component = "generation", event = "panic", request_id = %request_id, error = %why, "page generation panicked; serving the template");
            let job = Job {
                key,
                tool,
                refinements: Vec::new(),
                request_id,
                trace: Default::default(),
                deadline,
                known_type: None,
                result_shape: None,
            };
            Outcome { entry: internal_fallback(&job, &deps, &format!("page generation failed inside mcp-gen-ui: {why}")), classified: None }
        }
    }
}

/// The template page for a read that failed inside this service (reason `internal`).
pub fn internal_fallback(job: &Job, deps: &Deps, why: &str) -> UiEntry {
    let cx = Ctx { job, deps, started: Instant::now(), input_tokens: 0, output_tokens: 0 };
    // Rare (a contained panic): rendered where it is needed rather than risking another hop.
    cx.fallback_with(deps.pages.try_template_page(&job.tool).ok(), "internal", why, None)
}

/// Renders a prompt on the blocking pool: the tool's schemas can be large.
async fn render(deps: &Deps, job: &Job, f: impl FnOnce(&Prompts, &Job) -> String + Send + 'static) -> String {
    let prompts = deps.prompts.clone();
    let job = Job {
        key: String::new(),
        tool: job.tool.clone(),
        refinements: job.refinements.clone(),
        request_id: String::new(),
        trace: Default::default(),
        deadline: job.deadline,
        known_type: job.known_type,
        result_shape: job.result_shape.clone(),
    };
    tokio::task::spawn_blocking(move || f(&prompts, &job)).await.unwrap_or_default()
}

pub async fn run(job: Job, deps: Arc<Deps>) -> Outcome {
    let tool_name = job.tool.get("name").and_then(Value::as_str).unwrap_or_default();
    if crate::faults::generation_panics(tool_name) {
        panic!("injected fault: generation_panic:{tool_name}");
    }
    let mut cx = Ctx { job: &job, deps: &deps, started: Instant::now(), input_tokens: 0, output_tokens: 0 };
    if deps.llm.is_none() {
        return Outcome { entry: cx.fallback("offline", "", None).await, classified: None };
    }
    let tool_name = job.tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let ui_type = match job.known_type {
        Some(t) => t,
        None => match cx.ask(deps.prompts.system(), render(&deps, &job, |p, j| p.classify(&j.tool)).await, 16).await {
            Ok(answer) => parse_classification(&answer),
            Err(e) => return Outcome { entry: cx.fallback(e.code.as_str(), &e.message, None).await, classified: None },
        },
    };
    let classified = job.known_type.is_none().then_some(ui_type);
    if classified.is_some() {
        crate::generation::classified_hook::note(ui_type); // shared now, before the page is asked for
    }
    // Asking for changes is asking for a custom page: refinements override "minimal".
    if ui_type == UiType::Minimal && job.refinements.is_empty() {
        return Outcome { entry: cx.fallback("minimal", "", Some(ui_type)).await, classified };
    }
    let system = deps.prompts.system();
    let theme = deps.settings.theme.clone();
    let extras = PromptExtras { style_guide: deps.settings.style_guide.clone(), result_shape: job.result_shape.clone() };
    let user = render(&deps, &job, move |p, j| p.generate(&j.tool, &j.refinements, &theme, &extras)).await;
    let stem = debug_files::stem(&tool_name, &job.key);
    tracing::debug!(component = "generation", event = "prompt", request_id = %job.request_id, tool_name = %tool_name, prompt = %shorten(&user, deps.settings.redact), "generation prompt");
    if let Some(dir) = &deps.settings.debug_dir {
        debug_files::write(dir, &format!("{stem}.prompt.txt"), &format!("{system}\n\n----- user -----\n\n{user}"));
    }
    let mut last_problem = (String::from("TIMEOUT"), String::new());
    // After a rejected page the next attempt is told what was wrong (the repair prompt).
    let mut asking = user.clone();
    for attempt in 0..=deps.settings.max_retries {
        if cx.remaining().is_zero() {
            break;
        }
        match cx.ask(system.clone(), asking.clone(), deps.settings.max_tokens).await {
            Ok(text) => {
                tracing::debug!(component = "generation", event = "answer", request_id = %job.request_id, tool_name = %tool_name, attempt, answer = %shorten(&text, deps.settings.redact), "raw LLM answer");
                if let Some(dir) = &deps.settings.debug_dir {
                    debug_files::write(dir, &format!("{stem}.answer-{attempt}.txt"), &text);
                }
                // Parsing a large page is CPU work: the blocking pool, not a thread routing messages.
                let processed = match tokio::task::spawn_blocking(move || postprocess::process(&text)).await {
                    Ok(p) => p,
                    Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()), // contained by run_contained
                    Err(_) => break,                                                     // the runtime is shutting down
                };
                match processed {
                    Ok(p) => {
                        if let Some(dir) = &deps.settings.debug_dir {
                            debug_files::write(dir, &format!("{stem}.html"), &p.html);
                        }
                        let kind = if p.repairs.is_empty() { PageKind::Generated } else { PageKind::Repaired };
                        let mut e = cx.entry(p.html, kind, None, Some(ui_type));
                        e.repairs = p.repairs;
                        e.warnings = p.warnings;
                        tracing::info!(component = "generation", event = "generated", request_id = %job.request_id, tool_name = %tool_name, kind = kind.as_str(), attempt, duration_ms = e.duration_ms, "page generated");
                        return Outcome { entry: e, classified };
                    }
                    Err(rej) => {
                        tracing::warn!(component = "generation", event = "rejected", request_id = %job.request_id, tool_name = %tool_name, attempt, reason = rej.reason(), error = %rej, "generated page rejected");
                        last_problem = (rej.reason().to_string(), rej.to_string());
                        asking = format!("{user}{REPAIR_NOTE}{rej}. Write the whole page again with that fixed.\n");
                    }
                }
            }
            Err(e) => {
                tracing::warn!(component = "generation", event = "llm_error", request_id = %job.request_id, tool_name = %tool_name, attempt, code = e.code.as_str(), retryable = e.retryable, error = %e.message, "LLM request failed");
                last_problem = (e.code.as_str().to_string(), e.message.clone());
                if !e.retryable || attempt == deps.settings.max_retries {
                    break;
                }
                match next_wait(&e, attempt, cx.remaining()) {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => break,
                }
            }
        }
    }
    Outcome { entry: cx.fallback(&last_problem.0, &last_problem.1, Some(ui_type)).await, classified }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_five_seconds() {
        let b: Vec<u64> = (0..5).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(b, vec![1, 2, 4, 5, 5]);
    }

    #[test]
    fn retry_after_is_honoured_only_when_it_fits() {
        let mut e = LlmError::new(ErrorCode::RateLimit, "slow down");
        e.retry_after = Some(Duration::from_secs(3));
        assert_eq!(next_wait(&e, 0, Duration::from_secs(10)), Some(Duration::from_secs(3)));
        assert_eq!(next_wait(&e, 0, Duration::from_secs(2)), None);
        e.retry_after = None;
        assert_eq!(next_wait(&e, 1, Duration::from_secs(10)), Some(Duration::from_secs(2)));
    }
}
