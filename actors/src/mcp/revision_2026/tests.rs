//! The 2026-07-28 checks and dress, case by case.

use super::*;

fn req(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params})
}

fn meta() -> Value {
    json!({META_VERSION: VERSION, META_CAPS: {"sampling": {}}, META_CLIENT: {"name": "t", "version": "1"}})
}

#[test]
fn era_follows_meta_or_an_unknown_header() {
    let old = ["2025-11-25", "2025-06-18"];
    assert!(is_2026_request(&req("tools/list", json!({"_meta": meta()})), None, &old));
    assert!(is_2026_request(&req("tools/list", json!({})), Some("2026-07-28"), &old));
    assert!(is_2026_request(&req("tools/list", json!({})), Some("v999"), &old));
    assert!(!is_2026_request(&req("tools/list", json!({})), Some("2025-11-25"), &old));
    assert!(!is_2026_request(&req("tools/list", json!({})), None, &old));
    // An initialize in the stateless dress is a 2026 host's mistake (answered "not found");
    // a 2025 host's initialize carries neither the key nor a 2026 header.
    assert!(is_2026_request(&req("initialize", json!({"_meta": meta()})), None, &old));
    assert!(!is_2026_request(&req("initialize", json!({"protocolVersion": "2025-11-25"})), None, &old));
}

#[test]
fn meta_is_checked_keys_then_header_then_support() {
    let missing = request_meta(&req("server/discover", json!({})), Some(VERSION)).unwrap_err();
    assert_eq!(missing.code, code::INVALID_PARAMS);
    assert!(missing.message.contains(META_CAPS), "{}", missing.message);
    let mut m = meta();
    m[META_VERSION] = json!("v999");
    let mismatch = request_meta(&req("server/discover", json!({"_meta": m.clone()})), Some(VERSION)).unwrap_err();
    assert_eq!(mismatch.code, errors::HEADER_MISMATCH);
    let unsupported = request_meta(&req("server/discover", json!({"_meta": m})), Some("v999")).unwrap_err();
    assert_eq!(unsupported.code, errors::UNSUPPORTED_VERSION);
    assert_eq!(unsupported.data.unwrap()["requested"], "v999");
    let ok = request_meta(&req("tools/list", json!({"_meta": meta()})), None).unwrap();
    assert_eq!(ok.capabilities, json!({"sampling": {}}));
}

#[test]
fn headers_must_name_the_method_and_target() {
    let call = req("tools/call", json!({"name": "echo", "arguments": {}}));
    assert!(check_headers(&call, Some("tools/call"), Some("  echo  ")).is_ok());
    assert_eq!(check_headers(&call, Some("tools/call"), None).unwrap_err().code, errors::HEADER_MISMATCH);
    assert!(check_headers(&call, Some("tools/call"), Some("other")).is_err());
    assert!(check_headers(&call, Some("TOOLS/CALL"), Some("echo")).is_err());
    assert!(check_headers(&call, None, Some("echo")).is_err());
    assert!(check_headers(&call, Some("tools/call"), Some("=?base64?ZWNobw==?=")).is_ok(), "base64 form of echo");
    assert!(check_headers(&call, Some("tools/call"), Some("=?base64?ZWNobw?=")).is_err(), "bad padding");
    let read = req("resources/read", json!({"uri": "ui://x"}));
    assert!(check_headers(&read, Some("resources/read"), Some("ui://x")).is_ok());
    assert!(check_headers(&req("tools/list", json!({})), Some("tools/list"), None).is_ok());
}

#[test]
fn answers_are_dressed_for_the_stateless_era() {
    let server = json!({"name": "s", "version": "1"});
    let a = dress_answer(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}), caching_for("tools/list"), &server);
    assert_eq!(a["result"]["resultType"], "complete");
    assert_eq!(a["result"]["ttlMs"], 0);
    assert_eq!(a["result"]["cacheScope"], "private");
    assert_eq!(a["result"]["_meta"][META_SERVER], server);
    let kept = dress_answer(json!({"id": 1, "result": {"resultType": "input_required"}}), None, &server);
    assert_eq!(kept["result"]["resultType"], "input_required");
    assert!(kept["result"].get("ttlMs").is_none());
    let nf = dress_answer(json!({"id": 1, "error": {"code": -32002, "message": "x", "data": {"uri": "u"}}}), None, &server);
    assert_eq!(nf["error"]["code"], code::INVALID_PARAMS);
    assert_eq!(nf["error"]["data"]["uri"], "u");
    let public =
        dress_answer(json!({"id": 1, "result": {"contents": [], "ttlMs": 5}}), Some(Caching { ttl_ms: 60_000, public: true }), &server);
    assert_eq!(public["result"]["ttlMs"], 5, "the stricter of the two wins");
    assert_eq!(public["result"]["cacheScope"], "public");
}

#[test]
fn statuses_follow_the_error() {
    assert_eq!(http_status(&json!({"error": {"code": -32601}})), 404);
    assert_eq!(http_status(&json!({"error": {"code": -32021}})), 400);
    assert_eq!(http_status(&json!({"error": {"code": -32603}})), 200);
    assert_eq!(http_status(&json!({"result": {}})), 200);
}

#[test]
fn round_trip_fields_come_off_and_calls_compare() {
    let mut retry =
        req("tools/call", json!({"name": "t", "arguments": {"a": 1}, "inputResponses": {"k": {"action": "accept"}}, "requestState": "s"}));
    let (responses, state) = take_round_trip(&mut retry);
    assert_eq!(state.as_deref(), Some("s"));
    assert_eq!(responses.unwrap()["k"]["action"], "accept");
    assert!(jsonrpc::params(&retry).get("inputResponses").is_none());
    assert!(same_call(&req("tools/call", json!({"name": "t", "arguments": {"a": 1}})), &retry));
    assert!(!same_call(&req("tools/call", json!({"name": "t", "arguments": {"a": 2}})), &retry));
    assert!(!same_call(&req("prompts/get", json!({"name": "t", "arguments": {"a": 1}})), &retry));
}

#[test]
fn input_requests_carry_method_and_params_only() {
    let r = input_required(
        &[("elicitation_1".into(), json!({"jsonrpc": "2.0", "id": "h1", "method": "elicitation/create", "params": {"message": "m"}}))],
        "st",
    );
    assert_eq!(r["inputRequests"]["elicitation_1"], json!({"method": "elicitation/create", "params": {"message": "m"}}));
    assert_eq!(r["requestState"], "st");
    assert!(valid_response("elicitation/create", &json!({"action": "accept"})));
    assert!(!valid_response("elicitation/create", &json!(12345)));
    assert!(!valid_response("roots/list", &json!({})));
}

#[test]
fn capabilities_drop_only_logging() {
    let caps =
        stateless_capabilities(json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}, "logging": {}, "prompts": {}}));
    assert_eq!(caps, json!({"tools": {"listChanged": true}, "resources": {"subscribe": true}, "prompts": {}}));
}

#[test]
fn log_levels_filter() {
    assert!(!log_wanted(Some("error"), None));
    assert!(log_wanted(Some("error"), Some("info")));
    assert!(!log_wanted(Some("debug"), Some("info")));
}

#[test]
fn own_meta_is_stripped_before_forwarding() {
    let mut m = req("tools/call", json!({"name": "t", "_meta": meta()}));
    strip_request_meta(&mut m);
    assert!(jsonrpc::params(&m).get("_meta").is_none());
    let mut p = req("tools/call", json!({"name": "t", "_meta": {META_VERSION: VERSION, "progressToken": 3}}));
    strip_request_meta(&mut p);
    assert_eq!(p["params"]["_meta"], json!({"progressToken": 3}));
}
