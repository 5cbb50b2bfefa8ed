// The parts as the build assembles them (PAGE_PARTS in actors/build.rs): every part listed once,
// one script that compiles, no part redeclaring another's name, no HTML built from strings. With
// SERVED_PAGE (served.mjs), the page's scripts as served: the sources' script minified.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import vm from "node:vm";
import { PAGE_DIR } from "./load.mjs";
import { SERVED_PAGE, loadServed, pageParts as order, pageSource, runtimeSource, servedScripts } from "./served.mjs";

const read = (name) => readFileSync(new URL(name, PAGE_DIR), "utf8");

test("PAGE_PARTS lists every part once, open.js first and main.js last", () => {
  const parts = order();
  const files = readdirSync(PAGE_DIR).filter((f) => f.endsWith(".js"));
  assert.deepEqual([...parts].sort(), files.sort());
  assert.equal(parts[0], "open.js");
  assert.equal(parts[parts.length - 1], "main.js");
});

test("the assembled script compiles and never builds HTML from strings", () => {
  const script = order().map(read).join("\n");
  assert.doesNotThrow(() => new vm.Script(script, { filename: "page.js" }));
  assert.doesNotMatch(script, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  assert.doesNotMatch(script, /<\/script|<!--/i, "nothing may end the inline <script>");
});

test("the parts between open.js and main.js only declare, each name once", () => {
  // What open.js declares (its var lines: `var a = ..., b = ...`).
  const seen = new Map();
  for (const line of read("open.js").split("\n").filter((l) => l.startsWith("  var "))) {
    for (const m of line.matchAll(/(?:^ {2}var |, )([\w$]+) = /g)) seen.set(m[1], "open.js");
  }
  assert.ok(seen.has("ROOT") && seen.has("uid"));
  // Run alone, a part that only declares leaves just its names in the context (host.js also
  // makes the App: stand-ins for it).
  const stand = { $: () => ({}), meta: {}, McpGenUiRuntime: { App: function App() {} } };
  for (const part of order().slice(1, -1)) {
    const context = vm.createContext({ ...stand });
    vm.runInContext('"use strict";\n' + read(part), context, { filename: part });
    for (const name of Object.keys(context).filter((k) => !(k in stand))) {
      assert.ok(!seen.has(name), `${part} declares ${name}, already declared by ${seen.get(name)}`);
      seen.set(name, part);
    }
  }
  assert.ok(seen.get("check") === "validate.js" && seen.get("app") === "host.js");
});

test("the served page's scripts: the sources' minified, none ends its <script> or builds HTML from strings", { skip: !SERVED_PAGE && "SERVED_PAGE not set" }, () => {
  const { runtime, page } = servedScripts();
  for (const [name, script, source] of [["page script", page, pageSource()], ["runtime", runtime, runtimeSource()]]) {
    assert.doesNotThrow(() => new vm.Script(script, { filename: name }));
    assert.doesNotMatch(script, /<\/script|<!--/i, name);
    assert.match(script, /^[\x00-\x7f]*$/, `${name}: ASCII (minify.rs escapes the rest)`);
    assert.ok(script.length * 100 <= source.length * 85, `${name}: ${script.length} of ${source.length} bytes, not minified`);
  }
  assert.doesNotMatch(page, /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
  // Every function the parts declare at their top level, at its place in the served script
  // (loadServed checks each against the served text).
  const declared = new Set([...pageSource().matchAll(/\n  function ([\w$]+)\(/g)].map((m) => m[1]));
  const served = loadServed({});
  for (const name of declared) assert.equal(typeof served[name], "function", name);
});
