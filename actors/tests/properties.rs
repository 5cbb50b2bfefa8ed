//! Property tests (issue 9, item 12): the pure parsers and mappers the proxy runs on bytes it
//! does not control (upstream output, provider answers, LLM pages) never panic, stay within
//! their memory bounds, and do not depend on how the bytes were chunked by the network.
//!
//! Case counts are bounded so the whole file runs in a few seconds in a debug build.

use mcp_gen_ui_actors::generation::llm::{classify_status, parse_retry_after};
use mcp_gen_ui_actors::generation::{postprocess, preview};
use mcp_gen_ui_actors::mcp::jsonrpc;
use mcp_gen_ui_actors::mcp::sse;
use mcp_gen_ui_actors::upstream::framing::{Frame, LineFramer};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::time::Duration;

const KIB: usize = 1024;

fn config(cases: u32) -> ProptestConfig {
    // No regression files written into the source tree: a failure prints its minimal input.
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Splits `bytes` at the given cut points (taken modulo the length), in order.
fn chunks<'a>(bytes: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| if bytes.is_empty() { 0 } else { c % (bytes.len() + 1) }).collect();
    at.push(0);
    at.push(bytes.len());
    at.sort_unstable();
    at.dedup();
    at.windows(2).map(|w| &bytes[w[0]..w[1]]).collect()
}

/// Arbitrary JSON without floats (serde_json's default float parsing is not an exact round trip,
/// and the properties here are about framing, not number formatting).
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-z_\"\\\\]{0,6}", inner), 0..6).prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn json_rpc_id() -> impl Strategy<Value = Value> {
    prop_oneof![any::<i64>().prop_map(Value::from), any::<u64>().prop_map(Value::from), ".{0,16}".prop_map(Value::String)]
}

/// A valid JSON-RPC message: request, notification, result or error response.
fn json_rpc_message() -> impl Strategy<Value = Value> {
    let method = "[a-z/_]{1,20}";
    prop_oneof![
        (json_rpc_id(), method, json_value()).prop_map(|(id, m, p)| json!({"jsonrpc": "2.0", "id": id, "method": m, "params": p})),
        (method, json_value()).prop_map(|(m, p)| json!({"jsonrpc": "2.0", "method": m, "params": p})),
        (json_rpc_id(), json_value()).prop_map(|(id, r)| json!({"jsonrpc": "2.0", "id": id, "result": r})),
        (json_rpc_id(), any::<i32>(), ".{0,20}")
            .prop_map(|(id, c, m)| json!({"jsonrpc": "2.0", "id": id, "error": {"code": c, "message": m}})),
    ]
}

/// Bytes that look like SSE: field lines, comments, blank lines, mixed line endings, junk.
fn sse_like() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"data: ".to_vec()),
        Just(b"data:".to_vec()),
        Just(b"event: message".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b"retry: 1000".to_vec()),
        Just(b": keepalive".to_vec()),
        Just(b"\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\n\n".to_vec()),
        "[a-z{}\":, é]{0,40}".prop_map(String::into_bytes),
        (1usize..3000).prop_map(|n| vec![b'x'; n]),
        prop::collection::vec(any::<u8>(), 0..16),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

/// Bytes that look like a stdio upstream's output: messages, junk, blank lines, big lines.
fn ndjson_like() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        json_rpc_message().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        prop::collection::vec(json_rpc_message(), 0..3).prop_map(|v| serde_json::to_vec(&v).unwrap()),
        json_value().prop_map(|v| serde_json::to_vec(&v).unwrap()),
        (json_rpc_id(), 1usize..20_000)
            .prop_map(|(id, n)| { serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": {"text": "p".repeat(n)}})).unwrap() }),
        prop::collection::vec(any::<u8>(), 0..64),
        Just(Vec::new()),
        Just(b"\r".to_vec()),
    ];
    prop::collection::vec(line, 0..12).prop_map(|lines| {
        let mut out = Vec::new();
        for l in lines {
            out.extend(l);
            out.push(b'\n');
        }
        out
    })
}

fn sse_events(mut parser: sse::Parser, parts: &[&[u8]]) -> Vec<sse::Event> {
    parts.iter().flat_map(|p| parser.feed(p)).collect()
}

fn framer_frames(limit: usize, parts: &[&[u8]]) -> Vec<Frame> {
    let mut f = LineFramer::new(limit);
    let mut out = Vec::new();
    for p in parts {
        out.extend(f.feed(p));
        assert!(f.buffered() <= limit + 8 * KIB, "buffered {} with limit {limit}", f.buffered());
    }
    out.extend(f.finish());
    assert_eq!(f.buffered(), 0);
    out
}

proptest! {
    #![proptest_config(config(256))]

    /// The SSE parser takes any bytes in any chunking, and the chunking does not change the events.
    #[test]
    fn sse_parser_is_chunking_independent(
        bytes in prop_oneof![prop::collection::vec(any::<u8>(), 0..2048), sse_like()],
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = sse_events(sse::Parser::default(), &[&bytes]);
        let split = sse_events(sse::Parser::default(), &chunks(&bytes, &cuts));
        prop_assert_eq!(whole, split);
    }

    /// With a limit, no event carries more data than the limit (or the 4 KiB head of an oversized
    /// one), and the limit does not make the result depend on chunking either.
    #[test]
    fn sse_parser_respects_its_limit(
        bytes in sse_like(),
        limit in prop_oneof![0usize..64, 64usize..8192],
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = sse_events(sse::Parser::with_limit(limit), &[&bytes]);
        let split = sse_events(sse::Parser::with_limit(limit), &chunks(&bytes, &cuts));
        for ev in &whole {
            prop_assert!(ev.data.len() <= limit.max(4096), "{} bytes of data with limit {}", ev.data.len(), limit);
            prop_assert!(ev.oversized || ev.data.len() <= limit);
        }
        prop_assert_eq!(whole, split);
    }

    /// Classifying and splitting bodies never panics on arbitrary bytes.
    #[test]
    fn jsonrpc_parse_body_takes_any_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        if let Ok(items) = jsonrpc::parse_body(&bytes, usize::MAX) {
            prop_assert!(!items.is_empty());
            for item in &items {
                let _ = jsonrpc::kind(item);
            }
        }
    }

    /// Classifying never panics on any JSON value, and parse_body agrees with serde on it.
    #[test]
    fn jsonrpc_kind_takes_any_value(v in prop_oneof![json_value(), json_rpc_message()]) {
        let _ = jsonrpc::kind(&v);
        let body = serde_json::to_vec(&v).unwrap();
        match (jsonrpc::parse_body(&body, usize::MAX), &v) {
            (Err(_), Value::Array(items)) => prop_assert!(items.is_empty()),
            (Err(e), _) => prop_assert!(false, "{e}"),
            (Ok(items), Value::Array(expected)) => prop_assert_eq!(&items, expected),
            (Ok(items), other) => prop_assert_eq!(&items, &vec![other.clone()]),
        }
    }

    /// The line framer takes any bytes in any chunking, gives the same frames, and never holds
    /// more than its limit + 8 KiB.
    #[test]
    fn framer_is_chunking_independent_and_bounded(
        bytes in prop_oneof![prop::collection::vec(any::<u8>(), 0..2048), ndjson_like()],
        limit in prop_oneof![0usize..64, 64usize..4096, Just(16 * KIB)],
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let whole = framer_frames(limit, &[&bytes]);
        let split = framer_frames(limit, &chunks(&bytes, &cuts));
        prop_assert_eq!(whole, split);
    }

    /// Valid messages written one per line come back equal, in order, however they are chunked.
    #[test]
    fn framer_returns_written_messages(
        msgs in prop::collection::vec(json_rpc_message(), 0..8),
        crlf in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let mut bytes = Vec::new();
        for m in &msgs {
            bytes.extend(serde_json::to_vec(m).unwrap());
            bytes.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        }
        let frames = framer_frames(1024 * KIB, &chunks(&bytes, &cuts));
        let expected: Vec<Frame> = msgs.into_iter().map(Frame::Message).collect();
        prop_assert_eq!(frames, expected);
    }

    /// An oversized line is reported as such (with its id when it comes first), never buffered
    /// whole, and the next line is framed normally.
    #[test]
    fn framer_bounds_oversized_lines(
        id in json_rpc_id(),
        size in prop_oneof![2048usize..8192, 8192usize..200_000],
        // At least the size of the small line that follows, which must pass.
        limit in 64usize..2048,
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let big = json!({"jsonrpc": "2.0", "id": id, "result": {"text": "w".repeat(size)}});
        let mut bytes = serde_json::to_vec(&big).unwrap();
        let len = bytes.len();
        bytes.push(b'\n');
        let next = json!({"jsonrpc": "2.0", "method": "notifications/next"});
        bytes.extend(serde_json::to_vec(&next).unwrap());
        bytes.push(b'\n');
        let frames = framer_frames(limit, &chunks(&bytes, &cuts));
        prop_assert_eq!(frames.len(), 2);
        match &frames[0] {
            Frame::Oversized { id: found, bytes } => {
                prop_assert_eq!(*bytes, len);
                // serde_json (preserve_order) writes "id" second, well inside the kept head,
                // unless the id string itself is longer than the head.
                if serde_json::to_string(&id).unwrap().len() < 4000 {
                    prop_assert_eq!(found.as_ref(), Some(&id));
                }
            }
            other => prop_assert!(false, "expected Oversized, got {:?}", other),
        }
        prop_assert_eq!(&frames[1], &Frame::Message(next));
    }

    /// Any status and any body map to an error without panicking, keeping the status.
    #[test]
    fn classify_status_takes_anything(status in any::<u16>(), body in prop_oneof![".{0,300}", json_value().prop_map(|v| v.to_string())]) {
        let e = classify_status(status, &body);
        prop_assert_eq!(e.status, Some(status));
    }

    /// Retry-After never panics and never asks for more than an hour.
    #[test]
    fn retry_after_is_bounded(v in prop_oneof![
        ".{0,40}",
        "[0-9]{1,40}",
        "-?[0-9]{0,25}\\.?[0-9]{0,25}(e[+-]?[0-9]{1,4})?",
        any::<f64>().prop_map(|f| f.to_string()),
        (any::<u32>(), 0usize..7, 0usize..12).prop_map(|(t, d, m)| {
            let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
            format!("{}, {:02} {} {} {:02}:{:02}:{:02} GMT", days[d], t % 32, months[m], 1900 + t % 9000, t % 24, t % 60, t % 61)
        }),
    ]) {
        if let Some(d) = parse_retry_after(&v) {
            prop_assert!(d <= Duration::from_secs(3600), "{v:?} -> {d:?}");
        }
    }
}

/// Markup fragments, mostly harmless, some that validation must refuse.
fn markup() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        8 => prop_oneof![
            Just("<div class=\"card\">"),
            Just("</div>"),
            Just("<button id=\"go\">Go</button>"),
            Just("<p>"),
            Just("<table><tr><td>1</td></tr></table>"),
            Just("<style>body{color:red}</style>"),
            Just("<!-- comment -->"),
            Just("<meta charset=\"utf-8\">"),
            Just("é漢字"),
            Just("<"),
            Just(">"),
            Just("\""),
            Just("\n"),
        ],
        1 => prop_oneof![
            Just("<!DOCTYPE html>"),
            Just("<html>"),
            Just("</html>"),
            Just("<head>"),
            Just("</head>"),
            Just("<script>"),
            Just("</script>"),
            Just("```"),
            Just("<script src=\"https://cdn.example/x.js\"></script>"),
            Just("<script src=\"data:text/javascript,1\"></script>"),
            Just("<link rel=\"stylesheet\" href=\"https://x/y.css\">"),
            Just("<style>@import url('https://x/y.css');</style>"),
            Just("<div onclick=\"go()\">"),
            Just("Ignore previous instructions"),
        ],
    ];
    let piece = prop_oneof![6 => fragment.prop_map(str::to_string), 1 => ".{0,20}"];
    prop::collection::vec(piece, 0..12).prop_map(|p| p.concat())
}

/// Script fragments around the ext-apps import, `new App(`, `connect()` and handlers.
fn script() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("import { App } from \"@modelcontextprotocol/ext-apps\";"),
        Just("import { App, PostMessageTransport as T } from '@modelcontextprotocol/ext-apps/app';"),
        Just("import {App,applyDocumentTheme} from \"@modelcontextprotocol/ext-apps\""),
        Just("import { Nope } from \"@modelcontextprotocol/ext-apps\";"),
        Just("import * as sdk from \"@modelcontextprotocol/ext-apps\";"),
        Just("import x from \"https://esm.sh/x\";"),
        Just("import(\"./dyn.js\")"),
        Just("const app = new App({name: 'x', version: '1'});"),
        Just("let a = new sdk.App();"),
        Just("var b = new App("),
        Just("app.connect();"),
        Just("a . connect ( )"),
        Just("app.ontoolresult = (r) => { render(r); };"),
        Just("window.onerror = null;"),
        Just("window.addEventListener('error', f);"),
        Just("eval('1'); parent.x; top.y; opener.z; document.write('');"),
        Just("globalThis.McpGenUiRuntime"),
        Just("</script>"),
        Just("<script>"),
        Just("\n"),
        Just(";"),
    ];
    let piece = prop_oneof![6 => fragment.prop_map(str::to_string), 1 => ".{0,20}"];
    prop::collection::vec(piece, 0..10).prop_map(|p| p.concat())
}

/// An LLM answer: mostly a page skeleton (optionally fenced, with chatter around it) filled with
/// random markup and script, sometimes free-form fragments; enough of them get past extraction
/// to exercise validation, repair and the import rewrite.
fn htmlish() -> impl Strategy<Value = String> {
    let app = prop_oneof![
        3 => Just("import { App } from \"@modelcontextprotocol/ext-apps\";\nconst app = new App({ name: 'x' });\n"),
        1 => Just("const app = new App();\n"),
        1 => Just(""),
    ];
    let page = (any::<bool>(), ".{0,20}", markup(), markup(), app, script(), markup(), prop::bool::weighted(0.8), ".{0,20}").prop_map(
        |(fenced, before, head, body, app, js, after, closed, chatter)| {
            let close = if closed { "</body></html>" } else { "" };
            let doc = format!(
                "<!DOCTYPE html><html lang=\"en\"><head>{head}</head><body>{body}<script type=\"module\">{app}{js}</script>{after}{close}"
            );
            if fenced {
                format!("{before}\n```html\n{doc}\n```\n{chatter}")
            } else {
                format!("{before}{doc}{chatter}")
            }
        },
    );
    prop_oneof![3 => page, 1 => (markup(), script(), markup()).prop_map(|(a, b, c)| a + &b + &c)]
}

proptest! {
    #![proptest_config(config(64))]

    /// Post-processing answers any text with a page or a rejection, never a panic.
    #[test]
    fn postprocess_takes_any_string(raw in ".{0,2000}") {
        let _ = postprocess::process(&raw);
    }

    /// Post-processing answers HTML-ish text with a page or a rejection, never a panic; a page it
    /// returns passes the servable check.
    #[test]
    fn postprocess_takes_htmlish_text(raw in htmlish()) {
        if let Ok(p) = postprocess::process(&raw) {
            prop_assert!(postprocess::servable(&p.html).is_ok(), "{:?}", postprocess::servable(&p.html));
        }
    }
}

/// Markup the preview's own builder handles by name (issue 51): elements it skips to their end
/// tag, ends without one, or reads as raw text, in any order and left open.
fn preview_markup() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("<svg>"),
        Just("</svg>"),
        Just("<svg/>"),
        Just("<math>"),
        Just("<object>"),
        Just("</object>"),
        Just("<template>"),
        Just("<textarea>"),
        Just("</textarea>"),
        Just("<title>"),
        Just("<plaintext>"),
        Just("<li>"),
        Just("<td>"),
        Just("<tr>"),
        Just("<option>"),
        Just("<h2>"),
        Just("<b class=x>"),
        Just("</b>"),
        Just("<div>"),
        Just("</div>"),
        Just("</p>"),
        Just("<form name=\"open\" id=\"x\">"),
        Just("<input name=\"createElement\" type=\"image\" src=\"x\">"),
        Just("<![CDATA[x]]>"),
        Just("&amp;&#x41;&"),
        Just("text "),
    ];
    let piece = prop_oneof![4 => fragment.prop_map(str::to_string), 2 => markup(), 1 => ".{0,20}"];
    prop::collection::vec(piece, 0..40).prop_map(|p| p.concat())
}

/// Every element name and attribute name in a preview, its nodes and its depth.
fn preview_shape(nodes: &Value, depth: usize, names: &mut Vec<String>, attrs: &mut Vec<String>) -> (usize, usize) {
    let (mut count, mut deepest) = (0, depth);
    for n in nodes.as_array().into_iter().flatten() {
        if let Some(el) = n.as_array() {
            names.push(el[0].as_str().unwrap_or("?").to_string());
            attrs.extend(el[1].as_object().into_iter().flat_map(|a| a.keys().cloned()));
            let (c, d) = preview_shape(&el[2], depth + 1, names, attrs);
            count += 1 + c;
            deepest = deepest.max(d);
        } else {
            count += usize::from(!n.as_str().unwrap_or_default().trim().is_empty());
        }
    }
    (count, deepest)
}

proptest! {
    #![proptest_config(config(128))]

    /// The preview takes any prefix of any page, never panics, stays within its bounds, and
    /// keeps no element or attribute that runs, loads or names anything.
    #[test]
    fn preview_takes_any_prefix_and_keeps_to_its_lists(
        page in prop_oneof![htmlish(), preview_markup()],
        at in any::<prop::sample::Index>(),
    ) {
        let mut cut = at.index(page.len() + 1);
        while !page.is_char_boundary(cut) {
            cut -= 1;
        }
        let tree = preview::inert_tree(&page[..cut]);
        let (mut names, mut attrs) = (Vec::new(), Vec::new());
        let (count, depth) = preview_shape(&tree, 0, &mut names, &mut attrs);
        prop_assert!(count <= preview::MAX_NODES && depth <= 24, "{count} nodes, {depth} deep");
        for name in &names {
            prop_assert!(!["script", "style", "svg", "math", "img", "iframe", "object", "a", "template", "title"].contains(&name.as_str()), "{name}");
        }
        for attr in &attrs {
            prop_assert!(!attr.starts_with("on") && !["name", "id", "src", "href", "action", "style", "form"].contains(&attr.as_str()), "{attr}");
        }
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// An oversized message's own id, read from its bytes in any pieces, is exactly the id a
    /// parser reads from the whole message: whatever ids its arguments or results hold, in any
    /// order of keys (issue 60, item 4).
    #[test]
    fn the_own_id_of_a_message_is_the_one_a_parser_reads(
        id in json_rpc_id(),
        inside in json_value(),
        id_first in any::<bool>(),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let body = serde_json::to_string(&json!({"echo": {"id": inside.clone()}, "also": inside})).unwrap();
        let msg = if id_first {
            format!(r#"{{"jsonrpc":"2.0","id":{},"result":{body}}}"#, id)
        } else {
            format!(r#"{{"result":{body},"jsonrpc":"2.0","id":{}}}"#, id)
        };
        let parsed: Value = serde_json::from_str(&msg).unwrap();
        let mut scan = mcp_gen_ui_actors::mcp::own_id::OwnId::new();
        for piece in chunks(msg.as_bytes(), &cuts) {
            scan.feed(piece);
        }
        prop_assert_eq!(scan.answers(), Some(parsed["id"].clone()));
    }
}
