//! Benchmark (prints figures, asserts nothing): post-processing time for an ~80 KB generated
//! page, against a baseline of only parsing the same page with scraper, in one process.
//!
//!     cargo run --profile dist -p mcp-gen-ui-actors --example postprocess_bench

use std::time::Instant;

use mcp_gen_ui_actors::generation::postprocess;

fn page(target: usize) -> String {
    let mut rows = String::new();
    let mut i = 0;
    while rows.len() < target {
        rows.push_str(&format!(
            "<tr><td>row {i}</td><td class=\"n\">{}</td><td><span class=\"tag\">item-{i}</span></td></tr>\n",
            i * 37 % 1000
        ));
        i += 1;
    }
    format!(
        "Here is the page:\n```html\n<!doctype html><html><head><meta charset=\"utf-8\"><style>td{{padding:4px}}.n{{text-align:right}}</style></head><body><table id=\"t\">{rows}</table><pre id=\"out\"></pre>\n<script type=\"module\">\nimport {{ App }} from \"@modelcontextprotocol/ext-apps\";\nconst app = new App({{ name: \"bench\", version: \"1\" }});\napp.ontoolresult = (r) => {{ document.getElementById(\"out\").textContent = JSON.stringify(r); }};\nwindow.addEventListener(\"error\", () => {{}});\nawait app.connect();\n</script></body></html>\n```"
    )
}

fn time_it(n: u32, mut f: impl FnMut()) -> Vec<f64> {
    let mut v: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    v.sort_by(|a, b| a.partial_cmp(b).expect("no NaN"));
    v
}

fn main() {
    let raw = page(80 * 1024);
    let n = 200;
    let base = time_it(n, || {
        std::hint::black_box(scraper::Html::parse_document(&raw));
    });
    let full = time_it(n, || {
        std::hint::black_box(postprocess::process(&raw).expect("the bench page is valid"));
    });
    let p = |v: &[f64], q: f64| v[((v.len() as f64 - 1.0) * q) as usize];
    println!("post-processing a {} KB answer, {n} runs", raw.len() / 1024);
    println!("{:28} {:>8} {:>8}", "", "p50 ms", "p99 ms");
    println!("{:28} {:8.3} {:8.3}", "scraper parse only (base)", p(&base, 0.5), p(&base, 0.99));
    println!("{:28} {:8.3} {:8.3}", "full post-processing", p(&full, 0.5), p(&full, 0.99));
    println!("ratio full/parse: p50 {:.2}x", p(&full, 0.5) / p(&base, 0.5));
}
