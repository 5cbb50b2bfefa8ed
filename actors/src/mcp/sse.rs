//! Server-Sent Events: an incremental parser (for upstream streams) and a formatter (for host
//! streams). Written here because rmcp dropped legacy SSE and the format is a page of spec.

/// How much of an oversized event's data is kept (enough to log or find an id).
pub const OVERSIZED_KEEP: usize = 4096;

use serde_json::Value;

use super::own_id::OwnId;

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
    pub id: Option<String>,
    pub retry: Option<u64>,
    /// The event was over the parser's limit: `data` holds only its first [`OVERSIZED_KEEP`]
    /// bytes (and a field cut short may be missing). Treat it as a failed message.
    pub oversized: bool,
    /// The request an oversized event answers, read from every byte of its data as it went by
    /// (its own top-level id: see `own_id`); None when it answers none that can be read.
    pub own_id: Option<Value>,
}

/// Incremental parser: feed bytes as they arrive, take out whole events.
///
/// Memory is bounded by the limit: an event's data stops growing past it, and a single line
/// stops growing past the limit + [`OVERSIZED_KEEP`] (the rest of that line is dropped).
#[derive(Debug)]
pub struct Parser {
    /// The current partial line (at most `max + OVERSIZED_KEEP` bytes).
    buf: Vec<u8>,
    current: Event,
    has_data: bool,
    max: usize,
    /// The current line was cut at the line cap; its remaining bytes are dropped.
    line_cut: bool,
    /// The last line ended in `\r`: a `\n` right after it belongs to that line ending.
    after_cr: bool,
    /// Once the current event's data is over the limit: its own id, read from what follows.
    scan: Option<OwnId>,
    /// The current data line was cut at the line cap and its bytes went to `scan` as they came.
    line_scanned: bool,
}

impl Default for Parser {
    /// No limit.
    fn default() -> Self {
        Parser::with_limit(usize::MAX)
    }
}

fn is_eol(b: &u8) -> bool {
    *b == b'\n' || *b == b'\r'
}

impl Parser {
    /// A parser whose events carry at most `max` bytes of data; bigger ones come out
    /// `oversized`, truncated.
    pub fn with_limit(max: usize) -> Self {
        Parser {
            buf: Vec::new(),
            current: Event::default(),
            has_data: false,
            max,
            line_cut: false,
            after_cr: false,
            scan: None,
            line_scanned: false,
        }
    }

    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        let mut out = Vec::new();
        let mut rest = chunk;
        // Lines end in \n, \r\n or \r. A line ends at its \r; a \n right after (perhaps in the
        // next chunk) is the rest of that line ending, not an empty line.
        while !rest.is_empty() {
            if std::mem::take(&mut self.after_cr) && rest[0] == b'\n' {
                rest = &rest[1..];
                continue;
            }
            let Some(pos) = rest.iter().position(is_eol) else {
                self.append(rest);
                break;
            };
            self.append(&rest[..pos]);
            self.after_cr = rest[pos] == b'\r';
            rest = &rest[pos + 1..];
            let line = std::mem::take(&mut self.buf);
            let cut = std::mem::take(&mut self.line_cut);
            self.line_scanned = false;
            if let Some(ev) = self.line(&String::from_utf8_lossy(&line), cut) {
                out.push(ev);
            }
        }
        out
    }

    /// Adds bytes to the current line, up to the line cap. Past it, a data line's bytes go
    /// only through the scan of the event's own id.
    fn append(&mut self, bytes: &[u8]) {
        if self.line_cut {
            if let Some(scan) = self.scan.as_mut().filter(|_| self.line_scanned) {
                scan.feed(bytes);
            }
            return;
        }
        let cap = self.max.saturating_add(OVERSIZED_KEEP);
        let room = cap.saturating_sub(self.buf.len());
        if bytes.len() > room {
            self.buf.extend_from_slice(&bytes[..room]);
            self.line_cut = true;
            if let Some(value) = self.buf.strip_prefix(b"data:") {
                let scan = self.scan.get_or_insert_with(|| {
                    let mut s = OwnId::new();
                    s.feed(self.current.data.as_bytes());
                    s
                });
                if self.has_data {
                    scan.feed(b"\n");
                }
                scan.feed(value);
                scan.feed(&bytes[room..]);
                self.line_scanned = true;
            }
        } else {
            self.buf.extend_from_slice(bytes);
        }
    }

    fn line(&mut self, line: &str, cut: bool) -> Option<Event> {
        if line.is_empty() {
            let mut ev = std::mem::take(&mut self.current);
            ev.own_id = self.scan.take().and_then(|s| s.answers()).filter(|_| ev.oversized);
            let had = std::mem::take(&mut self.has_data);
            // Events with no data are not dispatched, but an id-only event still counts for
            // resumption bookkeeping; callers that care see it through `id`. An oversized event
            // is always dispatched so the caller can count it.
            return (had || ev.id.is_some() || ev.oversized).then_some(ev);
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        if cut && field != "data" {
            // A field cut short is not trusted; the event is marked instead.
            self.current.oversized = true;
            return None;
        }
        match field {
            "event" => self.current.event = Some(value.to_string()),
            "data" => self.data(value, cut),
            "id" => self.current.id = Some(value.to_string()),
            "retry" => self.current.retry = value.parse().ok(),
            _ => {}
        }
        None
    }

    /// A data line; `scanned`: its bytes already went to the scan as they came (a cut line).
    fn data(&mut self, value: &str, scanned: bool) {
        let sep = usize::from(self.has_data);
        self.has_data = true;
        let data = &mut self.current.data;
        if !self.current.oversized && data.len() + sep + value.len() <= self.max {
            if sep == 1 {
                data.push('\n');
            }
            data.push_str(value);
            return;
        }
        // Over the limit (now or earlier): its own id is read from everything it holds, and
        // only the first OVERSIZED_KEEP bytes are kept.
        if !scanned {
            let scan = self.scan.get_or_insert_with(|| {
                let mut s = OwnId::new();
                s.feed(data.as_bytes());
                s
            });
            if sep == 1 {
                scan.feed(b"\n");
            }
            scan.feed(value.as_bytes());
        }
        self.current.oversized = true;
        if data.len() < OVERSIZED_KEEP {
            if sep == 1 {
                data.push('\n');
            }
            data.push_str(prefix(value, OVERSIZED_KEEP.saturating_sub(data.len())));
        }
        let keep = prefix(data, OVERSIZED_KEEP).len();
        data.truncate(keep);
    }
}

/// The longest prefix of `s` of at most `n` bytes that ends on a character boundary.
fn prefix(s: &str, n: usize) -> &str {
    if n >= s.len() {
        return s;
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Formats one event for the wire. Multi-line data becomes several `data:` lines.
pub fn format(event: Option<&str>, id: Option<&str>, data: &str) -> String {
    let mut s = String::with_capacity(data.len() + 32);
    if let Some(e) = event {
        s.push_str("event: ");
        s.push_str(e);
        s.push('\n');
    }
    if let Some(i) = id {
        s.push_str("id: ");
        s.push_str(i);
        s.push('\n');
    }
    for line in data.split('\n') {
        s.push_str("data: ");
        s.push_str(line);
        s.push('\n');
    }
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_split_chunks_and_crlf() {
        let mut p = Parser::default();
        assert!(p.feed(b"event: endpoint\r\nda").is_empty());
        let evs = p.feed(b"ta: /messages?sessionId=1\r\n\r\n: comment\n\ndata: a\ndata: b\n\n");
        assert_eq!(evs.len(), 2);
        assert_eq!(evs[0].event.as_deref(), Some("endpoint"));
        assert_eq!(evs[0].data, "/messages?sessionId=1");
        assert_eq!(evs[1].data, "a\nb");
    }

    #[test]
    fn lone_cr_waits_for_more() {
        let mut p = Parser::default();
        assert!(p.feed(b"data: x\r").is_empty());
        assert_eq!(p.feed(b"\n\r\n")[0].data, "x");
    }

    #[test]
    fn format_round_trips() {
        let mut p = Parser::default();
        let evs = p.feed(format(Some("message"), Some("7"), "{\"a\":\n1}").as_bytes());
        assert_eq!(
            evs[0],
            Event {
                event: Some("message".into()),
                data: "{\"a\":\n1}".into(),
                id: Some("7".into()),
                retry: None,
                oversized: false,
                own_id: None
            }
        );
    }

    #[test]
    fn priming_event_with_id_only_is_reported() {
        let mut p = Parser::default();
        let evs = p.feed(b"id: 0\nretry: 1000\ndata: \n\n");
        assert_eq!(evs[0].retry, Some(1000));
        assert_eq!(evs[0].data, "");
    }

    #[test]
    fn default_has_no_limit() {
        let mut p = Parser::default();
        let big = "x".repeat(100_000);
        let evs = p.feed(format(None, None, &big).as_bytes());
        assert_eq!(evs[0].data, big);
        assert!(!evs[0].oversized);
    }

    #[test]
    fn data_at_the_limit_is_kept_whole() {
        let mut p = Parser::with_limit(5);
        let evs = p.feed(b"data: ab\ndata: cd\n\n");
        assert_eq!((evs[0].data.as_str(), evs[0].oversized), ("ab\ncd", false));
    }

    #[test]
    fn oversized_event_keeps_only_its_head() {
        let mut p = Parser::with_limit(10_000);
        // Many data lines, each under the limit, together over it.
        let line = format!("data: {}\n", "y".repeat(3000));
        let mut evs = p.feed(b"event: message\nid: 3\n");
        for _ in 0..100 {
            evs.extend(p.feed(line.as_bytes()));
            assert!(p.current.data.len() <= 10_000);
        }
        evs.extend(p.feed(b"\ndata: next\n\n"));
        assert_eq!(evs.len(), 2);
        assert!(evs[0].oversized);
        assert_eq!(evs[0].data.len(), OVERSIZED_KEEP);
        assert!(evs[0].data.starts_with("yyy"));
        assert_eq!((evs[0].event.as_deref(), evs[0].id.as_deref()), (Some("message"), Some("3")));
        // The next event is whole again.
        assert_eq!((evs[1].data.as_str(), evs[1].oversized), ("next", false));
    }

    #[test]
    fn a_long_line_does_not_grow_the_buffer() {
        let limit = 100;
        let mut p = Parser::with_limit(limit);
        assert!(p.feed(b"data: ").is_empty());
        for _ in 0..1000 {
            assert!(p.feed(&[b'z'; 1000]).is_empty());
            assert!(p.buf.len() <= limit + OVERSIZED_KEEP);
        }
        let evs = p.feed(b"\r\n\r\n");
        assert_eq!(evs.len(), 1);
        assert!(evs[0].oversized);
        assert!(evs[0].data.len() <= OVERSIZED_KEEP && evs[0].data.starts_with("zzz"));
        assert_eq!(p.feed(b"data: ok\n\n")[0].data, "ok");
    }

    #[test]
    fn a_cut_non_data_field_marks_the_event() {
        let mut p = Parser::with_limit(10);
        let mut bytes = b"event: ".to_vec();
        bytes.extend([b'e'; 5000]);
        bytes.extend(b"\ndata: x\n\n");
        let evs = p.feed(&bytes);
        assert_eq!(evs.len(), 1);
        assert!(evs[0].oversized);
        assert_eq!((evs[0].event.as_deref(), evs[0].data.as_str()), (None, "x"));
    }

    #[test]
    fn oversized_truncation_respects_char_boundaries() {
        let mut p = Parser::with_limit(10);
        let text = "é".repeat(5000);
        let evs = p.feed(format(None, None, &text).as_bytes());
        assert!(evs[0].oversized);
        assert!(evs[0].data.len() <= OVERSIZED_KEEP && evs[0].data.chars().all(|c| c == 'é'));
    }

    #[test]
    fn cr_line_endings_split_across_chunks_give_the_same_events() {
        let input = b"data: a\r\r\ndata: b\r\n\r\ndata: c\n\r";
        let whole = Parser::default().feed(input);
        let mut p = Parser::default();
        let bytewise: Vec<Event> = input.iter().flat_map(|b| p.feed(&[*b])).collect();
        assert_eq!(whole, bytewise);
        assert_eq!(whole.iter().map(|e| e.data.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
    }

    /// An oversized event's own id is the message's, in one data line cut at the line cap or in
    /// many lines together over the limit, however the bytes arrive (issue 60, item 4).
    #[test]
    fn an_oversized_events_own_id_is_read_from_all_of_it() {
        let pad = "p".repeat(30_000);
        let one_line = format!("data: {{\"result\":{{\"id\":7,\"t\":\"{pad}\"}},\"jsonrpc\":\"2.0\",\"id\":8}}\n\n");
        let many_lines =
            format!("data: {{\"result\":{{\"id\":7,\ndata: \"t\":\"{pad}\"\ndata: }},\"jsonrpc\":\"2.0\",\ndata: \"id\":8}}\n\n");
        for (what, text) in [("one line", &one_line), ("many lines", &many_lines)] {
            for chunk in [1000, 7, text.len()] {
                let mut p = Parser::with_limit(1000);
                let evs: Vec<Event> = text.as_bytes().chunks(chunk).flat_map(|c| p.feed(c)).collect();
                assert_eq!(evs.len(), 1, "{what}");
                assert!(evs[0].oversized && evs[0].data.len() <= OVERSIZED_KEEP, "{what}");
                assert_eq!(evs[0].own_id, Some(serde_json::json!(8)), "{what} in chunks of {chunk}");
            }
        }
        // The next event starts afresh; one that fits has no own id set (it is parsed whole).
        let mut p = Parser::with_limit(1000);
        let evs = p.feed(format!("{one_line}data: {{\"id\":1}}\n\n").as_bytes());
        assert_eq!((evs[1].oversized, &evs[1].own_id), (false, &None));
    }
}
