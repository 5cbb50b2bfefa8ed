use std::sync::Mutex;

use actix::{Actor, Context, Handler};

use super::*;
use crate::messages::ServerRequest;
use crate::proxy::input_rounds::Asked;
use crate::upstream::UpstreamError;

/// A host that answers every question with `{"action": "accept", "content": {"depth": "deep"}}`.
struct Host;
impl Actor for Host {
    type Context = Context<Self>;
}
impl Handler<ServerRequest> for Host {
    type Result = actix::MessageResult<ServerRequest>;
    fn handle(&mut self, r: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        let id = jsonrpc::id(&r.msg).cloned().unwrap_or(Value::Null);
        actix::MessageResult(jsonrpc::result(id, json!({"action": "accept", "content": {"depth": "deep"}})))
    }
}

/// The proxy path as a run sees it: the server's `tasks/get` answers in order, and a record of
/// everything the run did.
#[derive(Default)]
struct Path {
    gets: Mutex<Vec<Value>>,
    sent: Mutex<Vec<(String, Value)>>,
    said: Mutex<Vec<Value>>,
    ended: Mutex<Vec<Value>>,
    alive: Mutex<u32>,
    statuses: Mutex<Vec<Value>>,
    pending: Mutex<bool>,
    host: Mutex<Option<actix::Recipient<ServerRequest>>>,
}

impl InputPath for Path {
    fn ask_target(&self, _: &Value, key: &str) -> Option<Asked> {
        let port = self.host.lock().unwrap().clone()?;
        Some(Asked { session: "s".into(), port, related: None, host_side_id: format!("h-{key}") })
    }
    fn server_request_done(&self, _: &str) {}
    fn give_up(&self, up_id: &Value, code: i64, why: String) {
        self.ended.lock().unwrap().push(jsonrpc::error(up_id.clone(), code, why));
    }
    fn is_pending(&self, _: &Value) -> bool {
        *self.pending.lock().unwrap()
    }
    fn send(&self, _: Value) -> Result<(), UpstreamError> {
        Ok(())
    }
}

impl TaskPath for Path {
    fn upstream_request(&self, method: &str, params: Value) -> oneshot::Receiver<Value> {
        self.sent.lock().unwrap().push((method.to_string(), params));
        let (tx, rx) = oneshot::channel();
        let answer = match method {
            "tasks/get" => {
                let mut gets = self.gets.lock().unwrap();
                if gets.is_empty() {
                    json!({"id": 1, "error": {"code": -32602, "message": "Task not found"}})
                } else {
                    json!({"id": 1, "result": gets.remove(0)})
                }
            }
            _ => json!({"id": 1, "result": {"resultType": "complete"}}),
        };
        let _ = tx.send(answer);
        rx
    }
    fn finish(&self, answer: Value) {
        self.ended.lock().unwrap().push(answer);
    }
    fn progress(&self, msg: Value) {
        self.said.lock().unwrap().push(msg);
    }
    fn alive(&self, _: &str) {
        *self.alive.lock().unwrap() += 1;
    }
    fn status(&self, msg: Value) {
        self.statuses.lock().unwrap().push(msg);
    }
}

fn path(gets: Vec<Value>) -> Arc<Path> {
    let p = Path::default();
    *p.gets.lock().unwrap() = gets;
    *p.pending.lock().unwrap() = true;
    Arc::new(p)
}

fn run(token: Option<Value>) -> TaskRun {
    TaskRun {
        up_id: json!(7),
        session: "s".into(),
        task: "t-1".into(),
        progress_token: token,
        poll: POLL_MIN,
        first: None,
        for_result: None,
        limit: MAX_RUN,
    }
}

fn working(msg: Option<&str>) -> Value {
    match msg {
        Some(m) => json!({"taskId": "t-1", "status": "working", "statusMessage": m, "pollIntervalMs": 1}),
        None => json!({"taskId": "t-1", "status": "working", "pollIntervalMs": 1}),
    }
}

#[actix::test]
async fn each_new_status_is_progress_of_the_call_and_the_result_is_its_answer() {
    // The server wrote its own resultType inside: the call's answer is a result all the same.
    let result = json!({"content": [{"type": "text", "text": "report"}], "resultType": "input_required"});
    let p = path(vec![
        working(Some("zero")),
        working(None),
        working(Some("one")),
        working(Some("one")),
        working(Some("two")),
        json!({"taskId": "t-1", "status": "completed", "statusMessage": "two", "result": result}),
    ]);
    let first = TaskRun { first: Some("zero".into()), ..run(Some(json!("up-tok"))) };
    run_task(p.clone(), first).await;
    let said: Vec<Value> = p.said.lock().unwrap().iter().map(|m| m["params"].clone()).collect();
    assert_eq!(
        said,
        vec![
            json!({"progressToken": "up-tok", "progress": 1, "message": "zero"}),
            json!({"progressToken": "up-tok", "progress": 2, "message": "one"}),
            json!({"progressToken": "up-tok", "progress": 3, "message": "two"})
        ],
        "the answer's own status first, then once per change, under the call's upstream token"
    );
    let answered = json!({"content": [{"type": "text", "text": "report"}], "resultType": "complete"});
    assert_eq!(*p.ended.lock().unwrap(), vec![jsonrpc::result(json!(7), answered)]);
    assert!(*p.alive.lock().unwrap() >= 3, "each change keeps the call alive");
}

#[actix::test]
async fn a_call_without_a_token_hears_no_progress_and_a_failed_task_is_its_error() {
    let failed = json!({"taskId": "t-1", "status": "failed", "error": {"code": -32000, "message": "exploded", "data": {"why": 1}}});
    let p = path(vec![working(Some("one")), failed]);
    run_task(p.clone(), run(None)).await;
    assert!(p.said.lock().unwrap().is_empty());
    let ended = p.ended.lock().unwrap().clone();
    assert_eq!(ended, vec![json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32000, "message": "exploded", "data": {"why": 1}}})]);
}

#[actix::test]
async fn a_call_given_up_cancels_its_task_and_answers_nothing_more() {
    let p = path(vec![working(Some("one"))]);
    *p.pending.lock().unwrap() = false;
    run_task(p.clone(), run(None)).await;
    let sent = p.sent.lock().unwrap().clone();
    assert_eq!(sent, vec![("tasks/cancel".to_string(), json!({"taskId": "t-1"}))]);
    assert!(p.ended.lock().unwrap().is_empty());
}

#[actix::test]
async fn what_the_task_asks_goes_to_the_calls_host_and_its_answer_to_the_task() {
    let asks = json!({"t-1:ab": {"method": "elicitation/create", "params": {"message": "how deep?"}}});
    let p = path(vec![
        json!({"taskId": "t-1", "status": "input_required", "inputRequests": asks}),
        json!({"taskId": "t-1", "status": "completed", "result": {"content": []}}),
    ]);
    *p.host.lock().unwrap() = Some(Host.start().recipient());
    run_task(p.clone(), run(None)).await;
    let sent = p.sent.lock().unwrap().clone();
    let update = sent.iter().find(|(m, _)| m == "tasks/update").expect("answered");
    assert_eq!(update.1, json!({"taskId": "t-1", "inputResponses": {"t-1:ab": {"action": "accept", "content": {"depth": "deep"}}}}));
    assert_eq!(p.ended.lock().unwrap()[0]["result"]["content"], json!([]));
}

#[actix::test]
async fn a_task_whose_host_is_gone_or_that_says_nonsense_is_cancelled_with_a_reason() {
    let asks = json!({"k": {"method": "elicitation/create", "params": {}}});
    let p = path(vec![json!({"taskId": "t-1", "status": "input_required", "inputRequests": asks})]);
    run_task(p.clone(), run(None)).await;
    assert!(p.sent.lock().unwrap().iter().any(|(m, _)| m == "tasks/cancel"));
    assert!(p.ended.lock().unwrap()[0]["error"]["message"].as_str().unwrap().contains("host is gone"));
    let p = path(vec![json!({"taskId": "t-1", "status": "dreaming"})]);
    run_task(p.clone(), run(None)).await;
    assert!(p.ended.lock().unwrap()[0]["error"]["message"].as_str().unwrap().contains("dreaming"));
    let p = path(vec![]);
    run_task(p.clone(), run(None)).await;
    assert!(p.ended.lock().unwrap()[0]["error"]["message"].as_str().unwrap().contains("Task not found"));
    assert!(p.sent.lock().unwrap().iter().any(|(m, _)| m == "tasks/cancel"), "a task whose tasks/get failed is cancelled too");
}

fn asking(key: &str) -> Value {
    json!({"taskId": "t-1", "status": "input_required", "pollIntervalMs": 1, "inputRequests": {key: {"method": "elicitation/create", "params": {}}}})
}

fn updates(p: &Path) -> usize {
    p.sent.lock().unwrap().iter().filter(|(m, _)| m == "tasks/update").count()
}

#[actix::test]
async fn a_question_still_shown_after_its_answer_is_not_asked_again_and_rounds_are_bounded() {
    let done = json!({"taskId": "t-1", "status": "completed", "result": {"content": []}});
    let p = path(vec![asking("k"), asking("k"), asking("k"), done.clone()]);
    *p.host.lock().unwrap() = Some(Host.start().recipient());
    run_task(p.clone(), run(None)).await;
    assert_eq!(updates(&p), 1, "answered once");
    assert!(p.ended.lock().unwrap()[0].get("result").is_some());
    // As many rounds as allowed pass; one more is too many.
    for (asks, ends_well) in [(MAX_ROUNDS, true), (MAX_ROUNDS + 1, false)] {
        let mut gets: Vec<Value> = (0..asks).map(|i| asking(&format!("k{i}"))).collect();
        gets.push(done.clone());
        let p = path(gets);
        *p.host.lock().unwrap() = Some(Host.start().recipient());
        run_task(p.clone(), run(None)).await;
        let ended = p.ended.lock().unwrap()[0].clone();
        assert_eq!(ended.get("result").is_some(), ends_well, "{asks} rounds: {ended}");
        if !ends_well {
            assert!(ended["error"]["message"].as_str().unwrap().contains("more than"), "{ended}");
        }
    }
}

#[actix::test]
async fn a_task_that_runs_past_the_longest_wait_is_cancelled() {
    let p = path((0..50).map(|_| working(None)).collect());
    run_task(p.clone(), TaskRun { limit: POLL_MIN * 3, ..run(None) }).await;
    assert!(p.ended.lock().unwrap()[0]["error"]["message"].as_str().unwrap().contains("longer than"));
    assert!(p.sent.lock().unwrap().iter().any(|(m, _)| m == "tasks/cancel"));
}

#[test]
fn the_servers_pace_is_kept_within_bounds() {
    assert_eq!(pace(&json!({"pollIntervalMs": 300})), Duration::from_millis(300));
    assert_eq!(pace(&json!({"pollIntervalMs": 0})), POLL_MIN);
    assert_eq!(pace(&json!({"pollIntervalMs": 3_600_000})), POLL_MAX);
    assert_eq!(pace(&json!({})), Duration::from_secs(1));
    let made = json!({"result": {"taskId": "t-9", "status": "working", "pollIntervalMs": 200, "resultType": "task"}});
    let request = json!({"params": {"_meta": {"progressToken": 5}}});
    let r = TaskRun::of(json!(1), "s".into(), &request, &made).unwrap();
    assert_eq!((r.task.as_str(), r.progress_token, r.poll, r.first), ("t-9", Some(json!(5)), Duration::from_millis(200), None));
    let with_status = json!({"result": {"taskId": "t-9", "statusMessage": "gathering"}});
    assert_eq!(TaskRun::of(json!(1), "s".into(), &request, &with_status).unwrap().first.as_deref(), Some("gathering"));
    assert!(TaskRun::of(json!(1), "s".into(), &request, &json!({"result": {"taskId": "x".repeat(300)}})).is_none(), "an id too long");
}

/// A host that answers like [`Host`] and keeps what it was asked.
struct Recorder(Arc<Mutex<Vec<Value>>>);
impl Actor for Recorder {
    type Context = Context<Self>;
}
impl Handler<ServerRequest> for Recorder {
    type Result = actix::MessageResult<ServerRequest>;
    fn handle(&mut self, r: ServerRequest, _: &mut Context<Self>) -> Self::Result {
        self.0.lock().unwrap().push(r.msg.clone());
        let id = jsonrpc::id(&r.msg).cloned().unwrap_or(Value::Null);
        actix::MessageResult(jsonrpc::result(id, json!({"action": "accept"})))
    }
}

fn for_result() -> TaskRun {
    TaskRun::for_result(json!(7), "s".into(), &json!({"method": "tasks/result", "params": {"taskId": "t-1"}}), "t-1".into(), "a:t-1".into())
}

#[actix::test]
async fn a_hosts_wait_on_the_task_hears_it_the_2025_way_and_its_end_names_the_task() {
    let asks =
        json!({"t-1:ab": {"method": "elicitation/create", "params": {"message": "how deep?"}}, "t-1:cd": {"method": "elicitation/create"}});
    let p = path(vec![
        working(Some("one")),
        json!({"taskId": "t-1", "status": "input_required", "pollIntervalMs": 1, "inputRequests": asks}),
        json!({"taskId": "t-1", "status": "completed", "result": {"content": []}}),
    ]);
    let asked = Arc::new(Mutex::new(Vec::new()));
    *p.host.lock().unwrap() = Some(Recorder(asked.clone()).start().recipient());
    run_task(p.clone(), for_result()).await;
    let statuses: Vec<Value> = p.statuses.lock().unwrap().iter().map(|m| m["params"].clone()).collect();
    assert_eq!(
        statuses[0],
        json!({"taskId": "t-1", "status": "working", "statusMessage": "one", "ttl": null, "pollInterval": 1}),
        "the first status it finds is told too, the 2025 way"
    );
    let told: Vec<&str> = statuses.iter().filter_map(|s| s["status"].as_str()).collect();
    assert_eq!(told, ["working", "input_required", "completed"]);
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2);
    assert!(
        asked.iter().all(|a| a["params"]["_meta"][RELATED_TASK]["taskId"] == "a:t-1"),
        "asked inside the task, which it names: {asked:?}"
    );
    assert!(asked.iter().any(|a| a["params"]["message"] == "how deep?"), "what was asked stays: {asked:?}");
    let ended = p.ended.lock().unwrap().clone();
    assert_eq!(ended[0]["result"]["_meta"][RELATED_TASK]["taskId"], "a:t-1");
    assert!(p.sent.lock().unwrap().iter().all(|(m, _)| m != "tasks/cancel"));
}

#[actix::test]
async fn a_hosts_wait_given_up_or_too_long_leaves_the_task_running() {
    let p = path(vec![working(None)]);
    *p.pending.lock().unwrap() = false;
    run_task(p.clone(), for_result()).await;
    assert!(p.sent.lock().unwrap().is_empty(), "no cancel, no poll: the host polls its task itself");
    let p = path(vec![working(None)]);
    run_task(p.clone(), TaskRun { limit: Duration::ZERO, poll: POLL_MIN, ..for_result() }).await;
    assert!(p.sent.lock().unwrap().iter().all(|(m, _)| m != "tasks/cancel"));
    let why = p.ended.lock().unwrap()[0]["error"]["message"].as_str().unwrap().to_string();
    assert!(why.contains("left as it is") && !why.contains("cancelled"), "{why}");
    assert_eq!(p.ended.lock().unwrap()[0]["error"]["code"], code::UPSTREAM_UNAVAILABLE, "a wait to make again, not the task's failure");
    let p = path(vec![]);
    run_task(p.clone(), for_result()).await;
    assert!(p.sent.lock().unwrap().iter().all(|(m, _)| m != "tasks/cancel"), "a failed tasks/get leaves it too");
}

#[actix::test]
async fn a_hosts_wait_survives_a_servers_odd_meta_and_ends_early_as_a_wait_to_make_again() {
    // The server's _meta is no object, in the question and in the result: the task is named all the same.
    let asks = json!({"k": {"method": "elicitation/create", "params": {"message": "m", "_meta": "odd"}}});
    let p = path(vec![
        json!({"taskId": "t-1", "status": "input_required", "pollIntervalMs": 1, "inputRequests": asks}),
        json!({"taskId": "t-1", "status": "completed", "result": {"content": [], "_meta": ["odd"]}}),
    ]);
    let asked = Arc::new(Mutex::new(Vec::new()));
    *p.host.lock().unwrap() = Some(Recorder(asked.clone()).start().recipient());
    run_task(p.clone(), for_result()).await;
    assert_eq!(asked.lock().unwrap()[0]["params"]["_meta"][RELATED_TASK]["taskId"], "a:t-1");
    assert_eq!(p.ended.lock().unwrap()[0]["result"]["_meta"][RELATED_TASK]["taskId"], "a:t-1");
    // The host is gone while the task asks: the wait ends, to be made again; the task goes on.
    let p = path(vec![asking("k")]);
    run_task(p.clone(), for_result()).await;
    assert_eq!(p.ended.lock().unwrap()[0]["error"]["code"], code::UPSTREAM_UNAVAILABLE);
    // A task the server no longer knows: its end, for every wait.
    let p = path(vec![]);
    run_task(p.clone(), for_result()).await;
    assert_eq!(p.ended.lock().unwrap()[0]["error"]["code"], -32602);
    // A failed task whose code reads "wait again" is the task's end all the same.
    let p = path(vec![json!({"taskId": "t-1", "status": "failed", "error": {"code": code::UPSTREAM_UNAVAILABLE, "message": "x"}})]);
    run_task(p.clone(), for_result()).await;
    assert_eq!(p.ended.lock().unwrap()[0]["error"]["code"], code::INTERNAL_ERROR);
    let p = path(vec![json!({"taskId": "t-1", "status": "failed", "error": {"code": code::UPSTREAM_UNAVAILABLE, "message": "x"}})]);
    run_task(p.clone(), run(None)).await;
    assert_eq!(p.ended.lock().unwrap()[0]["error"]["code"], code::UPSTREAM_UNAVAILABLE, "a call's answer is the server's error as it is");
}

#[actix::test]
async fn a_hosts_wait_is_kept_alive_by_each_answer_of_the_server_a_calls_only_by_news() {
    let p = path(vec![working(None), working(None), working(None), json!({"taskId": "t-1", "status": "completed", "result": {}})]);
    run_task(p.clone(), for_result()).await;
    assert!(*p.alive.lock().unwrap() >= 4, "each poll: {}", *p.alive.lock().unwrap());
    let p = path(vec![working(None), working(None), working(None), json!({"taskId": "t-1", "status": "completed", "result": {}})]);
    run_task(p.clone(), run(None)).await;
    assert_eq!(*p.alive.lock().unwrap(), 1, "only the change to completed");
}
