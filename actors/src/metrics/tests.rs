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

#[test]
fn tools_past_the_bound_share_their_servers_other_series() {
    let m = Metrics::new();
    for i in 0..MAX_TOOL_SERIES + 3 {
        m.tools.of("s", &format!("t{i}")).ended("ok", 0.01);
    }
    m.tools.of("s", "t0").ended("denied", 0.0);
    let text = m.render();
    assert!(text.contains(r#"mcp_gen_ui_tool_calls_total{outcome="ok",server="s",tool="t0"} 1"#), "{text}");
    assert!(text.contains(r#"mcp_gen_ui_tool_calls_total{outcome="denied",server="s",tool="t0"} 1"#));
    assert!(text.contains(r#"mcp_gen_ui_tool_calls_total{outcome="ok",server="s",tool="other"} 3"#));
    let own = text.lines().filter(|l| l.starts_with("mcp_gen_ui_tool_calls_total{outcome=\"ok\"")).count();
    assert_eq!(own, MAX_TOOL_SERIES + 1, "the bound, and one other");
}
