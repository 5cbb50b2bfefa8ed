//! Partial pages for the preview's bounds (issue 51): a plain page as a model writes it, and
//! hostile ones, each about as large as the text a generation keeps for its preview (64 KB).
//! Shared by `tests/preview_bounds.rs` and `examples/preview_bench.rs`.

/// About as many bytes as a generation keeps of a page being written.
pub const SIZE: usize = 60 * 1024;

/// The formatting elements a browser's parser reopens in every later paragraph.
const FORMATTING: &[&str] = &["a", "b", "big", "code", "em", "font", "i", "nobr", "s", "small", "strike", "strong", "tt", "u"];

fn fill(mut page: String, unit: impl Fn(usize) -> String) -> String {
    let mut i = 0;
    while page.len() < SIZE {
        page.push_str(&unit(i));
        i += 1;
    }
    page
}

/// A page's visible markup first, as the prompt asks: headings, a form, a table, lists.
pub fn plain() -> String {
    let head = r#"<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Forecast</title></head><body>
<header><h1>Forecast for Oslo</h1><p class="lead">Five days, hour by hour.</p></header>
<form id="f"><label for="city">City</label> <input id="city" name="city" required> <button id="go" type="submit">Look up</button></form>
"#;
    fill(head.to_string(), |i| {
        format!(
            "<section class=\"day\"><h2>Day {i}</h2><table><thead><tr><th>Hour</th><th>Temperature</th><th>Wind</th></tr></thead>\
             <tbody><tr><td>{i}:00</td><td>{} &deg;C</td><td>{} m/s</td></tr><tr><td>{i}:30</td><td>{} &deg;C</td><td>{} m/s</td></tr></tbody></table>\
             <ul><li><strong>Rain</strong> {} mm</li><li><em>Gusts</em> up to {} m/s</li></ul><p>Notes for day {i}: mild, <b>dry</b>.</p></section>\n",
            i % 30,
            i % 12,
            i % 29,
            i % 11,
            i % 7,
            i % 20
        )
    })
}

/// The partial pages that made a browser's tree builder (html5ever's) slow or large, or that
/// stress a tokenizer, by name.
pub fn hostile() -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    // Issue 51's page: 2,000 formatting elements left open in a paragraph (each different, so
    // none is dropped as a fourth copy), then paragraphs to the end.
    let mut open = String::from("<body><p>");
    for i in 0..2_000 {
        open.push_str(&format!("<{} class=c{i}>", FORMATTING[i % FORMATTING.len()]));
    }
    out.push(("2,000 formatting elements left open, then paragraphs", fill(open, |_| "<p>x".to_string())));
    // The adoption agency run for every misnested end tag.
    out.push(("misnested formatting and blocks", fill(String::new(), |i| format!("<a class=a{i}><div><b>x</a>y</b></div>"))));
    out.push(("blocks nested 12,000 deep", fill(String::new(), |_| "<div>".to_string())));
    out.push(("tables nested in cells", fill(String::new(), |_| "<table><tr><td>x".to_string())));
    out.push(("list items never closed", fill("<ul>".to_string(), |_| "<li>x".to_string())));
    out.push(("one tag with thousands of attributes", fill("<p".to_string(), |i| format!(" a{i}=1")) + ">"));
    out.push(("an svg left open, thousands of its elements", fill("<svg>".to_string(), |i| format!("<g id=g{i}><path d=M0/>"))));
    out.push(("a script never closed", fill("<h1>x</h1><script>".to_string(), |i| format!("if (a<{i}) b();"))));
    out.push(("text of character references", fill("<p>".to_string(), |_| "&amp;&#x41;&lt;".to_string())));
    // Larger than anything a generation keeps: read up to the preview's own limit.
    out.push(("a page of 1 MB", fill(String::new(), |_| "<p>x</p>".to_string()).repeat(17)));
    out
}
