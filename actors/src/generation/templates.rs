//! Renders the pages served for `ui://` resources: the template UI (Handlebars for the shell,
//! with the View runtime and the page script inlined, and the tool's input schema embedded as
//! JSON; the page builds its form from it) and the emergency page. Templates are compiled into
//! the binary so that a deployed service cannot lose them.

use handlebars::{Handlebars, RenderError};
use serde_json::{json, Value};

use crate::generation::template_form;

/// In every cache key: pages inline the runtime, so a runtime that changes makes new pages
/// (4: FastMCP results unwrapped for the page; 5: a page can be put in another's place; 6: the
/// Apps SDK dialect; 7: the page script in parts, an inherited key no file type). Not changed
/// by serving the scripts minified: a page kept from before carries the same runtime
/// unminified and works the same, and writing every page again would cost what writing it did.
pub const TEMPLATE_VERSION: &str = "7";
// The scripts pages carry, minified by build.rs from `templates/` (at build time: the binary
// carries neither the minifier nor the work; ARCHITECTURE.md says why they are minified).
/// The View runtime every page carries: MCP Apps over postMessage (`runtime.js`), then the
/// same App API over an Apps SDK host's `window.openai` (`apps_sdk.js`).
pub const RUNTIME_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/min.runtime.js"));
/// The template page's script: the form built from the schema, the JSON view, the confirmation
/// and the result rendering, from its parts in `templates/page/` (build.rs has their order).
pub const PAGE_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/min.page.js"));
/// The provisional page's watcher: follows the page being written and puts it in place.
pub const PROVISIONAL_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/min.provisional.js"));
/// The call_tool page's script: opens the called tool's page in its place.
pub const CALL_TOOL_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/min.call_tool.js"));
const MINIMAL: &str = include_str!("../../../templates/minimal.hbs");
const EMERGENCY: &str = include_str!("../../../templates/emergency.html");
/// How long each of the provisional page's status calls waits for the page (ms).
const PROVISIONAL_WAIT_MS: u64 = 2_500;
const CALL_TOOL: &str = include_str!("../../../templates/call_tool.html");
/// The approvals page's script: the held calls an approver may decide, with their buttons.
pub const APPROVALS_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/min.approvals.js"));
const APPROVALS: &str = include_str!("../../../templates/approvals.html");

/// The page of `_ui_approvals` (static: made once).
pub fn approvals_page() -> &'static str {
    static PAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        APPROVALS
            .replace("__TEMPLATE_VERSION__", TEMPLATE_VERSION)
            .replace("__RUNTIME__", RUNTIME_JS)
            .replace("__APPROVALS_JS__", APPROVALS_JS)
    })
}

/// The scripts as written, assembled by build.rs: what the tests hold the served ones to.
#[cfg(test)]
pub mod sources {
    pub const RUNTIME: &str = include_str!(concat!(env!("OUT_DIR"), "/runtime.js"));
    pub const PAGE: &str = include_str!(concat!(env!("OUT_DIR"), "/page.js"));
    pub const PROVISIONAL: &str = include_str!(concat!(env!("OUT_DIR"), "/provisional.js"));
    pub const CALL_TOOL: &str = include_str!(concat!(env!("OUT_DIR"), "/call_tool.js"));
}

/// The page of search mode's `call_tool` (static: made once).
pub fn call_tool_page() -> &'static str {
    static PAGE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    PAGE.get_or_init(|| {
        let cfg = json!({"statusTool": crate::mcp::ui_meta::PAGE_STATUS_TOOL, "waitMs": PROVISIONAL_WAIT_MS, "version": TEMPLATE_VERSION});
        CALL_TOOL
            .replace("__TEMPLATE_VERSION__", TEMPLATE_VERSION)
            .replace("__CONFIG_JSON__", &script_safe_json(&cfg))
            .replace("__RUNTIME__", RUNTIME_JS)
            .replace("__CALL_TOOL_JS__", CALL_TOOL_JS)
    })
}

pub struct UiPages {
    hb: Handlebars<'static>,
}

/// JSON safe inside a `<script>` element: `</script>` and `<!--` cannot appear.
pub fn script_safe_json(v: &Value) -> String {
    serde_json::to_string(v).expect("a Value serializes").replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026")
}

impl UiPages {
    pub fn new() -> Self {
        let mut hb = Handlebars::new();
        hb.set_strict_mode(false);
        hb.register_template_string("minimal", MINIMAL).expect("templates/minimal.hbs is valid Handlebars");
        UiPages { hb }
    }

    /// The template UI, or why it could not be rendered.
    pub fn try_template_page(&self, tool: &Value) -> Result<String, RenderError> {
        self.render(tool, false)
    }

    /// The template UI shown while the tool's page is being written: it says so, follows the
    /// writing (`_ui_page_status`) and puts the written page in its place.
    pub fn provisional_page(&self, tool: &Value) -> Result<String, RenderError> {
        self.render(tool, true)
    }

    fn render(&self, tool: &Value, provisional: bool) -> Result<String, RenderError> {
        let name = tool.get("name").and_then(Value::as_str).unwrap_or("tool");
        let schema = template_form::form_schema(tool);
        let confirm = template_form::needs_confirmation(tool);
        let meta = json!({
            "name": name,
            "templateVersion": TEMPLATE_VERSION,
            "confirm": confirm,
            "schemaTooLarge": schema.is_none(),
            "inputSchema": schema.unwrap_or(Value::Null),
        });
        let data = json!({
            "tool_name": name,
            "title": template_form::title(tool),
            "description": tool.get("description").and_then(Value::as_str).unwrap_or(""),
            "confirm": confirm,
            "runtime": RUNTIME_JS,
            "page_js": PAGE_JS,
            "tool_meta_json": script_safe_json(&meta),
            "template_version": TEMPLATE_VERSION,
            "provisional": provisional,
            "provisional_js": PROVISIONAL_JS,
            "provisional_json": script_safe_json(&json!({
                "tool": name,
                "statusTool": crate::mcp::ui_meta::PAGE_STATUS_TOOL,
                "waitMs": PROVISIONAL_WAIT_MS,
            })),
        });
        self.hb.render("minimal", &data)
    }

    /// The last resort: a static page that still connects and can call the tool with JSON.
    pub fn emergency_page(&self, tool_name: &str) -> String {
        EMERGENCY.replace("__TOOL_NAME_JSON__", &script_safe_json(&json!(tool_name))).replace("__RUNTIME__", RUNTIME_JS)
    }
}

impl Default for UiPages {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo_tool() -> Value {
        json!({"name": "get_forecast", "description": "Forecast <b>days</b>", "inputSchema": {"type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 14, "default": 7},
            "units": {"type": "string", "enum": ["metric", "imperial"]}}, "required": ["city"]}})
    }

    fn meta_of(html: &str) -> Value {
        let start = html.find(r#"<script type="application/json" id="tool-meta">"#).expect("meta script") + 47;
        let end = start + html[start..].find("</script>").expect("meta ends");
        serde_json::from_str(&html[start..end]).expect("meta is JSON")
    }

    #[test]
    fn template_embeds_the_schema_the_runtime_and_the_page_script() {
        let tool = demo_tool();
        let html = UiPages::new().try_template_page(&tool).unwrap();
        let meta = meta_of(&html);
        assert_eq!(meta["inputSchema"], tool["inputSchema"]);
        assert_eq!(meta["name"], "get_forecast");
        assert_eq!(meta["templateVersion"], TEMPLATE_VERSION);
        assert_eq!(meta["confirm"], true, "no annotations: the page asks first");
        assert!(html.contains(RUNTIME_JS) && html.contains(PAGE_JS));
        assert!(!html.contains("@modelcontextprotocol/ext-apps"));
        assert!(html.contains("Forecast &lt;b&gt;days&lt;/b&gt;"), "descriptions are escaped");
        assert!(html.contains("<form"));
        crate::generation::postprocess::servable(&html).expect("the template page is servable");
    }

    #[test]
    fn read_only_tools_do_not_ask_and_say_nothing_about_it() {
        let mut tool = demo_tool();
        tool["annotations"] = json!({"readOnlyHint": true});
        let html = UiPages::new().try_template_page(&tool).unwrap();
        assert_eq!(meta_of(&html)["confirm"], false);
        assert!(!html.contains("asks before running"));
    }

    #[test]
    fn the_provisional_page_is_the_template_that_follows_the_writing() {
        let pages = UiPages::new();
        let tool = demo_tool();
        let plain = pages.try_template_page(&tool).unwrap();
        assert!(!plain.contains("mcp-gen-ui-provisional") && !plain.contains(PROVISIONAL_JS));
        let html = pages.provisional_page(&tool).unwrap();
        assert!(html.contains(PROVISIONAL_JS) && html.contains(r#"id="mcp-gen-ui-writing""#));
        let open = r#"id="mcp-gen-ui-provisional">"#;
        let start = html.find(open).expect("the config") + open.len();
        let cfg: Value = serde_json::from_str(&html[start..start + html[start..].find("</script>").unwrap()]).unwrap();
        assert_eq!((cfg["tool"].as_str(), cfg["statusTool"].as_str()), (Some("get_forecast"), Some("_ui_page_status")));
        crate::generation::postprocess::servable(&html).expect("the provisional page is servable");
    }

    #[test]
    fn inlined_scripts_cannot_end_their_script_element() {
        for (name, js) in [
            ("runtime.js + apps_sdk.js", sources::RUNTIME),
            ("templates/page/*.js", sources::PAGE),
            ("provisional.js", sources::PROVISIONAL),
            ("call_tool.js", sources::CALL_TOOL),
            ("served runtime", RUNTIME_JS),
            ("served page script", PAGE_JS),
            ("served provisional.js", PROVISIONAL_JS),
            ("served call_tool.js", CALL_TOOL_JS),
        ] {
            let lower = js.to_ascii_lowercase();
            assert!(!lower.contains("</script") && !lower.contains("<!--"), "{name} would break out of <script>");
            assert!(!js.contains("innerHTML") && !js.contains("insertAdjacentHTML"), "{name} must not build HTML from strings");
        }
    }

    #[test]
    fn hostile_schemas_stay_data() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "properties": {
            "a</script><script>alert(1)</script>": {"type": "string", "description": "<!-- x --> {{runtime}}"}}}});
        let html = UiPages::new().try_template_page(&tool).unwrap();
        assert!(!html.contains("</script><script>alert(1)"));
        assert!(!html.contains("<!-- x -->"));
        assert_eq!(meta_of(&html)["inputSchema"], tool["inputSchema"]);
    }

    #[test]
    fn too_large_schemas_get_a_json_editor() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object", "description": "x".repeat(template_form::MAX_SCHEMA_BYTES)}});
        let meta = meta_of(&UiPages::new().try_template_page(&tool).unwrap());
        assert_eq!((meta["schemaTooLarge"].clone(), meta["inputSchema"].clone()), (json!(true), Value::Null));
    }

    #[test]
    fn hostile_names_cannot_break_out_of_the_meta_script() {
        let tool = json!({"name": "x</script><script>alert(1)</script>", "inputSchema": {}});
        let html = UiPages::new().try_template_page(&tool).unwrap();
        assert!(!html.contains("</script><script>alert(1)"));
    }

    #[test]
    fn emergency_page_names_the_tool() {
        let html = UiPages::new().emergency_page("t");
        assert!(html.contains("\"t\"") && html.contains("McpGenUiRuntime"));
    }
}
