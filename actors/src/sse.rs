//! Server-Sent Events: an incremental parser (for upstream streams) and a formatter (for host
//! streams). Written here because rmcp dropped legacy SSE and the format is a page of spec.

/// One dispatched event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    pub event: Option<String>,
    pub data: String,
    pub id: Option<String>,
    pub retry: Option<u64>,
}

/// Incremental parser: feed bytes as they arrive, take out whole events.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    current: Event,
    has_data: bool,
}

impl Parser {
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        // Lines end in \n, \r\n or \r; a lone trailing \r may be the start of \r\n, so wait.
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n' || *b == b'\r') {
            if self.buf[pos] == b'\r' && pos + 1 == self.buf.len() {
                break;
            }
            let skip = if self.buf[pos] == b'\r' && self.buf.get(pos + 1) == Some(&b'\n') { 2 } else { 1 };
            let line: Vec<u8> = self.buf.drain(..pos + skip).take(pos).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(ev) = self.line(&line) {
                out.push(ev);
            }
        }
        out
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let ev = std::mem::take(&mut self.current);
            let had = std::mem::take(&mut self.has_data);
            // Events with no data are not dispatched, but an id-only event still counts for
            // resumption bookkeeping; callers that care see it through `id`.
            return (had || ev.id.is_some()).then_some(ev);
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
        match field {
            "event" => self.current.event = Some(value.to_string()),
            "data" => {
                if self.has_data {
                    self.current.data.push('\n');
                }
                self.current.data.push_str(value);
                self.has_data = true;
            }
            "id" => self.current.id = Some(value.to_string()),
            "retry" => self.current.retry = value.parse().ok(),
            _ => {}
        }
        None
    }
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
        assert_eq!(evs[0], Event { event: Some("message".into()), data: "{\"a\":\n1}".into(), id: Some("7".into()), retry: None });
    }

    #[test]
    fn priming_event_with_id_only_is_reported() {
        let mut p = Parser::default();
        let evs = p.feed(b"id: 0\nretry: 1000\ndata: \n\n");
        assert_eq!(evs[0].retry, Some(1000));
        assert_eq!(evs[0].data, "");
    }
}
