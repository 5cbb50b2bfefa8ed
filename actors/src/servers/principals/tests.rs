use std::sync::atomic::AtomicUsize;

use actix::prelude::*;
use serde_json::json;

use super::*;
use crate::metrics::Metrics;
use crate::proxy::hosts::Hosts;

/// Stands for a person's supervisor: counts the stops it is sent.
struct Stoppable(Arc<AtomicUsize>);

impl Actor for Stoppable {
    type Context = Context<Self>;
}

impl Handler<Shutdown> for Stoppable {
    type Result = ();
    fn handle(&mut self, _: Shutdown, _: &mut Self::Context) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// Starts a connection for anyone with a secret, counting starts and stops.
struct Fake {
    with_secret: Vec<&'static str>,
    started: AtomicUsize,
    stopped: Arc<AtomicUsize>,
    metrics: Arc<Metrics>,
}

impl StartPrincipal for Fake {
    fn start(&self, who: &Who) -> Result<Started, PrincipalRefusal> {
        if !self.with_secret.contains(&&*who.name) {
            return Err(PrincipalRefusal::MissingSecrets {
                server: Arc::from("s"),
                principal: who.name.clone(),
                names: vec!["TOKEN".into()],
            });
        }
        self.started.fetch_add(1, Ordering::SeqCst);
        let router = Router::new(
            Arc::from("s"),
            Some(Arc::from("s")),
            crate::proxy::router::Times::new(Duration::from_secs(5)),
            "test".into(),
            Arc::new(Hosts::default()),
            self.metrics.clone(),
            crate::proxy::router::Hearers::OnePerson,
        );
        Ok(Started { router, stop: Stoppable(self.stopped.clone()).start().recipient(), exchanged: None })
    }
}

fn who(name: &str) -> Who {
    Who::new(Arc::from(format!("token {name}").as_str()), Arc::from(name), Arc::new(json!({})), false)
}

fn pool(max: usize, total: usize, idle: Duration) -> (PrincipalPool, Arc<Fake>, Arc<Metrics>) {
    let metrics = Arc::new(Metrics::new());
    let fake = Arc::new(Fake {
        with_secret: vec!["alice", "bob", "carol"],
        started: AtomicUsize::new(0),
        stopped: Arc::default(),
        metrics: metrics.clone(),
    });
    (PrincipalPool::new(Arc::from("s"), max, idle, Total::new(total), fake.clone(), &metrics), fake, metrics)
}

#[actix::test]
async fn one_connection_per_person_within_the_caps() {
    let (p, fake, metrics) = pool(2, 10, Duration::from_secs(60));
    let a = p.router_for(&who("alice")).unwrap();
    assert!(Arc::ptr_eq(&a, &p.router_for(&who("alice")).unwrap()), "the same person, the same connection");
    p.router_for(&who("bob")).unwrap();
    assert_eq!(p.router_for(&who("carol")).err(), Some(PrincipalRefusal::ServerFull { server: Arc::from("s"), max: 2 }));
    assert_eq!(fake.started.load(Ordering::SeqCst), 2);
    assert!(matches!(p.router_for(&who("dave")), Err(PrincipalRefusal::ServerFull { .. })), "the cap is checked first");
    assert!(metrics.render().contains(r#"mcp_gen_ui_principal_connections{principal="alice",server="s",source="token"} 1"#));
    assert!(matches!(p.router_for(&Who::anonymous()), Err(PrincipalRefusal::Anonymous { .. })));
}

#[actix::test]
async fn the_cap_over_every_server_holds_and_refusals_free_nothing() {
    let metrics = Arc::new(Metrics::new());
    let fake = Arc::new(Fake {
        with_secret: vec!["alice", "bob"],
        started: AtomicUsize::new(0),
        stopped: Arc::default(),
        metrics: metrics.clone(),
    });
    let total = Total::new(1);
    let one = PrincipalPool::new(Arc::from("one"), 5, Duration::from_secs(60), total.clone(), fake.clone(), &metrics);
    let two = PrincipalPool::new(Arc::from("two"), 5, Duration::from_secs(60), total.clone(), fake.clone(), &metrics);
    assert!(matches!(one.router_for(&who("carol")), Err(PrincipalRefusal::MissingSecrets { .. })));
    assert_eq!(total.running(), 0, "a refused start takes no place");
    one.router_for(&who("alice")).unwrap();
    assert_eq!(two.router_for(&who("bob")).err(), Some(PrincipalRefusal::AllFull { max: 1 }));
}

#[actix::test]
async fn idle_connections_stop_and_the_next_call_starts_one() {
    let (p, fake, _) = pool(5, 10, Duration::from_millis(50));
    p.router_for(&who("alice")).unwrap();
    tokio::time::sleep(Duration::from_millis(80)).await;
    assert_eq!(p.reap_idle(), 1);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(fake.stopped.load(Ordering::SeqCst), 1, "its supervisor was told to stop");
    assert_eq!(p.running().0, 0);
    p.router_for(&who("alice")).unwrap();
    assert_eq!(fake.started.load(Ordering::SeqCst), 2);
    assert_eq!(p.forget("alice"), 1, "new credentials: stopped");
    assert_eq!(p.take_all("bye").len(), 0);
}
