//! A script as hosts are sent it. The sources carry comments, indentation and long names for
//! the people who read them; every page carries the View runtime, and every template page its
//! script too, so their size is what each host loads, what each cache holds and what each
//! `ui://` read writes. oxc parses the script, shortens the names local to its functions (never
//! a global, never a property) and prints it without whitespace or comments; what it prints
//! escapes `</script`. Characters beyond ASCII are written as `\u` escapes, as the sources
//! write them, so a script means the same whatever charset its page declares (the runtime goes
//! in ahead of a written page's own `<meta charset>`). Used by build.rs (and by the crate's
//! tests, which include this file).

use oxc_allocator::Allocator;
use oxc_codegen::{Codegen, CodegenOptions};
use oxc_mangler::Mangler;
use oxc_parser::Parser;
use oxc_span::SourceType;

/// `js` minified, or the first reason it does not parse as a classic script (for the person
/// who broke it: the build stops there).
pub fn minify(js: &str) -> Result<String, String> {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, js, SourceType::cjs()).parse();
    if let Some(e) = ret.errors.first() {
        return Err(format!("{e:?}"));
    }
    if ret.panicked {
        return Err("the parser gave up".to_string());
    }
    let program = ret.program;
    // Top-level names of a classic script are globals other scripts see: kept (the default).
    let mangled = Mangler::new().build(&program);
    let code = Codegen::new()
        .with_options(CodegenOptions::minify())
        .with_scoping(Some(mangled.scoping))
        .with_private_member_mappings(Some(mangled.class_private_mappings))
        .build(&program)
        .code;
    Ok(ascii(&code))
}

/// `js` with every character beyond ASCII as `\u` escapes of its UTF-16 units: the same value
/// in a string, a template or a regular expression (the only places the printer leaves one;
/// the sources' names are ASCII).
fn ascii(js: &str) -> String {
    let mut out = String::with_capacity(js.len());
    for c in js.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            for unit in c.encode_utf16(&mut [0; 2]) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parses(js: &str) -> bool {
        let allocator = Allocator::default();
        let ret = Parser::new(&allocator, js, SourceType::cjs()).parse();
        ret.errors.is_empty() && !ret.panicked
    }

    #[test]
    fn local_names_shrink_globals_properties_and_strings_stay() {
        let js = "/* header */\nvar keepMe = 1;\nfunction visible(longParameter) {\n    // why\n    var localValue = longParameter.someProperty + \"/* not a comment */ // nor this\";\n    return localValue;\n}\n";
        let out = minify(js).unwrap();
        assert!(parses(&out), "{out}");
        assert!(out.contains("keepMe") && out.contains("function visible(") && out.contains(".someProperty"), "{out}");
        // Quoted as the printer likes best (it may pick backquotes), with its text unchanged.
        assert!(out.contains("/* not a comment */ // nor this"), "{out}");
        assert!(!out.contains("longParameter") && !out.contains("localValue") && !out.contains("header") && !out.contains("why"), "{out}");
    }

    #[test]
    fn characters_beyond_ascii_are_escaped_and_mean_the_same() {
        let out = minify("var a = \"\\u2191 \u{b7} \u{1f600}\"; var r = /\u{e9}+/;").unwrap();
        assert!(out.is_ascii(), "{out}");
        assert!(out.contains(r"\u2191 \u00b7 \ud83d\ude00") && out.contains(r"/\u00e9+/"), "{out}");
        assert!(parses(&out));
    }

    #[test]
    fn a_return_before_a_line_break_still_returns_nothing() {
        // `return` then a line break returns undefined; the printed script must say the same.
        let out = minify("function f() { return /* a\n b */\n 1; }").unwrap();
        assert!(out.contains("return;") || out.contains("return}"), "{out}");
    }

    #[test]
    fn script_end_tags_in_strings_are_escaped_and_bad_scripts_are_refused() {
        let out = minify("var s = \"</script><script>alert(1)\";").unwrap();
        assert!(!out.to_ascii_lowercase().contains("</script"), "{out}");
        assert!(minify("function ( {").is_err());
    }

    /// Every script pages carry is the build's minified one, parses, is ASCII and at most 85% of
    /// its source; names other scripts and pages use are globals or properties, and stay.
    #[test]
    fn every_served_script_is_its_source_minified() {
        use crate::generation::templates::{sources, CALL_TOOL_JS, PAGE_JS, PROVISIONAL_JS, RUNTIME_JS};
        for (name, source, served) in [
            ("runtime.js + apps_sdk.js", sources::RUNTIME, RUNTIME_JS),
            ("templates/page/*.js", sources::PAGE, PAGE_JS),
            ("provisional.js", sources::PROVISIONAL, PROVISIONAL_JS),
            ("call_tool.js", sources::CALL_TOOL, CALL_TOOL_JS),
        ] {
            assert_eq!(minify(source).as_deref(), Ok(served), "{name}: not what build.rs made of its source");
            assert!(parses(served), "{name}: the served script does not parse");
            assert!(served.is_ascii(), "{name}");
            assert!(served.len() * 100 <= source.len() * 85, "{name}: {} of {} bytes", served.len(), source.len());
            for kept in ["McpGenUiRuntime", "__mcpGenUiCarry", "callServerTool", "ui/initialize"] {
                assert_eq!(source.contains(kept), served.contains(kept), "{name}: {kept}");
            }
        }
    }
}
