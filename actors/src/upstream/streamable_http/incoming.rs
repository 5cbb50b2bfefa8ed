//! What arrives from a Streamable HTTP upstream: a POST's answer stream, the optional GET
//! stream of server-initiated messages, and each message handed to the link, tagged with the
//! request whose stream carried it.

use std::sync::Arc;

use futures::StreamExt;
use reqwest::header::ACCEPT;
use serde_json::Value;

use super::*;
use crate::mcp::jsonrpc::At;

impl Shared {
    pub(super) async fn deliver(&self, msg: Value, asked: Option<&str>, stream_of: Option<&Value>) {
        if asked == Some("tools/list") {
            self.learn_param_headers(&msg);
        }
        if asked == Some("initialize") {
            if let Some(v) = msg.at("/result/protocolVersion").and_then(Value::as_str) {
                self.state.guard().protocol_version = Some(v.to_string());
            }
        }
        let ev = match stream_of {
            Some(request) => LinkEvent::OnStream { msg, request: request.clone() },
            None => LinkEvent::Message(msg),
        };
        self.emit(ev).await;
    }

    /// Reads an SSE body: the stream of POST `stream_of` (a request id), or the GET stream.
    pub(super) async fn read_sse(self: Arc<Self>, resp: reqwest::Response, asked: Option<String>, stream_of: Option<Value>) {
        let mut parser = sse::Parser::with_limit(self.limits.max_message_bytes);
        let mut body = resp.bytes_stream();
        // Whether this POST's own answer came (a stream that ends without it must not leave the
        // request waiting).
        let mut answered = stream_of.is_none();
        let why = loop {
            let chunk = tokio::select! {
                _ = self.cancel.cancelled() => return,
                c = body.next() => c,
            };
            match chunk {
                Some(Ok(bytes)) => {
                    for ev in parser.feed(&bytes) {
                        if ev.oversized {
                            // It fails the request it answers (its own id, on any stream), and
                            // no other: one that answers nothing is counted and logged, and a
                            // POST's stream that ends without its answer fails that request.
                            let id = ev.own_id.clone();
                            answered |= stream_of.is_some() && id == stream_of;
                            let bytes = self.limits.max_message_bytes.saturating_add(1);
                            self.emit(LinkEvent::Oversized { id, bytes }).await;
                            continue;
                        }
                        if ev.data.trim().is_empty() || ev.event.as_deref().is_some_and(|e| e != "message") {
                            continue;
                        }
                        match serde_json::from_str::<Value>(&ev.data) {
                            Ok(m) if !matches!(jsonrpc::kind(&m), jsonrpc::Kind::Invalid(_)) || m.is_array() => {
                                answered |= stream_of.as_ref().is_some_and(|id| answers(&m, id));
                                self.deliver(m, asked.as_deref(), stream_of.as_ref()).await
                            }
                            Ok(_) => self.emit(LinkEvent::Bad("an SSE event is JSON but not JSON-RPC".into())).await,
                            Err(_) => self.emit(LinkEvent::Bad("an SSE event is not JSON".into())).await,
                        }
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!(component = "upstream", event = "sse_broken", error = %describe_http_error(&e), "upstream SSE stream broke off");
                    break format!("the upstream's answer stream broke off ({})", describe_http_error(&e));
                }
                None => break "the upstream ended the answer stream without an answer".to_string(),
            }
        };
        if let (false, Some(id)) = (answered, stream_of) {
            self.emit(LinkEvent::Message(jsonrpc::error(id, jsonrpc::code::UPSTREAM_UNAVAILABLE, why))).await;
        }
    }

    /// The GET stream carries server-initiated messages; servers may answer 405 (none offered).
    pub(super) fn open_get_stream(self: Arc<Self>) {
        {
            let mut st = self.state.guard();
            if st.get_stream_started || st.session_id.is_none() {
                return;
            }
            st.get_stream_started = true;
        }
        tokio::spawn(async move {
            let mut delay = std::time::Duration::from_secs(1);
            loop {
                let resp = self.request(reqwest::Method::GET).header(ACCEPT, "text/event-stream").send().await;
                match resp {
                    Ok(r) if r.status().is_success() => {
                        delay = std::time::Duration::from_secs(1);
                        self.clone().read_sse(r, None, None).await;
                    }
                    Ok(r) if r.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                    Ok(r) if r.status() == StatusCode::NOT_FOUND => {
                        self.emit(LinkEvent::Closed("the upstream HTTP session expired (404); re-initializing".into())).await;
                        return;
                    }
                    // The server is gone (not merely between streams): restart the link now
                    // rather than at the next call.
                    Err(e) if e.is_connect() => {
                        self.emit(LinkEvent::Closed(format!("the upstream is unreachable: {}", describe_http_error(&e)))).await;
                        return;
                    }
                    Ok(_) | Err(_) => {}
                }
                tokio::select! {
                    _ = self.cancel.cancelled() => return,
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(std::time::Duration::from_secs(30));
            }
        });
    }
}
