//! A streamed answer, read under the limits that fit streaming: the first token within
//! `firstTokenMs`, never a silence longer than `stallMs`, never more bytes than the token limit
//! can explain. Each wire format only turns bytes into [`Chunk`]s (its [`Decoder`]); what the
//! chunks mean for the request is decided here, once for every provider.

use std::time::Duration;

use bytes::Bytes;
use futures::{Stream, StreamExt};
use tokio::time::Instant;

use super::{ErrorCode, LlmError, LlmResponse};
use crate::generation::progress::Progress;

/// What a provider's stream says, in the order it says it.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    /// More of the answer.
    Text(String),
    /// Token counts (each provider sends them at its own point; later ones win).
    Usage { input: Option<u64>, output: Option<u64> },
    /// The provider says the answer is complete, and why it stopped.
    Stop(Stop),
    /// The provider reported a failure inside the stream.
    Failed(LlmError),
}

/// Why the answer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Stop {
    /// The model finished.
    #[default]
    Done,
    /// Cut at the token limit (`max_tokens`, `length`): the page is incomplete.
    Truncated,
}

/// Turns a wire format's bytes into chunks, in bounded memory, whatever the chunk boundaries.
pub trait Decoder: Send {
    fn feed(&mut self, bytes: &[u8]) -> Vec<Chunk>;
    /// The body ended: anything still buffered.
    fn finish(&mut self) -> Vec<Chunk> {
        Vec::new()
    }
}

/// The limits a streamed answer is read under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// From sending the request to the first text of the answer.
    pub first_token: Duration,
    /// The longest silence once text has started.
    pub stall: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { first_token: Duration::from_secs(60), stall: Duration::from_secs(30) }
    }
}

/// The most bytes a streamed answer of `max_tokens` may take: framing costs far more than the
/// text (an OpenAI chunk is ~150 bytes of JSON around one token), so a generous multiple.
pub fn max_stream_bytes(max_tokens: u32) -> usize {
    64 * 1024 + max_tokens as usize * 512
}

pub(crate) fn first_token_error(limits: &Limits) -> LlmError {
    LlmError::new(ErrorCode::Timeout, format!("no answer began within {} ms (generation.firstTokenMs)", limits.first_token.as_millis()))
}

/// Reads the streamed body until it ends. `first_deadline` counts from when the request was
/// sent. Text goes to `progress` as it arrives.
pub async fn collect<S, E>(
    mut body: S,
    decoder: &mut dyn Decoder,
    limits: &Limits,
    first_deadline: Instant,
    max_bytes: usize,
    progress: Option<&Progress>,
) -> Result<LlmResponse, LlmError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    let mut out = LlmResponse::default();
    let mut stop: Option<Stop> = None;
    let mut received = 0usize;
    let mut last_text: Option<Instant> = None;
    loop {
        let until = match last_text {
            None => first_deadline,
            Some(t) => t + limits.stall,
        };
        let next = match tokio::time::timeout_at(until, body.next()).await {
            Ok(n) => n,
            Err(_) if last_text.is_none() => return Err(first_token_error(limits)),
            Err(_) => {
                return Err(LlmError::new(
                    ErrorCode::Stalled,
                    format!(
                        "the answer stopped for {} ms after {} characters (generation.stallMs)",
                        limits.stall.as_millis(),
                        out.text.chars().count()
                    ),
                ))
            }
        };
        let ended = next.is_none();
        let chunks = match next {
            Some(Ok(bytes)) => {
                received += bytes.len();
                if received > max_bytes {
                    return Err(LlmError::new(
                        ErrorCode::ServerError,
                        format!("the streamed answer passed {max_bytes} bytes, more than its token limit explains"),
                    ));
                }
                decoder.feed(&bytes)
            }
            Some(Err(_)) => {
                return Err(LlmError::new(ErrorCode::NetworkError, "the connection to the provider failed: the answer broke off"))
            }
            None => decoder.finish(),
        };
        apply(&chunks, &mut out, &mut stop, progress, &mut last_text)?;
        if ended {
            break;
        }
    }
    match stop {
        Some(s) => {
            out.stop = s;
            Ok(out)
        }
        None => Err(LlmError::new(ErrorCode::NetworkError, "the answer broke off before the provider said it was complete")),
    }
}

/// Applies one batch of chunks to the answer so far.
fn apply(
    chunks: &[Chunk],
    out: &mut LlmResponse,
    stop: &mut Option<Stop>,
    progress: Option<&Progress>,
    last_text: &mut Option<Instant>,
) -> Result<(), LlmError> {
    for c in chunks {
        match c {
            Chunk::Text(t) if !t.is_empty() => {
                out.text.push_str(t);
                *last_text = Some(Instant::now());
                if let Some(p) = progress {
                    p.received(t);
                }
            }
            Chunk::Text(_) => {}
            Chunk::Usage { input, output } => {
                out.input_tokens = input.unwrap_or(out.input_tokens);
                out.output_tokens = output.unwrap_or(out.output_tokens);
            }
            Chunk::Stop(s) => *stop = Some(*s),
            Chunk::Failed(e) => return Err(e.clone()),
        }
    }
    Ok(())
}

/// Splits a byte stream into lines (`\n`, an optional `\r` before it), each at most `max`
/// bytes: a longer line is reported once as too long and the rest of it dropped.
#[derive(Debug)]
pub struct Lines {
    buf: Vec<u8>,
    max: usize,
    skipping: bool,
}

/// One line, or the note that one was longer than the limit.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Text(String),
    TooLong,
}

impl Lines {
    pub fn with_limit(max: usize) -> Self {
        Lines { buf: Vec::new(), max, skipping: false }
    }

    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        for part in bytes.split_inclusive(|b| *b == b'\n') {
            let ends = part.last() == Some(&b'\n');
            let body = if ends { &part[..part.len() - 1] } else { part };
            if !self.skipping {
                if self.buf.len() + body.len() > self.max {
                    self.buf.clear();
                    self.skipping = true;
                    out.push(Line::TooLong);
                } else {
                    self.buf.extend_from_slice(body);
                }
            }
            if ends {
                if !std::mem::take(&mut self.skipping) {
                    out.push(self.take());
                }
                self.buf.clear();
            }
        }
        out
    }

    /// What is left when the body ends (a last line without `\n`).
    pub fn finish(&mut self) -> Option<Line> {
        if std::mem::take(&mut self.skipping) || self.buf.is_empty() {
            self.buf.clear();
            return None;
        }
        Some(self.take())
    }

    fn take(&mut self) -> Line {
        let mut line = std::mem::take(&mut self.buf);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        Line::Text(String::from_utf8_lossy(&line).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Replays scripted chunks.
    struct Script(Vec<Chunk>);

    impl Decoder for Script {
        fn feed(&mut self, bytes: &[u8]) -> Vec<Chunk> {
            let n: usize = String::from_utf8_lossy(bytes).parse().unwrap_or(0);
            self.0.drain(..n.min(self.0.len())).collect()
        }
    }

    fn body(parts: Vec<(u64, &'static str)>) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Unpin {
        Box::pin(futures::stream::iter(parts).then(|(wait_ms, n)| async move {
            tokio::time::sleep(Duration::from_millis(wait_ms)).await;
            Ok(Bytes::from_static(n.as_bytes()))
        }))
    }

    fn limits() -> Limits {
        Limits { first_token: Duration::from_millis(1500), stall: Duration::from_millis(500) }
    }

    async fn run(parts: Vec<(u64, &'static str)>, chunks: Vec<Chunk>) -> Result<LlmResponse, LlmError> {
        let mut d = Script(chunks);
        let p = Progress::default();
        collect(body(parts), &mut d, &limits(), Instant::now() + limits().first_token, 1 << 20, Some(&p)).await
    }

    #[tokio::test(start_paused = true)]
    async fn a_paced_answer_is_read_to_its_stop() {
        let chunks = vec![
            Chunk::Usage { input: Some(7), output: None },
            Chunk::Text("<html>".into()),
            Chunk::Text("</html>".into()),
            Chunk::Stop(Stop::Done),
            Chunk::Usage { input: None, output: Some(3) },
        ];
        // First token after 1.4 s, then a part every 400 ms: within both limits.
        let r = run(vec![(1400, "2"), (400, "1"), (400, "2")], chunks).await.unwrap();
        assert_eq!((r.text.as_str(), r.stop, r.input_tokens, r.output_tokens), ("<html></html>", Stop::Done, 7, 3));
    }

    #[tokio::test(start_paused = true)]
    async fn no_first_token_in_time_is_a_timeout() {
        // Bytes arrive (a ping), but no text: the first-token limit still runs.
        let e = run(vec![(1000, "1"), (1000, "1")], vec![Chunk::Usage { input: Some(1), output: None }, Chunk::Text("x".into())])
            .await
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Timeout);
        assert!(e.message.contains("firstTokenMs") && e.retryable, "{e}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_silence_after_the_start_is_a_stall() {
        let e = run(vec![(100, "1"), (600, "1")], vec![Chunk::Text("abc".into()), Chunk::Stop(Stop::Done)]).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::Stalled);
        assert!(e.message.contains("3 characters") && e.message.contains("stallMs") && e.retryable, "{e}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_end_without_a_stop_broke_off_and_a_cut_answer_says_so() {
        let e = run(vec![(10, "1")], vec![Chunk::Text("<html>".into())]).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::NetworkError);
        let r = run(vec![(10, "2")], vec![Chunk::Text("<html>".into()), Chunk::Stop(Stop::Truncated)]).await.unwrap();
        assert_eq!(r.stop, Stop::Truncated);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failure_in_the_stream_is_its_error_and_size_is_bounded() {
        let failed = LlmError::new(ErrorCode::ServerError, "overloaded");
        let e = run(vec![(10, "2")], vec![Chunk::Text("a".into()), Chunk::Failed(failed.clone())]).await.unwrap_err();
        assert_eq!(e, failed);
        let mut d = Script(vec![Chunk::Text("a".into())]);
        let big = futures::stream::iter(vec![Ok::<_, std::io::Error>(Bytes::from(vec![b'1'; 2048]))]);
        let e = collect(big, &mut d, &limits(), Instant::now() + Duration::from_secs(1), 1024, None).await.unwrap_err();
        assert!(e.message.contains("1024 bytes"), "{e}");
    }

    #[test]
    fn lines_are_split_anywhere_and_bounded() {
        let mut l = Lines::with_limit(8);
        let mut got = Vec::new();
        for b in b"ab\r\ncd\n0123456789abc\nok".chunks(1) {
            got.extend(l.feed(b));
        }
        got.extend(l.finish());
        assert_eq!(got, vec![Line::Text("ab".into()), Line::Text("cd".into()), Line::TooLong, Line::Text("ok".into())]);
        let mut l = Lines::with_limit(8);
        assert_eq!(l.feed(b"x\ny\n"), vec![Line::Text("x".into()), Line::Text("y".into())]);
        assert_eq!(l.finish(), None);
    }
}
