//! Every inline script of a page parsed by a real JavaScript parser (oxc), with the goal its
//! tag says (`type="module"`: a module; none or a JavaScript MIME type: a classic script). A
//! script the browser could not parse leaves a blank page in the host, so it is a rejection,
//! with the parser's message and where, which the repair prompt hands back to the LLM.

use oxc_allocator::Allocator;
use oxc_parser::Parser;
use oxc_span::SourceType;
use scraper::{Html, Selector};

/// The first script that does not parse: which one (1-based), the line and column in it, and
/// the parser's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptError {
    pub script: usize,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "script {} does not parse at line {}, column {}: {}", self.script, self.line, self.column, self.message)
    }
}

/// Types a browser runs as JavaScript (anything else, `application/json`, `importmap`,
/// `text/template`, is data).
fn goal(kind: Option<&str>) -> Option<SourceType> {
    let t = kind.map(|t| t.trim().to_ascii_lowercase()).unwrap_or_default();
    match t.as_str() {
        "module" => Some(SourceType::mjs()),
        "" | "text/javascript" | "application/javascript" | "text/ecmascript" | "application/ecmascript" => Some(SourceType::cjs()),
        _ => None,
    }
}

/// Parses every inline script of `html`.
pub fn check(html: &str) -> Result<(), ScriptError> {
    let doc = Html::parse_document(html);
    let sel = Selector::parse("script:not([src])").expect("valid selector");
    for (i, s) in doc.select(&sel).enumerate() {
        let Some(source_type) = goal(s.value().attr("type")) else { continue };
        let text: String = s.text().collect();
        let allocator = Allocator::default();
        let ret = Parser::new(&allocator, &text, source_type).parse();
        if let Some(err) = ret.errors.first() {
            let offset = err.labels.as_ref().and_then(|l| l.first()).map(|l| l.offset()).unwrap_or(0).min(text.len());
            let mut cut = offset;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let before = &text[..cut];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            let message: String = err.to_string().chars().take(300).collect();
            return Err(ScriptError { script: i + 1, line, column, message });
        }
        // The parser accepts `import`/`export` in a script and leaves it to a later pass; a
        // browser refuses the whole classic script.
        if !source_type.is_module() && ret.module_record.has_module_syntax {
            let message = "import or export in a classic <script> (only a <script type=\"module\"> may use them)".to_string();
            return Err(ScriptError { script: i + 1, line: 1, column: 1, message });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_scripts_of_both_goals_pass() {
        let html = r#"<html><head><script>var a = 1; function f() { return a; }</script></head>
<body><script type="module">import { x } from "./x.js"; export const y = await Promise.resolve(x);</script>
<script type="application/json">{"not": "javascript"</script></body></html>"#;
        assert_eq!(check(html), Ok(()));
    }

    #[test]
    fn a_cut_off_function_is_found_with_its_place() {
        let html = "<html><body><script>ok();</script><script type=\"module\">\nconst app = 1;\nfunction show(r) {\n  render(r\n</script></body></html>";
        let e = check(html).unwrap_err();
        assert_eq!(e.script, 2);
        assert!(e.line >= 3, "{e}");
        assert!(!e.message.is_empty());
    }

    #[test]
    fn a_stray_brace_and_module_syntax_in_a_classic_script_fail() {
        assert!(check("<html><script>if (a) { b(); }}</script></html>").is_err());
        assert!(check("<html><script>import { App } from \"x\";</script></html>").is_err(), "import needs a module");
    }
}
