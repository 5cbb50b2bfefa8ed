//! One generation, start to finish, as a plain async function: classify, ask the LLM (its
//! answer streamed, counted into the generation's [`Progress`]), retry with backoff,
//! post-process, and fall back to the template. Nothing a reader does stops it: the only
//! bound is the ceiling (`generation.maxGenerationMs`), a wall-clock deadline across all of it,
//! enforced by dropping the in-flight request (which closes the provider connection).

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt;

use serde_json::Value;

use crate::generation::llm::stream::{Limits, Stop};
use crate::generation::llm::{ErrorCode, LlmError, LlmRequest, LlmResponse, SharedLlm};
use crate::generation::progress::Progress;
use crate::generation::prompts::{parse_classification, PromptExtras, Prompts, PROMPT_VERSION};
use crate::generation::templates::{UiPages, TEMPLATE_VERSION};
use crate::generation::{debug_files, postprocess};
use crate::metrics::Metrics;
use crate::page::{now_ms, FallbackReason, LlmFailure, PageKind, Phase, UiEntry, UiType, ENTRY_FORMAT};
use crate::trace::{attr, Attr, Kind, Span};

#[derive(Debug, Clone)]
pub struct GenSettings {
    /// `generation.timeoutMs`: how long a host's read waits for a page being written before it
    /// is given the provisional template (the generation goes on).
    pub read_wait: Duration,
    /// `generation.maxGenerationMs`: the ceiling of one generation, classification, attempts
    /// and backoff included (a wait for a slot is not).
    pub ceiling: Duration,
    /// `generation.firstTokenMs` and `generation.stallMs`: how each streamed answer is read.
    pub limits: Limits,
    pub max_retries: u32,
    pub temperature: f64,
    pub max_tokens: u32,
    pub theme: String,
    /// `--debug`: write each prompt, raw answer and page here.
    pub debug_dir: Option<std::path::PathBuf>,
    /// `logging.redactSensitiveData`: logged prompts and answers are cut short.
    pub redact: bool,
    /// `cache.fallbackTtlSecs`: the longest a page served for a transient failure is kept
    /// before the page is tried again (the first retry comes sooner: [`retry_after_failures`]).
    pub fallback_ttl: Duration,
    /// `generation.styleGuide`: the operator's extra instructions for every page.
    pub style_guide: Option<String>,
}

/// The classification's answer: a word and a short reason. The reason's few tokens, streamed,
/// show the model's pace before the page is asked for (`pace::eta_ms`): a read can tell at once
/// whether a page can come within its budget.
pub(crate) const CLASSIFY_TOKENS: u32 = 48;

/// Appended to the prompt after a rejected page, before what was wrong with it.
const REPAIR_NOTE: &str = "\n\nYour previous answer could not be used: ";
/// Appended to the prompt after an answer was cut at the token limit.
const COMPACT_NOTE: &str = "\n\nYour previous answer was cut off at the output token limit before the page was complete. \
Write a more compact page that fits: short CSS without repetition, no comments, no sample data, no features beyond what this tool needs. \
Write the whole page again, ending with </html>.\n";

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
    /// Where it has got to, for anyone who asks while it runs.
    pub progress: Arc<Progress>,
    /// How many generations of this page failed in a row before this one (the next retry
    /// after a failure waits longer each time).
    pub failures: u32,
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
    /// The model's pace on the pages written here: how long a read waits for the next one.
    pub pace: Arc<crate::generation::pace::Memory>,
}

/// How a generation ended, for the queue (which remembers classifications).
pub struct Outcome {
    pub entry: UiEntry,
    pub classified: Option<UiType>,
}

mod retries;
pub use retries::{backoff, next_wait, retry_after_failures};

struct Ctx<'a> {
    job: &'a Job,
    deps: &'a Deps,
    started: Instant,
    /// The ceiling: `started` + `generation.maxGenerationMs`.
    deadline: Instant,
    /// Requests made so far (the progress names the current one).
    asked: u32,
    input_tokens: u64,
    output_tokens: u64,
}

impl Ctx<'_> {
    fn entry(&self, html: String, kind: PageKind, reason: Option<FallbackReason>, ui_type: Option<UiType>) -> UiEntry {
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
    async fn fallback(&self, reason: FallbackReason, detail: &str, ui_type: Option<UiType>) -> UiEntry {
        let (pages, tool) = (self.deps.pages.clone(), self.job.tool.clone());
        let rendered = match tokio::task::spawn_blocking(move || pages.try_template_page(&tool)).await {
            Ok(Ok(html)) => Some(html),
            Ok(Err(e)) => {
                tracing::error!(component = "generation", event = "template_failed", request_id = %self.job.request_id, error = %e, "the template page could not be rendered; the emergency page is served");
                None
            }
            Err(_) => None,
        };
        self.fallback_with(rendered, reason, detail, ui_type)
    }

    /// The fallback entry around a rendered template page (None: the emergency page).
    fn fallback_with(&self, template: Option<String>, reason: FallbackReason, detail: &str, ui_type: Option<UiType>) -> UiEntry {
        let tool_name = self.job.tool.get("name").and_then(Value::as_str).unwrap_or_default();
        let (html, kind) = match template {
            Some(h) => (h, PageKind::Template),
            None => (self.deps.pages.emergency_page(tool_name), PageKind::Emergency),
        };
        self.deps.metrics.fallbacks.with_label_values(&[reason.as_str()]).inc();
        if reason.is_failure() {
            tracing::warn!(component = "generation", event = "fallback", request_id = %self.job.request_id, tool_name, reason = reason.as_str(), detail, level = kind.level(), "serving the template UI instead of a generated one");
        }
        let transient = reason.transient();
        let mut e = self.entry(html, kind, Some(reason), ui_type);
        if transient {
            let keep = retry_after_failures(self.job.failures, self.deps.settings.fallback_ttl);
            e.expires_at = Some(now_ms().saturating_add(keep.as_millis() as u64));
        }
        if !detail.is_empty() {
            e.warnings.push(detail.to_string());
        }
        e
    }

    fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// One LLM call, streamed under the limits and bounded by what is left of the ceiling;
    /// records tokens and outcome.
    /// `page`: the request writes the page (else it classifies the tool).
    async fn ask(&mut self, system: String, user: String, max_tokens: u32, page: bool) -> Result<LlmResponse, LlmError> {
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
        self.asked += 1;
        // The page to come, also while classifying: a read judges the whole wait.
        self.job.progress.expect(self.deps.pace.expected_chars(self.deps.settings.max_tokens));
        self.job.progress.asking(self.asked, page);
        let tool = self.job.tool.get("name").and_then(Value::as_str).unwrap_or_default();
        self.deps.metrics.llm_requests_by_tool.with_label_values(&[tool]).inc();
        let req = LlmRequest {
            system,
            user,
            max_tokens,
            temperature: self.deps.settings.temperature,
            request_id: self.job.request_id.clone(),
            trace: span.cx(),
            limits: self.deps.settings.limits,
            progress: Some(self.job.progress.clone()),
        };
        let labels = |outcome: &str| [llm.provider().to_string(), llm.model().to_string(), outcome.to_string()];
        let asked = Instant::now();
        let res = match tokio::time::timeout(self.remaining(), llm.complete(req)).await {
            Ok(r) => r,
            // Dropping the future dropped the request: the provider sees its connection close.
            Err(_) => {
                let mut e = LlmError::new(
                    ErrorCode::Timeout,
                    format!("the page was not finished within {} ms (generation.maxGenerationMs)", self.deps.settings.ceiling.as_millis()),
                );
                e.retryable = false; // nothing of the ceiling is left
                Err(e)
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
                if r.stop == Stop::Truncated {
                    span.set("gen_ai.response.finish_reasons", "length");
                }
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
        res
    }
}

/// [`run`], with any panic inside it contained: the read gets the template (reason `internal`,
/// kept only for the fallback TTL) and the caller, the queue, keeps serving.
pub async fn run_contained(job: Job, deps: Arc<Deps>) -> Outcome {
    let (key, tool, request_id, failures) = (job.key.clone(), job.tool.clone(), job.request_id.clone(), job.failures);
    match std::panic::AssertUnwindSafe(run(job, deps.clone())).catch_unwind().await {
        Ok(outcome) => outcome,
        Err(p) => {
            let why = crate::process::contain::panic_message(p.as_ref());
            tracing::error!(component = "generation", event = "panic", request_id = %request_id, error = %why, "page generation panicked; serving the template");
            let entry = internal_fallback(
                &Spare { key, tool, request_id, failures },
                &deps,
                &format!("page generation failed inside mcp-gen-ui: {why}"),
            );
            Outcome { entry, classified: None }
        }
    }
}

/// What a page that could not be made is made of: its key and tool, for the template.
pub struct Spare {
    pub key: String,
    pub tool: Value,
    pub request_id: String,
    pub failures: u32,
}

/// The template page for a read that failed inside this service (reason `internal`).
pub fn internal_fallback(spare: &Spare, deps: &Deps, why: &str) -> UiEntry {
    fallback_now(spare, deps, FallbackReason::Internal, why)
}

/// The provisional page: the template, saying that a page for the tool is being written (its
/// script asks how far it has got and puts the page in its place once written). Rendered on the
/// blocking pool; never stored.
pub async fn provisional(spare: &Spare, deps: &Deps) -> UiEntry {
    let (pages, tool) = (deps.pages.clone(), spare.tool.clone());
    let rendered = tokio::task::spawn_blocking(move || pages.provisional_page(&tool)).await.ok().and_then(Result::ok);
    let job = spare_job(spare);
    let cx = Ctx::new(&job, deps);
    let tool_name = job.tool.get("name").and_then(Value::as_str).unwrap_or_default();
    match rendered {
        Some(html) => cx.entry(html, PageKind::Template, None, None),
        None => cx.entry(deps.pages.emergency_page(tool_name), PageKind::Emergency, None, None),
    }
}

fn spare_job(spare: &Spare) -> Job {
    Job {
        key: spare.key.clone(),
        tool: spare.tool.clone(),
        refinements: Vec::new(),
        request_id: spare.request_id.clone(),
        trace: Default::default(),
        progress: Arc::default(),
        failures: spare.failures,
        known_type: None,
        result_shape: None,
    }
}

/// The template page now, for `reason`, rendered where it is needed (rare: a contained panic,
/// a dropped generation) rather than risking another hop.
pub fn fallback_now(spare: &Spare, deps: &Deps, reason: FallbackReason, why: &str) -> UiEntry {
    let job = spare_job(spare);
    let cx = Ctx::new(&job, deps);
    cx.fallback_with(deps.pages.try_template_page(&job.tool).ok(), reason, why, None)
}

impl<'a> Ctx<'a> {
    fn new(job: &'a Job, deps: &'a Deps) -> Self {
        let started = Instant::now();
        Ctx { job, deps, started, deadline: started + deps.settings.ceiling, asked: 0, input_tokens: 0, output_tokens: 0 }
    }
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
        progress: Arc::default(),
        failures: 0,
        known_type: job.known_type,
        result_shape: job.result_shape.clone(),
    };
    tokio::task::spawn_blocking(move || f(&prompts, &job)).await.unwrap_or_default()
}

/// A written page checked (post-processing, on the blocking pool: parsing a large page is CPU
/// work): the entry to serve, or why it was rejected; None when the runtime is shutting down.
async fn checked(
    cx: &Ctx<'_>,
    deps: &Deps,
    job: &Job,
    text: String,
    attempt: u32,
    stem: &str,
    ui_type: UiType,
) -> Option<Result<UiEntry, postprocess::Rejection>> {
    let tool_name = job.tool.get("name").and_then(Value::as_str).unwrap_or_default();
    tracing::debug!(component = "generation", event = "answer", request_id = %job.request_id, tool_name = %tool_name, attempt, answer = %shorten(&text, deps.settings.redact), "raw LLM answer");
    if let Some(dir) = &deps.settings.debug_dir {
        debug_files::write(dir, &format!("{stem}.answer-{attempt}.txt"), &text);
    }
    job.progress.set_phase(Phase::Checking);
    let processed = match tokio::task::spawn_blocking(move || postprocess::process(&text)).await {
        Ok(p) => p,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()), // contained by run_contained
        Err(_) => return None,
    };
    Some(match processed {
        Ok(p) => {
            if let Some(dir) = &deps.settings.debug_dir {
                debug_files::write(dir, &format!("{stem}.html"), &p.html);
            }
            let kind = if p.repairs.is_empty() { PageKind::Generated } else { PageKind::Repaired };
            let mut e = cx.entry(p.html, kind, None, Some(ui_type));
            e.repairs = p.repairs;
            e.warnings = p.warnings;
            tracing::info!(component = "generation", event = "generated", request_id = %job.request_id, tool_name = %tool_name, kind = kind.as_str(), attempt, duration_ms = e.duration_ms, "page generated");
            Ok(e)
        }
        Err(rej) => {
            tracing::warn!(component = "generation", event = "rejected", request_id = %job.request_id, tool_name = %tool_name, attempt, reason = rej.reason(), error = %rej, "generated page rejected");
            Err(rej)
        }
    })
}

pub async fn run(job: Job, deps: Arc<Deps>) -> Outcome {
    let tool_name = job.tool.get("name").and_then(Value::as_str).unwrap_or_default();
    if crate::process::faults::generation_panics(tool_name) {
        panic!("injected fault: generation_panic:{tool_name}");
    }
    let mut cx = Ctx::new(&job, &deps);
    if deps.llm.is_none() {
        return Outcome { entry: cx.fallback(FallbackReason::Offline, "", None).await, classified: None };
    }
    let tool_name = job.tool.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
    let ui_type = match job.known_type {
        Some(t) => t,
        None => match cx.ask(deps.prompts.system(), render(&deps, &job, |p, j| p.classify(&j.tool)).await, CLASSIFY_TOKENS, false).await {
            Ok(answer) => {
                tracing::debug!(component = "generation", event = "classified", request_id = %job.request_id, tool_name = %tool_name, answer = %shorten(&answer.text, deps.settings.redact), "classification");
                parse_classification(&answer.text)
            }
            Err(e) => return Outcome { entry: cx.fallback(FallbackReason::Llm(e.code), &e.message, None).await, classified: None },
        },
    };
    let classified = job.known_type.is_none().then_some(ui_type);
    if classified.is_some() {
        crate::generation::classified_hook::note(ui_type); // shared now, before the page is asked for
    }
    // Asking for changes is asking for a custom page: refinements override "minimal".
    if ui_type == UiType::Minimal && job.refinements.is_empty() {
        return Outcome { entry: cx.fallback(FallbackReason::Minimal, "", Some(ui_type)).await, classified };
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
    let mut last_problem = (FallbackReason::Llm(LlmFailure::Timeout), String::from("the ceiling was reached before the first attempt"));
    // After a rejected or cut page the next attempt is told what was wrong (the repair prompt).
    let mut asking = user.clone();
    for attempt in 0..=deps.settings.max_retries {
        if cx.remaining().is_zero() {
            break;
        }
        let answered = cx.ask(system.clone(), asking.clone(), deps.settings.max_tokens, true).await;
        if let (Ok(a), Some((first, writing))) = (&answered, job.progress.page_timing()) {
            deps.pace.record(a.text.chars().count() as u64, first, writing);
        }
        match answered {
            Ok(answer) if answer.stop == Stop::Truncated => {
                let chars = answer.text.chars().count();
                tracing::warn!(component = "generation", event = "truncated", request_id = %job.request_id, tool_name = %tool_name, attempt, chars, max_tokens = deps.settings.max_tokens, "the page was cut at the token limit: asking for a more compact one");
                last_problem = (
                    FallbackReason::Llm(LlmFailure::Truncated),
                    format!(
                        "every answer was cut at the {}-token limit (llm.maxTokens); the last had {chars} characters",
                        deps.settings.max_tokens
                    ),
                );
                asking = format!("{user}{COMPACT_NOTE}");
            }
            Ok(answer) => match checked(&cx, &deps, &job, answer.text, attempt, &stem, ui_type).await {
                Some(Ok(entry)) => return Outcome { entry, classified },
                Some(Err(rej)) => {
                    last_problem = (FallbackReason::Rejected(rej.reason().to_string()), rej.to_string());
                    asking = format!("{user}{REPAIR_NOTE}{rej}. Write the whole page again with that fixed.\n");
                }
                None => break, // the runtime is shutting down
            },
            Err(e) => {
                tracing::warn!(component = "generation", event = "llm_error", request_id = %job.request_id, tool_name = %tool_name, attempt, code = e.code.as_str(), retryable = e.retryable, error = %e.message, "LLM request failed");
                last_problem = (FallbackReason::Llm(e.code), e.message.clone());
                if !e.retryable || attempt == deps.settings.max_retries {
                    break;
                }
                match next_wait(&e, attempt, cx.remaining()) {
                    Some(wait) => {
                        job.progress.set_phase(Phase::Retrying);
                        tokio::time::sleep(wait).await
                    }
                    None => break,
                }
            }
        }
    }
    Outcome { entry: cx.fallback(last_problem.0, &last_problem.1, Some(ui_type)).await, classified }
}
