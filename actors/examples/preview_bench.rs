//! Benchmark (prints figures, asserts nothing): the preview of a page being written (issue 51),
//! in-process. For a plain partial page and each hostile one (`tests/preview_pages`, about
//! 60 KB each, the most a generation keeps): the median time of one preview over a few runs
//! and the most memory allocated at once during one (this binary's allocator counts), each as a
//! ratio to the plain page's in the same run. The last line, `RESULT {json}`, is what
//! tests/bench/preview.py reads. With `--dump DIR`, writes the pages there instead (`0.html` the
//! plain one, then the hostile ones in order, and `pages.json` naming them), for the bench's
//! run through the service.
//!
//!     cargo run --profile dist -p mcp-gen-ui-actors --example preview_bench [-- --dump DIR]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use mcp_gen_ui_actors::generation::preview::inert_tree;
use serde_json::{json, Value};

#[path = "../tests/preview_pages/mod.rs"]
mod preview_pages;

struct Counting;
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn note(delta: isize) {
    let now = LIVE.fetch_add(delta, Ordering::Relaxed) + delta;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size() as isize);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-(layout.size() as isize));
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size as isize - layout.size() as isize);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Nodes in a preview: elements and text.
fn nodes(v: &Value) -> usize {
    v.as_array().map_or(0, |l| l.iter().map(|n| if n.is_array() { 1 + nodes(&n[2]) } else { 1 }).sum())
}

struct Figure {
    median: Duration,
    peak: usize,
    nodes: usize,
    runs: usize,
}

/// Runs one preview of `page` at least 3 and at most 50 times, until a second has passed.
fn measure(page: &str) -> Figure {
    let mut times = Vec::new();
    let mut peak = 0;
    let mut out = 0;
    let began = Instant::now();
    while times.len() < 3 || (times.len() < 50 && began.elapsed() < Duration::from_secs(1)) {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        let t = Instant::now();
        let tree = inert_tree(page);
        times.push(t.elapsed());
        out = nodes(&tree);
        drop(tree);
        peak = peak.max((PEAK.load(Ordering::Relaxed) - base).max(0) as usize);
    }
    times.sort();
    Figure { median: times[times.len() / 2], peak, nodes: out, runs: times.len() }
}

fn dump(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut names = vec![json!("plain")];
    std::fs::write(dir.join("0.html"), preview_pages::plain())?;
    for (i, (name, page)) in preview_pages::hostile().into_iter().enumerate() {
        std::fs::write(dir.join(format!("{}.html", i + 1)), page)?;
        names.push(json!(name));
    }
    std::fs::write(dir.join("pages.json"), Value::Array(names).to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(dir) = args.iter().position(|a| a == "--dump").and_then(|i| args.get(i + 1)) {
        if let Err(e) = dump(std::path::Path::new(dir)) {
            eprintln!("preview_bench: cannot write the pages to {dir}: {e}");
            std::process::exit(1);
        }
        return;
    }
    let plain = preview_pages::plain();
    let base = measure(&plain);
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mb = |b: usize| b as f64 / (1 << 20) as f64;
    println!(
        "{:<55} {:>8} {:>10} {:>8} {:>9} {:>8} {:>6} {:>5}",
        "page", "KB", "median ms", "x plain", "peak MB", "x plain", "nodes", "runs"
    );
    let row = |name: &str, page: &str, f: &Figure| {
        println!(
            "{:<55} {:>8.1} {:>10.3} {:>8.2} {:>9.3} {:>8.2} {:>6} {:>5}",
            name,
            page.len() as f64 / 1024.0,
            ms(f.median),
            f.median.as_secs_f64() / base.median.as_secs_f64(),
            mb(f.peak),
            f.peak as f64 / base.peak.max(1) as f64,
            f.nodes,
            f.runs
        )
    };
    row("plain (the baseline)", &plain, &base);
    let mut pages = Vec::new();
    for (name, page) in preview_pages::hostile() {
        let f = measure(&page);
        row(name, &page, &f);
        pages.push(json!({"name": name, "bytes": page.len(), "ms": ms(f.median), "peak_bytes": f.peak, "nodes": f.nodes}));
    }
    let plain = json!({"bytes": plain.len(), "ms": ms(base.median), "peak_bytes": base.peak, "nodes": base.nodes});
    println!("RESULT {}", json!({"plain": plain, "hostile": pages}));
}
