//! Pure: the valid name a misspelt one was probably meant to be (`tols` for `tools`,
//! `edit_files` for `edit_file`), for "did you mean" in errors and warnings, and serde's
//! "unknown field" messages given one.

/// The candidate closest to `word` by edit distance (case counts half: `Tools` is nearer
/// `tools` than `tool` is), when it is close enough to be a slip: at most a third of the
/// word's length, and at least one edit allowed.
pub fn nearest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1) * 2;
    candidates
        .into_iter()
        .filter(|c| *c != word)
        .map(|c| (distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, c.len()))
        .map(|(_, c)| c)
}

/// Edit distance (insertions, deletions, changes and swaps of two neighbours, the slips of
/// typing), doubled, where a change of case alone costs 1 (half an edit).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    // d[i][j]: a[..i] against b[..j].
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i * 2;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j * 2;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let change = if a[i - 1] == b[j - 1] {
                0
            } else if a[i - 1].eq_ignore_ascii_case(&b[j - 1]) {
                1
            } else {
                2
            };
            let mut best = (d[i - 1][j - 1] + change).min(d[i - 1][j] + 2).min(d[i][j - 1] + 2);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 2);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// serde's `unknown field `tols`, expected one of `tools`, ...` (or `expected `a` or `b``)
/// with "did you mean" for the nearest expected name, when one is near; any other message as
/// it is.
pub fn unknown_field(message: &str) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else { return message.to_string() };
    let Some((word, expected)) = rest.split_once('`') else { return message.to_string() };
    let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    // serde_json adds where: ` at line 1 column 9`, after the last name.
    let at = expected.rsplit('`').next().filter(|_| expected.contains('`')).unwrap_or("");
    match nearest(word, names.iter().copied()) {
        Some(meant) => format!("unknown key `{word}`: did you mean `{meant}`? (the keys here are {}){at}", list(&names)),
        None => format!("unknown key `{word}` (the keys here are {}){at}", list(&names)),
    }
}

fn list(names: &[&str]) -> String {
    if names.is_empty() {
        return "none".into();
    }
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slips_find_what_was_meant_and_strangers_find_nothing() {
        let keys = ["tools", "rename", "descriptions", "enabledTools", "required"];
        assert_eq!(nearest("tols", keys), Some("tools"));
        assert_eq!(nearest("Tools", keys), Some("tools"));
        assert_eq!(nearest("enabledtools", keys), Some("enabledTools"));
        assert_eq!(nearest("alwaysAllow", keys), None, "another tool's key");
        assert_eq!(nearest("edit_files", ["edit_file", "write_file", "read_file"]), Some("edit_file"));
        assert_eq!(nearest("x", ["y"]), Some("y"), "one edit is always allowed");
        assert_eq!(nearest("dney", ["allow", "deny"]), Some("deny"), "two letters swapped are one slip");
        assert_eq!(nearest("tools", ["tools"]), None, "the word itself is not a suggestion");
    }

    #[test]
    fn serde_unknown_fields_get_did_you_mean() {
        let m = unknown_field("unknown field `tols`, expected one of `upstream`, `tools`, `server` at line 1 column 9");
        assert!(m.starts_with("unknown key `tols`: did you mean `tools`?") && m.ends_with("`server`) at line 1 column 9"), "{m}");
        let m = unknown_field("unknown field `zzzzzz`, expected `allow` or `deny`");
        assert_eq!(m, "unknown key `zzzzzz` (the keys here are `allow`, `deny`)");
        assert_eq!(unknown_field("invalid type: a string"), "invalid type: a string");
    }
}
