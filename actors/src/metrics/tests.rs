use super::*;

#[test]
fn renders_families_with_prefix() {
    let m = Metrics::new();
    m.requests.with_label_values(&["tools/call", "ok"]).inc();
    let text = m.render();
    assert!(text.contains("mcp_gen_ui_requests_total{method=\"tools/call\",outcome=\"ok\"} 1"));
    assert!(text.contains("mcp_gen_ui_host_sessions{transport=\"stdio\"} 0"));
}

#[test]
fn unknown_methods_share_one_label() {
    assert_eq!(method_label("tools/call"), "tools/call");
    assert_eq!(method_label("x/y/z"), "other");
}
