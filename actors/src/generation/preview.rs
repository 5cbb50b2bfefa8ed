//! The page as it is being written, made inert for the provisional page to show (issue 43).
//! The model's partial text is untrusted and unchecked: it is parsed (html5ever takes any
//! prefix of a document) and only its visible structure is kept, as a tree of plain data the
//! page builds with `createElement` and `textContent`: elements from a short list, attributes
//! that neither run nor load anything, and text. No script, style, event handler, URL, frame
//! or image survives; nothing of it can run until the whole page has passed validation and
//! replaces the provisional one. Bounded in nodes, depth and text whatever the model wrote.

use scraper::{ElementRef, Html, Node};
use serde_json::{json, Map, Value};

/// Elements kept (with their children).
const KEPT: &[&str] = &[
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "div",
    "span",
    "section",
    "article",
    "header",
    "footer",
    "main",
    "nav",
    "aside",
    "form",
    "fieldset",
    "legend",
    "label",
    "input",
    "select",
    "option",
    "optgroup",
    "textarea",
    "button",
    "table",
    "caption",
    "thead",
    "tbody",
    "tfoot",
    "tr",
    "th",
    "td",
    "ul",
    "ol",
    "li",
    "dl",
    "dt",
    "dd",
    "strong",
    "em",
    "b",
    "i",
    "u",
    "small",
    "code",
    "pre",
    "blockquote",
    "br",
    "hr",
    "figure",
    "figcaption",
    "details",
    "summary",
    "output",
    "progress",
    "meter",
    "abbr",
    "time",
    "mark",
    "sub",
    "sup",
];
/// Elements dropped with everything inside them: they run, load, or are not visible markup.
const DROPPED: &[&str] = &[
    "script", "style", "template", "noscript", "iframe", "frame", "object", "embed", "svg", "math", "link", "meta", "head", "title", "img",
    "picture", "video", "audio", "source", "track", "canvas", "base", "portal",
];
/// Attributes kept: none of them runs or loads anything.
const ATTRIBUTES: &[&str] = &[
    "class",
    "type",
    "name",
    "placeholder",
    "value",
    "min",
    "max",
    "step",
    "minlength",
    "maxlength",
    "required",
    "checked",
    "selected",
    "multiple",
    "rows",
    "cols",
    "colspan",
    "rowspan",
    "scope",
    "role",
    "title",
    "open",
    "lang",
    "dir",
    "datetime",
    "size",
    "low",
    "high",
    "optimum",
    "aria-label",
    "aria-hidden",
    "aria-live",
];
/// Input types shown as they are; any other becomes a text box.
const INPUT_TYPES: &[&str] =
    &["text", "number", "email", "tel", "search", "date", "time", "datetime-local", "month", "week", "checkbox", "radio", "range", "color"];

/// Bounds of one preview, whatever the text.
pub const MAX_NODES: usize = 1_500;
const MAX_DEPTH: usize = 24;
pub const MAX_TEXT: usize = 16 * 1024;
const MAX_ATTRIBUTE: usize = 200;

struct Budget {
    nodes: usize,
    text: usize,
}

/// The visible structure of `partial` (a prefix of a page): a list of nodes, each a string
/// (text) or `[tag, {attributes}, [children]]`. Empty when nothing visible was written yet.
pub fn inert_tree(partial: &str) -> Value {
    let doc = Html::parse_document(partial);
    let mut budget = Budget { nodes: 0, text: 0 };
    let body = doc.root_element().children().filter_map(ElementRef::wrap).find(|e| e.value().name() == "body");
    Value::Array(match body {
        Some(b) => children(b, 0, &mut budget),
        None => Vec::new(),
    })
}

fn children(parent: ElementRef, depth: usize, budget: &mut Budget) -> Vec<Value> {
    let mut out = Vec::new();
    for child in parent.children() {
        if budget.nodes >= MAX_NODES || budget.text >= MAX_TEXT {
            break;
        }
        match child.value() {
            Node::Text(t) => {
                let text: &str = t;
                if text.trim().is_empty() {
                    if !text.is_empty() && !matches!(out.last(), Some(Value::String(s)) if s.ends_with(' ')) {
                        out.push(json!(" "));
                    }
                    continue;
                }
                let kept = cut(text, MAX_TEXT - budget.text);
                budget.text += kept.len();
                budget.nodes += 1;
                out.push(Value::String(kept));
            }
            Node::Element(_) => {
                let Some(el) = ElementRef::wrap(child) else { continue };
                let name = el.value().name();
                if DROPPED.contains(&name) {
                    continue;
                }
                if depth >= MAX_DEPTH {
                    // Too deep to follow: its text only, read without recursion.
                    let mut text = String::new();
                    for t in el.text() {
                        text.push_str(&cut(t, MAX_TEXT - budget.text - text.len()));
                        if budget.text + text.len() >= MAX_TEXT {
                            break;
                        }
                    }
                    budget.text += text.len();
                    budget.nodes += 1;
                    out.push(Value::String(text));
                    continue;
                }
                if !KEPT.contains(&name) {
                    // Unknown: its content, without it.
                    out.extend(children(el, depth + 1, budget));
                    continue;
                }
                budget.nodes += 1;
                out.push(json!([name, attributes(el), children(el, depth + 1, budget)]));
            }
            _ => {}
        }
    }
    out
}

/// At most `room` bytes of `text`, cut at a character.
fn cut(text: &str, room: usize) -> String {
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

fn attributes(el: ElementRef) -> Value {
    let name = el.value().name();
    let mut out = Map::new();
    for (key, value) in el.value().attrs() {
        let key = key.to_ascii_lowercase();
        if !ATTRIBUTES.contains(&key.as_str()) || value.len() > MAX_ATTRIBUTE || value.chars().any(char::is_control) {
            continue;
        }
        let value = match (name, key.as_str()) {
            ("input", "type") if !INPUT_TYPES.contains(&value.to_ascii_lowercase().as_str()) => "text".to_string(),
            // A preview's buttons submit nothing, anywhere.
            ("button", "type") => "button".to_string(),
            _ => value.to_string(),
        };
        out.insert(key, Value::String(value));
    }
    if name == "button" {
        out.insert("type".into(), json!("button"));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        for gone in ["steal", "evil", "onclick", "onerror", "src", "href", "action", "style", "alert", "iframe", "img", "data-x", "submit"]
        {
            assert!(!text.contains(gone), "{gone} in {text}");
        }
        assert_eq!(tree[1], json!(["h1", {"class": "title"}, ["Weather for ", ["em", {}, ["Paris"]]]]));
        assert!(text.contains(r#"["input",{"name":"city","type":"text","value":"Paris"},[]]"#), "{text}");
        assert!(text.contains(r#"["button",{"type":"button"},["Go"]]"#), "{text}");
        assert!(text.contains("link text") && text.contains(r#"["td",{},["Mon"]]"#), "the unfinished cell is shown: {text}");
    }

    #[test]
    fn nothing_written_yet_is_empty_and_any_text_is_bounded() {
        assert_eq!(inert_tree(""), json!([]));
        assert_eq!(inert_tree("<!doctype html><html><head><style>h1{color:red}"), json!([]));
        let many = "<div>".repeat(5_000) + &"<p>x</p>".repeat(5_000);
        let tree = inert_tree(&many);
        assert!(tree.to_string().matches("\"p\"").count() <= MAX_NODES);
        let long = format!("<body><p>{}</p>", "é".repeat(100_000));
        assert!(inert_tree(&long).to_string().len() < MAX_TEXT + 100);
    }
}
