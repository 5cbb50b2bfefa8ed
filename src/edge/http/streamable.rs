//! Streamable HTTP (MCP 2025-03-26 and later) at `/mcp`: POST carries messages and answers
//! them on an SSE stream (or JSON for initialize), GET opens the session's own stream, DELETE
//! ends the session. The session id travels in `Mcp-Session-Id`.

use actix_web::http::header::{self, AsHeaderName, HeaderName};
use actix_web::http::{Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use mcp_gen_ui_actors::mcp::jsonrpc::At;
use mcp_gen_ui_actors::mcp::jsonrpc::{self, code, Kind};
use mcp_gen_ui_actors::mcp::param_headers;
use mcp_gen_ui_actors::mcp::relayed::Relayed;
use mcp_gen_ui_actors::mcp::revision_2026;
use mcp_gen_ui_actors::messages::{sink_channel, AttachStream, Close, SessionRef, SinkRx};
use mcp_gen_ui_actors::session::table::log_name;
use mcp_gen_ui_actors::session::{ready_page, stateless_session_for, EdgeReader, ReadIds, Transport, HOST_PROTOCOL_VERSIONS};
use serde_json::Value;

use super::parts_body::Parts;
use super::{json_error, sse_body, Edge};

// Names made once: a lookup by a `&str` that is not a standard header's allocates its name.
static SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
static VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");

fn header(req: &HttpRequest, name: impl AsHeaderName) -> Option<&str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// A request without a session that names a revision newer than the session era's: a 2026
/// host, for which GET and DELETE do not exist.
fn stateless_era(req: &HttpRequest) -> bool {
    req.headers().get(&SESSION_HEADER).is_none()
        && header(req, &VERSION_HEADER).map(str::trim).is_some_and(|v| !v.is_empty() && !HOST_PROTOCOL_VERSIONS.contains(&v))
}

fn method_not_allowed() -> HttpResponse {
    let mut res = json_error(
        StatusCode::METHOD_NOT_ALLOWED,
        code::METHOD_NOT_FOUND,
        format!("MCP {} is stateless: there is no session stream to GET or DELETE; POST each request", revision_2026::VERSION),
    );
    res.headers_mut().insert(actix_web::http::header::ALLOW, actix_web::http::header::HeaderValue::from_static("POST"));
    res
}

/// An answer on an SSE stream. A session's stream starts with a priming event (an id and
/// empty data, SEP-1699: lets clients resume); a 2026 request's has none (no resumption).
fn sse_response(session_id: Option<String>, rx: SinkRx, keepalive: std::time::Duration) -> HttpResponse {
    let stream_id = uuid::Uuid::new_v4().simple().to_string()[..12].to_string();
    let mut res = HttpResponse::Ok();
    res.insert_header(("cache-control", "no-cache")).insert_header(("x-accel-buffering", "no")).content_type("text/event-stream");
    let priming = session_id.map(|id| {
        res.insert_header((SESSION_HEADER.clone(), id));
        format!("id: {stream_id}-0\nretry: 1000\ndata: \n\n")
    });
    res.streaming(sse_body(rx, priming, stream_id, keepalive))
}

/// An answer as plain JSON on the session's request.
fn json_answer(session_id: String, body: impl actix_web::body::MessageBody + 'static) -> HttpResponse {
    HttpResponse::Ok().insert_header((SESSION_HEADER.clone(), session_id)).content_type("application/json").body(body)
}

fn accepts(req: &HttpRequest, what: &str) -> bool {
    req.headers().get_all(header::ACCEPT).filter_map(|v| v.to_str().ok()).any(|v| v.contains(what) || v.contains("*/*"))
}

/// The session named by the request's header, if it is this principal's and this path's.
async fn find_session(edge: &Edge, req: &HttpRequest) -> Result<(String, SessionRef), HttpResponse> {
    let profile = edge.path_profile(req)?;
    let Some(id) = req.headers().get(&SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string) else {
        return Err(json_error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            "Mcp-Session-Id header is required: send initialize first and echo the session id it returns",
        ));
    };
    // A session of another profile's path is not found here, as a foreign one is not.
    match edge.owned_session(&id, &super::auth::caller(req)).filter(|s| s.profile == profile) {
        Some(s) => Ok((id, s)),
        None => Err(json_error(
            StatusCode::NOT_FOUND,
            code::INVALID_REQUEST,
            format!("session {id} not found (it expired or was closed): initialize a new session"),
        )),
    }
}

pub async fn post(req: HttpRequest, payload: web::Payload, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    if !(accepts(&req, "application/json") && accepts(&req, "text/event-stream")) {
        return json_error(
            StatusCode::NOT_ACCEPTABLE,
            code::INVALID_REQUEST,
            "the Accept header must list both application/json and text/event-stream",
        );
    }
    let ctype = req.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !ctype.starts_with("application/json") {
        return json_error(StatusCode::UNSUPPORTED_MEDIA_TYPE, code::INVALID_REQUEST, "Content-Type must be application/json");
    }
    let msgs = match edge.read_messages(&req, payload).await {
        Ok(m) => m,
        Err(r) => return r,
    };
    if req.headers().get(&SESSION_HEADER).is_none()
        && msgs.len() == 1
        && revision_2026::is_2026_request(&msgs[0], header(&req, &VERSION_HEADER), HOST_PROTOCOL_VERSIONS)
    {
        let msg = msgs.into_iter().next().expect("one");
        return post_stateless(&req, &edge, msg).await;
    }
    let kinds: Vec<Kind> = msgs.iter().map(jsonrpc::kind).collect();
    if let Some(Kind::Invalid(why)) = kinds.iter().find(|k| matches!(k, Kind::Invalid(_))).filter(|_| msgs.len() == 1) {
        return json_error(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, format!("Invalid request: {why}"));
    }
    let initializing = msgs.iter().any(|m| jsonrpc::method(m) == Some("initialize"));
    let (session_id, session) = if initializing {
        let owner = super::auth::caller(&req);
        if let Err(r) = edge.session_room(&owner) {
            return r;
        }
        let profile = match edge.path_profile(&req) {
            Ok(p) => p,
            Err(r) => return r,
        };
        edge.open_session(Transport::StreamableHttp, super::auth::caller_who(&req), profile)
    } else {
        match find_session(&edge, &req).await {
            Ok(s) => s,
            Err(r) => return r,
        }
    };
    if let [only] = msgs.as_slice() {
        if let Some(body) = ready_read(&req, &edge, &session, &session_id, only) {
            return json_answer(session_id, Parts::new(body));
        }
    }
    let expects_answer = |k: &Kind| matches!(k, Kind::Request | Kind::Invalid(_));
    if !kinds.iter().any(expects_answer) {
        for m in msgs {
            session.incoming.do_send(super::incoming(&req, m, None));
        }
        return HttpResponse::Accepted().insert_header((SESSION_HEADER.clone(), session_id)).finish();
    }
    // Nothing can travel on a request's stream before its answer when it asks for no progress
    // and the host takes no requests (sampling, elicitation, roots): then the answer goes as
    // plain JSON, which has no event size limit (the Python SDK refuses SSE events over 1 MB).
    let plain = initializing
        || (!session.flags.streams.load(std::sync::atomic::Ordering::Relaxed) && msgs.iter().all(|m| jsonrpc::progress_token(m).is_none()));
    let single = msgs.len() == 1;
    let (tx, rx) = sink_channel();
    let tx = if plain { tx.answers_only() } else { tx };
    for (m, k) in msgs.into_iter().zip(kinds.iter()) {
        let sink = expects_answer(k).then(|| tx.clone());
        session.incoming.do_send(super::incoming(&req, m, sink));
    }
    drop(tx);
    if plain {
        return plain_answer(rx, session_id, single).await;
    }
    sse_response(Some(session_id), rx, edge.sse_keepalive)
}

/// The answers of a request that asked for plain JSON, once its stream ends (one request's
/// plain result goes as the server wrote it; several answers are an array).
async fn plain_answer(mut rx: SinkRx, session_id: String, single: bool) -> HttpResponse {
    let mut answers = Vec::new();
    while let Some(m) = rx.recv_relayed().await {
        let v = match m {
            // The usual answer of one request: its result as the server wrote it.
            Relayed::Raw(raw) if single => {
                let text = raw.to_json();
                drop(raw);
                mcp_gen_ui_actors::process::memory::after_answer(text.len());
                return json_answer(session_id, text);
            }
            other => other.into_value(),
        };
        if matches!(jsonrpc::kind(&v), Kind::Response | Kind::Invalid(_)) {
            answers.push(v);
        } else {
            // Cannot happen for such a request; logged rather than silently lost.
            tracing::warn!(
                component = "http",
                event = "unexpected_on_plain_answer",
                "a message for a plain-JSON request was not an answer; dropped"
            );
        }
    }
    let body = match answers.len() {
        // Every request was cancelled meanwhile: nothing to answer.
        0 => return HttpResponse::Accepted().insert_header((SESSION_HEADER.clone(), session_id)).finish(),
        1 => answers.pop().expect("one"),
        _ => Value::Array(answers),
    };
    // Straight into bytes: `to_string` goes through the formatter, a write at a time.
    let text = serde_json::to_vec(&body).unwrap_or_default();
    drop(body);
    mcp_gen_ui_actors::process::memory::after_answer(text.len());
    json_answer(session_id, text)
}

/// A UI host's read of a `ui://` page that is ready, answered here: the page's result was
/// serialized when it was stored, so the answer is a head with the request's id and those
/// bytes, shared, with no hop to the session and nothing built or copied. Anything else goes
/// the usual way.
fn ready_read(req: &HttpRequest, edge: &Edge, session: &SessionRef, session_id: &str, msg: &Value) -> Option<[bytes::Bytes; 2]> {
    use std::sync::atomic::Ordering;
    if jsonrpc::method(msg) != Some("resources/read") || jsonrpc::kind(msg) != Kind::Request || !session.flags.ui.load(Ordering::Relaxed) {
        return None;
    }
    let id = jsonrpc::id(msg)?;
    let uri = msg.at("/params/uri").and_then(Value::as_str)?;
    // Only what the session would serve the same way (it asks the same function).
    let ids = || ReadIds { session: log_name(session_id), request_id: super::request_id(req), trace_id: super::traces::cx(req).trace_id() };
    let reader = EdgeReader {
        who: &super::auth::caller_who(req),
        transport: Transport::StreamableHttp.label(),
        profile: session.profile.as_deref(),
        ids: &ids,
    };
    let hit = ready_page(&edge.session, uri, reader)?;
    session.flags.touch();
    tracing::debug!(component = "http", event = "ready_read", uri = %uri, kind = hit.kind, "ui:// read answered from the ready page");
    edge.metrics.ui_reads.with_label_values(&[hit.kind]).inc();
    edge.metrics.cache_hits.inc();
    edge.metrics.requests.with_label_values(&["resources/read", "ok"]).inc();
    Some(hit.prepared.answer(id))
}

/// One MCP 2026-07-28 request: no session; what the host is comes with the request. Answered
/// as plain JSON (HTTP status by error, as the revision says) unless it asked for progress or
/// log messages, which need a stream.
async fn post_stateless(req: &HttpRequest, edge: &Edge, msg: Value) -> HttpResponse {
    let id = jsonrpc::id(&msg).cloned().unwrap_or(Value::Null);
    let reply = |status: StatusCode, body: Value| HttpResponse::build(status).content_type("application/json").body(body.to_string());
    match jsonrpc::kind(&msg) {
        Kind::Request => {}
        // Nothing to do with a notification or response without a session: the revision has
        // no server requests, and cancelling means closing the request.
        Kind::Notification | Kind::Response => return HttpResponse::Accepted().finish(),
        Kind::Invalid(why) => {
            let id = msg.get("id").filter(|i| i.is_string() || i.is_number()).cloned().unwrap_or(Value::Null);
            return reply(StatusCode::BAD_REQUEST, jsonrpc::error(id, code::INVALID_REQUEST, format!("Invalid request: {why}")));
        }
    }
    let Some(version) = header(req, &VERSION_HEADER) else {
        let why = format!("the MCP-Protocol-Version header is required on every {} request over HTTP", revision_2026::VERSION);
        return reply(StatusCode::BAD_REQUEST, jsonrpc::error(id, revision_2026::errors::HEADER_MISMATCH, why));
    };
    let meta = match revision_2026::request_meta(&msg, Some(version)) {
        Ok(m) => m,
        Err(refusal) => return reply(StatusCode::BAD_REQUEST, refusal.to_error(id)),
    };
    if let Err(refusal) = revision_2026::check_headers(&msg, header(req, "mcp-method"), header(req, "mcp-name")) {
        return reply(StatusCode::BAD_REQUEST, refusal.to_error(id));
    }
    if let Err(refusal) = check_param_headers(req, edge, &msg) {
        return reply(StatusCode::BAD_REQUEST, refusal.to_error(id));
    }
    let retry = jsonrpc::params(&msg).get("requestState").is_some();
    // A retry frees a place rather than taking one.
    if !retry {
        if let Err(refused) = edge.stateless_room(&super::auth::caller(req), &id) {
            return refused;
        }
    }
    let wants_stream =
        jsonrpc::progress_token(&msg).is_some() || meta.log_level.is_some() || jsonrpc::method(&msg) == Some("subscriptions/listen");
    let profile = match edge.path_profile(req) {
        Ok(p) => p,
        Err(r) => return r,
    };
    let who = super::auth::caller_who(req);
    let session = match stateless_session_for(&edge.stateless, Transport::StreamableHttp, &msg, meta, &who, profile) {
        Ok(s) => s,
        Err(err) => return reply(StatusCode::BAD_REQUEST, err),
    };
    let (tx, mut rx) = sink_channel();
    let tx = if wants_stream { tx } else { tx.answers_only() };
    session.incoming.do_send(super::incoming(req, msg, Some(tx)));
    if !wants_stream {
        // Only the answer goes into a plain-JSON body: anything else that reaches the call's
        // stream (a notification of its server) has nowhere to go.
        let answer = loop {
            match rx.recv().await {
                Some(m) if matches!(jsonrpc::kind(&m), Kind::Response) => break Some(m),
                Some(_) => tracing::debug!(
                    component = "edge",
                    event = "unexpected_on_plain_answer",
                    "a message for a plain-JSON stateless request was not its answer; dropped"
                ),
                None => break None,
            }
        };
        return match answer {
            Some(answer) => reply(StatusCode::from_u16(revision_2026::http_status(&answer)).unwrap_or(StatusCode::OK), answer),
            None => reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                jsonrpc::error(id, code::INTERNAL_ERROR, "the call ended without an answer (the service is shutting down?); retry"),
            ),
        };
    }
    sse_response(None, rx, edge.sse_keepalive)
}

/// A tools/call repeats the arguments its tool marks with `x-mcp-header` in `Mcp-Param-*`
/// headers; they must agree with the body (intermediaries may have routed on them).
fn check_param_headers(req: &HttpRequest, edge: &Edge, msg: &Value) -> Result<(), revision_2026::Refusal> {
    if jsonrpc::method(msg) != Some("tools/call") {
        return Ok(());
    }
    let p = jsonrpc::params(msg);
    let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
    let catalog = edge.session.fleet.catalog();
    let Some(schema) = catalog.tool(name).and_then(|t| t.def.get("inputSchema")) else {
        return Ok(()); // not an upstream tool (ours, or unknown: the call itself will say)
    };
    param_headers::check(schema, p.get("arguments").unwrap_or(&Value::Null), |n| header(req, n).map(str::to_string))
}

/// `/mcp` by its method, in one route: a route per method ran a method guard on every request,
/// and each guard records itself in the request's extensions (two allocations).
pub async fn endpoint(req: HttpRequest, payload: web::Payload, edge: web::Data<Edge>) -> HttpResponse {
    match *req.method() {
        Method::POST => post(req, payload, edge).await,
        Method::GET => get(req, edge).await,
        Method::DELETE => delete(req, edge).await,
        _ => HttpResponse::MethodNotAllowed().insert_header((header::ALLOW, "POST, GET, DELETE")).finish(),
    }
}

/// The session's own stream: notifications and server requests not tied to a POST.
pub async fn get(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    if stateless_era(&req) {
        return method_not_allowed();
    }
    if !accepts(&req, "text/event-stream") {
        return json_error(StatusCode::NOT_ACCEPTABLE, code::INVALID_REQUEST, "the Accept header must list text/event-stream");
    }
    let (session_id, session) = match find_session(&edge, &req).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let (tx, rx) = sink_channel();
    session.attach.do_send(AttachStream { sink: tx });
    sse_response(Some(session_id), rx, edge.sse_keepalive)
}

pub async fn delete(req: HttpRequest, edge: web::Data<Edge>) -> HttpResponse {
    if let Err(r) = edge.guard(&req) {
        return r;
    }
    if stateless_era(&req) {
        return method_not_allowed();
    }
    match find_session(&edge, &req).await {
        Ok((id, session)) => {
            // Out of the table now, so a request right behind the DELETE gets 404 rather than
            // racing the session's stop.
            edge.sessions.remove(&id);
            session.close.do_send(Close);
            HttpResponse::Ok().finish()
        }
        Err(r) => r,
    }
}
