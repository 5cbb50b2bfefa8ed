// The parts as the build assembles them (PAGE_PARTS in actors/build.rs): every part listed once,
// one script that compiles, no part redeclaring another's name, no HTML built from strings.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import vm from "node:vm";
import { PAGE_DIR } from "./load.mjs";

const BUILD_RS = new URL("../../actors/build.rs", PAGE_DIR);
const read = (name) => readFileSync(new URL(name, PAGE_DIR), "utf8");

function order() {
  const rs = readFileSync(BUILD_RS, "utf8");
  const start = rs.indexOf("const PAGE_PARTS: [&str; ");
  assert.ok(start >= 0, "PAGE_PARTS is an array in actors/build.rs");
  const body = rs.slice(start, rs.indexOf("];", start));
  return [...body.matchAll(/"([\w.]+\.js)"/g)].map((m) => m[1]);
}

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
