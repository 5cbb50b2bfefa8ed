//! The page as it is being written, made inert for the provisional page to show (issue 43).
//! The model's partial text is untrusted and unchecked: only its visible structure is kept, as
//! a tree of plain data the page builds with `createElement` and `textContent`: elements from
//! a short list, attributes that neither run, load nor name anything, and text. No script,
//! style, event handler, URL, frame or image survives; nothing of it can run until the whole
//! page has passed validation and replaces the provisional one.
//!
//! Bounded in what it reads, in time and in what it keeps, whatever the model (or a person
//! through a refinement) wrote (issue 51): at most [`MAX_INPUT`] bytes are read, fed to
//! html5ever's tokenizer a chunk at a time until [`DEADLINE`] has passed or the tree is full
//! ([`MAX_NODES`] nodes, [`MAX_TEXT`] bytes of text). The tree is built here from the tokens,
//! not by html5ever's tree builder: that one makes the whole document a browser would, and a
//! few kilobytes of formatting tags left open make it clone them again for every later
//! paragraph (a 57 KB partial page took 4.5 s and 1.7 GB); this builder keeps at most
//! [`MAX_DEPTH`] elements open and does constant work a token.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use html5ever::tendril::StrTendril;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts};
use serde_json::{json, Map, Value};

mod allowed;
use allowed::{raw_kind, ATTRIBUTES, BREAKOUT, DROPPED, INPUT_TYPES, KEPT, VOID};

/// Bounds of one preview, whatever the text.
pub const MAX_NODES: usize = 1_500;
const MAX_DEPTH: usize = 24;
pub const MAX_TEXT: usize = 16 * 1024;
const MAX_ATTRIBUTE: usize = 200;
/// The most of the partial page read (the generation keeps no more than this either,
/// `progress::PARTIAL_MAX`; the visible markup comes first).
pub const MAX_INPUT: usize = 64 * 1024;
/// How long one preview may parse: what is read by then is shown. A preview is asked for
/// every 0.7 s; a page's own markup takes a few milliseconds.
pub const DEADLINE: Duration = Duration::from_millis(50);
/// Bytes fed to the tokenizer between two looks at the clock and the budget. The tokenizer's
/// own worst case (a tag with thousands of attributes: each is compared with the ones before)
/// costs little within one chunk.
const CHUNK: usize = 2 * 1024;

/// The visible structure of `partial` (a prefix of a page): a list of nodes, each a string
/// (text) or `[tag, {attributes}, [children]]`. Empty when nothing visible was written yet.
pub fn inert_tree(partial: &str) -> Value {
    inert_tree_within(partial, DEADLINE)
}

fn inert_tree_within(partial: &str, deadline: Duration) -> Value {
    let began = Instant::now();
    let tokenizer = Tokenizer::new(Builder::new(), TokenizerOpts::default());
    let queue = BufferQueue::default();
    let mut rest = cut_str(partial, MAX_INPUT);
    let mut whole = true;
    while !rest.is_empty() {
        let piece = cut_str(rest, CHUNK);
        // A chunk cut inside a multi-byte character is still at least one character long.
        let piece = if piece.is_empty() { &rest[..rest.chars().next().map_or(rest.len(), char::len_utf8)] } else { piece };
        rest = &rest[piece.len()..];
        queue.push_back(StrTendril::from_slice(piece));
        let _ = tokenizer.feed(&queue);
        if tokenizer.sink.full() || began.elapsed() >= deadline {
            whole = rest.is_empty();
            break;
        }
    }
    if whole && partial.len() <= MAX_INPUT {
        // What the tokenizer holds back at the end of the text (a character reference) is text.
        tokenizer.end();
    }
    tokenizer.sink.finish()
}

/// `text` cut to at most `room` bytes, at a character.
fn cut_str(text: &str, room: usize) -> &str {
    let mut end = room.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One child of an open element.
enum Child {
    /// Text as it came, runs of white space kept as one character.
    Text(String),
    Element(Value),
}

/// An element being built: its name (from [`KEPT`]), its attributes, its children so far.
struct Open {
    name: &'static str,
    attrs: Value,
    children: Vec<Child>,
}

/// The content of an element that is dropped: everything until its end tag.
struct Skip {
    name: &'static str,
    depth: usize,
    /// `<svg>` or `<math>`: tags inside are the foreign language's, and an HTML element
    /// breaks out of it.
    foreign: bool,
}

struct State {
    /// Open elements, the outermost (the tree's root, no element) first; at most
    /// `MAX_DEPTH + 1`.
    open: Vec<Open>,
    /// Kept elements opened past `MAX_DEPTH`: their content goes to the deepest open one.
    beyond: usize,
    skip: Option<Skip>,
    nodes: usize,
    text: usize,
    full: bool,
}

/// Builds the tree from the tokenizer's tokens (html5ever's `TokenSink`).
struct Builder(RefCell<State>);

impl Builder {
    fn new() -> Builder {
        let root = Open { name: "", attrs: Value::Null, children: Vec::new() };
        Builder(RefCell::new(State { open: vec![root], beyond: 0, skip: None, nodes: 0, text: 0, full: false }))
    }

    fn full(&self) -> bool {
        self.0.borrow().full
    }

    fn finish(self) -> Value {
        let mut s = self.0.into_inner();
        s.close_to(1);
        Value::Array(s.open.pop().map(|root| finished(root.children)).unwrap_or_default())
    }
}

impl TokenSink for Builder {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let mut s = self.0.borrow_mut();
        match token {
            Token::TagToken(tag) => s.tag(tag),
            Token::CharacterTokens(text) if s.skip.is_none() && !s.full => {
                s.push_text(&text);
                TokenSinkResult::Continue
            }
            _ => TokenSinkResult::Continue,
        }
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        // Inside a dropped `<svg>`: `<![CDATA[` starts its text, as in a browser.
        self.0.borrow().skip.as_ref().is_some_and(|k| k.foreign)
    }
}

/// How the tokenizer goes on after a start tag.
fn reading(kind: Option<RawKind>) -> TokenSinkResult<()> {
    kind.map_or(TokenSinkResult::Continue, TokenSinkResult::RawData)
}

impl State {
    fn tag(&mut self, tag: Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        if let Some(skip) = &mut self.skip {
            match tag.kind {
                TagKind::StartTag if skip.foreign && BREAKOUT.contains(&name) => self.skip = None,
                TagKind::StartTag => {
                    if name == skip.name && !(skip.foreign && tag.self_closing) {
                        skip.depth += 1;
                    }
                    // A script inside a dropped `<object>` is read as a script (its `<` are not
                    // tags); inside `<svg>` the tokenizer reads on as the browser's does.
                    return if skip.foreign { TokenSinkResult::Continue } else { reading(raw_kind(name)) };
                }
                TagKind::EndTag => {
                    if name == skip.name {
                        skip.depth -= 1;
                        if skip.depth == 0 {
                            self.skip = None;
                        }
                    }
                    return TokenSinkResult::Continue;
                }
            }
        }
        match tag.kind {
            TagKind::StartTag => self.start(tag),
            TagKind::EndTag => {
                self.end(&tag.name);
                TokenSinkResult::Continue
            }
        }
    }

    fn start(&mut self, tag: Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        if let Some(dropped) = DROPPED.iter().find(|d| **d == name) {
            let foreign = matches!(name, "svg" | "math");
            if !(foreign && tag.self_closing) {
                self.skip = Some(Skip { name: dropped, depth: 1, foreign });
            }
            return reading(raw_kind(name));
        }
        if name == "plaintext" {
            // Everything after it is text, in a browser too.
            return TokenSinkResult::Plaintext;
        }
        let Some(kept) = KEPT.iter().find(|k| **k == name).copied() else {
            // Any other element: its content, without it.
            return TokenSinkResult::Continue;
        };
        let kind = raw_kind(kept);
        if self.full {
            return reading(kind);
        }
        self.implied_ends(kept);
        let attrs = attributes(kept, &tag);
        if VOID.contains(&kept) {
            self.count_node();
            self.current().children.push(Child::Element(json!([kept, attrs, []])));
        } else if self.open.len() > MAX_DEPTH {
            self.beyond += 1;
        } else {
            self.count_node();
            self.open.push(Open { name: kept, attrs, children: Vec::new() });
        }
        reading(kind)
    }

    fn end(&mut self, name: &str) {
        let Some(kept) = KEPT.iter().find(|k| **k == name).copied() else { return };
        if VOID.contains(&kept) {
            return;
        }
        if self.beyond > 0 {
            self.beyond -= 1;
            return;
        }
        if let Some(at) = self.open.iter().rposition(|o| o.name == kept) {
            if at > 0 {
                self.close_to(at);
            }
        }
    }

    /// Start tags that end open elements as a browser's parser does (the common cases: a list
    /// item, a row, a cell, an option, a paragraph followed by a block), so that markup
    /// written without those end tags does not nest.
    fn implied_ends(&mut self, name: &'static str) {
        /// What a start tag ends: the open elements it closes, where the search stops, and
        /// whether only the current element is looked at.
        struct Ends(&'static [&'static str], &'static [&'static str], bool);
        const P: Ends = Ends(&["p"], &["button", "table", "td", "th", "caption"], false);
        let rules: &[Ends] = match name {
            "li" => &[Ends(&["li"], &["ul", "ol", "table", "td", "th", "button"], false), P],
            "dt" | "dd" => &[Ends(&["dt", "dd"], &["dl", "table", "td", "th", "button"], false), P],
            "option" => &[Ends(&["option"], &["select", "optgroup"], false)],
            "optgroup" => &[Ends(&["option", "optgroup"], &["select"], false)],
            "tr" => &[Ends(&["tr"], &["table", "thead", "tbody", "tfoot"], false)],
            "td" | "th" => &[Ends(&["td", "th"], &["tr", "table"], false)],
            "thead" | "tbody" | "tfoot" => &[Ends(&["thead", "tbody", "tfoot"], &["table"], false)],
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => &[P, Ends(&["h1", "h2", "h3", "h4", "h5", "h6"], &[], true)],
            "p" | "div" | "section" | "article" | "header" | "footer" | "main" | "nav" | "aside" | "form" | "fieldset" | "ul" | "ol"
            | "dl" | "table" | "pre" | "blockquote" | "hr" | "figure" | "figcaption" | "details" | "summary" => &[P],
            _ => &[],
        };
        for Ends(ends, stops, current_only) in rules {
            for at in (1..self.open.len()).rev() {
                let open = self.open[at].name;
                if ends.contains(&open) {
                    self.close_to(at);
                    break;
                }
                if *current_only || stops.contains(&open) {
                    break;
                }
            }
        }
    }

    fn current(&mut self) -> &mut Open {
        let last = self.open.len() - 1;
        &mut self.open[last]
    }

    /// Closes the open elements from the top down to `at` (inclusive), each into its parent.
    fn close_to(&mut self, at: usize) {
        while self.open.len() > at.max(1) {
            let Some(done) = self.open.pop() else { break };
            let node = json!([done.name, done.attrs, finished(done.children)]);
            self.current().children.push(Child::Element(node));
        }
    }

    fn count_node(&mut self) {
        self.nodes += 1;
        self.full = self.nodes >= MAX_NODES || self.text >= MAX_TEXT;
    }

    fn push_text(&mut self, piece: &str) {
        let blank = piece.trim().is_empty();
        let kept = if blank { "" } else { cut_str(piece, MAX_TEXT.saturating_sub(self.text)) };
        let children = &mut self.current().children;
        // A node counts once it shows something.
        let counts = match children.last_mut() {
            Some(Child::Text(t)) if blank => {
                // Runs of white space show as one; the bytes stay bounded.
                if !t.ends_with(char::is_whitespace) {
                    t.push(' ');
                }
                false
            }
            Some(Child::Text(t)) => {
                let was_blank = t.trim().is_empty();
                t.push_str(kept);
                was_blank
            }
            _ if blank => {
                children.push(Child::Text(" ".to_string()));
                false
            }
            _ => {
                children.push(Child::Text(kept.to_string()));
                true
            }
        };
        self.text += kept.len();
        if counts {
            self.count_node();
        } else {
            self.full = self.nodes >= MAX_NODES || self.text >= MAX_TEXT;
        }
    }
}

/// An element's children as the tree has them: blank text as one space (none after a space).
fn finished(children: Vec<Child>) -> Vec<Value> {
    let mut out = Vec::with_capacity(children.len());
    for child in children {
        match child {
            Child::Text(t) if t.trim().is_empty() => {
                if !matches!(out.last(), Some(Value::String(s)) if s.ends_with(' ')) {
                    out.push(json!(" "));
                }
            }
            Child::Text(t) => out.push(Value::String(t)),
            Child::Element(e) => out.push(e),
        }
    }
    out
}

fn attributes(name: &str, tag: &Tag) -> Value {
    let mut out = Map::new();
    for attr in &tag.attrs {
        let key: &str = &attr.name.local;
        let value: &str = &attr.value;
        if !ATTRIBUTES.contains(&key) || value.len() > MAX_ATTRIBUTE || value.chars().any(char::is_control) {
            continue;
        }
        let value = match (name, key) {
            ("input", "type") if !INPUT_TYPES.contains(&value.to_ascii_lowercase().as_str()) => "text".to_string(),
            // A preview's buttons submit nothing, anywhere.
            ("button", "type") => "button".to_string(),
            _ => value.to_string(),
        };
        out.insert(key.to_string(), Value::String(value));
    }
    if name == "button" {
        out.insert("type".into(), json!("button"));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests;
