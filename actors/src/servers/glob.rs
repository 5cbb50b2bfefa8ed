//! Pure: globs over names (`*` any run of characters, `?` one character, everything else
//! itself), compiled once where they are configured and matched in time linear in the name:
//! the common shapes (`exact`, `prefix*`, `*suffix`, `*`) directly, the rest as a regular
//! expression (the `regex` crate never backtracks). A naive recursive matcher takes time
//! exponential in the number of `*`s on a hostile pattern; this one cannot.

use std::fmt;

/// The longest pattern accepted (configuration is checked against it, naming the field).
pub const MAX_PATTERN: usize = 256;
/// Names longer than this never match (no tool name the service keeps is longer).
pub const MAX_NAME: usize = 1024;

#[derive(Clone)]
pub struct Glob {
    text: String,
    shape: Shape,
}

#[derive(Clone)]
enum Shape {
    Any,
    Exact(String),
    Prefix(String),
    Suffix(String),
    Other(regex::Regex),
}

/// Why a pattern cannot be a glob.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    #[error("is empty")]
    Empty,
    #[error("is {0} characters long; a glob may have at most {MAX_PATTERN}")]
    TooLong(usize),
}

impl Glob {
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        if pattern.is_empty() {
            return Err(GlobError::Empty);
        }
        let len = pattern.chars().count();
        if len > MAX_PATTERN {
            return Err(GlobError::TooLong(len));
        }
        let wild = |c: char| c == '*' || c == '?';
        let inner = pattern.trim_matches('*');
        let shape = if inner.is_empty() {
            Shape::Any
        } else if !pattern.contains(wild) {
            Shape::Exact(pattern.to_string())
        } else if !inner.contains(wild) && pattern.starts_with(inner) {
            Shape::Prefix(inner.to_string())
        } else if !inner.contains(wild) && pattern.ends_with(inner) {
            Shape::Suffix(inner.to_string())
        } else {
            Shape::Other(compile(pattern))
        };
        Ok(Glob { text: pattern.to_string(), shape })
    }

    pub fn matches(&self, name: &str) -> bool {
        if name.len() > MAX_NAME {
            return false;
        }
        match &self.shape {
            Shape::Any => true,
            Shape::Exact(s) => name == s,
            Shape::Prefix(p) => name.starts_with(p.as_str()),
            Shape::Suffix(s) => name.ends_with(s.as_str()),
            Shape::Other(re) => re.is_match(name),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// `*` and `?` as `.*` and `.` (any character, newlines too), everything else literal, anchored.
fn compile(pattern: &str) -> regex::Regex {
    let mut re = String::with_capacity(pattern.len() * 2 + 8);
    re.push_str("(?s)^");
    let mut literal = String::new();
    for c in pattern.chars() {
        if c == '*' || c == '?' {
            re.push_str(&regex::escape(&std::mem::take(&mut literal)));
            re.push_str(if c == '*' { ".*" } else { "." });
        } else {
            literal.push(c);
        }
    }
    re.push_str(&regex::escape(&literal));
    re.push('$');
    // Escaped literals and two wildcards over at most 256 characters always compile.
    regex::Regex::new(&re).expect("a glob compiles to a valid regular expression")
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.text)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl PartialEq for Glob {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

/// Whether any of `globs` matches `name`.
pub fn any(globs: &[Glob], name: &str) -> bool {
    globs.iter().any(|g| g.matches(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(p: &str, n: &str) -> bool {
        Glob::new(p).unwrap().matches(n)
    }

    #[test]
    fn stars_and_question_marks() {
        assert!(m("weather__*", "weather__get_forecast"));
        assert!(!m("weather__*", "memory__read_graph"));
        assert!(m("*_forecast", "get_forecast") && !m("*_forecast", "forecast"));
        assert!(m("get_?", "get_a") && !m("get_?", "get_ab"));
        assert!(m("*", "") && m("*", "anything") && m("**", "x"));
        assert!(m("a*b*c", "aXXbYYc") && !m("a*b*c", "aXXcYYb"));
        assert!(m("exact", "exact") && !m("exact", "exactly"));
        assert!(m("*__read_*", "memory__read_graph"));
    }

    #[test]
    fn everything_but_stars_and_question_marks_is_itself() {
        for special in ["a.b", "a+b", "(a)", "[a]", "a|b", "a\\b", "a^b$", "é{2}"] {
            assert!(m(special, special), "{special}");
            assert!(m(&format!("*{special}*"), &format!("x{special}y")), "{special}");
        }
        assert!(!m("a.b", "axb"));
        assert!(m("line*", "line\nbreak"), "a star crosses anything");
    }

    #[test]
    fn bad_patterns_say_why() {
        assert_eq!(Glob::new("").unwrap_err(), GlobError::Empty);
        assert_eq!(Glob::new(&"a".repeat(257)).unwrap_err(), GlobError::TooLong(257));
        assert!(!m("*", &"x".repeat(MAX_NAME + 1)), "over-long names never match");
    }

    #[test]
    fn a_hostile_pattern_against_a_long_name_returns_at_once() {
        // A recursive matcher explores every way to split the name between the stars: with 20
        // stars and a name of 1,024 characters that never matches, that is astronomical.
        let pattern = format!("{}b", "a*".repeat(20));
        let name = "a".repeat(MAX_NAME);
        let g = Glob::new(&pattern).unwrap();
        let started = std::time::Instant::now();
        for _ in 0..100 {
            assert!(!g.matches(&name));
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(5), "100 matches took {:?}", started.elapsed());
    }
}
