//! Pure: what a rule's condition that does not compile probably meant, for the slips people
//! coming from SQL, Python or a shell make in CEL (`=` for `==`, `and` / `or` / `not` for
//! `&&` / `||` / `!`, `True` for `true`, quotes that CEL does not take). The parser's own
//! message (`token recognition error at: '= '`) says where, not what to write instead.

/// What `condition` probably meant, as the corrected condition and the reasons, when a known
/// slip is in it (outside its string literals); None when none is.
pub fn hint(condition: &str) -> Option<String> {
    if let Some(q) = condition.chars().find(|c| matches!(c, '‘' | '’' | '“' | '”' | '`')) {
        return Some(format!(
            "CEL strings are quoted with ' or \" (the condition has {q}, which an editor or a chat may have put in): did you mean `{}`?",
            condition.replace(['‘', '’', '`'], "'").replace(['“', '”'], "\"")
        ));
    }
    let mut out = String::with_capacity(condition.len() + 8);
    let mut why: Vec<&str> = Vec::new();
    let mut note = |w: &'static str| {
        if !why.contains(&w) {
            why.push(w);
        }
    };
    let chars: Vec<char> = condition.chars().collect();
    let mut i = 0;
    let mut quote: Option<char> = None;
    while i < chars.len() {
        let c = chars[i];
        if let Some(q) = quote {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == '\'' || c == '"' {
            quote = Some(c);
            out.push(c);
            i += 1;
            continue;
        }
        if c == '=' {
            let before = i.checked_sub(1).map(|j| chars[j]);
            let run = chars[i..].iter().take_while(|&&x| x == '=').count();
            if matches!(before, Some('!' | '<' | '>' | '=')) || (run == 2) {
                out.extend(&chars[i..i + run]);
            } else {
                // `=` and `===`: CEL's equality is `==`.
                out.push_str("==");
                note("CEL compares with == (a single = is not an operator)");
            }
            i += run;
            continue;
        }
        if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            // A member (`args.and`) is a name, not a keyword.
            let member = start > 0 && chars[start - 1] == '.';
            let replacement = match word.as_str() {
                _ if member => None,
                "and" | "AND" => Some(("&&", "CEL writes && for and")),
                "or" | "OR" => Some(("||", "CEL writes || for or")),
                "not" | "NOT" => Some(("!", "CEL writes ! for not")),
                "True" | "TRUE" => Some(("true", "CEL's booleans are true and false")),
                "False" | "FALSE" => Some(("false", "CEL's booleans are true and false")),
                "None" | "nil" | "NULL" => Some(("null", "CEL writes null")),
                _ => None,
            };
            match replacement {
                Some((with, w)) => {
                    out.push_str(with);
                    note(w);
                }
                None => out.push_str(&word),
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    if quote.is_some() && why.is_empty() {
        return Some(format!(
            "a string is not closed: CEL strings start and end with the same quote (' or \"); inside one, write \\{} for a quote",
            quote.unwrap_or('\'')
        ));
    }
    if why.is_empty() {
        return None;
    }
    // `!` binds tighter than `not` does in SQL and Python: say so where it was used on a term.
    Some(format!("did you mean `{}`? ({})", out.replace("! ", "!"), why.join("; ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_slips_get_what_was_meant() {
        let h = hint("principal.name = 'bob'").unwrap();
        assert!(h.contains("`principal.name == 'bob'`") && h.contains("=="), "{h}");
        let h = hint("principal.name == 'bob' and args.city = \"a = b\"").unwrap();
        assert!(h.contains("`principal.name == 'bob' && args.city == \"a = b\"`"), "strings are kept as they are: {h}");
        assert!(h.contains("&&") && h.contains("=="), "{h}");
        let h = hint("not principal.admin or tool === 'x'").unwrap();
        assert!(h.contains("`!principal.admin || tool == 'x'`"), "{h}");
        assert!(hint("principal.name == ‘bob’").unwrap().contains("`principal.name == 'bob'`"));
        assert!(hint("principal.name == 'bob").unwrap().contains("not closed"));
        assert!(hint("has(args.x) == True").unwrap().contains("`has(args.x) == true`"));
    }

    #[test]
    fn correct_operators_and_member_names_are_left_alone() {
        assert_eq!(hint("args.size <= 3 && args.size >= 1 || args.kind != 'a'"), None);
        assert_eq!(hint("args.and == 1"), None, "a member named and");
        assert_eq!(hint("args.city == "), None, "an incomplete condition has no known slip");
        assert_eq!(hint("'it\\'s = fine' == name"), None);
    }
}
