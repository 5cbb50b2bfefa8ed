//! A script as hosts are sent it: minified once, when first served. The sources carry comments,
//! indentation and long names for the people who read them; every page carries the View
//! runtime, and every template page its script too, so their size is what each host loads,
//! what each cache holds and what each `ui://` read writes. oxc parses the script, renames the
//! names local to its functions (never a global, never a property) and prints it without
//! whitespace or comments; what it prints escapes `</script`, so it stays inside its element.

use oxc_allocator::Allocator;
use oxc_codegen::{Codegen, CodegenOptions};
use oxc_mangler::Mangler;
use oxc_parser::Parser;
use oxc_span::SourceType;

/// `js` minified; `js` itself if it does not parse as a classic script (a page is never left
/// without its script; the tests below hold every shipped script to parsing).
pub fn minify(js: &str) -> String {
    let allocator = Allocator::default();
    let ret = Parser::new(&allocator, js, SourceType::cjs()).parse();
    if !ret.errors.is_empty() || ret.panicked {
        return js.to_string();
    }
    let program = ret.program;
    // Top-level names of a classic script are globals other scripts see: kept (the default).
    let mangled = Mangler::new().build(&program);
    Codegen::new()
        .with_options(CodegenOptions::minify())
        .with_scoping(Some(mangled.scoping))
        .with_private_member_mappings(Some(mangled.class_private_mappings))
        .build(&program)
        .code
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
        let out = minify(js);
        assert!(parses(&out), "{out}");
        assert!(out.contains("keepMe") && out.contains("function visible(") && out.contains(".someProperty"), "{out}");
        // Quoted as the printer likes best (it may pick backquotes), with its text unchanged.
        assert!(out.contains("/* not a comment */ // nor this"), "{out}");
        assert!(!out.contains("longParameter") && !out.contains("localValue") && !out.contains("header") && !out.contains("why"), "{out}");
    }

    #[test]
    fn a_return_before_a_line_break_still_returns_nothing() {
        // `return` then a line break returns undefined; the printed script must say the same.
        let out = minify("function f() { return /* a\n b */\n 1; }");
        assert!(out.contains("return;") || out.contains("return}"), "{out}");
    }

    #[test]
    fn script_end_tags_in_strings_are_escaped_and_bad_scripts_are_left_alone() {
        let out = minify("var s = \"</script><script>alert(1)\";");
        assert!(!out.to_ascii_lowercase().contains("</script"), "{out}");
        assert_eq!(minify("function ( {"), "function ( {");
    }

    /// Every script pages carry parses, and minified is at most 70% of its source: a script
    /// that stopped parsing would be served whole, and this would say so.
    #[test]
    fn every_shipped_script_minifies() {
        use crate::generation::templates as t;
        for (name, source, served) in [
            ("runtime.js + apps_sdk.js", t::RUNTIME_JS, t::served_runtime_js()),
            ("templates/page/*.js", t::MINIMAL_JS, t::served_page_js()),
            ("provisional.js", t::PROVISIONAL_JS, t::served_provisional_js()),
            ("call_tool.js", t::CALL_TOOL_JS, t::served_call_tool_js()),
        ] {
            assert!(parses(served), "{name}: the served script does not parse");
            assert!(served.len() * 10 <= source.len() * 7, "{name}: {} of {} bytes", served.len(), source.len());
            // Names other scripts and the page use are globals and properties: kept.
            for kept in ["McpGenUiRuntime", "__mcpGenUiCarry", "callServerTool", "ui/initialize"] {
                assert_eq!(source.contains(kept), served.contains(kept), "{name}: {kept}");
            }
        }
    }
}
