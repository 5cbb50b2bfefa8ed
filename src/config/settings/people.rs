//! `server.auth.people`: which credentials are one person. Checked once at start; the edge
//! looks a token's label or a JWT's subject up here before it names the principal.

use std::collections::HashMap;
use std::sync::Arc;

use crate::config::file::ConfigError;
use crate::config::file::PersonConfig;

/// Credentials mapped to the person they belong to.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct People {
    by_token: HashMap<String, Arc<str>>,
    by_subject: HashMap<String, Arc<str>>,
}

impl People {
    /// The person a static token's label belongs to.
    pub fn of_token(&self, label: &str) -> Option<Arc<str>> {
        self.by_token.get(label).cloned()
    }

    /// The person a JWT's subject belongs to.
    pub fn of_subject(&self, sub: &str) -> Option<Arc<str>> {
        self.by_subject.get(sub).cloned()
    }

    /// Whether `name` is a person's name here.
    pub fn is_person(&self, name: &str) -> bool {
        self.by_token.values().chain(self.by_subject.values()).any(|p| &**p == name)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        let mut all: Vec<&str> = self.by_token.values().chain(self.by_subject.values()).map(|p| &**p).collect();
        all.sort_unstable();
        all.dedup();
        all.into_iter()
    }
}

/// A name as rules, secrets files and audit lines carry it: printable, bounded, and never
/// spelling another kind of name (`#...` is an unlabelled token, `client:...` a client).
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > 64 || name.chars().any(char::is_control) {
        return Err("must be 1 to 64 characters, none of them control characters".into());
    }
    if name.starts_with('#') || name.starts_with("client:") {
        return Err("must not start with '#' (an unlabelled token's name) or 'client:' (a client's)".into());
    }
    Ok(())
}

/// Checks `server.auth.people`: every name valid, every credential one person's only.
pub fn resolve(people: &std::collections::BTreeMap<String, PersonConfig>) -> Result<People, ConfigError> {
    let mut out = People::default();
    for (name, p) in people {
        let field = format!("server.auth.people.{name}");
        check_name(name).map_err(|why| ConfigError::new(&field, format!("a person's name {why}")))?;
        if p.tokens.is_empty() && p.subjects.is_empty() {
            return Err(ConfigError::new(
                &field,
                "lists no credential: give the labels of their tokens (tokens) or their JWT subjects (subjects)",
            ));
        }
        let person: Arc<str> = Arc::from(name.clone());
        for (kind, list, map) in [("tokens", &p.tokens, &mut out.by_token), ("subjects", &p.subjects, &mut out.by_subject)] {
            for (i, id) in list.iter().enumerate() {
                let at = format!("{field}.{kind}[{i}]");
                if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
                    return Err(ConfigError::new(&at, "must be 1 to 256 printable characters"));
                }
                if let Some(other) = map.insert(id.clone(), person.clone()) {
                    return Err(ConfigError::new(&at, format!("{id:?} is already {other}'s: a credential is one person's only")));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn person(tokens: &[&str], subjects: &[&str]) -> PersonConfig {
        PersonConfig { tokens: tokens.iter().map(|s| s.to_string()).collect(), subjects: subjects.iter().map(|s| s.to_string()).collect() }
    }

    #[test]
    fn credentials_map_to_one_person_each() {
        let cfg = BTreeMap::from([("alice".to_string(), person(&["alice-laptop", "alice-ci"], &["248289761001"]))]);
        let p = resolve(&cfg).unwrap();
        assert_eq!(p.of_token("alice-ci").as_deref(), Some("alice"));
        assert_eq!(p.of_subject("248289761001").as_deref(), Some("alice"));
        assert_eq!(p.of_subject("alice-ci"), None, "a label is not a subject");
        assert!(p.is_person("alice") && !p.is_person("alice-ci"));
        assert_eq!(p.names().collect::<Vec<_>>(), vec!["alice"]);
    }

    #[test]
    fn a_credential_of_two_people_or_a_bad_name_is_refused_naming_the_field() {
        let twice = BTreeMap::from([("alice".to_string(), person(&["shared"], &[])), ("bob".to_string(), person(&["shared"], &[]))]);
        let e = resolve(&twice).unwrap_err().to_string();
        assert!(e.contains("server.auth.people.bob.tokens[0]") && e.contains("alice's"), "{e}");
        let empty = BTreeMap::from([("carol".to_string(), person(&[], &[]))]);
        assert!(resolve(&empty).unwrap_err().to_string().contains("server.auth.people.carol"));
        for bad in ["#070707", "client:ci", ""] {
            let cfg = BTreeMap::from([(bad.to_string(), person(&["x"], &[]))]);
            assert!(resolve(&cfg).is_err(), "{bad:?}");
        }
    }
}
