// For the tests beside the parts: the same tests against the scripts exactly as a host is served
// them. With SERVED_PAGE=path/to/page.html (a template page as the proxy serves it, saved by
// tests/served_page.py), `variants` gives each test file the page's functions twice: from the
// sources (load.mjs) and from that page's minified script; `runtimes` gives the View runtime
// both ways. Without SERVED_PAGE, the sources alone.
//
// The served page script is one function (open.js opens it, main.js closes it) whose local
// names the build shortened (actors/build/minify.rs: never a global, never a property), so
// nothing outside it can call `check` or `norm`. It is run as served, in a context of its own
// after the page's runtime script, with two statements put at its start: a door into its scope
// (a function that runs a direct `eval` there, reaching its bindings by their shortened names)
// and buildForm swapped for a throw, so that the run stops where main.js begins (its first
// call) and needs no DOM: a stand-in `document` answers getElementById with the served
// #tool-meta and empty objects. Which shortened name is which source function is read from the
// order of `function NAME(` in the sources (assembled in PAGE_PARTS order) and in the served
// script: the minifier renames, it never reorders or drops a function; each pair's parameter
// count must agree, and each function handed out must be, character for character, the served
// text at its declaration. The page's variables the source tests stand in for (ROOT, app) are
// found by what they hold.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import vm from "node:vm";
import { PAGE_DIR, load } from "./load.mjs";

export const SERVED_PAGE = process.env.SERVED_PAGE ? resolve(process.env.SERVED_PAGE) : null;

const read = (url) => readFileSync(url, "utf8");

/** The template page's parts in the script's order: PAGE_PARTS in actors/build.rs. */
export function pageParts() {
  const rs = read(new URL("../../actors/build.rs", PAGE_DIR));
  const start = rs.indexOf("const PAGE_PARTS: [&str; ");
  assert.ok(start >= 0, "PAGE_PARTS is an array in actors/build.rs");
  const body = rs.slice(start, rs.indexOf("];", start));
  return [...body.matchAll(/"([\w.]+\.js)"/g)].map((m) => m[1]);
}

/** The page script as build.rs assembles it (before it minifies it). */
export function pageSource() {
  return pageParts().map((p) => read(new URL(p, PAGE_DIR))).join("\n");
}

/** The View runtime as build.rs assembles it: runtime.js, then apps_sdk.js. */
export function runtimeSource() {
  return read(new URL("../runtime.js", PAGE_DIR)) + "\n" + read(new URL("../apps_sdk.js", PAGE_DIR));
}

let served = null;
/** The served page's scripts: {runtime, page, meta (the #tool-meta text), html}. */
export function servedScripts() {
  assert.ok(SERVED_PAGE, "SERVED_PAGE names a served page");
  if (served) return served;
  const html = read(SERVED_PAGE);
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi)].map((m) => ({ attrs: m[1], text: m[2] }));
  const classic = scripts.filter((s) => !/\btype\s*=/i.test(s.attrs) && !/\bsrc\s*=/i.test(s.attrs));
  const one = (what, test) => {
    const found = classic.filter((s) => test(s.text));
    assert.equal(found.length, 1, `${SERVED_PAGE}: one inline script ${what}, found ${found.length}`);
    return found[0].text;
  };
  const meta = scripts.find((s) => /\bid\s*=\s*"tool-meta"/.test(s.attrs));
  assert.ok(meta, `${SERVED_PAGE}: no #tool-meta (not a template page?)`);
  served = {
    html,
    runtime: one("that defines McpGenUiRuntime (the View runtime)", (t) => t.includes("globalThis.McpGenUiRuntime=")),
    page: one("that makes the template page's App (the page script)", (t) => t.includes("new McpGenUiRuntime.App(")),
    meta: meta.text,
  };
  // The runtime comes first, as the page script needs it.
  assert.ok(html.indexOf(served.runtime) < html.indexOf(served.page), "the runtime precedes the page script");
  return served;
}

const DECLARATION = /\bfunction\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)/g;
const arity = (params) => (params.trim() ? params.split(",").length : 0);
const OPENING = '(function(){"use strict";';
/** The page's variables (open.js, host.js) that the source tests give as globals. */
const LOCALS = ["meta", "ROOT", "app"];

/**
 * The served page script's functions and the variables the tests set, under their source names:
 * an object whose properties read (and write) the bindings of the served script's scope.
 * `globals` as for load(): those that are the page's own variables (ROOT, app) are set in its
 * scope; the others are globals of its context (atob, TextDecoder), as in a browser.
 */
export function loadServed(globals = {}) {
  const { runtime, page: script, meta } = servedScripts();
  assert.ok(script.startsWith(OPENING), `the served page script opens as open.js does: ${script.slice(0, 60)}`);
  assert.ok(!script.includes("__mgu"), "the served script does not use the hook's names");

  // Source and served declarations, pair by pair.
  const source = pageSource();
  const src = [...source.matchAll(DECLARATION)];
  const min = [...script.matchAll(DECLARATION)];
  assert.equal(min.length, src.length,
    `the served page script declares ${min.length} named functions, the sources ${src.length}: not the sources minified (a stale binary?)`);
  const names = new Map(); // source name -> its served declaration; null when declared twice
  src.forEach((s, i) => {
    assert.equal(arity(min[i][2]), arity(s[2]),
      `function ${s[1]} (#${i}) takes ${arity(s[2])} parameters in the sources, ${min[i][1]} in the served script ${arity(min[i][2])}`);
    // Only those declared at the parts' top level (two spaces in: inside open.js's function).
    if (/(^|\n)  $/.test(source.slice(Math.max(0, s.index - 3), s.index))) names.set(s[1], names.has(s[1]) ? null : min[i]);
  });
  const buildForm = names.get("buildForm");
  assert.ok(buildForm, "buildForm is declared once, at the top level");
  assert.match(read(new URL("main.js", PAGE_DIR)), /^\s*buildForm\(\);/m, "main.js starts with buildForm()");

  // The scope's door, then buildForm swapped for a stop: main.js's first call ends the run.
  const b = buildForm[1];
  const hook = "globalThis.__mguScope=function(__mguSrc,__mguVal){return eval(__mguSrc)};" +
    `globalThis.__mguBuildForm=${b};${b}=function(){throw globalThis.__mguStop};`;
  const code = OPENING + hook + script.slice(OPENING.length);
  const at = (decl) => decl.index + hook.length; // where a declaration is in `code`

  // The page as served: its runtime, then its script, in one context.
  const STOP = new Error("stopped where main.js begins");
  const document = {
    getElementById: (id) => (id === "tool-meta" ? { id, textContent: meta } : { id }),
    documentElement: { setAttribute() {}, removeAttribute() {}, style: { setProperty() {}, removeProperty() {} } },
  };
  const own = {}, local = {};
  for (const [k, v] of Object.entries(globals)) (LOCALS.includes(k) ? local : own)[k] = v;
  const context = vm.createContext({ document, console, setTimeout, clearTimeout, ...own, __mguStop: STOP });
  context.window = context;
  vm.runInContext(runtime, context, { filename: `${SERVED_PAGE} (runtime)` });
  let stopped = null;
  try {
    vm.runInContext(code, context, { filename: `${SERVED_PAGE} (page script)` });
  } catch (e) {
    stopped = e;
  }
  assert.equal(stopped, STOP, `the served page script runs until main.js: ${stopped && stopped.stack}`);
  const peek = (text, value) => context.__mguScope(text, value);
  peek(`${b}=__mguVal`, context.__mguBuildForm);

  // Each function handed out is, character for character, the served text at its declaration.
  const page = {};
  for (const [name, decl] of names) {
    if (!decl) continue;
    const value = peek(decl[1]);
    assert.equal(typeof value, "function", `${name} (${decl[1]}) is a function in the served script's scope`);
    assert.ok(code.startsWith(Function.prototype.toString.call(value), at(decl)), `${name} (${decl[1]}) is not the served function at its place`);
    Object.defineProperty(page, name, { enumerable: true, get: () => peek(decl[1]), set: (v) => peek(`${decl[1]}=__mguVal`, v) });
  }

  // The page's variables, by what they hold: meta (the parsed #tool-meta), ROOT (its input
  // schema, the same object), app (the page's App).
  const bindings = new Map();
  for (const n of new Set(script.match(/[A-Za-z_$][\w$]*/g))) {
    if (n.length > 3 || n in context) continue; // shortened names are short; globals are not the page's
    try {
      bindings.set(n, peek(n));
    } catch {
      // a keyword, or a name only of properties or of inner scopes
    }
  }
  const one = (what, test) => {
    const hits = [...bindings].filter(([, v]) => test(v)).map(([n]) => n);
    assert.equal(hits.length, 1, `one binding of the served page script holds ${what}: ${hits.join(", ") || "none"}`);
    return hits[0];
  };
  const told = JSON.parse(meta);
  assert.ok(told.inputSchema && typeof told.inputSchema === "object", "the served #tool-meta has an input schema");
  const metaName = one("the parsed #tool-meta", (v) => v !== null && typeof v === "object" && v.name === told.name && v.inputSchema !== undefined);
  const schema = peek(metaName).inputSchema;
  const locals = { meta: metaName, ROOT: one("ROOT, the input schema", (v) => v === schema), app: one("the page's App", (v) => v instanceof context.McpGenUiRuntime.App) };
  for (const [name, n] of Object.entries(locals)) {
    Object.defineProperty(page, name, { enumerable: true, get: () => peek(n), set: (v) => peek(`${n}=__mguVal`, v) });
  }
  for (const [k, v] of Object.entries(local)) page[k] = v;
  return page;
}

/**
 * [label, page] for each script the tests run against: the parts from source (load(parts,
 * globals)), then, with SERVED_PAGE, the served page script (all of it: `parts` only says what
 * the sources need).
 */
export function variants(parts, globals = {}) {
  const out = [["sources", load(parts, globals)]];
  if (SERVED_PAGE) out.push([`served (${SERVED_PAGE})`, loadServed(globals)]);
  return out;
}

/** [label, script] for the View runtime: its sources, then with SERVED_PAGE the served one. */
export function runtimes() {
  const out = [["sources", runtimeSource()]];
  if (SERVED_PAGE) out.push([`served (${SERVED_PAGE})`, servedScripts().runtime]);
  return out;
}
