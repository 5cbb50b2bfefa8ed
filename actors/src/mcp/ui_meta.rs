//! Pure functions that add the MCP Apps surface to what the upstream says: `_meta.ui` on tools,
//! one `ui://` resource per tool, and the capability check on a host's `initialize`.

use serde_json::{json, Map, Value};

use crate::page::{UiEntry, Writing};

pub const EXTENSION: &str = "io.modelcontextprotocol/ui";
pub const MIME: &str = "text/html;profile=mcp-app";
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

/// True when the host's `initialize` params declare the MCP Apps extension. The official
/// helper checks only the key; a host that lists MIME types must list ours.
pub fn host_supports_ui(init_params: &Value) -> bool {
    let Some(ext) = init_params.pointer("/capabilities/extensions").and_then(|e| e.get(EXTENSION)) else {
        return false;
    };
    match ext.get("mimeTypes").and_then(Value::as_array) {
        Some(types) => types.iter().any(|t| t.as_str() == Some(MIME)),
        None => true,
    }
}

/// Adds `_meta.ui.resourceUri` (`page`, the tool's page made here) and the flat legacy key,
/// merged into the tool's own `_meta`: keys the upstream set (visibility, its own resourceUri)
/// win.
pub fn decorate_tool(tool: &Value, page: &str) -> Value {
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
    meta.entry("ui/resourceUri").or_insert(uri);
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

/// The `resources/list` entry for a tool's UI (`page`: its URI).
pub fn ui_resource(tool: &Value, page: &str, domain: Option<&str>) -> Option<Value> {
    let name = tool.get("name")?.as_str()?;
    let title = tool.get("title").and_then(Value::as_str).unwrap_or(name);
    Some(json!({
        "uri": page,
        "name": format!("{name} UI"),
        "title": format!("{title}: interactive UI"),
        "description": format!("Interactive UI for the {name} tool"),
        "mimeType": MIME,
        "_meta": {"ui": resource_ui_meta(domain)},
    }))
}

/// The `resources/read` result for a tool's UI page. Besides `_meta.ui`, `_meta["mcp-gen-ui"]`
/// says how the page was made (hosts ignore unknown `_meta` keys), so a fallback is visible;
/// `writing` marks the provisional page shown while the tool's page is being written.
pub fn ui_read_result(uri: &str, entry: &UiEntry, writing: Option<&Writing>, domain: Option<&str>) -> Value {
    let mut result = json!({
        "contents": [{
            "uri": uri,
            "mimeType": MIME,
            "text": entry.html,
            "_meta": {
                "ui": resource_ui_meta(domain),
                "mcp-gen-ui": {
                    "kind": entry.kind,
                    "uiType": entry.ui_type,
                    "fallbackReason": entry.fallback_reason,
                    "generatedAt": entry.generated_at,
                    "expiresAt": entry.expires_at,
                    "model": entry.model,
                },
            },
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
pub fn merge_capabilities(upstream: &Value, ui: bool) -> Value {
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
        let ext = caps.entry("extensions").or_insert_with(|| json!({}));
        if let Some(e) = ext.as_object_mut() {
            e.insert(EXTENSION.into(), json!({"mimeTypes": [MIME]}));
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
        let listed = ui_resource(&json!({"name": "t"}), "ui://t", Some("abc.example.com")).unwrap();
        assert_eq!(listed["_meta"]["ui"]["domain"], "abc.example.com");
    }

    #[test]
    fn decorate_merges_and_keeps_upstream_meta() {
        let t = json!({"name": "a", "_meta": {"x": 1, "ui": {"visibility": ["app"]}}});
        let d = decorate_tool(&t, "ui://a");
        assert_eq!(d["_meta"]["x"], 1);
        assert_eq!(d["_meta"]["ui"]["visibility"], json!(["app"]));
        assert_eq!(d["_meta"]["ui"]["resourceUri"], "ui://a");
        assert_eq!(d["_meta"]["ui/resourceUri"], "ui://a");
    }

    #[test]
    fn decorate_keeps_upstream_resource_uri() {
        let t = json!({"name": "a", "_meta": {"ui": {"resourceUri": "ui://own/page"}}});
        let d = decorate_tool(&t, "ui://a");
        assert_eq!(d["_meta"]["ui"]["resourceUri"], "ui://own/page");
        assert_eq!(d["_meta"]["ui/resourceUri"], "ui://own/page");
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
        let plain = merge_capabilities(&up, false);
        assert!(plain.get("resources").is_none());
        let ui = merge_capabilities(&up, true);
        assert_eq!(ui["resources"]["subscribe"], true);
        assert_eq!(ui["logging"], json!({}));
    }
}
