//! Build-time work on the pages' scripts: assembles the template page's script from its parts
//! (`templates/page/`, which share one function: `open.js` opens it, `main.js` closes it, so
//! this order is the script's; `templates/page/assembly.test.mjs` reads it from here) and
//! minifies the scripts pages carry (`build/minify.rs`): the runtime, the page script,
//! `provisional.js`, `call_tool.js`. Each lands in OUT_DIR twice, as its source (`NAME`, for
//! the tests) and minified (`min.NAME`, what pages carry). At build time, so that the binary
//! carries neither the minifier nor the work (minifying at start cost 1.7 MB of idle RSS). A
//! script that does not parse, or would end its `<script>` element, stops the build, naming it.

use std::path::{Path, PathBuf};

#[path = "build/minify.rs"]
mod minify;

/// The template page's parts, in the script's order.
const PAGE_PARTS: [&str; 11] = [
    "open.js",
    "values.js",
    "dom.js",
    "schema_model.js",
    "validate.js",
    "form_fields.js",
    "form_groups.js",
    "form_args.js",
    "result.js",
    "host.js",
    "main.js",
];

fn main() {
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("../templates");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let read = |rel: &str| {
        println!("cargo:rerun-if-changed=../templates/{rel}");
        std::fs::read_to_string(templates.join(rel)).unwrap_or_else(|e| panic!("templates/{rel}: {e}"))
    };
    let page = PAGE_PARTS.iter().map(|p| read(&format!("page/{p}"))).collect::<Vec<_>>().join("\n");
    // The runtime: MCP Apps over postMessage, then the same App API over `window.openai`.
    let runtime = format!("{}\n{}", read("runtime.js"), read("apps_sdk.js"));
    for (name, source) in [
        ("page.js", page),
        ("runtime.js", runtime),
        ("provisional.js", read("provisional.js")),
        ("call_tool.js", read("call_tool.js")),
        ("approvals.js", read("approvals.js")),
    ] {
        let min = minify::minify(&source).unwrap_or_else(|e| panic!("the served {name} (from templates/) does not parse: {e}"));
        // Inlined in a <script> element: nothing in it may end the element or open a comment.
        let lower = min.to_ascii_lowercase();
        assert!(!lower.contains("</script") && !lower.contains("<!--"), "the served {name} would break out of its <script> element");
        std::fs::write(out.join(name), &source).expect("OUT_DIR is writable");
        std::fs::write(out.join(format!("min.{name}")), min).expect("OUT_DIR is writable");
    }
}
