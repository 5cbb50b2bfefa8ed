use std::sync::Arc;

use serde_json::json;

use super::*;

fn tool(server: &str, name: &str) -> ExposedTool {
    ExposedTool {
        server: Arc::from(server),
        bare: name.into(),
        name: format!("{server}__{name}"),
        def: Arc::new(
            json!({"name": format!("{server}__{name}"), "description": "d", "annotations": {"readOnlyHint": false}, "inputSchema": {"type": "object"}}),
        ),
        page: format!("ui://{server}/{name}"),
        hash: String::new(),
        ui: true,
    }
}

fn spec(tools: &[&str]) -> ProfileSpec {
    ProfileSpec { name: "small".into(), tools: tools.iter().map(|s| s.to_string()).collect(), ..Default::default() }
}

#[test]
fn globs_select_and_overrides_show() {
    let mut s = spec(&["memory__*", "time__*"]);
    let mut annotations = serde_json::Map::new();
    annotations.insert("readOnlyHint".into(), json!(true));
    s.overrides.insert(
        "memory__read_graph".into(),
        Override { name: Some("graph".into()), description: Some("The graph".into()), annotations: Some(annotations) },
    );
    let p = Profile::compile(&s).unwrap();
    let (graph, forecast) = (tool("memory", "read_graph"), tool("weather", "get_forecast"));
    assert!(p.includes(&graph) && p.listed(&graph) && !p.includes(&forecast));
    let shown = p.present(&graph, (*graph.def).clone());
    assert_eq!((shown["name"].as_str(), shown["description"].as_str()), (Some("graph"), Some("The graph")));
    assert_eq!(shown["annotations"]["readOnlyHint"], json!(true));
    assert_eq!(p.resolve("graph"), "memory__read_graph");
    assert_eq!(p.resolve("memory__read_graph"), "memory__read_graph", "the catalog's name still reaches it (its page calls by it)");
}

#[test]
fn search_mode_lists_the_pinned_only() {
    let s = ProfileSpec { discovery: Discovery::Search, pin: vec!["weather__*".into()], ..spec(&["*"]) };
    let p = Profile::compile(&s).unwrap();
    assert!(p.listed(&tool("weather", "get_forecast")));
    let graph = tool("memory", "read_graph");
    assert!(p.includes(&graph) && !p.listed(&graph), "found by search, callable, not listed");
}

#[test]
fn mistakes_are_named() {
    let e = Profile::compile(&ProfileSpec { name: "Big One".into(), ..spec(&["*"]) }).unwrap_err();
    assert_eq!(e.field, "(name)");
    assert_eq!(Profile::compile(&spec(&[])).unwrap_err().field, "tools");
    assert_eq!(Profile::compile(&spec(&["a", ""])).unwrap_err().field, "tools[1]");
    let e = Profile::compile(&ProfileSpec { pin: vec!["x".into()], ..spec(&["*"]) }).unwrap_err();
    assert_eq!(e.field, "pin");
    let mut s = ProfileSpec { discovery: Discovery::Search, ..spec(&["*"]) };
    s.overrides.insert("a__b".into(), Override { name: Some("call_tool".into()), ..Default::default() });
    assert_eq!(Profile::compile(&s).unwrap_err().field, "overrides.a__b.name");
    let mut s = spec(&["*"]);
    s.overrides.insert("a__b".into(), Override { name: Some("x".into()), ..Default::default() });
    s.overrides.insert("a__c".into(), Override { name: Some("x".into()), ..Default::default() });
    assert!(Profile::compile(&s).unwrap_err().message.contains("must differ"));
}

#[test]
fn the_index_is_made_again_for_a_new_catalog() {
    let p = Profile::compile(&ProfileSpec { discovery: Discovery::Search, ..spec(&["*"]) }).unwrap();
    let one = Arc::new(Catalog::default());
    assert!(p.index_for(&one).is_none());
    let i = p.build_index(&one);
    assert!(Arc::ptr_eq(&i, &p.index_for(&one).unwrap()));
    assert!(p.index_for(&Arc::new(Catalog::default())).is_none());
}
