//! Legacy HTTP+SSE (MCP 2024-11-05): `GET /sse` opens the session stream, whose first event
//! names `/messages?sessionId=...`; the host POSTs there and reads answers on the stream.

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use mcp_gen_ui_actors::mcp::jsonrpc::{self, code, Kind};
use mcp_gen_ui_actors::mcp::sse;
use mcp_gen_ui_actors::messages::{sink_channel, AttachStream};
use mcp_gen_ui_actors::session::Transport;
use serde::Deserialize;

use super::{json_error, sse_body, Edge};

pub async fn open(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    let owner = super::auth::caller(&req);
    if let Err(r) = edge.session_room(&owner) {
        return r;
    }
    let profile = match edge.path_profile(&req) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (session_id, session) = edge.open_session(Transport::Sse, super::auth::caller_who(&req), profile);
    let (tx, rx) = sink_channel();
    session.attach.do_send(AttachStream { sink: tx });
    let endpoint = sse::format(Some("endpoint"), None, &format!("/messages?sessionId={session_id}"));
    HttpResponse::Ok()
        .insert_header(("cache-control", "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        // The endpoint event names the session for the host; this header names it for a load
        // balancer, which cannot read a stream's body: /messages?sessionId= goes to this replica.
        .insert_header(("mcp-session-id", session_id.clone()))
        .content_type("text/event-stream")
        .streaming(sse_body(rx, Some(endpoint), session_id, edge.sse_keepalive))
}

#[derive(Deserialize)]
pub struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

pub async fn post(req: HttpRequest, query: web::Query<SessionQuery>, payload: web::Payload, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    let Some(id) = query.into_inner().session_id else {
        return json_error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            "the sessionId query parameter is required: use the endpoint URL the /sse stream sent",
        );
    };
    let session = match edge.owned_session(&id, &super::auth::caller(&req)) {
        Some(s) => s,
        None => {
            return json_error(
                StatusCode::NOT_FOUND,
                code::INVALID_REQUEST,
                format!("session {id} not found (its /sse stream closed): open /sse again"),
            )
        }
    };
    let msgs = match edge.read_messages(&req, payload).await {
        Ok(m) => m,
        Err(r) => return r,
    };
    if msgs.len() == 1 {
        if let Kind::Invalid(why) = jsonrpc::kind(&msgs[0]) {
            return json_error(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, format!("Invalid request: {why}"));
        }
    }
    for m in msgs {
        session.incoming.do_send(super::incoming(&req, m, None));
    }
    HttpResponse::Accepted().body("Accepted")
}
