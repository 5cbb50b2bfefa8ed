//! Each person's share of a table the service holds for people (tasks, task watches): what of
//! theirs it holds, oldest first, so that a person at their cap makes room from their own
//! entries, never from anyone else's, in time bounded by their own cap rather than by the
//! table. Pure bookkeeping: the table decides what an entry is and when it ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// An entry's place in its person's share (returned by [`Shares::add`], given back to remove it).
pub type Place = u64;

#[derive(Debug, Default)]
pub struct Shares {
    by_person: HashMap<Arc<str>, BTreeMap<Place, String>>,
    next: Place,
}

impl Shares {
    /// Files `key` as `person`'s newest entry.
    pub fn add(&mut self, person: &Arc<str>, key: String) -> Place {
        self.next += 1;
        self.by_person.entry(person.clone()).or_default().insert(self.next, key);
        self.next
    }

    /// An entry of `person`'s ended (the table removed it).
    pub fn remove(&mut self, person: &str, place: Place) {
        if let Some(theirs) = self.by_person.get_mut(person) {
            theirs.remove(&place);
            if theirs.is_empty() {
                self.by_person.remove(person);
            }
        }
    }

    /// How many entries `person` holds.
    pub fn count(&self, person: &str) -> usize {
        self.by_person.get(person).map_or(0, BTreeMap::len)
    }

    /// `person`'s oldest entry.
    pub fn oldest(&self, person: &str) -> Option<(Place, &str)> {
        self.by_person.get(person)?.first_key_value().map(|(p, k)| (*p, k.as_str()))
    }

    /// Every entry of `person`'s, oldest first (at most their cap).
    pub fn of(&self, person: &str) -> Vec<(Place, String)> {
        self.by_person.get(person).map(|t| t.iter().map(|(p, k)| (*p, k.clone())).collect()).unwrap_or_default()
    }

    /// People holding anything.
    pub fn people(&self) -> usize {
        self.by_person.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_person_has_their_own_oldest_and_count() {
        let mut s = Shares::default();
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("alice"), Arc::from("bob"));
        let a1 = s.add(&a, "a1".into());
        for i in 0..5 {
            s.add(&b, format!("b{i}"));
        }
        let a2 = s.add(&a, "a2".into());
        assert_eq!((s.count("alice"), s.count("bob"), s.count("carol")), (2, 5, 0));
        assert_eq!(s.oldest("alice"), Some((a1, "a1")), "bob's entries, newer or older, are not hers");
        assert_eq!(s.oldest("bob").map(|(_, k)| k), Some("b0"));
        s.remove("alice", a1);
        assert_eq!(s.oldest("alice"), Some((a2, "a2")));
        s.remove("alice", a2);
        assert_eq!((s.count("alice"), s.people()), (0, 1), "an empty share is dropped");
        assert_eq!(s.of("bob").len(), 5);
    }
}
