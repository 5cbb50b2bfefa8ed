// Drives View pages served by the proxy in headless Chromium against the official AppBridge.
// Shared by the browser tests: start a proxy, fetch every ui:// page with a real MCP client,
// mount it in the host page, check the handshake, the controls, a typed tools/call and results.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { mkdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { chromium } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const HERE = dirname(fileURLToPath(import.meta.url));
export const ROOT = resolve(HERE, "../../..");
export const BIN = process.env.MCP_GEN_UI_BIN || join(ROOT, "target/debug/mcp-gen-ui");
export const ARTIFACTS = join(ROOT, "tests/artifacts/screens");
export const RUNTIME_BYTES = readFileSync(join(ROOT, "templates/runtime.js")).length;
export const UI_EXT = { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } };

export async function startProxy(args, name) {
  const child = spawn(BIN, ["--listen", "127.0.0.1:0", ...args], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const base = await new Promise((ok, fail) => {
    let out = "";
    const timer = setTimeout(() => fail(new Error(`${name}: no listening line; stderr: ${stderr.slice(-2000)}`)), 30000);
    child.stdout.on("data", (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) { clearTimeout(timer); ok(m[1]); }
    });
    child.on("exit", (code) => fail(new Error(`${name}: exited ${code}; stderr: ${stderr.slice(-2000)}`)));
  });
  for (let i = 0; i < 600; i++) {
    try { if ((await fetch(base + "/readyz")).ok) break; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, stop: () => { try { process.kill(-child.pid, "SIGTERM"); } catch {} }, stderr: () => stderr };
}

/** A client that renders pages, on `/mcp` or a profile's path (`/mcp/<profile>`). */
export async function connectClient(base, path = "/mcp") {
  const client = new Client({ name: "mcp-gen-ui-browser-test", version: "1.0.0" }, { capabilities: { extensions: UI_EXT } });
  await client.connect(new StreamableHTTPClientTransport(new URL(base + path)));
  return client;
}

let bundle;
export async function hostBundle() {
  if (!bundle) {
    const out = await build({ entryPoints: [join(HERE, "host.js")], bundle: true, format: "iife", write: false, platform: "browser", logLevel: "silent" });
    bundle = out.outputFiles[0].text;
  }
  return bundle;
}

export async function launch(extra = {}) {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic", ...(extra.args || [])],
  });
}

/** A value for one empty control of the template form, by its input type, so the call is valid. */
const SAMPLES = { email: "someone@example.com", url: "https://example.com/", date: "2026-01-02", "datetime-local": "2026-01-02T03:04", time: "12:34" };
async function fillSamples(frame, scope) {
  const ctls = frame.locator(`${scope} input:not([type=checkbox]):not([readonly]), ${scope} textarea`);
  for (let i = 0; i < (await ctls.count()); i++) {
    const c = ctls.nth(i);
    if (!(await c.isVisible()) || (await c.inputValue()) !== "") continue;
    const [type, data] = [await c.getAttribute("type"), await c.getAttribute("data-type")];
    const v = type === "number" ? (await c.getAttribute("min")) || "1"
      : data === "json-object" ? "{}" : data === "json-array" ? "[]" : data === "json" ? null : SAMPLES[type] || "hello";
    if (v !== null) await c.fill(v);
  }
}

/** A page hosting one View under the official AppBridge. The host answers tools/call through `client`. */
export async function openView(browser, client, html, { theme = "light", viewport = { width: 900, height: 950 }, autoHeight = false, hostContext, capabilities } = {}) {
  const page = await browser.newPage({ viewport, timezoneId: "UTC", locale: "en-US" });
  const errors = [];
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(String(e)));
  // `key`: the View asked for progress (host.js); the client's reports go back under it.
  await page.exposeFunction("hostCallTool", async (params, key) => client.callTool(params, undefined, key === undefined ? undefined
    : { onprogress: (p) => page.evaluate(([k, v]) => window.hostProgress(k, v), [key, p]).catch(() => {}) }));
  await page.setContent(`<!doctype html><html><body><script>${await hostBundle()}</script></body></html>`);
  await page.evaluate(([h, o]) => window.mountView(h, o), [html, { theme, autoHeight, hostContext, capabilities }]);
  await page.waitForFunction(() => window.__hostLog && window.__hostLog.initialized, null, { timeout: 10000 })
    .catch(() => { throw new Error(`the View never completed ui/initialize; console: ${errors.join(" | ")}`); });
  const frame = page.frames().find((f) => f !== page.mainFrame());
  return { page, frame, errors, calls: () => page.evaluate(() => window.__hostLog.calls) };
}

/** Fails on any console error, in the host page or the View. */
export function assertCleanConsole(errors, label) {
  if (errors.length) throw new Error(`${label}: browser console errors: ${errors.join(" | ")}`);
}

function typeMatches(value, schema) {
  const s = schema.oneOf?.[0] || schema.anyOf?.[0] || schema;
  const types = Array.isArray(s.type) ? s.type : [s.type];
  if (s.enum) return s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value));
  return types.some((t) => {
    switch (t) {
      case "integer": return Number.isInteger(value);
      case "number": return typeof value === "number";
      case "boolean": return typeof value === "boolean";
      case "string": return typeof value === "string";
      case "array": return Array.isArray(value);
      case "object": return value !== null && typeof value === "object" && !Array.isArray(value);
      case undefined: return true;
      default: return true;
    }
  });
}

/**
 * Mounts `html` for `tool` and checks it. `submit` says whether to fill and submit the form.
 * Returns a report; throws with a clear message on the first failed check.
 */
export async function checkView(browser, client, tool, html, { label, submit, prefill = true, pushed = "pushed-result-marker-42" }) {
  const { page, frame, errors } = await openView(browser, client, html).catch((e) => { throw new Error(`${label}: ${e.message}`); });
  const props = Object.keys(tool.inputSchema?.properties || {});
  // The template page: one field per input property. Any other page: one named control each.
  const template = (await frame.locator("#fields").count()) > 0;
  if (template) {
    const shown = await frame.evaluate(() => [...document.querySelectorAll("#fields [data-field]")].map((e) => e.getAttribute("data-field")));
    assert.deepEqual([...shown].sort(), [...props].sort(), `${label}: one field per input property`);
  } else {
    for (const p of props) assert.equal(await frame.locator(`[name="${p}"]`).count(), 1, `${label}: one control for input property ${p}`);
  }
  // Every control of the form has a label.
  const unlabelled = await frame.evaluate(() => [...document.querySelectorAll("form input, form select, form textarea, form button")]
    .filter((c) => c.type !== "hidden" && !(c.labels && c.labels.length) && !c.getAttribute("aria-label") && !c.getAttribute("aria-labelledby") && !(c.tagName === "BUTTON" && c.textContent.trim()))
    .map((c) => c.outerHTML.slice(0, 100)));
  assert.deepEqual(unlabelled, [], `${label}: controls without a label`);
  let call;
  if (submit) {
    await fillSamples(frame, template ? "#fields" : "form");
    const before = (await page.evaluate(() => window.__hostLog.calls.length));
    await frame.locator("#submit").click();
    if (await frame.locator("#confirm").isVisible()) await frame.locator("#confirm-run").click();
    await page.waitForFunction((n) => window.__hostLog.calls.length > n, before, { timeout: 5000 })
      .catch(async () => { throw new Error(`${label}: submitting did not send tools/call; status: ${await frame.locator("#status").textContent()}; errors: ${await frame.locator(".field-error").allTextContents()}`); });
    call = (await page.evaluate(() => window.__hostLog.calls.at(-1)));
    if (call.name !== tool.name) throw new Error(`${label}: called ${call.name}, expected ${tool.name}`);
    for (const [k, v] of Object.entries(call.arguments || {})) {
      if (!typeMatches(v, tool.inputSchema.properties[k] || {})) throw new Error(`${label}: argument ${k}=${JSON.stringify(v)} does not match its schema type`);
    }
    await frame.locator("#result .block, #result details").first().waitFor({ timeout: 20000 })
      .catch(() => { throw new Error(`${label}: the answer to tools/call never showed`); });
  }
  await page.screenshot({ path: join(ARTIFACTS, `${label.replace(/[^\w.-]+/g, "_")}.png`), fullPage: false });
  // Arguments the host pushes (the call that opened the View) pre-fill the form.
  const textProp = prefill ? props.find((p) => {
    const s = tool.inputSchema.properties[p];
    return s.type === "string" && !s.enum && !s.format;
  }) : undefined;
  if (textProp) {
    await page.evaluate(([k]) => window.__bridge.sendToolInput({ arguments: { [k]: "pushed-by-the-host" } }), [textProp]);
    await frame.waitForFunction((k) => document.querySelector(`[name="${k}"]`).value === "pushed-by-the-host", textProp, { timeout: 5000 })
      .catch(() => { throw new Error(`${label}: ui/notifications/tool-input did not pre-fill ${textProp}`); });
  }
  // A result the host pushes (for the call that opened the View) must render too.
  await page.evaluate((t) => window.__bridge.sendToolResult({ content: [{ type: "text", text: t }] }), pushed);
  await frame.getByText(pushed).first().waitFor({ timeout: 5000 })
    .catch(() => { throw new Error(`${label}: a result pushed with ui/notifications/tool-result did not show`); });
  assertCleanConsole(errors, label);
  const sizes = await page.evaluate(() => window.__hostLog.sizes.length);
  await page.close();
  return { call, sizes };
}

/**
 * A local OpenAI-compatible endpoint: `answer(body)` gives the text for each request body
 * ("rich" for classification prompts is the caller's choice). Records every body it gets.
 */
export async function fakeOpenAi(answer) {
  const bodies = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => {
      bodies.push(body);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: answer(body) }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1 } }));
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, bodies, close: () => server.close() };
}

/**
 * A local OpenAI-compatible endpoint that streams its answers (SSE chunks, then usage, then
 * [DONE]) at a hosted model's pace: the first token after `first` seconds, then `tps` tokens
 * (4 characters each) a second. Records each request's start and the moment its answer ended.
 */
/** A page as a model writes it when asked for the visible markup first (issue 43): the heading
 * `heading` (id written-marker), a city form, a result box, then `rules` lines of style (about
 * 7 tokens each: the page's length, so its pace) and the script, which marks that it ran
 * (`window.__writtenRan`), fills the form from the tool input, shows results and calls
 * get_current_weather on submit. */
export function markupFirstPage(heading, rules, { afterHeading = "" } = {}) {
  const padding = Array.from({ length: rules }, (_, i) => `.p${i}{margin:${i % 9}px;padding:${i % 7}px}`).join("\n");
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Weather</title></head>
<body>
<h1 id="written-marker">${heading}</h1>
${afterHeading}
<form id="f">
  <label for="city">City</label> <input id="city" name="city" required>
  <button id="submit" type="submit">Look up</button>
</form>
<div id="result"></div>
<style>body{font:14px system-ui;margin:16px}.block{border:1px solid #ccc;padding:8px;margin-top:8px}
${padding}
</style>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
window.__writtenRan = true;
const app = new App({ name: "Weather UI", version: "1.0.0" });
const result = document.getElementById("result");
function show(r) {
  result.className = "block";
  result.textContent = JSON.stringify(r.structuredContent ?? r.content);
}
app.ontoolinput = (p) => { document.getElementById("city").value = (p.arguments && p.arguments.city) || ""; };
app.ontoolresult = show;
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => {
  e.preventDefault();
  show(await app.callServerTool({ name: "get_current_weather", arguments: { city: document.getElementById("city").value } }));
});
</script>
</body></html>`;
}

/** A local server that counts every request it gets, by path: what a page under test loads. */
export async function startCanary() {
  const hits = [];
  const server = createServer((req, res) => { hits.push(req.url); res.writeHead(404); res.end(); });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://127.0.0.1:${server.address().port}`, hits, close: () => server.close() };
}

/** What a partial page must not get to do in the provisional page (issue 52), streamed right
 * after its heading: a script, a link, a button and a form with an action, an animated svg, a
 * style and a stylesheet, a frame and an image loading from `canary`, an input to type into;
 * each marks `window.__hostile` if it runs. `handlers` adds inline handlers (`onerror`,
 * `onclick`, `onbegin`, `onfocus`): a page with them is refused once whole, so a test that
 * wants the written page in place leaves them out. Ends with a paragraph `HOSTILE-END`. */
export function hostileMarkup(canary, { handlers = true } = {}) {
  const mark = (what) => `(window.__hostile=(window.__hostile||[]).concat('${what}'))`;
  const on = (attr, what) => (handlers ? ` ${attr}="${mark(what)}"` : "");
  return `<script>${mark("script")}</script>
<img src="${canary}/img"${on("onerror", "img")}>
<a href="javascript:${mark("link")}">a link</a>
<button type="submit"${on("onclick", "button")}>Press</button>
<form action="${canary}/form" method="get" name="open"><input name="q" value="hostile-value" autofocus${on("onfocus", "input")}>
<button type="submit" formaction="${canary}/formaction">Send</button></form>
<svg width="10" height="10"><image href="${canary}/svg" width="10" height="10"/><rect width="10" height="10"><animate attributeName="width" from="0" to="10" dur="0.1s" repeatCount="indefinite"${on("onbegin", "svg")}/></rect></svg>
<style>body{background:url(${canary}/style)}</style>
<link rel="icon" href="${canary}/icon">
<iframe src="${canary}/frame"></iframe>
<input id="hostile-input" placeholder="type here">
<p>HOSTILE-END</p>`;
}

/** The preview in `frame` once `HOSTILE-END` shows: none of hostileMarkup's elements, handlers,
 * URLs or names built; clicking, focusing and typing into what is there does nothing; after a
 * while nothing ran (`window.__hostile`) and nothing was loaded from the canary. `typing`: keys
 * are typed too. */
export async function assertHostileInert(page, frame, canary, { typing = true } = {}) {
  const preview = frame.locator("#mcp-gen-ui-preview");
  await preview.getByText("HOSTILE-END").waitFor({ state: "attached", timeout: 30000 });
  assert.equal(await preview.getAttribute("inert"), "", "the preview takes no input");
  const built = await preview.evaluate((p) => [...p.querySelectorAll("*")].map((e) => [e.localName, ...e.getAttributeNames()]));
  for (const [tag, ...attrs] of built) {
    assert.ok(!["script", "style", "img", "a", "svg", "image", "animate", "iframe", "link"].includes(tag), `${tag} was built`);
    for (const a of attrs) assert.ok(!/^on|^(href|src|action|formaction|name|id|autofocus|style)$/.test(a), `${tag} has ${a}`);
  }
  assert.ok(built.some(([t]) => t === "input") && built.some(([t]) => t === "form"), `the form and its input are shown: ${JSON.stringify(built)}`);
  // Clicked, submitted and typed into as a person (and a script) would: nothing moves.
  const before = await preview.evaluate((p) => [...p.querySelectorAll("input")].map((i) => i.value));
  for (const sel of ["button", "input"]) {
    const n = await preview.locator(sel).count();
    for (let i = 0; i < n; i++) await preview.locator(sel).nth(i).click({ force: true, timeout: 2000 }).catch(() => {});
  }
  await preview.evaluate((p) => {
    for (const b of p.querySelectorAll("button")) b.click();
    for (const i of p.querySelectorAll("input")) i.focus();
  });
  // (Keys go to whatever has the focus: where a test wants the page swapped in unasked, nobody
  // may type into the template's form.)
  if (typing) {
    await page.keyboard.type("typed-by-a-person");
    await page.keyboard.press("Enter");
  }
  assert.equal(await preview.evaluate((p) => p.contains(document.activeElement)), false, "nothing in the preview took the focus");
  assert.deepEqual(await preview.evaluate((p) => [...p.querySelectorAll("input")].map((i) => i.value)), before, "nothing was typed into the preview");
  assert.ok(await preview.evaluate((p) => [...p.querySelectorAll("input, button, select, textarea")].every((c) => c.disabled)), "its controls are disabled");
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(await frame.evaluate(() => window.__hostile), undefined, "nothing of the partial page ran");
  assert.deepEqual(canary.hits, [], "nothing of the partial page was loaded or submitted");
}

export async function pacedOpenAi(answer, { first = 1.5, tps = 150 } = {}) {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", async () => {
      // `sent`: when each piece went out, and how far into the answer it reached.
      const rec = { body, start: Date.now(), end: null, closed: false, text: "", sent: [] };
      requests.push(rec);
      res.on("close", () => { if (!rec.end) rec.closed = true; });
      const text = answer(body);
      rec.text = text;
      const chunk = (delta, finish) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      await new Promise((ok) => setTimeout(ok, first * 1000));
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const began = Date.now();
      let sent = 0;
      while (sent < text.length && !rec.closed) {
        const due = Math.min(text.length, Math.floor(((Date.now() - began) / 1000) * tps * 4) + 4);
        if (due > sent) { res.write(chunk({ content: text.slice(sent, due) }, null)); sent = due; rec.sent.push({ at: Date.now(), upto: due }); }
        if (sent < text.length) await new Promise((ok) => setTimeout(ok, 50));
      }
      res.write(chunk({}, "stop"));
      res.write(`data: ${JSON.stringify({ id: "x", choices: [], usage: { prompt_tokens: 100, completion_tokens: Math.ceil(text.length / 4) } })}\n\n`);
      res.end("data: [DONE]\n\n");
      rec.end = Date.now();
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { url: `http://127.0.0.1:${server.address().port}/v1`, requests, close: () => server.close() };
}

mkdirSync(ARTIFACTS, { recursive: true });
