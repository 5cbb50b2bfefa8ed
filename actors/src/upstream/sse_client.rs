//! Legacy HTTP+SSE upstream (protocol 2024-11-05): `GET /sse` opens a stream whose first event,
//! `endpoint`, names where to POST; answers arrive as `message` events on the stream. The
//! endpoint must be on the /sse URL's own origin: our configured headers (credentials) are never
//! sent anywhere else. POSTs leave in the order they were sent.

use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::error::ConnectError;
use super::{describe_http_error, http_client, origin_of, Link, LinkEvent, LinkLimits, Outgoing, LINK_QUEUE, ORDER_WAIT};
use crate::mcp::jsonrpc;
use crate::mcp::sse;

/// The POST URL an `endpoint` event names, if it is on `base`'s origin.
/// An `endpoint` event this link will not POST to.
#[derive(Debug, PartialEq, thiserror::Error)]
enum EndpointRefused {
    #[error("the upstream's endpoint event is not a URL")]
    NotUrl,
    #[error("the upstream's endpoint event points to another origin ({named}, not {ours}); refused, so that the configured headers never leave for it")]
    OtherOrigin { named: String, ours: String },
}

fn endpoint_url(base: &url::Url, data: &str) -> Result<url::Url, EndpointRefused> {
    let u = base.join(data.trim()).map_err(|_| EndpointRefused::NotUrl)?;
    if u.origin() != base.origin() {
        return Err(EndpointRefused::OtherOrigin { named: origin_of(&u), ours: origin_of(base) });
    }
    Ok(u)
}

pub async fn connect(url: url::Url, headers: Vec<(String, String)>, limits: LinkLimits) -> Result<Link, ConnectError> {
    let client = http_client(&headers)?;
    let resp = client
        .get(url.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| ConnectError::Unreachable(describe_http_error(&e)))?;
    if !resp.status().is_success() {
        return Err(ConnectError::Status(resp.status()));
    }
    let (to_up_tx, to_up_rx) = mpsc::channel::<Outgoing>(LINK_QUEUE);
    let (events, from_up_rx) = mpsc::channel::<LinkEvent>(LINK_QUEUE);
    let cancel = CancellationToken::new();
    let (endpoint_tx, endpoint_rx) = oneshot::channel::<url::Url>();
    tokio::spawn(read_stream(resp, url, endpoint_tx, events.clone(), cancel.clone(), limits));
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(write_posts(client, endpoint_rx, to_up_rx, events, cancel.clone(), done_tx));

    Ok(Link::new(super::LinkTx::Channel(to_up_tx), from_up_rx, cancel, done_rx))
}

/// The SSE stream: its `endpoint` event (where messages go), then messages for the actor; the
/// link closes when it ends.
async fn read_stream(
    resp: reqwest::Response,
    base: url::Url,
    endpoint_tx: oneshot::Sender<url::Url>,
    events: mpsc::Sender<LinkEvent>,
    cancel: CancellationToken,
    limits: LinkLimits,
) {
    let mut endpoint_tx = Some(endpoint_tx);
    let mut parser = sse::Parser::with_limit(limits.max_message_bytes);
    let mut body = resp.bytes_stream();
    let why = 'read: loop {
        let chunk = tokio::select! {
            _ = cancel.cancelled() => return,
            c = body.next() => c,
        };
        match chunk {
            Some(Ok(bytes)) => {
                for ev in parser.feed(&bytes) {
                    let out = match ev.event.as_deref() {
                        Some("endpoint") => match endpoint_url(&base, &ev.data) {
                            Ok(u) => {
                                if let Some(tx) = endpoint_tx.take() {
                                    let _ = tx.send(u);
                                }
                                continue;
                            }
                            Err(why) => break 'read why.to_string(),
                        },
                        _ if ev.oversized => {
                            LinkEvent::Oversized { id: ev.own_id.clone(), bytes: limits.max_message_bytes.saturating_add(1) }
                        }
                        None | Some("message") => match serde_json::from_str::<Value>(&ev.data) {
                            Ok(m) if m.is_array() || !matches!(jsonrpc::kind(&m), jsonrpc::Kind::Invalid(_)) => LinkEvent::Message(m),
                            Ok(_) => LinkEvent::Bad("an SSE event is JSON but not JSON-RPC".into()),
                            Err(_) if ev.data.trim().is_empty() => continue,
                            Err(_) => LinkEvent::Bad("an SSE event is not JSON".into()),
                        },
                        Some(_) => continue,
                    };
                    if events.send(out).await.is_err() {
                        return;
                    }
                }
            }
            Some(Err(e)) => break format!("the upstream SSE stream broke off: {}", describe_http_error(&e)),
            None => break "the upstream closed its SSE stream".to_string(),
        }
    };
    let _ = events.send(LinkEvent::Closed(why)).await;
}

/// Messages to the upstream, POSTed to its endpoint once known, in order: the next leaves once
/// this one has been accepted (the 202 comes at once; the answer travels on the stream).
async fn write_posts(
    client: reqwest::Client,
    endpoint_rx: oneshot::Receiver<url::Url>,
    mut to_up_rx: mpsc::Receiver<Outgoing>,
    events: mpsc::Sender<LinkEvent>,
    cancel: CancellationToken,
    done: oneshot::Sender<()>,
) {
    let _done = done;
    let endpoint = tokio::select! {
        _ = cancel.cancelled() => return,
        e = endpoint_rx => e,
    };
    let Ok(endpoint) = endpoint else { return };
    loop {
        let msg = tokio::select! {
            _ = cancel.cancelled() => return,
            m = to_up_rx.recv() => m,
        };
        let Some(out) = msg else { return };
        let bytes = out.body().to_vec();
        let Some(msg) = out.msg else { continue }; // (this link asks for the JSON)
        let post = tokio::spawn(post_one(client.clone(), endpoint.clone(), msg, bytes, events.clone()));
        let _ = tokio::time::timeout(ORDER_WAIT, post).await;
    }
}

/// One message POSTed; a request the upstream did not accept is answered with why.
async fn post_one(client: reqwest::Client, endpoint: url::Url, msg: Value, bytes: Vec<u8>, events: mpsc::Sender<LinkEvent>) {
    let id = jsonrpc::id(&msg).cloned().filter(|_| jsonrpc::method(&msg).is_some());
    let len = bytes.len();
    let mut rb = client.post(endpoint);
    for (name, value) in crate::trace::headers_of(&msg) {
        rb = rb.header(name, value);
    }
    let res = rb.header(CONTENT_TYPE, "application/json").header(CONTENT_LENGTH, len).body(reqwest::Body::from(bytes)).send().await;
    let failure = match res {
        Ok(r) if r.status().is_success() => None,
        Ok(r) => Some(format!("the upstream rejected the message: HTTP {}", r.status())),
        Err(e) => Some(format!("the upstream did not accept the message: {}", describe_http_error(&e))),
    };
    if let (Some(why), Some(id)) = (failure, id) {
        let _ = events.send(LinkEvent::Message(jsonrpc::error(id, jsonrpc::code::UPSTREAM_UNAVAILABLE, why))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_stay_on_the_origin() {
        let base = url::Url::parse("http://127.0.0.1:3001/sse?k=1").unwrap();
        assert_eq!(endpoint_url(&base, "/message?sessionId=a").unwrap().as_str(), "http://127.0.0.1:3001/message?sessionId=a");
        assert_eq!(endpoint_url(&base, "http://127.0.0.1:3001/m").unwrap().as_str(), "http://127.0.0.1:3001/m");
        for foreign in ["http://127.0.0.2:3001/m", "https://127.0.0.1:3001/m", "http://127.0.0.1:3002/m", "//evil.example/m"] {
            assert!(matches!(endpoint_url(&base, foreign), Err(EndpointRefused::OtherOrigin { .. })), "{foreign}");
        }
    }
}
