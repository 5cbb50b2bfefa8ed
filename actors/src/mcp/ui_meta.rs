//! Pure functions that add the MCP Apps surface to what the upstream says: `_meta.ui` on tools,
//! one `ui://` resource per tool, and the capability check on a host's `initialize`.

use serde_json::{json, Map, Value};

use crate::mcp::jsonrpc::At;
use crate::page::{UiEntry, Writing};

pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
pub const MIME: &str = "text/html;profile=mcp-app";
/// The media type of an Apps SDK widget (the OpenAI dialect), for hosts that speak only that.
pub const SKYBRIDGE_MIME: &str = "text/html+skybridge";
pub const SCHEME: &str = "ui://";
/// The names of the tools this service adds (`_ui_refine`, ...).
pub const UI_TOOL_PREFIX: &str = "_ui_";
/// The app-only tool a provisional page asks how far its page has got.
pub const PAGE_STATUS_TOOL: &str = "_ui_page_status";
/// The longest a `_ui_page_status` call waits for the page to be done.
pub const PAGE_STATUS_MAX_WAIT_MS: u64 = 10_000;

pub fn ui_uri(tool: &str) -> String {
    format!("{SCHEME}{tool}")
}

/// The tool name a `ui://` URI names, if it is one of ours.
pub fn tool_of_uri(uri: &str) -> Option<&str> {
    uri.strip_prefix(SCHEME).filter(|t| !t.is_empty())
}

/// Which dialects of UI metadata a host is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// MCP Apps only (`_meta.ui`): `ui.appsSdk: "off"`.
    McpApps,
    /// MCP Apps, and the Apps SDK's `openai/*` keys beside it: hosts that declare the extension.
    Both,
    /// The Apps SDK's keys only, pages as `text/html+skybridge`: hosts that declare nothing, with
    /// `ui.appsSdk: "undeclared"`.
    AppsSdk,
}

impl Dialect {
    pub fn mcp_apps(self) -> bool {
        self != Dialect::AppsSdk
    }

    pub fn apps_sdk(self) -> bool {
        self != Dialect::McpApps
    }

    /// The media type pages are served as.
    pub fn mime(self) -> &'static str {
        if self == Dialect::AppsSdk {
            SKYBRIDGE_MIME
        } else {
            MIME
        }
    }
}

/// `ui.appsSdk`: to whom the Apps SDK's keys are given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AppsSdk {
    /// To nobody.
    Off,
    /// To hosts that declare the MCP Apps extension (beside `_meta.ui`).
    #[default]
    Declared,
    /// Also to hosts that declare nothing (which then get pages, and the `_ui_*` tools).
    Undeclared,
}

/// The dialect a host with these `initialize` params is given (None: no UI at all).
pub fn host_dialect(init_params: &Value, apps_sdk: AppsSdk) -> Option<Dialect> {
    match (host_supports_ui(init_params), apps_sdk) {
        (true, AppsSdk::Off) => Some(Dialect::McpApps),
        (true, _) => Some(Dialect::Both),
        (false, AppsSdk::Undeclared) => Some(Dialect::AppsSdk),
        (false, _) => None,
    }
}

/// True when the host's `initialize` params declare the MCP Apps extension. The official
/// helper checks only the key; a host that lists MIME types must list ours.
pub fn host_supports_ui(init_params: &Value) -> bool {
    let Some(ext) = init_params.at("/capabilities/extensions").and_then(|e| e.get(EXTENSION)) else {
        return false;
    };
    match ext.get("mimeTypes").and_then(Value::as_array) {
        Some(types) => types.iter().any(|t| t.as_str() == Some(MIME)),
        None => true,
    }
}

/// Adds `_meta.ui.resourceUri` (`page`, the tool's page made here) and the flat legacy key,
/// and for the Apps SDK `openai/outputTemplate` (the same page) and `openai/widgetAccessible`
/// (the page calls tools), merged into the tool's own `_meta`: keys the upstream set
/// (visibility, its own resourceUri or outputTemplate) win.
pub fn decorate_tool(tool: &Value, page: &str, dialect: Dialect) -> Value {
    let mut tool = tool.clone();
    let Some(obj) = tool.as_object_mut() else {
        return tool;
    };
    let meta = obj.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let meta = meta.as_object_mut().expect("made an object above");
    let ui = meta.entry("ui").or_insert_with(|| Value::Object(Map::new()));
    if !ui.is_object() {
        *ui = Value::Object(Map::new());
    }
    let ui = ui.as_object_mut().expect("made an object above");
    let uri = ui.entry("resourceUri").or_insert_with(|| json!(page)).clone();
    if dialect.mcp_apps() {
        meta.entry("ui/resourceUri").or_insert(uri.clone());
    } else {
        // A host of the other dialect only: the MCP Apps keys are the upstream's own or none.
        if meta.get("ui").and_then(Value::as_object).is_some_and(|u| u.get("resourceUri") == Some(&json!(page))) {
            if let Some(u) = meta.get_mut("ui").and_then(Value::as_object_mut) {
                u.remove("resourceUri");
            }
            if meta.get("ui").and_then(Value::as_object).is_some_and(|u| u.is_empty()) {
                meta.remove("ui");
            }
        }
    }
    if dialect.apps_sdk() {
        meta.entry("openai/outputTemplate").or_insert(uri);
        meta.entry("openai/widgetAccessible").or_insert(json!(true));
    }
    tool
}

/// `_meta.ui` of every page this service serves: pages are self-contained (the runtime and
/// styles inline), so the CSP names no domain at all; a host-required sandbox `domain`
/// (`ui.domain`) passes through only when configured (a wrong one makes some hosts render
/// nothing).
pub fn resource_ui_meta(domain: Option<&str>) -> Value {
    let mut ui = json!({
        "prefersBorder": true,
        "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []},
    });
    if let Some(d) = domain {
        ui["domain"] = json!(d);
    }
    ui
}

/// The `_meta` of a page (a `resources/list` entry, a `resources/read` item) in `dialect`:
/// `ui` for MCP Apps; for the Apps SDK the same CSP (`openai/widgetCSP`: no domain at all), the
/// border, the domain when configured, and a description of the widget for the model.
pub fn page_meta(domain: Option<&str>, description: &str, dialect: Dialect) -> Map<String, Value> {
    let mut meta = Map::new();
    if dialect.mcp_apps() {
        meta.insert("ui".into(), resource_ui_meta(domain));
    }
    if dialect.apps_sdk() {
        meta.insert("openai/widgetCSP".into(), json!({"connect_domains": [], "resource_domains": []}));
        meta.insert("openai/widgetPrefersBorder".into(), json!(true));
        meta.insert("openai/widgetDescription".into(), json!(description));
        if let Some(d) = domain {
            meta.insert("openai/widgetDomain".into(), json!(d));
        }
    }
    meta
}

/// What a tool's page is, for the model (the Apps SDK's widget description).
pub fn widget_description(tool: &Value) -> String {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("tool");
    format!("An interactive view of the {name} tool: a form for its arguments and its result, which the user can read and call again.")
}

/// The `resources/list` entry for a tool's UI (`page`: its URI).
pub fn ui_resource(tool: &Value, page: &str, domain: Option<&str>, dialect: Dialect) -> Option<Value> {
    let name = tool.get("name")?.as_str()?;
    let title = tool.get("title").and_then(Value::as_str).unwrap_or(name);
    Some(json!({
        "uri": page,
        "name": format!("{name} UI"),
        "title": format!("{title}: interactive UI"),
        "description": format!("Interactive UI for the {name} tool"),
        "mimeType": dialect.mime(),
        "_meta": page_meta(domain, &widget_description(tool), dialect),
    }))
}

/// How a page is read: its sandbox domain (`ui.domain`), the dialect of the host, and the
/// description of the widget (Apps SDK).
pub struct PageFor<'a> {
    pub domain: Option<&'a str>,
    pub dialect: Dialect,
    pub description: String,
}

/// The `resources/read` result for a tool's UI page. Besides `_meta.ui` (and the Apps SDK's
/// keys), `_meta["mcp-gen-ui"]` says how the page was made (hosts ignore unknown `_meta` keys),
/// so a fallback is visible; `writing` marks the provisional page shown while the tool's page
/// is being written.
pub fn ui_read_result(uri: &str, entry: &UiEntry, writing: Option<&Writing>, page: &PageFor<'_>) -> Value {
    let mut meta = page_meta(page.domain, &page.description, page.dialect);
    meta.insert(
        "mcp-gen-ui".into(),
        json!({
            "kind": entry.kind,
            "uiType": entry.ui_type,
            "fallbackReason": entry.fallback_reason,
            "generatedAt": entry.generated_at,
            "expiresAt": entry.expires_at,
            "model": entry.model,
        }),
    );
    let mut result = json!({
        "contents": [{
            "uri": uri,
            "mimeType": page.dialect.mime(),
            "text": entry.html,
            "_meta": meta,
        }]
    });
    if let Some(w) = writing {
        let ours = &mut result["contents"][0]["_meta"]["mcp-gen-ui"];
        ours["provisional"] = json!(true);
        ours["provisionalReason"] = json!(format!(
            "the page for this tool is being written ({}, {} characters, {} s); this is the template meanwhile, and the written page replaces it once stored",
            w.phase.as_str(),
            w.chars,
            w.elapsed_ms / 1000
        ));
        ours["writing"] = serde_json::to_value(w).unwrap_or_default();
        ours["expiresAt"] = Value::Null;
    }
    result
}

/// What this service adds to the upstream's capabilities for a host that renders UIs.
/// `dialect`: the host's (None: no UI); only MCP Apps hosts are told of the extension.
pub fn merge_capabilities(upstream: &Value, dialect: Option<Dialect>) -> Value {
    let ui = dialect.is_some();
    let mut caps = upstream.as_object().cloned().unwrap_or_default();
    // We refresh tools on the upstream's list_changed and tell hosts, so listChanged holds.
    let tools = caps.entry("tools").or_insert_with(|| json!({}));
    if let Some(t) = tools.as_object_mut() {
        t.insert("listChanged".into(), json!(true));
    }
    if ui {
        let res = caps.entry("resources").or_insert_with(|| json!({}));
        if let Some(r) = res.as_object_mut() {
            r.insert("listChanged".into(), json!(true));
            r.insert("subscribe".into(), json!(true));
        }
        if dialect.is_some_and(Dialect::mcp_apps) {
            let ext = caps.entry("extensions").or_insert_with(|| json!({}));
            if let Some(e) = ext.as_object_mut() {
                e.insert(EXTENSION.into(), json!({"mimeTypes": [MIME]}));
            }
        }
    }
    Value::Object(caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_declare_an_empty_csp_and_a_domain_only_when_configured() {
        let ui = resource_ui_meta(None);
        assert_eq!(ui["csp"]["connectDomains"], json!([]), "pages are self-contained: no network origin at all");
        assert_eq!(ui["prefersBorder"], true);
        assert!(ui.get("domain").is_none());
        assert_eq!(resource_ui_meta(Some("abc.example.com"))["domain"], "abc.example.com");
        let listed = ui_resource(&json!({"name": "t"}), "ui://t", Some("abc.example.com"), Dialect::McpApps).unwrap();
        assert_eq!(listed["_meta"]["ui"]["domain"], "abc.example.com");
    }

    #[test]
    fn decorate_merges_and_keeps_upstream_meta() {
        let t = json!({"name": "a", "_meta": {"x": 1, "ui": {"visibility": ["app"]}}});
        let d = decorate_tool(&t, "ui://a", Dialect::McpApps);
        assert_eq!(d["_meta"]["x"], 1);
        assert_eq!(d["_meta"]["ui"]["visibility"], json!(["app"]));
        assert_eq!(d["_meta"]["ui"]["resourceUri"], "ui://a");
        assert_eq!(d["_meta"]["ui/resourceUri"], "ui://a");
    }

    #[test]
    fn decorate_keeps_upstream_resource_uri() {
        let t = json!({"name": "a", "_meta": {"ui": {"resourceUri": "ui://own/page"}}});
        let d = decorate_tool(&t, "ui://a", Dialect::Both);
        assert_eq!(d["_meta"]["ui"]["resourceUri"], "ui://own/page");
        assert_eq!(d["_meta"]["ui/resourceUri"], "ui://own/page");
        assert_eq!(d["_meta"]["openai/outputTemplate"], "ui://own/page", "the Apps SDK key names the same page");
    }

    #[test]
    fn each_dialect_gets_its_own_keys() {
        let t = json!({"name": "a", "_meta": {"openai/outputTemplate": "ui://widget/own.html"}});
        let both = decorate_tool(&json!({"name": "a"}), "ui://a", Dialect::Both);
        assert_eq!(
            (both["_meta"]["ui"]["resourceUri"].as_str(), both["_meta"]["openai/outputTemplate"].as_str()),
            (Some("ui://a"), Some("ui://a"))
        );
        assert_eq!(both["_meta"]["openai/widgetAccessible"], true);
        let mcp = decorate_tool(&json!({"name": "a"}), "ui://a", Dialect::McpApps);
        assert!(mcp["_meta"].get("openai/outputTemplate").is_none());
        let sdk = decorate_tool(&json!({"name": "a"}), "ui://a", Dialect::AppsSdk);
        assert!(sdk["_meta"].get("ui").is_none() && sdk["_meta"].get("ui/resourceUri").is_none(), "{sdk}");
        assert_eq!(sdk["_meta"]["openai/outputTemplate"], "ui://a");
        assert_eq!(
            decorate_tool(&t, "ui://a", Dialect::Both)["_meta"]["openai/outputTemplate"],
            "ui://widget/own.html",
            "the upstream's own wins"
        );
        let meta = page_meta(None, "d", Dialect::AppsSdk);
        assert_eq!(meta["openai/widgetCSP"], json!({"connect_domains": [], "resource_domains": []}));
        assert!(meta.get("ui").is_none() && page_meta(None, "d", Dialect::McpApps).get("openai/widgetCSP").is_none());
        assert_eq!(ui_resource(&json!({"name": "t"}), "ui://t", None, Dialect::AppsSdk).unwrap()["mimeType"], SKYBRIDGE_MIME);
    }

    #[test]
    fn who_gets_which_dialect() {
        let declared = json!({"capabilities": {"extensions": {EXTENSION: {"mimeTypes": [MIME]}}}});
        let plain = json!({"capabilities": {}});
        assert_eq!(host_dialect(&declared, AppsSdk::Declared), Some(Dialect::Both));
        assert_eq!(host_dialect(&declared, AppsSdk::Off), Some(Dialect::McpApps));
        assert_eq!(host_dialect(&plain, AppsSdk::Declared), None, "hosts that declare nothing see unchanged tools");
        assert_eq!(host_dialect(&plain, AppsSdk::Undeclared), Some(Dialect::AppsSdk));
    }

    #[test]
    fn ui_support_detection() {
        assert!(host_supports_ui(&json!({"capabilities": {"extensions": {EXTENSION: {"mimeTypes": [MIME]}}}})));
        assert!(host_supports_ui(&json!({"capabilities": {"extensions": {EXTENSION: {}}}})));
        assert!(!host_supports_ui(&json!({"capabilities": {"extensions": {EXTENSION: {"mimeTypes": ["text/html+mcp"]}}}})));
        assert!(!host_supports_ui(&json!({"capabilities": {}})));
    }

    #[test]
    fn uri_round_trip() {
        assert_eq!(tool_of_uri(&ui_uri("get_forecast")), Some("get_forecast"));
        assert_eq!(tool_of_uri("ui://"), None);
        assert_eq!(tool_of_uri("file:///x"), None);
    }

    #[test]
    fn capabilities_add_only_for_ui_hosts() {
        let up = json!({"tools": {}, "logging": {}});
        let plain = merge_capabilities(&up, None);
        assert!(plain.get("resources").is_none());
        assert!(merge_capabilities(&up, Some(Dialect::AppsSdk)).get("extensions").is_none());
        let ui = merge_capabilities(&up, Some(Dialect::Both));
        assert_eq!(ui["resources"]["subscribe"], true);
        assert_eq!(ui["logging"], json!({}));
    }
}
