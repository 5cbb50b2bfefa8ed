//! The request a JSON-RPC answer answers, read from its bytes as they stream by: the `id` key of
//! the top-level object only (and no top-level `method`: a server's own request carries an id
//! of the server's, not one of ours), with JSON's nesting and strings followed, in constant
//! memory. Used where a message is too large to be parsed (an oversized stdio line or SSE
//! event), so that failing "its" request fails the request the message itself answers, never
//! one whose id sits somewhere inside it (a caller's arguments echoed back put any id they like
//! before the real one).

use serde_json::Value;

/// The most bytes an id's value may take; a longer one is no id of the service's.
const MAX_ID_BYTES: usize = 512;
/// The most bytes a top-level key is kept for (only `"id"`, perhaps escaped, matters).
const MAX_KEY_BYTES: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Top {
    /// Nothing but whitespace so far.
    Unknown,
    Object,
    /// A batch, a scalar or garbage: no id of its own.
    NotObject,
}

/// The scanner: feed it the message's bytes in order ([`OwnId::feed`]), then ask [`OwnId::id`].
#[derive(Debug, Clone)]
pub struct OwnId {
    top: Top,
    depth: usize,
    in_str: bool,
    esc: bool,
    /// At depth 1, the next string is a key.
    expect_key: bool,
    /// The top-level key being read (quotes included), while it is read.
    key: Option<Vec<u8>>,
    /// The last key read was `id`, and its value has not started.
    id_next: bool,
    /// The id's value being read (a string with its quotes, or a scalar's characters).
    value: Option<Vec<u8>>,
    /// Top-level `id` keys seen, and the value of the (only) one.
    ids: u8,
    found: Option<Vec<u8>>,
    /// The id's value could not be one (an object, an array, too long).
    unusable: bool,
    /// A top-level `method`: a request or notification, which answers nothing.
    method: bool,
}

impl Default for OwnId {
    fn default() -> Self {
        OwnId {
            top: Top::Unknown,
            depth: 0,
            in_str: false,
            esc: false,
            expect_key: false,
            key: None,
            id_next: false,
            value: None,
            ids: 0,
            found: None,
            unusable: false,
            method: false,
        }
    }
}

impl OwnId {
    pub fn new() -> OwnId {
        OwnId::default()
    }

    /// The scanner of a whole message in one slice.
    pub fn of(bytes: &[u8]) -> Option<Value> {
        let mut s = OwnId::new();
        s.feed(bytes);
        s.answers()
    }

    /// The next bytes of the message.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if self.top == Top::Unknown {
                match b {
                    b' ' | b'\t' | b'\r' | b'\n' => continue,
                    b'{' => {
                        (self.top, self.depth, self.expect_key) = (Top::Object, 1, true);
                        continue;
                    }
                    _ => self.top = Top::NotObject,
                }
            }
            if self.top == Top::NotObject || self.depth == 0 {
                return;
            }
            if self.in_str {
                self.in_string(b);
            } else {
                self.outside_string(b);
            }
        }
    }

    fn in_string(&mut self, b: u8) {
        if self.depth == 1 {
            if let Some(k) = self.key.as_mut().filter(|k| k.len() <= MAX_KEY_BYTES) {
                k.push(b);
            }
            self.keep(b);
        }
        if self.esc {
            self.esc = false;
        } else if b == b'\\' {
            self.esc = true;
        } else if b == b'"' {
            self.in_str = false;
            if self.depth == 1 {
                if let Some(key) = self.key.take() {
                    self.id_next = is_key(&key, "id");
                    self.method |= is_key(&key, "method");
                } else if self.value.is_some() {
                    self.value_done();
                }
            }
        }
    }

    fn outside_string(&mut self, b: u8) {
        let top_level = self.depth == 1;
        match b {
            b'"' => {
                self.in_str = true;
                if top_level && self.expect_key {
                    (self.expect_key, self.key) = (false, Some(vec![b'"']));
                } else if top_level && std::mem::take(&mut self.id_next) {
                    self.value = Some(vec![b'"']);
                }
            }
            b'{' | b'[' => {
                if top_level && std::mem::take(&mut self.id_next) {
                    (self.unusable, self.ids) = (true, self.ids.saturating_add(1));
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                if top_level {
                    self.scalar_done();
                }
                self.depth -= 1;
            }
            b',' if top_level => {
                self.scalar_done();
                self.expect_key = true;
            }
            b':' | b' ' | b'\t' | b'\r' | b'\n' if top_level => self.scalar_done(),
            _ if top_level => {
                if std::mem::take(&mut self.id_next) {
                    self.value = Some(Vec::new());
                }
                self.keep(b);
            }
            _ => {}
        }
    }

    /// A byte of the id's value, if one is being read.
    fn keep(&mut self, b: u8) {
        if let Some(v) = self.value.as_mut() {
            if v.len() < MAX_ID_BYTES {
                v.push(b);
            } else {
                self.unusable = true;
            }
        }
    }

    /// A scalar value (a number, `null`, ...) ends at a delimiter; a string ends at its quote.
    fn scalar_done(&mut self) {
        if self.value.as_ref().is_some_and(|v| v.first() != Some(&b'"')) {
            self.value_done();
        }
    }

    fn value_done(&mut self) {
        self.ids = self.ids.saturating_add(1);
        self.found = self.value.take();
    }

    /// The request the message answers: a number or a string under the one top-level `id`
    /// key of a message with no top-level `method`. None when it has none, more than one, one
    /// that is no id (null, an object, too long), or it is a request of its own.
    pub fn answers(&self) -> Option<Value> {
        if self.ids != 1 || self.unusable || self.method {
            return None;
        }
        let v: Value = serde_json::from_slice(self.found.as_deref()?).ok()?;
        (v.is_number() || v.is_string()).then_some(v)
    }
}

/// Whether a key, as written (quotes included), is `name` (escapes read as JSON reads them).
fn is_key(raw: &[u8], name: &str) -> bool {
    if raw.len() == name.len() + 2 && &raw[1..raw.len() - 1] == name.as_bytes() {
        return true;
    }
    raw.contains(&b'\\') && raw.len() <= MAX_KEY_BYTES && serde_json::from_slice::<String>(raw).is_ok_and(|k| k == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_top_level_id_wherever_it_stands() {
        assert_eq!(OwnId::of(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#), Some(json!(7)));
        assert_eq!(OwnId::of(br#"{"result":{"x":1},"jsonrpc":"2.0","id":"a\"b"}"#), Some(json!("a\"b")));
        assert_eq!(OwnId::of(b" \n{ \"id\" : -12.5e3 , \"result\": {} }"), Some(json!(-12.5e3)));
        assert_eq!(OwnId::of(br#"{"i\u0064":4,"result":{}}"#), Some(json!(4)), "an escaped key is still the key");
    }

    #[test]
    fn an_id_inside_the_message_is_never_its_own() {
        // Echoed arguments first, the server's own id last (as the TypeScript SDK writes).
        let echoed = br#"{"result":{"content":[{"type":"text","text":"{\"id\":1}"}],"structuredContent":{"id":1,"args":{"id":1}}},"jsonrpc":"2.0","id":42}"#;
        assert_eq!(OwnId::of(echoed), Some(json!(42)));
        assert_eq!(OwnId::of(br#"{"result":{"id":1},"jsonrpc":"2.0"}"#), None, "only a nested one: no id of its own");
        assert_eq!(OwnId::of(br#"{"x":"\"id\":3","y":["id",5]}"#), None, "in strings and arrays");
    }

    #[test]
    fn no_usable_id_is_none() {
        for bad in [
            &br#"{"id":null,"result":{}}"#[..],
            br#"{"id":{"n":1},"result":{}}"#,
            br#"{"id":[1],"result":{}}"#,
            br#"{"id":1,"result":{},"id":2}"#,
            br#"[{"id":1,"result":{}}]"#,
            b"42",
            b"",
            b"not json",
            br#"{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{}}"#,
            br#"{"params":{},"id":5,"m\u0065thod":"x"}"#,
        ] {
            assert_eq!(OwnId::of(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        let long = format!(r#"{{"id":"{}","result":{{}}}}"#, "x".repeat(MAX_ID_BYTES + 1));
        assert_eq!(OwnId::of(long.as_bytes()), None, "too long to be one of ours");
    }

    #[test]
    fn fed_in_any_pieces_it_reads_the_same() {
        let msg = br#"{"result":{"text":"a \\\"id\": 9 b","id":3},"jsonrpc":"2.0","id":"req-\u00e9"}"#;
        let whole = OwnId::of(msg);
        assert_eq!(whole, Some(json!("req-\u{e9}")));
        for cut in 1..msg.len() {
            let mut s = OwnId::new();
            s.feed(&msg[..cut]);
            s.feed(&msg[cut..]);
            assert_eq!(s.answers(), whole, "cut at {cut}");
        }
    }
}
