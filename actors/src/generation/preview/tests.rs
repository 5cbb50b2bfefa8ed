use super::*;

/// The preview of all of `partial` however long it takes: for the tests that look at what is
/// read late in a large page (a debug build reads 64 KB in about as long as `DEADLINE`).
fn whole(partial: &str) -> Value {
    inert_tree_within(partial, Duration::MAX)
}

/// Nodes in a tree: elements and text that shows something.
fn count(nodes: &Value) -> usize {
    nodes.as_array().map_or(0, |list| {
        list.iter()
            .map(|n| match n {
                Value::String(s) => usize::from(!s.trim().is_empty()),
                el => 1 + count(&el[2]),
            })
            .sum()
    })
}

/// Every attribute's name in a tree.
fn attribute_names(nodes: &Value, out: &mut Vec<String>) {
    for el in nodes.as_array().into_iter().flatten().filter(|n| n.is_array()) {
        out.extend(el[1].as_object().into_iter().flat_map(|a| a.keys().cloned()));
        attribute_names(&el[2], out);
    }
}

/// How deep elements nest.
fn depth(nodes: &Value) -> usize {
    nodes.as_array().map_or(0, |list| list.iter().filter(|n| n.is_array()).map(|el| 1 + depth(&el[2])).max().unwrap_or(0))
}

#[test]
fn the_visible_markup_so_far_is_kept_and_nothing_that_runs_or_loads() {
    let partial = r#"<!doctype html><html><head><title>x</title><script>alert(1)</script></head><body>
            <h1 class="title" onclick="steal()">Weather for <em>Paris</em></h1>
            <img src="https://evil.example/p.png" onerror="steal()">
            <form action="https://evil.example"><label>City <input name="city" type="image" src="x" value="Paris"></label>
            <button formaction="https://evil.example" type="submit">Go</button></form>
            <a href="javascript:steal()">link text</a><iframe src="https://evil.example"></iframe>
            <style>body{background:url(https://evil.example)}</style><svg><script>steal()</script></svg>
            <table><tr><th>Day</th><td style="color:red" data-x="1">Mon"#;
    let tree = inert_tree(partial);
    let text = tree.to_string();
    for gone in ["steal", "evil", "onclick", "onerror", "src", "href", "action", "style", "alert", "iframe", "img", "data-x", "submit"] {
        assert!(!text.contains(gone), "{gone} in {text}");
    }
    assert_eq!(tree[1], json!(["h1", {"class": "title"}, ["Weather for ", ["em", {}, ["Paris"]]]]));
    assert!(text.contains(r#"["input",{"type":"text","value":"Paris"},[]]"#), "{text}");
    assert!(text.contains(r#"["button",{"type":"button"},["Go"]]"#), "{text}");
    assert!(text.contains("link text") && text.contains(r#"["td",{},["Mon"]]"#), "the unfinished cell is shown: {text}");
}

#[test]
fn nothing_written_yet_is_empty_and_any_text_is_bounded() {
    assert_eq!(inert_tree(""), json!([]));
    assert_eq!(inert_tree("<!doctype html><html><head><style>h1{color:red}"), json!([]));
    let long = format!("<body><p>{}</p>", "é".repeat(100_000));
    assert!(inert_tree(&long).to_string().len() < MAX_TEXT + 100);
}

/// Issue 52: the node limit on a page that does not nest (5,000 elements side by side; the
/// case that nests past the depth limit first never reaches it), and the depth limit.
#[test]
fn a_flat_page_of_5000_elements_is_cut_at_the_node_limit() {
    let flat = "<p>x</p>".repeat(5_000);
    let tree = whole(&flat);
    let n = count(&tree);
    assert!((MAX_NODES - 2..=MAX_NODES).contains(&n), "{n} nodes, the limit {MAX_NODES}");
    assert_eq!(depth(&tree), 1);
    let deep = "<div>".repeat(5_000) + &"<p>x</p>".repeat(5_000);
    let tree = whole(&deep);
    assert_eq!(depth(&tree), MAX_DEPTH, "elements past the depth limit are not nested further");
    assert_eq!(count(&tree), MAX_DEPTH + 1, "what is past it shows as the deepest element's text");
    let xs = tree.to_string().matches('x').count();
    assert!(xs >= 4_000, "{xs} x (of the 64 KB read)");
}

/// Issue 51: no attribute that names an element survives, so nothing in the preview can stand
/// for a property of `document` (`<form name="open">` is `document.open` in a browser).
#[test]
fn nothing_that_names_an_element_is_kept() {
    let tree = inert_tree(
        r#"<form name="open" id="createElement"><input name="write" id="close"><select name="body"><option>a</select>
           <output name="defaultView" for="x">1</output><button name="x" form="f">b</button><a name="cookie">c</a></form>"#,
    );
    let mut keys = Vec::new();
    attribute_names(&tree, &mut keys);
    assert_eq!(keys, ["type"], "{tree}");
    assert_eq!(tree[0][0], "form");
}

#[test]
fn markup_written_without_end_tags_does_not_nest() {
    let list = inert_tree("<ul><li>a<li>b</ul><p>one<p>two<div>three</div>");
    assert_eq!(
        list,
        json!([["ul", {}, [["li", {}, ["a"]], ["li", {}, ["b"]]]], ["p", {}, ["one"]], ["p", {}, ["two"]], ["div", {}, ["three"]]])
    );
    let table = inert_tree("<table><tr><td>a<td>b<tr><th>c</table><select><option>x<option>y</select>");
    assert_eq!(
        table,
        json!([
            ["table", {}, [["tr", {}, [["td", {}, ["a"]], ["td", {}, ["b"]]]], ["tr", {}, [["th", {}, ["c"]]]]]],
            ["select", {}, [["option", {}, ["x"]], ["option", {}, ["y"]]]]
        ])
    );
    // An end tag that closes nothing open is ignored; one that closes an outer element closes
    // what is inside it too.
    assert_eq!(inert_tree("</p><div><span>a</div>b"), json!([["div", {}, [["span", {}, ["a"]]]], "b"]));
}

#[test]
fn the_content_of_what_is_dropped_is_read_as_a_browser_reads_it() {
    // A script's `<` are not tags; a textarea's markup is its text.
    let tree = inert_tree(r#"<script>if (a<b) document.write("<h1>x</h1>")</script><p>after</p><textarea><b>not bold</b></textarea>"#);
    assert_eq!(tree, json!([["p", {}, ["after"]], ["textarea", {}, ["<b>not bold</b>"]]]));
    // An `<svg>` left open ends at an HTML element, as in a browser; a closed one, self-closed.
    assert_eq!(inert_tree("<svg><text>t</text><div>out</div>"), json!([["div", {}, ["out"]]]));
    assert_eq!(inert_tree("<svg/><p>after</p>"), json!([["p", {}, ["after"]]]));
    assert_eq!(inert_tree("<svg><svg></svg><text>t</text></svg><p>after</p>"), json!([["p", {}, ["after"]]]));
    // A script inside a dropped element is read as a script.
    assert_eq!(inert_tree("<object><script>'</object>'</script></object><p>y</p>"), json!([["p", {}, ["y"]]]));
    // Character references are text (the page sets it with textContent).
    assert_eq!(inert_tree("<p>a &amp; b &lt;script&gt;</p>"), json!([["p", {}, ["a & b <script>"]]]));
    // What is not kept leaves its content: a link's text, the body's.
    assert_eq!(inert_tree("<body><a href='x'>link</a> text</body>"), json!(["link text"]));
}

/// Issue 51: what is read is bounded in bytes and in time, whatever the page.
#[test]
fn at_most_max_input_bytes_are_read_and_reading_stops_at_the_deadline() {
    // Past the first MAX_INPUT bytes nothing is read, however cheap the bytes before.
    let padded = format!("<h1>first</h1><style>{}</style><h2>later</h2>", "a".repeat(MAX_INPUT));
    let text = whole(&padded).to_string();
    assert!(text.contains("first") && !text.contains("later"), "{text}");
    let small = format!("<h1>first</h1><style>{}</style><h2>later</h2>", "a".repeat(MAX_INPUT / 2));
    assert!(whole(&small).to_string().contains("later"));
    // Past the deadline, what was read so far is the preview: here only the first chunk.
    let text = inert_tree_within(&small, Duration::ZERO).to_string();
    assert!(text.contains("first") && !text.contains("later"), "{text}");
}

/// Issue 51's page: formatting elements left open, then paragraphs. A browser's tree builder
/// clones the open ones into every later paragraph (1.7 GB for this page); the preview keeps
/// them open once and stops at its node limit.
#[test]
fn formatting_left_open_is_not_cloned_into_later_paragraphs() {
    let tags = ["b", "i", "em", "strong", "u", "small", "code", "mark"];
    let mut page = String::from("<p>");
    for i in 0..2_000 {
        page.push_str(&format!("<{} class=c{i}>", tags[i % tags.len()]));
    }
    page.push_str(&"<p>x".repeat(5_000));
    let tree = inert_tree(&page);
    assert!(count(&tree) <= MAX_NODES, "{}", count(&tree));
    assert!(depth(&tree) <= MAX_DEPTH);
}
