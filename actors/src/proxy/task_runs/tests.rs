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
}

fn path(gets: Vec<Value>) -> Arc<Path> {
    let p = Path::default();
    *p.gets.lock().unwrap() = gets;
    *p.pending.lock().unwrap() = true;
    Arc::new(p)
}

fn run(token: Option<Value>) -> TaskRun {
    TaskRun { up_id: json!(7), session: "s".into(), task: "t-1".into(), progress_token: token, poll: POLL_MIN }
}

fn working(msg: Option<&str>) -> Value {
    match msg {
        Some(m) => json!({"taskId": "t-1", "status": "working", "statusMessage": m, "pollIntervalMs": 1}),
        None => json!({"taskId": "t-1", "status": "working", "pollIntervalMs": 1}),
    }
}

#[actix::test]
async fn each_new_status_is_progress_of_the_call_and_the_result_is_its_answer() {
    let result = json!({"content": [{"type": "text", "text": "report"}], "resultType": "complete"});
    let p = path(vec![
        working(None),
        working(Some("one")),
        working(Some("one")),
        working(Some("two")),
        json!({"taskId": "t-1", "status": "completed", "statusMessage": "two", "result": result}),
    ]);
    run_task(p.clone(), run(Some(json!("up-tok")))).await;
    let said: Vec<Value> = p.said.lock().unwrap().iter().map(|m| m["params"].clone()).collect();
    assert_eq!(
        said,
        vec![
            json!({"progressToken": "up-tok", "progress": 1, "message": "one"}),
            json!({"progressToken": "up-tok", "progress": 2, "message": "two"})
        ],
        "once per change, under the call's upstream token"
    );
    assert_eq!(*p.ended.lock().unwrap(), vec![jsonrpc::result(json!(7), result)]);
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
    assert_eq!(p.ended.lock().unwrap()[0]["result"], json!({"content": []}));
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
    assert_eq!((r.task.as_str(), r.progress_token, r.poll), ("t-9", Some(json!(5)), Duration::from_millis(200)));
    assert!(TaskRun::of(json!(1), "s".into(), &request, &json!({"result": {"taskId": "x".repeat(300)}})).is_none(), "an id too long");
}
