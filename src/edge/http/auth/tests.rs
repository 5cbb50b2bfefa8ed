use super::*;
use crate::config::settings::OAuthSettings;
use crate::config::tokens::generate_token;

fn settings(tokens: &[&str]) -> AuthSettings {
    AuthSettings {
        tokens: tokens
            .iter()
            .enumerate()
            .map(|(i, t)| StaticToken { label: format!("--auth-token[{i}]"), value: Secret(t.to_string()), named: false })
            .collect(),
        ..Default::default()
    }
}

fn bearer(t: &str) -> HeaderValue {
    HeaderValue::from_str(&format!("Bearer {t}")).unwrap()
}

#[actix_web::test]
async fn static_tokens_are_matched_by_label() {
    let auth = Auth::new(&settings(&["first-token-aaaaaaaa", "second-token-bbbbbbb"]), None);
    assert_eq!(auth.authenticate(Some(&bearer("second-token-bbbbbbb"))).await.map(|p| p.to_string()), Ok("token --auth-token[1]".into()));
    assert_eq!(
        auth.authenticate(Some(&HeaderValue::from_static("bearer first-token-aaaaaaaa"))).await.map(|p| p.to_string()),
        Ok("token --auth-token[0]".into())
    );
    assert_eq!(auth.authenticate(None).await, Err(Denied::Missing));
    assert_eq!(auth.authenticate(Some(&HeaderValue::from_static("Basic Zm9vOmJhcg=="))).await, Err(Denied::Missing));
    assert!(matches!(auth.authenticate(Some(&HeaderValue::from_static("Bearer "))).await, Err(Denied::Malformed(_))));
    assert!(matches!(auth.authenticate(Some(&bearer("first-token-aaaaaaa"))).await, Err(Denied::Invalid(_))), "a prefix is not the token");
    assert!(matches!(auth.authenticate(Some(&bearer("first-token-aaaaaaaaa"))).await, Err(Denied::Invalid(_))));
}

#[actix_web::test]
async fn off_lets_everyone_in_and_a_generated_token_turns_it_on() {
    let off = Auth::new(&AuthSettings::default(), None);
    assert!(!off.is_on());
    assert_eq!(off.authenticate(None).await, Ok(Principal::Anonymous));
    let g = generate_token().unwrap();
    assert_eq!(g.0.len(), 43, "32 bytes in base64url");
    assert_ne!(g.0, generate_token().unwrap().0);
    let on = Auth::new(&AuthSettings::default(), Some(&g));
    assert_eq!(on.authenticate(Some(&bearer(&g.0))).await.map(|p| p.to_string()), Ok("token generated-at-start".into()));
    assert_eq!(on.authenticate(None).await, Err(Denied::Missing));
    let disabled = Auth::new(&AuthSettings { disabled: true, ..Default::default() }, None);
    assert!(!disabled.is_on());
}

#[test]
fn loopback_addresses() {
    for a in ["127.0.0.1", "127.0.0.2", "::1", "::ffff:127.0.0.1"] {
        assert!(is_loopback(a.parse().unwrap()), "{a}");
    }
    for a in ["0.0.0.0", "::", "10.0.0.1", "192.168.1.2", "::ffff:10.0.0.1"] {
        assert!(!is_loopback(a.parse().unwrap()), "{a}");
    }
}

#[test]
fn refusals_carry_the_challenge_and_say_what_to_send() {
    let s = AuthSettings {
        oauth: Some(OAuthSettings {
            issuer: "https://as.example.com".into(),
            audience: "https://mcp.example.com/mcp".into(),
            jwks_url: url::Url::parse("https://as.example.com/jwks").unwrap(),
            required_scopes: vec!["mcp:tools".into()],
            resource: None,
            client_ids_are_people: false,
        }),
        ..settings(&["static-token-123456"])
    };
    let auth = Auth::new(&s, None);
    let r = auth.refusal(&Denied::Missing, "http://127.0.0.1:8080");
    assert_eq!(r.status(), 401);
    let h = r.headers().get(WWW_AUTHENTICATE).unwrap().to_str().unwrap();
    assert!(h.starts_with("Bearer "), "{h}");
    assert!(h.contains("resource_metadata=\"http://127.0.0.1:8080/.well-known/oauth-protected-resource\""), "{h}");
    assert!(h.contains("scope=\"mcp:tools\"") && !h.contains("error="), "{h}");
    let r = auth.refusal(&Denied::Invalid("the access token has expired (exp)".into()), "http://h");
    assert!(r.headers().get(WWW_AUTHENTICATE).unwrap().to_str().unwrap().contains("error=\"invalid_token\""));
    let r = auth.refusal(&Denied::MissingScopes(vec!["mcp:tools".into()]), "http://h");
    assert_eq!(r.status(), 403);
    assert!(r.headers().get(WWW_AUTHENTICATE).unwrap().to_str().unwrap().contains("error=\"insufficient_scope\""));
    let plain = Auth::new(&settings(&["static-token-123456"]), None).refusal(&Denied::Missing, "http://h");
    assert_eq!(plain.headers().get(WWW_AUTHENTICATE).unwrap(), "Bearer realm=\"mcp-gen-ui\"", "no metadata without OAuth");
}

#[actix_web::test]
async fn metrics_are_the_admins_and_the_scrapes_when_several_people_sign_in() {
    let labelled = |label: &str, t: &str| StaticToken { label: label.into(), value: Secret(t.into()), named: true };
    let one = AuthSettings { tokens: vec![labelled("alice", "alice-token-aaaaaaaa")], ..Default::default() };
    let auth = Auth::new(&one, None);
    let alice = auth.authenticate(Some(&bearer("alice-token-aaaaaaaa"))).await.unwrap();
    assert!(auth.may_read_metrics(&alice), "the one person who can sign in names nobody else");
    let team = AuthSettings {
        tokens: vec![labelled("alice", "alice-token-aaaaaaaa"), labelled("bob", "bob-token-bbbbbbbbbb")],
        admins: vec!["alice".into()],
        metrics_tokens: vec![Secret("scrape-token-cccccccc".into())],
        ..Default::default()
    };
    let auth = Auth::new(&team, None);
    let alice = auth.authenticate(Some(&bearer("alice-token-aaaaaaaa"))).await.unwrap();
    let bob = auth.authenticate(Some(&bearer("bob-token-bbbbbbbbbb"))).await.unwrap();
    assert!(auth.may_read_metrics(&alice) && !auth.may_read_metrics(&bob), "an admin, not bob");
    assert!(auth.is_metrics_token(Some(&bearer("scrape-token-cccccccc"))));
    assert!(!auth.is_metrics_token(Some(&bearer("bob-token-bbbbbbbbbb"))) && !auth.is_metrics_token(None));
    assert!(auth.authenticate(Some(&bearer("scrape-token-cccccccc"))).await.is_err(), "the scrape's token opens nothing else");
}
