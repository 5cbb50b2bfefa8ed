//! Shared by the actors' unit tests: a log of what fakes were asked.

use std::sync::{Arc, Mutex};

/// What the fakes were asked, in order, one line each ("read weather [..] force=false").
#[derive(Clone, Default)]
pub struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    pub fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    /// The lines that start with `prefix`.
    pub fn with(&self, prefix: &str) -> Vec<String> {
        self.0.lock().unwrap().iter().filter(|l| l.starts_with(prefix)).cloned().collect()
    }
}
