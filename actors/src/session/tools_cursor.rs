//! The cursor of a host's paged `tools/list`: where the next page starts. Opaque to hosts, as
//! the spec asks; a cursor from a host is untrusted and is read only if it is one of ours.

use serde_json::Value;

const PREFIX: &str = "tools-";

/// The cursor of the page that starts at `offset`.
pub fn make(offset: usize) -> String {
    format!("{PREFIX}{offset}")
}

/// Where the page a host asks for starts: 0 without a cursor, or the reason a cursor is refused.
pub fn parse(cursor: Option<&Value>) -> Result<usize, &'static str> {
    const BAD: &str = "Invalid params: cursor is not one this server gave (list again without a cursor)";
    let text = match cursor {
        None | Some(Value::Null) => return Ok(0),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err(BAD),
    };
    let digits = text.strip_prefix(PREFIX).ok_or(BAD)?;
    if digits.is_empty() || digits.len() > 12 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(BAD);
    }
    digits.parse().map_err(|_| BAD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_and_starts_at_zero() {
        assert_eq!(parse(None), Ok(0));
        assert_eq!(parse(Some(&Value::Null)), Ok(0));
        assert_eq!(parse(Some(&json!(make(1000)))), Ok(1000));
    }

    #[test]
    fn refuses_what_it_did_not_make() {
        for bad in
            [json!("1000"), json!("tools-"), json!("tools--1"), json!("tools-1e3"), json!(5), json!("tools-9999999999999"), json!({})]
        {
            assert!(parse(Some(&bad)).is_err(), "{bad}");
        }
    }
}
