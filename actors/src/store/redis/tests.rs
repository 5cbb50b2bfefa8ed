//! Events on the wire, page lifetimes, histories that do not parse.

use super::*;
use crate::page::{UiEntry, ENTRY_FORMAT};

#[test]
fn events_travel_as_tagged_json() {
    let ev = Event::Stored { origin: "r1".into(), key: "k".into(), tool: "t".into(), forced: true };
    let json = serde_json::to_string(&ev).unwrap();
    assert_eq!(json, r#"{"type":"stored","origin":"r1","key":"k","tool":"t","forced":true}"#);
    assert_eq!(serde_json::from_str::<Event>(&json).unwrap(), ev);
    assert_eq!(ev.origin(), Some("r1"));
    assert!(serde_json::from_str::<Event>(r#"{"type":"resubscribed"}"#).is_err(), "local events never come from the wire");
}

#[test]
fn page_ttls_follow_the_fallback_expiry_and_the_cache_ttl() {
    let mut e: UiEntry = serde_json::from_value(serde_json::json!({
        "format": ENTRY_FORMAT, "key": "k", "toolName": "t", "html": "", "kind": "generated", "uiType": null,
        "generatedAt": 0, "durationMs": 0, "provider": "", "model": "", "promptVersion": "", "templateVersion": "",
        "fallbackReason": null, "warnings": [], "repairs": [], "requestId": "", "inputTokens": 0, "outputTokens": 0
    }))
    .unwrap();
    assert_eq!(page_ttl(&e, None, 1000), Some(PAGE_MAX_TTL));
    assert_eq!(page_ttl(&e, Some(Duration::from_secs(60)), 1000), Some(Duration::from_secs(60)));
    e.expires_at = Some(11_000);
    assert_eq!(page_ttl(&e, Some(Duration::from_secs(60)), 1000), Some(Duration::from_secs(10)));
    assert_eq!(page_ttl(&e, None, 11_000), None);
}

#[tokio::test]
async fn a_redis_that_is_not_there_fails_fast_and_says_so() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let settings = RedisSettings {
        url: format!("redis://127.0.0.1:{port}"),
        prefix: "t:".into(),
        timeout: Duration::from_millis(300),
        lease_ttl: LEASE_TTL,
    };
    let metrics = Arc::new(Metrics::new());
    let store = RedisStore::open(settings, metrics.clone()).unwrap();
    let started = Instant::now();
    assert!(store.get_page("k").await.is_err());
    assert!(store.try_lease("k").await.is_err(), "skipped: it failed less than a second ago");
    assert!(started.elapsed() < Duration::from_millis(700));
    let h = store.health();
    assert_eq!(h.status, "degraded");
    assert_eq!(h.server, format!("127.0.0.1:{port}"));
    assert!(h.error.is_some());
    assert_eq!(metrics.redis_errors.with_label_values(&["page_get"]).get(), 1);
    assert!(RedisStore::open(RedisSettings { url: "http://x".into(), ..store.inner.settings.clone() }, metrics).is_err());
}
