//! The one policy for poisoned locks: recover the guard and go on.
//!
//! Every lock in this crate guards plain data (maps, queues, counters) that each critical
//! section leaves consistent at every point where it could panic: no invariant spans two
//! fields that a panic could split. So a panic while holding a lock (already contained and
//! counted where it happened) must not take down every later user of that lock: the data is
//! still good. Locks are never held across an await or I/O.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `lock()` for a `Mutex` under the policy above.
pub trait Recover<T> {
    fn guard(&self) -> MutexGuard<'_, T>;
}

impl<T> Recover<T> for Mutex<T> {
    fn guard(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `read()` / `write()` for an `RwLock` under the policy above.
pub trait RecoverRw<T> {
    fn reading(&self) -> RwLockReadGuard<'_, T>;
    fn writing(&self) -> RwLockWriteGuard<'_, T>;
}

impl<T> RecoverRw<T> for RwLock<T> {
    fn reading(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|p| p.into_inner())
    }

    fn writing(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_under_the_lock_leaves_it_usable() {
        let m = std::sync::Arc::new(Mutex::new(vec![1]));
        let m2 = m.clone();
        let _ = std::thread::spawn(move || {
            let _g = m2.lock().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(m.is_poisoned());
        m.guard().push(2);
        assert_eq!(*m.guard(), vec![1, 2]);
        let rw = RwLock::new(0);
        *rw.writing() += 1;
        assert_eq!(*rw.reading(), 1);
    }
}
