//! Pure post-processing of an LLM's answer into a page that can be served: extract the document,
//! validate it, repair what can be repaired, and rewrite the ext-apps import to
//! the inlined View runtime. Either a page that loads with no unresolved import, or a rejection
//! that says why (the caller then serves the template).

use std::sync::LazyLock;

use regex::Regex;
use scraper::{Html, Selector};

use crate::generation::scripts;
use crate::generation::templates::RUNTIME_JS;

pub const MAX_PAGE_BYTES: usize = 500 * 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    Empty,
    NotHtml,
    Truncated,
    TooLarge(usize),
    ExternalScript(String),
    ExternalStylesheet(String),
    InlineHandler(String),
    PromptInjection(String),
    NoAppConnection,
    UnresolvedImport(String),
    /// An inline script the browser could not parse.
    ScriptSyntax(crate::generation::scripts::ScriptError),
}

impl Rejection {
    /// A short, bounded reason label (for metrics and `_ui_inspect`).
    pub fn reason(&self) -> &'static str {
        match self {
            Rejection::Empty => "empty",
            Rejection::NotHtml => "not_html",
            Rejection::Truncated => "truncated",
            Rejection::TooLarge(_) => "too_large",
            Rejection::ExternalScript(_) => "external_script",
            Rejection::ExternalStylesheet(_) => "external_stylesheet",
            Rejection::InlineHandler(_) => "inline_handler",
            Rejection::PromptInjection(_) => "prompt_injection",
            Rejection::NoAppConnection => "no_app_connection",
            Rejection::UnresolvedImport(_) => "unresolved_import",
            Rejection::ScriptSyntax(_) => "script_syntax",
        }
    }
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::Empty => write!(f, "the answer is empty"),
            Rejection::NotHtml => write!(f, "the answer is not an HTML document"),
            Rejection::Truncated => write!(f, "the document is cut off (no </html>)"),
            Rejection::TooLarge(n) => write!(f, "the page is {n} bytes, over the {MAX_PAGE_BYTES} byte limit"),
            Rejection::ExternalScript(s) => {
                write!(f, "external script {s:?} (the sandbox blocks it)")
            }
            Rejection::ExternalStylesheet(s) => {
                write!(f, "external stylesheet {s:?} (the sandbox blocks it)")
            }
            Rejection::InlineHandler(s) => write!(f, "inline event handler attribute {s:?}"),
            Rejection::PromptInjection(s) => write!(f, "the answer reads like instructions or commentary, not a page ({s:?})"),
            Rejection::NoAppConnection => write!(f, "the page never creates an App, so it cannot talk to the host"),
            Rejection::ScriptSyntax(e) => write!(f, "{e} (the browser would run nothing and show a blank page)"),
            Rejection::UnresolvedImport(s) => {
                write!(f, "import of {s:?}, which no host can resolve")
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Processed {
    pub html: String,
    /// What was repaired (empty: the page was served as written, level 0).
    pub repairs: Vec<String>,
    pub warnings: Vec<String>,
}

/// Names the inlined runtime provides (`globalThis.McpGenUiRuntime`).
pub const RUNTIME_EXPORTS: &[&str] =
    &["App", "PostMessageTransport", "applyDocumentTheme", "applyHostStyleVariables", "applyHostFonts", "PROTOCOL_VERSION"];

static FENCE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?is)```(?:html|htm)?\s*\n(.*?)```").expect("valid regex"));
static EXT_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"import\s*\{([^}]*)\}\s*from\s*["']@modelcontextprotocol/ext-apps(?:/[\w-]+)?["']\s*;?"#).expect("valid regex")
});
static EXT_IMPORT_NS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"import\s*\*\s*as\s+(\w+)\s*from\s*["']@modelcontextprotocol/ext-apps(?:/[\w-]+)?["']\s*;?"#).expect("valid regex")
});
static ANY_IMPORT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?m)(?:^|[;\s])import\s*(?:[\w*{}\s,]+from\s*)?["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)"#).expect("valid regex")
});
static NEW_APP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?:const|let|var)\s+(\w+)\s*=\s*new\s+(?:\w+\.)?\w*App\s*\(").expect("valid regex"));
static CSS_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"(?i)@import\s+(?:url\()?\s*["']?((?:https?:)?//[^"')\s;]+)"#).expect("valid regex"));

const INJECTION_MARKERS: &[&str] = &[
    "ignore previous instructions",
    "ignore all previous instructions",
    "ignore the above instructions",
    "disregard previous instructions",
    "disregard the above",
    "as an ai language model",
    "new instructions:",
    "system prompt:",
    "i cannot help with",
    "i can't help with",
    "i'm sorry, but i can",
];

/// The document inside the answer: a fenced block, or from `<!doctype`/`<html` to `</html>`.
pub fn extract(raw: &str) -> Result<String, Rejection> {
    let raw = raw.trim();
    if raw.is_empty() {
        return Err(Rejection::Empty);
    }
    let body = FENCE.captures(raw).map(|c| c.get(1).expect("group 1").as_str()).unwrap_or(raw);
    let lower = body.to_ascii_lowercase();
    let start = lower.find("<!doctype").or_else(|| lower.find("<html"));
    let Some(start) = start else {
        return Err(Rejection::NotHtml);
    };
    let Some(end) = lower.rfind("</html>") else {
        return Err(Rejection::Truncated);
    };
    if end < start {
        return Err(Rejection::Truncated);
    }
    Ok(body[start..end + "</html>".len()].to_string())
}

fn sel(s: &str) -> Selector {
    Selector::parse(s).expect("valid selector")
}

/// Hard checks and warnings on a document.
fn validate(html: &str) -> Result<Vec<String>, Rejection> {
    if html.len() > MAX_PAGE_BYTES {
        return Err(Rejection::TooLarge(html.len()));
    }
    let lower = html.to_ascii_lowercase();
    if let Some(m) = INJECTION_MARKERS.iter().find(|m| lower.contains(*m)) {
        return Err(Rejection::PromptInjection((*m).to_string()));
    }
    let doc = Html::parse_document(html);
    for s in doc.select(&sel("script[src]")) {
        let src = s.value().attr("src").unwrap_or_default();
        if !src.trim_start().starts_with("data:") {
            return Err(Rejection::ExternalScript(src.to_string()));
        }
    }
    for l in doc.select(&sel("link[href]")) {
        let rel = l.value().attr("rel").unwrap_or_default().to_ascii_lowercase();
        if rel.split_whitespace().any(|r| matches!(r, "stylesheet" | "modulepreload" | "preload" | "import")) {
            return Err(Rejection::ExternalStylesheet(l.value().attr("href").unwrap_or_default().to_string()));
        }
    }
    for style in doc.select(&sel("style")) {
        if let Some(c) = CSS_IMPORT.captures(&style.text().collect::<String>()) {
            return Err(Rejection::ExternalStylesheet(c[1].to_string()));
        }
    }
    for el in doc.select(&sel("*")) {
        if let Some((name, _)) = el.value().attrs().find(|(n, _)| n.len() > 2 && n.to_ascii_lowercase().starts_with("on")) {
            return Err(Rejection::InlineHandler(format!("{}={}", name, el.value().name())));
        }
    }
    let scripts: String = doc.select(&sel("script")).map(|s| s.text().collect::<String>()).collect::<Vec<_>>().join("\n");
    let mut warnings = Vec::new();
    for (pat, what) in [
        ("eval(", "uses eval"),
        ("new Function", "uses new Function"),
        ("document.write", "uses document.write"),
        ("parent.", "touches window.parent"),
        ("top.", "touches window.top"),
        ("opener.", "touches window.opener"),
    ] {
        let hit = if pat.ends_with('.') {
            Regex::new(&format!(r"(?:^|[^\w.]){}", regex::escape(pat))).expect("valid regex").is_match(&scripts)
        } else {
            scripts.contains(pat)
        };
        if hit {
            warnings.push(what.to_string());
        }
    }
    Ok(warnings)
}

/// Turns `{ App, PostMessageTransport as T }` into `{ App, PostMessageTransport: T }`, checking
/// every name is one the runtime provides.
fn destructure(names: &str) -> Result<String, Rejection> {
    let mut parts = Vec::new();
    for item in names.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let mut words = item.split_whitespace();
        let name = words.next().unwrap_or_default();
        if !RUNTIME_EXPORTS.contains(&name) {
            return Err(Rejection::UnresolvedImport(format!("@modelcontextprotocol/ext-apps: {name}")));
        }
        parts.push(match (words.next(), words.next()) {
            (Some("as"), Some(alias)) => format!("{name}: {alias}"),
            _ => name.to_string(),
        });
    }
    Ok(parts.join(", "))
}

/// Extract, validate, repair, rewrite. The result has no import that cannot resolve.
pub fn process(raw: &str) -> Result<Processed, Rejection> {
    let mut html = extract(raw)?;
    validate(&html)?;
    let mut repairs = Vec::new();

    // Rewrite the SDK import to the runtime global, in every form LLMs write it.
    let mut failure = None;
    html = EXT_IMPORT
        .replace_all(&html, |c: &regex::Captures| match destructure(&c[1]) {
            Ok(d) => format!("const {{ {d} }} = globalThis.McpGenUiRuntime;"),
            Err(e) => {
                failure = Some(e);
                String::new()
            }
        })
        .into_owned();
    if let Some(e) = failure {
        return Err(e);
    }
    html = EXT_IMPORT_NS.replace_all(&html, "const $1 = globalThis.McpGenUiRuntime;").into_owned();
    let uses_runtime = html.contains("globalThis.McpGenUiRuntime");

    let Some(app_var) = NEW_APP.captures(&html).map(|c| c[1].to_string()) else {
        return Err(Rejection::NoAppConnection);
    };
    if !uses_runtime && !html.contains("McpGenUiRuntime") {
        // `new App(` without an import: define App where the script starts.
        let at = NEW_APP.find(&html).map(|m| m.start()).unwrap_or(0);
        html = insert_in_script_at(&html, at, "const { App } = globalThis.McpGenUiRuntime;\n");
        repairs.push("added the missing App import".to_string());
    }
    if let Some(spec) = ANY_IMPORT.captures_iter(&html).filter_map(|c| c.get(1).or_else(|| c.get(2)).map(|m| m.as_str().to_string())).next()
    {
        return Err(Rejection::UnresolvedImport(spec));
    }
    let mut tail = String::new();
    if !html.contains("ontoolresult") {
        tail.push_str(&format!(
            "\n{app_var}.ontoolresult = (r) => {{ let el = document.getElementById('mcp-gen-ui-result'); if (!el) {{ el = document.createElement('pre'); el.id = 'mcp-gen-ui-result'; el.style.whiteSpace = 'pre-wrap'; document.body.appendChild(el); }} el.textContent = JSON.stringify(r.structuredContent ?? r.content ?? r, null, 2); }};\n"
        ));
        repairs.push("added a tool-result handler".to_string());
    }
    if !Regex::new(&format!(r"{}\s*\.\s*connect\s*\(", regex::escape(&app_var))).expect("valid regex").is_match(&html) {
        tail.push_str(&format!("\n{app_var}.connect().catch((e) => console.warn('mcp-gen-ui: connect failed', e));\n"));
        repairs.push("added the missing app.connect()".to_string());
    }
    if !tail.is_empty() {
        // Append to the script that creates the App, right before its closing tag.
        let at = NEW_APP.find(&html).map(|m| m.start()).unwrap_or(0);
        if let Some(close) = html[at..].find("</script>") {
            html.insert_str(at + close, &tail);
        }
    }
    let has_error_handler =
        ["unhandledrejection", "window.onerror", "addEventListener(\"error\"", "addEventListener('error'"].iter().any(|p| html.contains(p));
    let error_handler = if has_error_handler {
        ""
    } else {
        repairs.push("added an error handler".to_string());
        ERROR_HANDLER
    };
    // The page's own scripts, numbered as the model wrote them (the runtime is known good).
    scripts::check(&html).map_err(Rejection::ScriptSyntax)?;
    // Warnings are about what the model wrote, so they are read before the runtime goes in.
    let warnings = validate(&html)?;
    html = inject_head(&html, &format!("<script>{RUNTIME_JS}</script>{error_handler}"));
    Ok(Processed { html, repairs, warnings })
}

/// Shows script errors in the page instead of leaving it blank.
const ERROR_HANDLER: &str = "<script>(function(){function show(m){var d=document.getElementById('mcp-gen-ui-error');if(!d){d=document.createElement('div');d.id='mcp-gen-ui-error';d.setAttribute('role','alert');d.style.cssText='margin:8px;padding:8px;border:1px solid #b42318;color:#b42318;font:13px system-ui';(document.body||document.documentElement).appendChild(d);}d.textContent='Error: '+m;}window.addEventListener('error',function(e){show(e.message||'script error');});window.addEventListener('unhandledrejection',function(e){show((e.reason&&e.reason.message)||String(e.reason));});})();</script>";

/// Inserts `code` at the start of the `<script>` that contains byte offset `at`.
fn insert_in_script_at(html: &str, at: usize, code: &str) -> String {
    let lower = html[..at].to_ascii_lowercase();
    let Some(open) = lower.rfind("<script") else {
        return html.to_string();
    };
    let Some(gt) = html[open..].find('>') else {
        return html.to_string();
    };
    let pos = open + gt + 1;
    format!("{}{}{}", &html[..pos], code, &html[pos..])
}

/// The check every page made here passes (the tests hold the pipeline's pages, the template
/// and the provisional page to it): valid per the table, the runtime inlined, and no import
/// left that a host would have to resolve.
pub fn servable(html: &str) -> Result<Vec<String>, Rejection> {
    let warnings = validate(html)?;
    if let Some(spec) = ANY_IMPORT.captures_iter(html).filter_map(|c| c.get(1).or_else(|| c.get(2)).map(|m| m.as_str().to_string())).next()
    {
        return Err(Rejection::UnresolvedImport(spec));
    }
    if !has_runtime(html) {
        return Err(Rejection::NoAppConnection);
    }
    scripts::check(html).map_err(Rejection::ScriptSyntax)?;
    Ok(warnings)
}

/// Whether the runtime is inlined: the (minified) runtime sets this global to its API.
fn has_runtime(html: &str) -> bool {
    html.contains("globalThis.McpGenUiRuntime={")
}

/// Puts `snippet` first in `<head>` (creating one if needed), so the runtime exists before any
/// page script runs.
fn inject_head(html: &str, snippet: &str) -> String {
    let lower = html.to_ascii_lowercase();
    if let Some(h) = lower.find("<head") {
        if let Some(gt) = lower[h..].find('>') {
            let at = h + gt + 1;
            return format!("{}{}{}", &html[..at], snippet, &html[at..]);
        }
    }
    if let Some(h) = lower.find("<html") {
        if let Some(gt) = lower[h..].find('>') {
            let at = h + gt + 1;
            return format!("{}<head>{}</head>{}", &html[..at], snippet, &html[at..]);
        }
    }
    format!("{snippet}{html}")
}

#[cfg(test)]
mod tests;
