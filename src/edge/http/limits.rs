//! What one client address may hold open at once (`server.maxConnectionsPerClient`; the
//! address a trusted proxy forwards, else the peer's): requests
//! in flight, a slow body being read and a stream being written all count, from the moment the
//! request arrives until its response body ends. One client that opens hundreds of slow
//! requests gets 429 beyond its share instead of taking every file descriptor; `/healthz` is
//! never counted, so health checks keep working meanwhile.

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::middleware::Next;
use actix_web::web::{self, Bytes};
use mcp_gen_ui_actors::mcp::jsonrpc::code;
use mcp_gen_ui_actors::process::locks::Recover;

use super::{json_error, Edge};

/// Open requests by client address.
#[derive(Default)]
pub struct PerClient {
    open: Mutex<HashMap<IpAddr, usize>>,
}

/// One open request; dropping it (the response body ended, or the request went away) frees
/// its place.
pub struct Place {
    table: Arc<PerClient>,
    ip: IpAddr,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut open = self.table.open.guard();
        if let Some(n) = open.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

impl PerClient {
    /// A place for `ip`, or None when it already holds `max`.
    pub fn take(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<Place> {
        let mut open = self.open.guard();
        let n = open.entry(ip).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Place { table: self.clone(), ip })
    }
}

/// A response body that holds its request's place until it ends (generic, not boxed: a boxed
/// body is one more allocation on every call).
pub struct Held<B> {
    body: B,
    _place: Option<Place>,
}

impl<B: MessageBody + Unpin> MessageBody for Held<B> {
    type Error = B::Error;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.body).poll_next(cx)
    }
}

/// The middleware (`from_fn(limits::per_client)`) on the app: every route but `/healthz`.
pub async fn per_client<B: MessageBody + Unpin + 'static>(
    req: ServiceRequest,
    next: Next<B>,
) -> Result<ServiceResponse<EitherBody<Held<B>, BoxBody>>, actix_web::Error> {
    let held = |res: ServiceResponse<B>, place| res.map_body(|_, body| Held { body, _place: place }).map_into_left_body();
    // Health checks keep working while a client holds its whole share.
    if req.path() == "/healthz" {
        return Ok(held(next.call(req).await?, None));
    }
    let Some(edge) = req.app_data::<web::Data<Edge>>().cloned() else {
        return Ok(held(next.call(req).await?, None));
    };
    // Behind a trusted proxy every client arrives from the proxy's address: count the client's.
    let Some(ip) = super::forwarded::client_ip(req.request(), &edge.trusted_proxies) else {
        return Ok(held(next.call(req).await?, None));
    };
    let max = edge.max_per_client;
    let Some(place) = edge.per_client.take(ip, max) else {
        edge.metrics.refusals.with_label_values(&["connections_per_client"]).inc();
        let mut res = json_error(
            StatusCode::TOO_MANY_REQUESTS,
            code::LIMITED,
            format!("this client already has {max} requests open (server.maxConnectionsPerClient); finish or close some first"),
        );
        res.headers_mut().insert(actix_web::http::header::RETRY_AFTER, actix_web::http::header::HeaderValue::from_static("1"));
        return Ok(req.into_response(res).map_into_right_body());
    };
    Ok(held(next.call(req).await?, Some(place)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_per_address_and_come_back() {
        let t = Arc::new(PerClient::default());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let first = t.take(a, 2).unwrap();
        let _second = t.take(a, 2).unwrap();
        assert!(t.take(a, 2).is_none(), "a's share is taken");
        assert!(t.take(b, 2).is_some(), "b has its own");
        drop(first);
        assert!(t.take(a, 2).is_some(), "a place came back");
    }
}
