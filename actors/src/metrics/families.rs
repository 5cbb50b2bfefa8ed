//! Registering families: each one in the registry and in the list the reference is made from.

use prometheus::{HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};

use super::{Family, PREFIX};

/// Makes each family under the prefix and registers it (names are unique: a clash is a bug),
/// keeping what it registered for `Metrics::families`.
pub(super) struct Families(pub(super) Registry, pub(super) std::cell::RefCell<Vec<Family>>);

impl Families {
    pub(super) fn add<C: prometheus::core::Collector + Clone + 'static>(&self, kind: &'static str, c: C) -> C {
        for d in c.desc() {
            let (name, help, labels) = (d.fq_name.clone(), d.help.clone(), d.variable_labels.clone());
            self.1.borrow_mut().push(Family { name, kind, help, labels });
        }
        self.0.register(Box::new(c.clone())).expect("metric names are unique");
        c
    }
    pub(super) fn counters(&self, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
        self.add("counter", IntCounterVec::new(Opts::new(format!("{PREFIX}_{name}"), help), labels).expect("valid metric"))
    }
    pub(super) fn gauges(&self, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
        self.add("gauge", IntGaugeVec::new(Opts::new(format!("{PREFIX}_{name}"), help), labels).expect("valid metric"))
    }
    pub(super) fn counter(&self, name: &str, help: &str) -> IntCounter {
        self.add("counter", IntCounter::new(format!("{PREFIX}_{name}"), help).expect("valid metric"))
    }
    pub(super) fn gauge(&self, name: &str, help: &str) -> IntGauge {
        self.add("gauge", IntGauge::new(format!("{PREFIX}_{name}"), help).expect("valid metric"))
    }
    pub(super) fn histograms(&self, name: &str, help: &str, labels: &[&str], buckets: Vec<f64>) -> HistogramVec {
        let opts = HistogramOpts::new(format!("{PREFIX}_{name}"), help).buckets(buckets);
        self.add("histogram", HistogramVec::new(opts, labels).expect("valid metric"))
    }
}
