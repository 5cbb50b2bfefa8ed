//! Which principal a credential is: a token's label or a JWT's subject, the person of
//! `server.auth.people` it belongs to, and the refusals when a name from one source spells a
//! name from another (the service could not tell them apart). Pure: the edge passes in the
//! people and whether a static token carries a label; a refusal is the reason the bearer
//! token is refused with.

use super::oauth::Subject;
use super::principal::Principal;
use crate::config::settings::people::People;

/// Why a credential is no principal: its name is another source's (the edge refuses the
/// bearer token with this as the reason; tests decide on the kind).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameClash {
    #[error("the token labelled {0} spells the name of a person of server.auth.people who does not list it: list it under server.auth.people.{0}.tokens, or give the token another label")]
    LabelIsAPerson(String),
    #[error("the access token's subject starts with '#' or 'client:', which name an unlabelled static token and an OAuth client here: a subject can never be either")]
    SubjectOfAnotherSource,
    #[error("the access token's subject spells the name of a static token or person of this service, and the two cannot be told apart: the operator lists the subject under server.auth.people, or gives the token another label")]
    SubjectIsAName,
}

/// The principal of a static token: its person when `people` lists its label. A labelled token
/// that spells a person's name without being listed for them is refused.
pub fn token_principal(people: &People, label: String, key: String, named: bool) -> Result<Principal, NameClash> {
    let person = if named { people.of_token(&label) } else { None };
    if named && person.is_none() && people.is_person(&label) {
        return Err(NameClash::LabelIsAPerson(label));
    }
    Ok(Principal::Token { label, key, person })
}

/// The principal of a valid access token: its person when `people` lists its subject. A
/// subject that spells a token's label or a person's name, without being listed, is refused:
/// otherwise an identity provider's `alice` would get the secrets, rules and admin right of the
/// operator's token `alice`. A name has one source: `#<12 hex>` is an unlabelled token's and
/// `client:<id>` a client's, whatever is configured now (a tokens file can gain that token on
/// SIGHUP), so a subject spelling either is refused even when listed.
pub fn jwt_principal(people: &People, sub: Subject, token_named: impl Fn(&str) -> bool) -> Result<Principal, NameClash> {
    if sub.claim == "sub" && spells_another_source(&sub.id) {
        return Err(NameClash::SubjectOfAnotherSource);
    }
    let person = if sub.claim == "sub" { people.of_subject(&sub.id) } else { None };
    if sub.claim == "sub" && person.is_none() && (people.is_person(&sub.id) || token_named(&sub.id)) {
        return Err(NameClash::SubjectIsAName);
    }
    Ok(Principal::Jwt { claim: sub.claim, id: sub.id, admin_scope: sub.admin, claims: sub.claims, person })
}

/// Whether a subject is written as a name only another source gives: an unlabelled token's
/// (`#` and its digest; labels start with a letter or digit) or a client's (`client:`; labels
/// and people's names never hold that).
fn spells_another_source(id: &str) -> bool {
    id.starts_with('#') || id.starts_with("client:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::file::PersonConfig;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    fn people() -> People {
        let alice = PersonConfig { tokens: vec!["alice-laptop".into()], subjects: vec!["u-248".into()] };
        crate::config::settings::people::resolve(&BTreeMap::from([("alice".to_string(), alice)])).unwrap()
    }

    fn sub(claim: &'static str, id: &str) -> Subject {
        Subject { claim, id: id.into(), admin: false, claims: Arc::new(serde_json::json!({})) }
    }

    #[test]
    fn a_listed_credential_is_its_person_and_a_name_from_another_source_is_refused() {
        let p = people();
        let t = token_principal(&p, "alice-laptop".into(), "token alice-laptop".into(), true).unwrap();
        let j = jwt_principal(&p, sub("sub", "u-248"), |_| false).unwrap();
        assert_eq!((t.key(), t.name()), (j.key(), j.name()), "one person");
        assert!(token_principal(&p, "alice".into(), "token alice".into(), true).is_err(), "a label spelling a person");
        assert!(jwt_principal(&p, sub("sub", "alice"), |_| false).is_err(), "a subject spelling a person");
        assert!(jwt_principal(&p, sub("sub", "bob"), |n| n == "bob").is_err(), "a subject spelling a token's label");
        assert_eq!(jwt_principal(&p, sub("sub", "carol"), |_| false).unwrap().name(), "carol");
        assert_eq!(jwt_principal(&p, sub("client_id", "alice"), |_| false).unwrap().name(), "client:alice", "a client is never a person");
    }

    #[test]
    fn a_subject_never_spells_an_unlabelled_token_or_a_client() {
        let p = people();
        assert!(jwt_principal(&p, sub("sub", "#070707070707"), |_| false).is_err(), "an unlabelled token's name");
        assert!(jwt_principal(&p, sub("sub", "#anything"), |_| false).is_err(), "whether or not such a token exists now");
        assert!(jwt_principal(&p, sub("sub", "client:svc"), |_| false).is_err(), "a client's name");
        let client = jwt_principal(&p, sub("client_id", "svc"), |_| false).unwrap();
        assert_eq!(client.name(), "client:svc", "the client itself is that name");
        let id_with_hash = jwt_principal(&p, sub("client_id", "#070707070707"), |_| false).unwrap();
        assert_eq!(id_with_hash.name(), "client:#070707070707", "a client id is always under client:");
    }
}
