//! The catalog: names, curation, pages, routing by name, and what changed.

use super::*;
use crate::messages::tool_list;

fn tool(name: &str) -> Value {
    json!({"name": name, "description": format!("{name} does it"), "inputSchema": {"type": "object"}})
}

fn server(name: &str, tools: &[Value], curation: Curation) -> ServerTools {
    ServerTools {
        server: Arc::from(name),
        naming: Naming::Prefixed(Arc::from(name)),
        curation: Arc::new(curation),
        tools: tool_list(tools.to_vec()),
    }
}

#[test]
fn one_server_behind_upstream_keeps_its_names() {
    let single = ServerTools {
        server: Arc::from("default"),
        naming: Naming::Bare,
        curation: Arc::default(),
        tools: tool_list(vec![tool("echo"), tool("add")]),
    };
    let c = Catalog::build(&[single]);
    assert_eq!(c.definitions(), vec![Arc::new(tool("echo")), Arc::new(tool("add"))], "unchanged, in order");
    assert_eq!(c.tool("echo").unwrap().page, "ui://echo");
    assert!(matches!(c.route("echo"), Route::Tool(t) if t.bare == "echo"));
    assert!(matches!(c.route("nope"), Route::Unknown));
}

#[test]
fn a_definition_shown_as_it_came_is_held_once() {
    let list = tool_list(vec![tool("echo"), tool("add")]);
    let mut curation = Curation::default();
    curation.descriptions.insert("echo".into(), "echo does it".into()); // the same as its own
    curation.descriptions.insert("add".into(), "Adds".into());
    let single = ServerTools { server: Arc::from("default"), naming: Naming::Bare, curation: Arc::new(curation), tools: list.clone() };
    let c = Catalog::build(std::slice::from_ref(&single));
    assert!(Arc::ptr_eq(&c.tool("echo").unwrap().def, &list[0]), "shared with the server's list");
    assert!(
        !Arc::ptr_eq(&c.tool("add").unwrap().def, &list[1]) && c.tool("add").unwrap().def["description"] == "Adds",
        "a copy where it differs"
    );
    let prefixed = Catalog::build(&[ServerTools { naming: Naming::Prefixed(Arc::from("a")), ..single }]);
    assert_eq!(prefixed.tool("a__echo").unwrap().def["name"], "a__echo", "a prefixed name is the copy's");
}

#[test]
fn several_servers_are_prefixed_and_bare_names_route_when_unique() {
    let c = Catalog::build(&[
        server("everything", &[tool("echo"), tool("add")], Curation::default()),
        server("memory", &[tool("add"), tool("read_graph")], Curation::default()),
    ]);
    let names: Vec<&str> = c.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["everything__echo", "everything__add", "memory__add", "memory__read_graph"]);
    assert_eq!(c.tool("memory__read_graph").unwrap().page, "ui://memory/read_graph");
    assert!(matches!(c.route("read_graph"), Route::Tool(t) if &*t.server == "memory"), "a bare name one server has");
    match c.route("add") {
        Route::Ambiguous(candidates) => assert_eq!(candidates, ["everything__add", "memory__add"]),
        other => panic!("{other:?}"),
    }
    assert_eq!(c.by_page("ui://everything/echo").unwrap().name, "everything__echo");
}

#[test]
fn curation_hides_renames_and_describes() {
    let curation = Curation {
        allow: vec![Glob::new("read_*").unwrap(), Glob::new("write_file").unwrap()],
        deny: vec![Glob::new("read_secret").unwrap()],
        rename: HashMap::from([("write_file".to_string(), "save".to_string())]),
        descriptions: HashMap::from([("read_file".to_string(), "Reads one file".to_string())]),
        ..Curation::default()
    };
    let c = Catalog::build(&[server("fs", &[tool("read_file"), tool("read_secret"), tool("write_file"), tool("delete")], curation)]);
    let names: Vec<&str> = c.tools().iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["fs__read_file", "fs__save"]);
    assert_eq!(c.tool("fs__read_file").unwrap().def["description"], "Reads one file");
    assert_eq!(c.tool("fs__save").unwrap().bare, "write_file", "a call goes upstream under the tool's own name");
    assert!(matches!(c.route("read_secret"), Route::Hidden(s) if &*s == "fs"), "a hidden tool cannot be called");
    assert!(matches!(c.route("fs__delete"), Route::Hidden(_)));
}

#[test]
fn a_servers_own_app_keeps_working_namespaced() {
    let mut app = tool("show");
    app["_meta"] =
        json!({"ui": {"resourceUri": "ui://widget/show.html", "visibility": ["model", "app"]}, "ui/resourceUri": "ui://widget/show.html"});
    let c = Catalog::build(&[server("apps", &[app], Curation::default())]);
    let def = &c.tool("apps__show").unwrap().def;
    assert_eq!(def["_meta"]["ui"]["resourceUri"], "ui://apps+widget/show.html");
    assert_eq!(def["_meta"]["ui/resourceUri"], "ui://apps+widget/show.html");
    assert_eq!(def["_meta"]["ui"]["visibility"], json!(["model", "app"]));
}

#[test]
fn no_two_tools_share_a_name() {
    // An upstream tool named like ours is renamed; a collision between servers gets a suffix.
    let single = ServerTools {
        server: Arc::from("default"),
        naming: Naming::Bare,
        curation: Arc::default(),
        tools: tool_list(vec![tool("_ui_refine")]),
    };
    let c = Catalog::build(&[single]);
    assert_eq!(c.tools()[0].name, "upstream_ui_refine");
    assert_eq!(c.tools()[0].bare, "_ui_refine");
    let c = Catalog::build(&[server("a", &[tool("_b")], Curation::default()), server("a_", &[tool("b")], Curation::default())]);
    let (x, y) = (&c.tools()[0].name, &c.tools()[1].name);
    assert_eq!(x, "a___b");
    assert_ne!(x, y);
    assert!(names::is_api_name(y) && c.collisions.len() == 1, "{y} {:?}", c.collisions);
}

#[test]
fn diffs_are_by_exposed_name_and_definition() {
    let before = Catalog::build(&[server("s", &[tool("a"), tool("b")], Curation::default())]);
    let mut b2 = tool("b");
    b2["description"] = json!("new");
    let after = Catalog::build(&[server("s", &[b2, tool("c")], Curation::default())]);
    let d = Catalog::diff(&before, &after);
    assert_eq!((d.added, d.removed, d.changed), (vec!["s__c".to_string()], vec!["s__a".to_string()], vec!["s__b".to_string()]));
}

#[test]
fn a_plain_name_keeps_its_owner_and_made_names_step_aside() {
    // `q.x` is not an API name: it is shown shortened, with a public hash. A tool that the
    // server lists under that very name takes it (plain names first); `q.x` steps aside.
    let derived = names::exposed_name("s", "q.x");
    let collider = derived.strip_prefix("s__").unwrap().to_string();
    for order in [vec![tool("q.x"), tool(&collider)], vec![tool(&collider), tool("q.x")]] {
        let c = Catalog::build(&[server("s", &order, Curation::default())]);
        let names: Vec<&str> = c.tools().iter().map(|t| t.name.as_str()).collect();
        let unique: HashSet<&&str> = names.iter().collect();
        assert_eq!(unique.len(), 2, "{names:?}");
        assert_eq!(c.tool(&derived).unwrap().bare, collider, "the plain name is the tool's own");
        let moved = c.tools().iter().find(|t| t.bare == "q.x").unwrap();
        assert!(names::is_api_name(&moved.name) && moved.name != derived, "{}", moved.name);
        assert_eq!(c.collisions.len(), 1, "{:?}", c.collisions);
        let pages: HashSet<&str> = c.tools().iter().map(|t| t.page.as_str()).collect();
        assert_eq!(pages.len(), 2, "one page each");
    }
}

#[test]
fn a_name_that_moves_to_another_tool_is_removed_and_added() {
    let derived = names::exposed_name("s", "q.x");
    let collider = derived.strip_prefix("s__").unwrap().to_string();
    let before = Catalog::build(&[server("s", &[tool("q.x")], Curation::default())]);
    let after = Catalog::build(&[server("s", &[tool("q.x"), tool(&collider)], Curation::default())]);
    let d = Catalog::diff(&before, &after);
    assert!(d.removed.contains(&derived) && d.added.contains(&derived), "{d:?}");
    assert!(!d.changed.contains(&derived) && !d.unchanged.contains(&derived), "{d:?}");
    // Across servers the same: the name's pages and refinements never pass to the other.
    let one = Catalog::build(&[server("a", &[tool("t")], Curation::default())]);
    let mut other = Catalog::build(&[server("b", &[tool("t")], Curation::default())]);
    let moved = other.tools[0].clone();
    other.tools[0] = ExposedTool { name: "a__t".into(), ..moved };
    other.by_name = HashMap::from([("a__t".to_string(), 0)]);
    let d = Catalog::diff(&one, &other);
    assert_eq!((d.removed, d.added, d.changed), (vec!["a__t".to_string()], vec!["a__t".to_string()], vec![]));
}

/// With several servers every URI a result carries is the hosts' (a link, an embedded resource,
/// a read's contents, a prompt's embedded resource, the app that shows the result); with one,
/// the answer is untouched (issue 60 item 9, issue 64 item 1).
#[test]
fn an_answer_names_the_servers_resources_the_hosts_way() {
    let answer = json!({"jsonrpc": "2.0", "id": 1, "result": {
        "content": [
            {"type": "text", "text": "see test://static/resource/1"},
            {"type": "resource_link", "uri": "test://static/resource/1", "name": "one"},
            {"type": "resource", "resource": {"uri": "file:///tmp/a.txt", "text": "a"}},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"}
        ],
        "contents": [{"uri": "note://x", "text": "x"}],
        "messages": [{"role": "user", "content": {"type": "resource", "resource": {"uri": "note://y", "text": "y"}}}],
        "_meta": {"ui": {"resourceUri": "ui://chart/view"}, "ui/resourceUri": "ui://chart/view", "openai/outputTemplate": "ui://chart/view", "other": "ui://keep"}
    }});
    let out = Naming::Prefixed(Arc::from("srv")).answer_out(answer.clone());
    let r = &out["result"];
    assert_eq!(r["content"][0], answer["result"]["content"][0], "text is text");
    assert_eq!(r["content"][1]["uri"], "test://srv+static/resource/1");
    assert_eq!(r["content"][2]["resource"]["uri"], "file://srv+/tmp/a.txt");
    assert_eq!(r["content"][3], answer["result"]["content"][3]);
    assert_eq!(r["contents"][0]["uri"], "note://srv+x");
    assert_eq!(r["messages"][0]["content"]["resource"]["uri"], "note://srv+y");
    assert_eq!(r["_meta"]["ui"]["resourceUri"], "ui://srv+chart/view");
    assert_eq!(r["_meta"]["ui/resourceUri"], "ui://srv+chart/view");
    assert_eq!(r["_meta"]["openai/outputTemplate"], "ui://srv+chart/view");
    assert_eq!(r["_meta"]["other"], "ui://keep", "only the keys that name an app");
    assert_eq!(Naming::Bare.answer_out(answer.clone()), answer, "one server: as it came");
}
