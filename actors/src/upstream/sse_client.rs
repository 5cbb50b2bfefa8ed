//! Legacy HTTP+SSE upstream (protocol 2024-11-05): `GET /sse` opens a stream whose first event,
//! `endpoint`, names where to POST; answers arrive as `message` events on the stream.

use futures::StreamExt;
use reqwest::header::ACCEPT;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::{describe_http_error, http_client, Link, LinkEvent};
use crate::jsonrpc;
use crate::sse;

pub async fn connect(url: url::Url, headers: Vec<(String, String)>) -> Result<Link, String> {
    let client = http_client(&headers)?;
    let resp = client
        .get(url.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| format!("cannot open the upstream SSE stream: {}", describe_http_error(&e)))?;
    if !resp.status().is_success() {
        return Err(format!("the upstream SSE endpoint answered HTTP {}", resp.status()));
    }
    let (to_up_tx, mut to_up_rx) = mpsc::unbounded_channel::<Value>();
    let (events, from_up_rx) = mpsc::unbounded_channel::<LinkEvent>();
    let cancel = CancellationToken::new();
    let (endpoint_tx, endpoint_rx) = oneshot::channel::<url::Url>();

    let reader_events = events.clone();
    let reader_cancel = cancel.clone();
    let base = url.clone();
    tokio::spawn(async move {
        let mut endpoint_tx = Some(endpoint_tx);
        let mut parser = sse::Parser::default();
        let mut body = resp.bytes_stream();
        let why = loop {
            let chunk = tokio::select! {
                _ = reader_cancel.cancelled() => return,
                c = body.next() => c,
            };
            match chunk {
                Some(Ok(bytes)) => {
                    for ev in parser.feed(&bytes) {
                        match ev.event.as_deref() {
                            Some("endpoint") => match base.join(ev.data.trim()) {
                                Ok(u) => {
                                    if let Some(tx) = endpoint_tx.take() {
                                        let _ = tx.send(u);
                                    }
                                }
                                Err(_) => tracing::warn!(
                                    component = "upstream",
                                    event = "bad_endpoint",
                                    "upstream sent an endpoint that is not a URL"
                                ),
                            },
                            None | Some("message") => match serde_json::from_str::<Value>(&ev.data) {
                                Ok(m) => {
                                    let _ = reader_events.send(LinkEvent::Message(m));
                                }
                                Err(_) if ev.data.trim().is_empty() => {}
                                Err(_) => tracing::warn!(
                                    component = "upstream",
                                    event = "bad_sse_data",
                                    "upstream SSE event is not JSON; ignored"
                                ),
                            },
                            Some(_) => {}
                        }
                    }
                }
                Some(Err(e)) => break format!("the upstream SSE stream broke off: {}", describe_http_error(&e)),
                None => break "the upstream closed its SSE stream".to_string(),
            }
        };
        let _ = reader_events.send(LinkEvent::Closed(why));
    });

    let writer_cancel = cancel.clone();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let _done = done_tx;
        let endpoint = tokio::select! {
            _ = writer_cancel.cancelled() => return,
            e = endpoint_rx => e,
        };
        let Ok(endpoint) = endpoint else { return };
        loop {
            let msg = tokio::select! {
                _ = writer_cancel.cancelled() => return,
                m = to_up_rx.recv() => m,
            };
            let Some(msg) = msg else { return };
            let client = client.clone();
            let endpoint = endpoint.clone();
            let events = events.clone();
            tokio::spawn(async move {
                let id = jsonrpc::id(&msg).cloned().filter(|_| jsonrpc::method(&msg).is_some());
                let res = client.post(endpoint).json(&msg).send().await;
                let failure = match res {
                    Ok(r) if r.status().is_success() => None,
                    Ok(r) => Some(format!("the upstream rejected the message: HTTP {}", r.status())),
                    Err(e) => Some(format!("the upstream did not accept the message: {}", describe_http_error(&e))),
                };
                if let (Some(why), Some(id)) = (failure, id) {
                    let _ = events.send(LinkEvent::Message(jsonrpc::error(id, jsonrpc::code::UPSTREAM_UNAVAILABLE, why)));
                }
            });
        }
    });

    Ok(Link::new(to_up_tx, from_up_rx, cancel, done_rx))
}
