//! `HostSession` driven through its messages, with fakes behind every port: no network, no
//! upstream process. The fakes record what they are asked, in order, and answer scripted values;
//! the proxy path goes through a real `Router` whose link is a channel the test reads.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use serde_json::{json, Value};
use tokio::sync::{mpsc, Semaphore};

use super::*;
use crate::mcp::jsonrpc::{self, code};
use crate::mcp::ui_meta;
use crate::messages::Status;
use crate::messages::ToolsDiff;
use crate::messages::{
    Abandon, AttachStream, HostEvent, Incoming, PageRead, PageStatus, ReadUi, ServerRequest, SessionRef, Shutdown, StatusOf, Subscribe,
    Unregister,
};
use crate::messages::{
    Append, Clear, ForgetTool, History, KeyFor, Peek, Pending, QueuePort, Refinement, RefinementsPort, RefreshTools, UpstreamPort,
};
use crate::page::{PageKind, UiEntry, ENTRY_FORMAT};
use crate::proxy::hosts::Hosts;
use crate::proxy::router::Router;
use crate::servers::catalog::Naming;
use crate::servers::fleet::{Fleet, Server};
use crate::servers::registry::Registry;
use crate::session::deps::SessionDeps;
use crate::session::ui_tools;
use crate::store::ready_pages::ReadyPages;

use crate::test_support::Log;

fn page(tool: &str, n: usize) -> UiEntry {
    UiEntry {
        format: ENTRY_FORMAT,
        key: format!("{tool}-key-{n}"),
        tool_name: tool.to_string(),
        html: format!("<p>{tool} page {n}</p>"),
        kind: PageKind::Generated,
        ui_type: None,
        generated_at: 0,
        duration_ms: 0,
        provider: "fake".into(),
        model: "fake-model".into(),
        prompt_version: "test".into(),
        template_version: "test".into(),
        fallback_reason: None,
        warnings: Vec::new(),
        repairs: Vec::new(),
        request_id: String::new(),
        input_tokens: 0,
        output_tokens: 0,
        expires_at: None,
    }
}

/// The generation queue: the n-th read is answered with "page n" once `gate` gives a permit.
struct FakeQueue {
    log: Log,
    reads: usize,
    gate: Arc<Semaphore>,
}

impl Actor for FakeQueue {
    type Context = Context<Self>;
}

impl Handler<ReadUi> for FakeQueue {
    type Result = ResponseFuture<PageRead>;

    fn handle(&mut self, m: ReadUi, _ctx: &mut Self::Context) -> Self::Result {
        self.reads += 1;
        let name = m.tool["name"].as_str().unwrap_or_default().to_string();
        self.log.push(format!("read {name} force={}", m.force));
        let entry = Arc::new(page(&name, self.reads));
        let gate = self.gate.clone();
        Box::pin(async move {
            gate.acquire().await.expect("the gate stays open").forget();
            PageRead::page(entry)
        })
    }
}

impl Handler<StatusOf> for FakeQueue {
    type Result = PageStatus;

    fn handle(&mut self, _: StatusOf, _ctx: &mut Self::Context) -> Self::Result {
        PageStatus::Idle
    }
}

impl Handler<Abandon> for FakeQueue {
    type Result = usize;

    fn handle(&mut self, _: Abandon, _ctx: &mut Self::Context) -> usize {
        0
    }
}

impl Handler<Peek> for FakeQueue {
    type Result = Option<Arc<UiEntry>>;

    fn handle(&mut self, _: Peek, _ctx: &mut Self::Context) -> Self::Result {
        None
    }
}

impl Handler<KeyFor> for FakeQueue {
    type Result = String;

    fn handle(&mut self, _: KeyFor, _ctx: &mut Self::Context) -> String {
        "fake-key".into()
    }
}

impl Handler<ForgetTool> for FakeQueue {
    type Result = ();

    fn handle(&mut self, _: ForgetTool, _ctx: &mut Self::Context) {}
}

impl Handler<Pending> for FakeQueue {
    type Result = usize;

    fn handle(&mut self, _: Pending, _ctx: &mut Self::Context) -> usize {
        0
    }
}

/// The refinements: a scripted history per tool.
struct FakeRefinements {
    log: Log,
    history: HashMap<String, Vec<String>>,
}

impl Actor for FakeRefinements {
    type Context = Context<Self>;
}

impl Handler<History> for FakeRefinements {
    type Result = Vec<Refinement>;

    fn handle(&mut self, m: History, _ctx: &mut Self::Context) -> Self::Result {
        self.log.push(format!("history {}", m.key.stored()));
        let texts = self.history.get(&m.key.stored()).cloned().unwrap_or_default();
        texts.into_iter().enumerate().map(|(i, feedback)| Refinement { at: i as u64, feedback, replaced_key: None, by: None }).collect()
    }
}

impl Handler<Append> for FakeRefinements {
    type Result = Vec<String>;

    fn handle(&mut self, m: Append, _ctx: &mut Self::Context) -> Self::Result {
        self.log.push(format!("append {}", m.key.stored()));
        vec![m.feedback]
    }
}

impl Handler<Clear> for FakeRefinements {
    type Result = usize;

    fn handle(&mut self, m: Clear, _ctx: &mut Self::Context) -> usize {
        self.log.push(format!("clear {}", m.key.stored()));
        0
    }
}

/// The upstream connection's actor (the proxy path itself goes through the router).
struct FakeUpstream {
    log: Log,
}

impl Actor for FakeUpstream {
    type Context = Context<Self>;
}

impl Handler<RefreshTools> for FakeUpstream {
    type Result = Result<ToolsDiff, crate::upstream::UpstreamError>;

    fn handle(&mut self, _: RefreshTools, _ctx: &mut Self::Context) -> Self::Result {
        self.log.push("refresh".into());
        Ok(ToolsDiff::default())
    }
}

impl Handler<Shutdown> for FakeUpstream {
    type Result = ();

    fn handle(&mut self, _: Shutdown, _ctx: &mut Self::Context) {
        self.log.push("shutdown".into());
    }
}

impl Handler<Unregister> for FakeUpstream {
    type Result = ();

    fn handle(&mut self, m: Unregister, _ctx: &mut Self::Context) {
        self.log.push(format!("unregister {}", m.session));
    }
}

impl Handler<Subscribe> for FakeUpstream {
    type Result = MessageResult<Subscribe>;

    fn handle(&mut self, m: Subscribe, _ctx: &mut Self::Context) -> Self::Result {
        self.log.push(format!("subscribe {}", m.session));
        MessageResult(jsonrpc::result(jsonrpc::id(&m.msg).cloned().unwrap_or(Value::Null), json!({})))
    }
}

fn upstream_tools() -> Vec<Value> {
    vec![
        json!({"name": "weather", "description": "Forecast", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}),
        json!({"name": "echo", "inputSchema": {"type": "object"}}),
    ]
}

/// Everything a session is given, pointing at fakes; the upstream is ready with two tools.
struct Fixture {
    deps: SessionDeps,
    router: Arc<Router>,
    pages: Arc<ReadyPages>,
    log: Log,
    /// Opens the fake queue: one permit answers one read.
    gate: Arc<Semaphore>,
}

impl Fixture {
    /// `gated`: reads wait for [`Fixture::gate`]; otherwise they are answered at once.
    fn new(gated: bool) -> Self {
        let log = Log::default();
        let metrics = Arc::new(Metrics::new());
        let hosts = Arc::new(Hosts::default());
        let router = Router::new(
            Arc::from("default"),
            None,
            crate::proxy::router::Times::new(Duration::from_secs(60)),
            "fake upstream".into(),
            hosts.clone(),
            metrics.clone(),
            crate::proxy::router::Hearers::OnePerson,
        );
        router.publish(Status {
            ready: true,
            tools: crate::messages::tool_list(upstream_tools()),
            init: Some(Arc::new(json!({"capabilities": {"tools": {}}, "serverInfo": {"name": "fake", "version": "1"}}))),
            ..Status::default()
        });
        let gate = Arc::new(Semaphore::new(if gated { 0 } else { Semaphore::MAX_PERMITS }));
        let queue = FakeQueue { log: log.clone(), reads: 0, gate: gate.clone() }.start();
        let history = HashMap::from([("weather".to_string(), vec!["bigger".to_string(), "dark".to_string()])]);
        let refinements = FakeRefinements { log: log.clone(), history }.start();
        let upstream = FakeUpstream { log: log.clone() }.start();
        let pages = ReadyPages::new();
        let registry = Registry::new(Some(pages.clone()));
        registry.add_server(Arc::from("default"), Naming::Bare, Arc::default(), 0);
        registry.set_tools("default", crate::messages::tool_list(upstream_tools()));
        let fleet = Fleet::new(hosts, registry);
        let port = UpstreamPort {
            refresh: upstream.clone().recipient(),
            unregister: upstream.clone().recipient(),
            subscribe: upstream.clone().recipient(),
            shutdown: upstream.recipient(),
        };
        fleet.insert(Arc::new(Server {
            name: Arc::from("default"),
            naming: Naming::Bare,
            router: router.clone(),
            port,
            required: true,
            transport: "stdio",
            pool: None,
        }));
        let deps = SessionDeps {
            fleet,
            queue: QueuePort {
                read: queue.clone().recipient(),
                status: queue.clone().recipient(),
                abandon: queue.clone().recipient(),
                peek: queue.clone().recipient(),
                key_for: queue.clone().recipient(),
                forget: queue.clone().recipient(),
                pending: queue.recipient(),
            },
            refinements: RefinementsPort {
                append: refinements.clone().recipient(),
                history: refinements.clone().recipient(),
                clear: refinements.recipient(),
            },
            sessions: None,
            metrics,
            idle_limit: Duration::from_secs(3600),
            enabled_tools: None,
            pages: Some(pages.clone()),
            llm_windows: Default::default(),
            notification_buckets: Default::default(),
            warm: None,
            personal_scope: false,
            limits: Default::default(),
            shape_artifacts: false,
            shapes: None,
            ui_domain: None,
            apps_sdk: Default::default(),
            policies: Arc::new(crate::policy::Policies::off(Arc::new(Metrics::new()))),
            audit: crate::audit::Audit::off(),
            profiles: Default::default(),
            quotas: Default::default(),
            approvals: Default::default(),
        };
        Fixture { deps, router, pages, log, gate }
    }

    fn open(&self, id: &str) -> Addr<HostSession> {
        HostSession::new(id.to_string(), Transport::StreamableHttp, Arc::new(self.deps.clone())).start()
    }

    /// The upstream link: what the router sends upstream arrives here.
    fn link(&self) -> mpsc::Receiver<Value> {
        let (tx, mut lines) = mpsc::channel::<crate::upstream::Outgoing>(16);
        let (values, rx) = mpsc::channel(16);
        self.router.set_link(Some(crate::upstream::LinkTx::Channel(tx)));
        // What a stdio upstream would read: the line its sender made.
        actix::spawn(async move {
            while let Some(out) = lines.recv().await {
                let msg: Value = serde_json::from_slice(out.body()).expect("a JSON line");
                if values.send(msg).await.is_err() {
                    break;
                }
            }
        });
        rx
    }
}

/// Hands the session one message with its own stream; answers that stream.
async fn post(session: &Addr<HostSession>, msg: Value) -> crate::messages::SinkRx {
    let (sink, rx) = sink_channel();
    session
        .send(Incoming { msg, sink: Some(sink), request_id: "test".into(), trace: Default::default(), caller: None })
        .await
        .expect("the session runs");
    rx
}

/// A stream a test reads: a host's (`SinkRx`) or the upstream link's.
trait Stream {
    async fn recv_msg(&mut self) -> Option<Value>;
}

impl Stream for mpsc::Receiver<Value> {
    async fn recv_msg(&mut self) -> Option<Value> {
        self.recv().await
    }
}

impl Stream for crate::messages::SinkRx {
    async fn recv_msg(&mut self) -> Option<Value> {
        self.recv().await
    }
}

/// The next message on a stream (the test fails if none comes).
async fn next(rx: &mut impl Stream) -> Value {
    tokio::time::timeout(Duration::from_secs(10), rx.recv_msg()).await.expect("a message in time").expect("the stream is open")
}

/// Posts a request and answers its answer, checking that the stream closes after it.
async fn call(session: &Addr<HostSession>, msg: Value) -> Value {
    let mut rx = post(session, msg).await;
    let answer = next(&mut rx).await;
    assert!(tokio::time::timeout(Duration::from_secs(10), rx.recv()).await.expect("closed in time").is_none(), "the answer is last");
    answer
}

async fn initialize(session: &Addr<HostSession>, ui: bool) -> Value {
    let caps = if ui { json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": [ui_meta::MIME]}}}) } else { json!({}) };
    let params = json!({"protocolVersion": "2025-06-18", "capabilities": caps, "clientInfo": {"name": "test", "version": "1"}});
    call(session, jsonrpc::request(0, "initialize", params)).await
}

fn read(id: i64, tool: &str) -> Value {
    jsonrpc::request(id, "resources/read", json!({"uri": ui_meta::ui_uri(tool)}))
}

fn page_text(answer: &Value) -> &str {
    answer.pointer("/result/contents/0/text").and_then(Value::as_str).unwrap_or_else(|| panic!("a page in {answer}"))
}

/// Waits until the fake log has `n` lines starting with `prefix`.
async fn logged(log: &Log, prefix: &str, n: usize) {
    let waited = tokio::time::timeout(Duration::from_secs(10), async {
        while log.with(prefix).len() < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    waited.await.unwrap_or_else(|_| panic!("{n} {prefix:?} in the log; got {:?}", log.with(prefix)));
}

fn names(answer: &Value) -> Vec<String> {
    let tools = answer.pointer("/result/tools").and_then(Value::as_array).expect("a tool list");
    tools.iter().map(|t| t["name"].as_str().unwrap().to_string()).collect()
}

#[actix::test]
async fn a_ui_host_gets_ui_meta_and_the_ui_tools_a_plain_host_gets_the_tools_unchanged() {
    let f = Fixture::new(false);
    let ui_host = f.open("ui");
    let init = initialize(&ui_host, true).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    let listed = call(&ui_host, jsonrpc::request(1, "tools/list", json!({}))).await;
    let want: Vec<String> = ["weather", "echo"]
        .iter()
        .map(|s| s.to_string())
        .chain(ui_tools::definitions().iter().map(|t| t["name"].as_str().unwrap().to_string()))
        .collect();
    assert_eq!(names(&listed), want);
    assert!(names(&listed).iter().any(|n| n == "_ui_refine"));
    let weather = &listed["result"]["tools"][0];
    assert_eq!(weather["_meta"]["ui"]["resourceUri"], "ui://weather");
    assert_eq!(weather["description"], "Forecast", "the upstream's fields stay");

    let plain = f.open("plain");
    initialize(&plain, false).await;
    let listed = call(&plain, jsonrpc::request(1, "tools/list", json!({}))).await;
    assert_eq!(listed["result"]["tools"], json!(upstream_tools()), "a plain host sees exactly the upstream's tools");
}

#[actix::test]
async fn a_plain_host_reading_a_ui_uri_never_reaches_the_queue() {
    let f = Fixture::new(false);
    let plain = f.open("plain");
    initialize(&plain, false).await;
    let answer = call(&plain, read(1, "weather")).await;
    assert_eq!(answer["error"]["code"], code::RESOURCE_NOT_FOUND, "{answer}");
    assert!(f.log.with("read").is_empty());
}

#[actix::test]
async fn a_ui_read_goes_to_the_queue_and_answers_the_page() {
    let f = Fixture::new(false);
    let host = f.open("ui");
    initialize(&host, true).await;
    let answer = call(&host, read(3, "weather")).await;
    assert_eq!(answer["id"], 3);
    assert_eq!(page_text(&answer), "<p>weather page 1</p>");
    assert_eq!(answer["result"]["contents"][0]["uri"], "ui://weather");
    assert_eq!(answer["result"]["contents"][0]["mimeType"], ui_meta::MIME);
    assert!(f.log.with("history").is_empty(), "the queue, not the session, asks for the refinements");
    assert_eq!(f.log.with("read"), vec!["read weather force=false"]);
}

#[actix::test]
async fn a_second_read_is_answered_from_ready_pages_without_the_queue() {
    let f = Fixture::new(false);
    let host = f.open("ui");
    initialize(&host, true).await;
    let first = call(&host, read(1, "weather")).await;
    let second = call(&host, read(2, "weather")).await;
    assert_eq!(second["id"], 2);
    assert_eq!(second["result"], first["result"]);
    assert_eq!(f.log.with("read").len(), 1, "one ReadUi: {:?}", f.log.with("read"));
    assert!(f.log.with("history").is_empty(), "a ready read asks nobody");
    // Another session shares the ready pages.
    let other = f.open("other");
    initialize(&other, true).await;
    assert_eq!(page_text(&call(&other, read(1, "weather")).await), "<p>weather page 1</p>");
    assert_eq!(f.log.with("read").len(), 1);
}

#[actix::test]
async fn after_an_invalidation_the_next_read_goes_to_the_queue_again() {
    let f = Fixture::new(false);
    let host = f.open("ui");
    initialize(&host, true).await;
    assert_eq!(page_text(&call(&host, read(1, "weather")).await), "<p>weather page 1</p>");
    f.pages.invalidate("weather");
    assert_eq!(page_text(&call(&host, read(2, "weather")).await), "<p>weather page 2</p>");
    assert_eq!(f.log.with("read").len(), 2);
    // ...and that new page is the ready one.
    assert_eq!(page_text(&call(&host, read(3, "weather")).await), "<p>weather page 2</p>");
    assert_eq!(f.log.with("read").len(), 2);
}

#[actix::test]
async fn a_read_that_an_invalidation_overtook_is_served_but_not_kept() {
    let f = Fixture::new(true);
    let host = f.open("ui");
    initialize(&host, true).await;
    let mut slow = post(&host, read(1, "weather")).await;
    logged(&f.log, "read", 1).await;
    f.pages.invalidate("weather"); // say, a refinement lands while the page is being made
    f.gate.add_permits(1);
    assert_eq!(page_text(&next(&mut slow).await), "<p>weather page 1</p>", "the read itself is answered");
    f.gate.add_permits(1);
    assert_eq!(page_text(&call(&host, read(2, "weather")).await), "<p>weather page 2</p>", "the older page was not kept");
    assert_eq!(f.log.with("read").len(), 2);
}

#[actix::test]
async fn progress_reaches_a_request_in_flight_and_is_dropped_once_it_is_answered() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let host = f.open("ui");
    initialize(&host, true).await;
    let mut session_stream = attach(&host).await;
    let params = json!({"name": "echo", "arguments": {}, "_meta": {"progressToken": "mine"}});
    let mut stream = post(&host, jsonrpc::request(7, "tools/call", params)).await;
    let upstream_call = next(&mut link).await;
    let up_token = upstream_call.pointer("/params/_meta/progressToken").cloned().expect("a token upstream");

    // In flight: the upstream's progress comes back on the call's stream, with the host's token.
    f.router.on_progress(&jsonrpc::notification("notifications/progress", json!({"progressToken": up_token, "progress": 1})));
    let progress = next(&mut stream).await;
    assert_eq!(progress["params"]["progressToken"], "mine");

    f.router.on_response(jsonrpc::result(upstream_call["id"].clone(), json!({"content": []})));
    let answer = next(&mut stream).await;
    assert_eq!(answer["id"], 7);
    assert!(answer.get("result").is_some(), "{answer}");
    assert!(next_or_closed(&mut stream).await.is_none(), "the call's stream closes after its answer");

    // Progress that raced the answer: it must not follow it, on any stream.
    let late = jsonrpc::notification("notifications/progress", json!({"progressToken": "mine", "progress": 2}));
    host.send(HostEvent::Notify { msg: late, related: Some(json!(7)) }).await.unwrap();
    host.send(HostEvent::ToolsChanged(None)).await.unwrap(); // a marker after it on the session stream
    let first = next(&mut session_stream).await;
    assert_eq!(first["method"], "notifications/tools/list_changed", "got {first}");
    assert_eq!(f.deps.metrics.dropped_messages.with_label_values(&["late_progress"]).get(), 1);
}

#[actix::test]
async fn what_a_server_says_for_a_request_answered_as_plain_json_goes_on_the_session_stream() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let host = f.open("ui");
    initialize(&host, true).await;
    let mut session_stream = attach(&host).await;
    let (sink, mut plain) = sink_channel();
    let msg = jsonrpc::request(7, "tools/call", json!({"name": "echo", "arguments": {}}));
    host.send(Incoming { msg, sink: Some(sink.answers_only()), request_id: "test".into(), trace: Default::default(), caller: None })
        .await
        .unwrap();
    let upstream_call = next(&mut link).await;
    // Its server logs on the call's own stream: the plain body has no room, the session stream has.
    let line = jsonrpc::notification("notifications/message", json!({"level": "info", "data": "during the call"}));
    host.send(HostEvent::Notify { msg: line, related: Some(json!(7)) }).await.unwrap();
    assert_eq!(next(&mut session_stream).await["params"]["data"], "during the call");
    f.router.on_response(jsonrpc::result(upstream_call["id"].clone(), json!({"content": []})));
    let answer = next(&mut plain).await;
    assert_eq!(answer["id"], 7, "only the answer in the plain body: {answer}");
}

/// The host's session stream (a GET stream), opened.
async fn attach(host: &Addr<HostSession>) -> crate::messages::SinkRx {
    let (sink, rx) = sink_channel();
    host.send(AttachStream { sink }).await.unwrap();
    rx
}

async fn next_or_closed(rx: &mut impl Stream) -> Option<Value> {
    tokio::time::timeout(Duration::from_secs(10), rx.recv_msg()).await.expect("a message or the end in time")
}

#[actix::test]
async fn a_request_id_reused_while_in_flight_is_refused_and_the_first_still_answered() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let host = f.open("ui");
    initialize(&host, true).await;
    let call_echo = || jsonrpc::request(1, "tools/call", json!({"name": "echo", "arguments": {}}));
    let mut first = post(&host, call_echo()).await;
    let upstream_call = next(&mut link).await;

    let refused = call(&host, call_echo()).await;
    assert_eq!(refused["id"], 1);
    assert_eq!(refused["error"]["code"], code::INVALID_REQUEST, "{refused}");
    assert!(link.try_recv().is_err(), "the repeat did not go upstream");
    assert!(first.try_recv().is_err(), "nothing on the first request's stream yet");

    f.router.on_response(jsonrpc::result(upstream_call["id"].clone(), json!({"content": [{"type": "text", "text": "one"}]})));
    let answer = next(&mut first).await;
    assert_eq!(answer["result"]["content"][0]["text"], "one");

    // Answered: the id is free again.
    let _again = post(&host, call_echo()).await;
    next(&mut link).await;
}

fn stateless_meta(caps: Value) -> crate::mcp::revision_2026::RequestMeta {
    crate::mcp::revision_2026::RequestMeta {
        version: crate::mcp::revision_2026::VERSION.into(),
        capabilities: caps,
        client_info: None,
        log_level: None,
    }
}

/// A 2026 request with its `_meta`, as a stateless host sends it.
fn stateless_call(id: i64, extra: Value) -> Value {
    let mut params = json!({"name": "echo", "arguments": {"x": 1}, "_meta": {crate::mcp::revision_2026::META_VERSION: crate::mcp::revision_2026::VERSION, crate::mcp::revision_2026::META_CAPS: {"elicitation": {}}}});
    for (k, v) in extra.as_object().cloned().unwrap_or_default() {
        params[k] = v;
    }
    jsonrpc::request(id, "tools/call", params)
}

async fn post_ref(session: &SessionRef, msg: Value) -> crate::messages::SinkRx {
    let (sink, rx) = sink_channel();
    session.incoming.do_send(Incoming { msg, sink: Some(sink), request_id: "test".into(), trace: Default::default(), caller: None });
    rx
}

#[actix::test]
async fn a_stateless_calls_server_request_becomes_input_required_and_the_retry_resumes_it() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let tables = StatelessTables::new(&f.deps);
    let parked = tables.parked.clone();
    let first = stateless_call(1, json!({}));
    let session = anonymous_call(&tables, &first, json!({"elicitation": {}}));
    let mut stream = post_ref(&session, first).await;
    let upstream_call = next(&mut link).await;
    assert!(upstream_call.pointer("/params/_meta").is_none(), "the host's own _meta stays here: {upstream_call}");

    // The upstream asks the host something while the call runs.
    let (target, host_side_id) = f.router.server_request_target(json!("up-ask"), Some(&upstream_call["id"])).expect("the call's host");
    let ask = jsonrpc::request(
        json!(host_side_id),
        "elicitation/create",
        json!({"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}),
    );
    let asked = tokio::spawn(target.port.request.send(ServerRequest { msg: ask, related: target.related, key: None }));

    let round = next(&mut stream).await;
    assert_eq!(round["id"], 1);
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    assert_eq!(round["result"]["inputRequests"]["elicitation_1"]["method"], "elicitation/create");
    assert!(round["result"]["inputRequests"]["elicitation_1"].get("id").is_none(), "input requests are not JSON-RPC requests");
    let state = round["result"]["requestState"].as_str().unwrap().to_string();
    assert!(next_or_closed(&mut stream).await.is_none(), "the round's answer ends its request");
    assert!(matches!(parked.lookup(&state, "anonymous"), crate::session::table::Lookup::Found(_)), "the call waits under its state");

    // The retry (a new request, new id) carries the answer: it goes to the upstream's request.
    let retry = stateless_call(
        2,
        json!({"requestState": state, "inputResponses": {"elicitation_1": {"action": "accept", "content": {"n": "Ada"}}}}),
    );
    let again = anonymous_call(&tables, &retry, json!({"elicitation": {}}));
    let mut stream = post_ref(&again, retry).await;
    let answered = asked.await.unwrap().unwrap();
    assert_eq!(answered["id"], json!(host_side_id));
    assert_eq!(answered["result"]["content"]["n"], "Ada", "{answered}");
    assert!(matches!(parked.lookup(&state, "anonymous"), crate::session::table::Lookup::Missing), "a state is used once");

    f.router.on_response(jsonrpc::result(upstream_call["id"].clone(), json!({"content": [{"type": "text", "text": "hi Ada"}]})));
    let done = next(&mut stream).await;
    assert_eq!(done["id"], 2, "the answer goes out under the retry's id");
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(done["result"]["_meta"][crate::mcp::revision_2026::META_SERVER]["name"], "fake");
}

#[actix::test]
async fn a_stateless_host_without_the_capability_is_refused_with_the_2026_error() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let tables = StatelessTables::new(&f.deps);
    let first = stateless_call(1, json!({}));
    let session = anonymous_call(&tables, &first, json!({}));
    let _stream = post_ref(&session, first).await;
    let upstream_call = next(&mut link).await;
    let (target, host_side_id) = f.router.server_request_target(json!("up-ask"), Some(&upstream_call["id"])).unwrap();
    let ask = jsonrpc::request(json!(host_side_id), "sampling/createMessage", json!({"messages": [], "maxTokens": 5}));
    let refused = target.port.request.send(ServerRequest { msg: ask, related: target.related, key: None }).await.unwrap();
    assert_eq!(refused["error"]["code"], crate::mcp::revision_2026::errors::MISSING_CAPABILITY, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
}

#[actix::test]
async fn a_2026_upstreams_input_required_reaches_a_session_host_as_a_server_request() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let meta = json!({crate::mcp::revision_2026::META_VERSION: crate::mcp::revision_2026::VERSION, crate::mcp::revision_2026::META_CAPS: {"elicitation": {}}});
    f.router.set_upstream_meta(meta.as_object().cloned());
    let host = f.open("old");
    let params = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}});
    call(&host, jsonrpc::request(0, "initialize", params)).await;
    let mut stream = post(&host, jsonrpc::request(5, "tools/call", json!({"name": "echo", "arguments": {}}))).await;
    let sent = next(&mut link).await;
    assert_eq!(
        sent["params"]["_meta"][crate::mcp::revision_2026::META_VERSION],
        crate::mcp::revision_2026::VERSION,
        "every request says who asks: {sent}"
    );

    let ask = json!({"resultType": "input_required", "requestState": "opaque-1",
        "inputRequests": {"who": {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {"type": "object", "properties": {}}}}}});
    f.router.on_response(jsonrpc::result(sent["id"].clone(), ask));
    let server_request = next(&mut stream).await;
    assert_eq!(server_request["method"], "elicitation/create", "{server_request}");
    host.send(Incoming {
        msg: jsonrpc::result(server_request["id"].clone(), json!({"action": "accept", "content": {"n": "Ada"}})),
        sink: None,
        request_id: "t".into(),
        trace: Default::default(),
        caller: None,
    })
    .await
    .unwrap();

    let resent = next(&mut link).await;
    assert_eq!(resent["id"], sent["id"], "the same call goes again");
    assert_eq!(resent["params"]["inputResponses"]["who"]["content"]["n"], "Ada", "{resent}");
    assert_eq!(resent["params"]["requestState"], "opaque-1");
    f.router.on_response(jsonrpc::result(sent["id"].clone(), json!({"resultType": "complete", "content": []})));
    let answer = next(&mut stream).await;
    assert_eq!(answer["id"], 5);
    assert!(answer.get("result").is_some(), "{answer}");
}

/// A stateless session for `msg` from the anonymous principal (auth off), its host declaring
/// `caps`.
fn anonymous_call(tables: &StatelessTables, msg: &Value, caps: Value) -> SessionRef {
    stateless_session_for(tables, Transport::StreamableHttp, msg, stateless_meta(caps), &crate::who::Who::anonymous(), None).unwrap()
}

/// A stateless call parked in its first input round: (session, upstream call, state, the
/// pending server request's answer).
async fn parked_call(
    f: &Fixture,
    tables: &StatelessTables,
    link: &mut mpsc::Receiver<Value>,
) -> (SessionRef, Value, String, tokio::task::JoinHandle<Result<Value, MailboxError>>) {
    let first = stateless_call(1, json!({}));
    let session = anonymous_call(tables, &first, json!({"elicitation": {}}));
    let mut stream = post_ref(&session, first).await;
    let upstream_call = next(link).await;
    let (target, host_side_id) = f.router.server_request_target(json!("up-ask"), Some(&upstream_call["id"])).unwrap();
    let ask = jsonrpc::request(
        json!(host_side_id),
        "elicitation/create",
        json!({"message": "?", "requestedSchema": {"type": "object", "properties": {}}}),
    );
    let asked = tokio::spawn(target.port.request.send(ServerRequest { msg: ask, related: target.related, key: None }));
    let round = next(&mut stream).await;
    let state = round["result"]["requestState"].as_str().expect("a state").to_string();
    (session, upstream_call, state, asked)
}

#[actix::test]
async fn an_answer_that_comes_while_the_call_is_parked_goes_to_the_retry() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let tables = StatelessTables::new(&f.deps);
    let (session, upstream_call, state, _asked) = parked_call(&f, &tables, &mut link).await;
    // The upstream gives up waiting and answers anyway.
    f.router.on_response(jsonrpc::result(upstream_call["id"].clone(), json!({"content": [{"type": "text", "text": "gave up"}]})));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let retry = stateless_call(9, json!({"requestState": state, "inputResponses": {}}));
    let mut stream = post_ref(&session, retry).await;
    let answer = next(&mut stream).await;
    assert_eq!(answer["id"], 9);
    assert_eq!(answer["result"]["content"][0]["text"], "gave up", "{answer}");
}

#[actix::test]
async fn two_retries_with_one_state_resume_the_call_once() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let tables = StatelessTables::new(&f.deps);
    let (session, _upstream_call, state, asked) = parked_call(&f, &tables, &mut link).await;
    let answer = json!({"elicitation_1": {"action": "accept", "content": {}}});
    let _first = post_ref(&session, stateless_call(2, json!({"requestState": state.clone(), "inputResponses": answer.clone()}))).await;
    let mut second = post_ref(&session, stateless_call(3, json!({"requestState": state, "inputResponses": answer}))).await;
    let refused = next(&mut second).await;
    assert_eq!(refused["error"]["code"], code::INVALID_PARAMS, "{refused}");
    assert!(asked.await.unwrap().unwrap().get("result").is_some(), "the first retry's answer went upstream");
}

#[actix::test]
async fn cancelling_the_retry_cancels_the_call_upstream() {
    let f = Fixture::new(false);
    let mut link = f.link();
    let tables = StatelessTables::new(&f.deps);
    let (session, upstream_call, state, _asked) = parked_call(&f, &tables, &mut link).await;
    let retry = stateless_call(2, json!({"requestState": state, "inputResponses": {"elicitation_1": {"action": "decline"}}}));
    let _stream = post_ref(&session, retry).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cancel = jsonrpc::notification("notifications/cancelled", json!({"requestId": 2, "reason": "no"}));
    session.incoming.do_send(Incoming { msg: cancel, sink: None, request_id: "t".into(), trace: Default::default(), caller: None });
    let sent = next(&mut link).await;
    assert_eq!(sent["method"], "notifications/cancelled", "{sent}");
    assert_eq!(sent["params"]["requestId"], upstream_call["id"], "the call is cancelled by the id the upstream knows");
}

#[actix::test]
async fn a_listen_whose_stream_went_drops_what_comes_for_it_and_lives_on() {
    // Its stream gone, a listening session once passed each change between its two ways out
    // (the session stream, which a stateless host has not, and the listen's) until its thread's
    // stack overflowed: the process aborted.
    let f = Fixture::new(false);
    let tables = StatelessTables::new(&f.deps);
    let mut listen = jsonrpc::request(json!("L1"), "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": []}}));
    listen["params"]["_meta"] = json!({crate::mcp::revision_2026::META_VERSION: crate::mcp::revision_2026::VERSION});
    let session = anonymous_call(&tables, &listen, json!({}));
    let mut stream = post_ref(&session, listen).await;
    let ack = next(&mut stream).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    drop(stream);
    let addr = session.attach.clone();
    let updated = |n: u32| json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": format!("note://{n}")}});
    for n in 0..3 {
        f.deps.fleet.hosts().broadcast(HostEvent::Notify { msg: updated(n), related: None });
    }
    // The session still answers (the process and the session are alive).
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(addr.connected(), "the listen session is still running");
}

/// A person as the edge makes one from a labelled static token.
fn person(name: &str, admin: bool) -> Arc<crate::who::Who> {
    Arc::new(crate::who::Who::new(Arc::from(format!("token {name}")), Arc::from(name), Arc::new(json!({})), admin))
}

/// Several people (the edge tells them apart): a session of `who`.
fn open_as(f: &Fixture, id: &str, who: Arc<crate::who::Who>) -> Addr<HostSession> {
    HostSession::new(id.to_string(), Transport::StreamableHttp, Arc::new(f.deps.clone())).owned_by(who).start()
}

fn regenerate(id: i64, tool: &str) -> Value {
    jsonrpc::request(id, "tools/call", json!({"name": "_ui_regenerate", "arguments": {"toolName": tool}}))
}

#[actix::test]
async fn with_several_people_a_non_admins_regenerate_never_remakes_the_shared_page() {
    let mut f = Fixture::new(false);
    f.deps.personal_scope = true;
    let bob = open_as(&f, "bob", person("bob", false));
    initialize(&bob, true).await;
    let refused = call(&bob, regenerate(1, "weather")).await;
    let text = refused["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(text.contains("server.auth.admins") && text.contains("_ui_refine"), "says who may, and what bob can do: {text}");
    assert!(f.log.with("read").is_empty(), "no page was made: {:?}", f.log.with("read"));

    let carol = open_as(&f, "carol", person("carol", true));
    initialize(&carol, true).await;
    let done = call(&carol, regenerate(2, "weather")).await;
    assert_eq!(done["result"]["structuredContent"]["scope"], "shared", "{done}");
    assert_eq!(f.log.with("read"), vec!["read weather force=true"], "an admin remakes the shared page");
}

#[actix::test]
async fn with_several_people_only_the_shared_pages_shapers_teach_a_result_shape() {
    let mut f = Fixture::new(false);
    f.deps.personal_scope = true;
    let shapes = crate::store::learned_shapes::LearnedShapes::new(None);
    f.deps.shapes = Some(shapes.clone());
    let mut link = f.link();
    for (id, who, key) in [("bob", person("bob", false), "bobChoseThisKey"), ("alice", person("alice", true), "aliceKey")] {
        let host = open_as(&f, id, who);
        initialize(&host, false).await;
        let mut stream = post(&host, jsonrpc::request(7, "tools/call", json!({"name": "echo", "arguments": {}}))).await;
        let upstream_call = next(&mut link).await;
        let result = json!({"content": [], "structuredContent": {key: 1}});
        f.router.on_response(jsonrpc::result(upstream_call["id"].clone(), result));
        assert!(next(&mut stream).await.get("result").is_some());
    }
    let learnt = shapes.get("echo").expect("the admin's result taught the shape");
    assert_eq!(learnt, crate::mcp::result_shape::shape_of(&json!({"aliceKey": 1})));
    assert!(!learnt.to_string().contains("bobChoseThisKey"), "a non-admin's keys never reach the shared prompt: {learnt}");
}
