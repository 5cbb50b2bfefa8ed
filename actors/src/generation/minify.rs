//! A script as hosts are sent it: without its comments and indentation, which are for the
//! people who read the source. Comments are found by the JavaScript parser (oxc), so nothing
//! that looks like one inside a string or a regular expression is touched.

use oxc_allocator::Allocator;
use oxc_parser::Parser;
use oxc_span::SourceType;

/// `js` without comments, indentation and blank lines; `js` itself if it does not parse as a
/// classic script. Lines are trimmed only where no line break can be inside a literal (no
/// template literal, no line continuation).
pub fn compact(js: &str) -> String {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, js, SourceType::cjs()).parse();
    if !ret.errors.is_empty() {
        return js.to_string();
    }
    let mut out = String::with_capacity(js.len());
    let mut at = 0;
    for c in ret.program.comments.iter() {
        let (start, end) = (c.span.start as usize, c.span.end as usize);
        out.push_str(&js[at..start]);
        // A space, not nothing: `a/* */b` stays two tokens; a line break where the comment
        // held one, so that semicolon insertion (`return /*\n*/ x`) sees what it saw.
        let breaks = js[start..end].contains(['\n', '\r', '\u{2028}', '\u{2029}']);
        out.push(if breaks { '\n' } else { ' ' });
        at = end;
    }
    out.push_str(&js[at..]);
    let multiline_literal = out.contains('`') || out.lines().any(|l| l.ends_with('\\'));
    if multiline_literal {
        return out;
    }
    let lines: Vec<&str> = out.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_indentation_go_strings_stay() {
        let js = "/* header\n * more */\nfunction f(a) {\n    // why\n    var s = \"/* not a comment */ // nor this\";\n    return a/* x */+1; // trailing\n}\n";
        assert_eq!(compact(js), "function f(a) {\nvar s = \"/* not a comment */ // nor this\";\nreturn a +1;\n}");
        assert_eq!(compact("var r = /\\/\\*+/g;\n  // c\n"), "var r = /\\/\\*+/g;");
    }

    #[test]
    fn template_literals_keep_their_lines_and_bad_scripts_are_left_alone() {
        let js = "var t = `a\n    b`; /* c */\n";
        assert_eq!(compact(js), "var t = `a\n    b`;  \n");
        assert_eq!(compact("function ( {"), "function ( {");
    }

    #[test]
    fn a_comment_that_held_a_line_break_still_ends_the_statement() {
        // `return` followed by a line break returns nothing; the compacted script must too.
        assert_eq!(compact("function f() { return /* a\n b */ 1; }"), "function f() { return\n1; }");
    }

    #[test]
    fn the_served_page_script_parses_and_keeps_every_function() {
        let js = crate::generation::templates::served_page_js();
        let allocator = Allocator::default();
        let ret = Parser::new(&allocator, js, SourceType::cjs()).parse();
        assert!(ret.errors.is_empty(), "{:?}", ret.errors.first());
        let source = crate::generation::templates::MINIMAL_JS;
        assert_eq!(js.matches("function ").count(), source.matches("function ").count() - comment_mentions(source));
    }

    /// "function " written in the source's comments (none reach the served script).
    fn comment_mentions(js: &str) -> usize {
        let allocator = Allocator::default();
        let ret = Parser::new(&allocator, js, SourceType::cjs()).parse();
        ret.program.comments.iter().map(|c| js[c.span.start as usize..c.span.end as usize].matches("function ").count()).sum()
    }
}
