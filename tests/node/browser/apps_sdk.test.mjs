// Issue 34: hosts of the OpenAI Apps SDK dialect render the pages too. MCPJam's inspector
// (npm @mcpjam/inspector@1.0.24, started here with no LLM key) has no MCP Apps code: its Tools
// tab renders a tool whose `_meta["openai/outputTemplate"]` names a resource, in an iframe with
// a `window.openai` object, and it declares no extension. With `ui.appsSdk: "undeclared"` the
// service gives it the Apps SDK dialect, and the page's runtime carries the App API over
// window.openai: the form is filled with the call's input, the result is shown, and the page's
// own form calls the tool again through MCPJam. Its validator shows the demo's output schemas
// as valid.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { ARTIFACTS, ROOT, launch, pacedOpenAi, startProxy, markupFirstPage } from "./views.mjs";

const JAM = join(ROOT, "tests/node/node_modules/@mcpjam/inspector");

function freePort() {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.on("error", fail);
    s.listen(0, "127.0.0.1", () => { const { port } = s.address(); s.close(() => ok(port)); });
  });
}

/** MCPJam's server (its launcher would open a browser), connected to `mcpUrl` by its config. */
async function startJam(mcpUrl) {
  const port = await freePort();
  const env = { ...process.env, PORT: String(port), NODE_ENV: "production",
    MCP_CONFIG_DATA: JSON.stringify({ mcpServers: { weather: { type: "http", url: mcpUrl } } }) };
  const child = spawn(process.execPath, [join(JAM, "dist/server/index.js")], { cwd: JAM, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d) => { out += d; });
  child.stderr.on("data", (d) => { out += d; });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if ((await fetch(base + "/health").catch(() => null))?.ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, log: () => out, stop: () => { try { process.kill(-child.pid, "SIGKILL"); } catch {} } };
}

/** The response's validation badge, when it says the result is valid against its schema. */
function validBadge(p) {
  return p.locator('[data-slot="badge"]', { hasText: /^\s*Valid\s*$/ }).first();
}

function invalidBadges(p) {
  return p.locator('[data-slot="badge"]', { hasText: /^\s*Invalid\s*$/ });
}

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function openTools(p, jam) {
  await p.goto(`${jam.base}/`, { waitUntil: "domcontentloaded" });
  await p.getByRole("button", { name: "Or continue as guest" }).click({ timeout: 30000 });
  await p.getByText("Connected", { exact: true }).first().waitFor({ timeout: 30000 });
  await p.getByRole("link", { name: "Tools" }).or(p.getByRole("button", { name: "Tools", exact: true })).first().click();
}

async function execute(p, tool, fields) {
  await p.locator("code", { hasText: new RegExp(`^${tool}$`) }).first().click();
  for (const [k, v] of Object.entries(fields)) await p.getByPlaceholder(`Enter ${k}`).fill(v);
  await p.getByRole("button", { name: "Execute" }).click();
}

test("MCPJam renders the demo's page from its Tools tab over window.openai, and the page's own form calls the tool", async () => {
  const cfg = join(ARTIFACTS, "apps-sdk-config.json");
  writeFileSync(cfg, JSON.stringify({ ui: { appsSdk: "undeclared" } }));
  const proxy = await startProxy(["--demo", "--provider", "offline", "--config", cfg], "apps-sdk");
  const jam = await startJam(`${proxy.base}/mcp`);
  const p = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  // Offline, MCPJam's page fails to reach its telemetry hosts; nothing else may fail.
  p.on("console", (m) => { if (m.type() === "error" && !/ERR_NAME_NOT_RESOLVED/.test(m.text())) errors.push(m.text()); });
  try {
    await openTools(p, jam);
    await execute(p, "get_current_weather", { city: "Oslo" });
    const handle = await p.waitForSelector('iframe[title="OpenAI Component: get_current_weather"]', { timeout: 20000 })
      .catch((e) => { throw new Error(`no widget: ${e.message}; MCPJam: ${jam.log().slice(-1500)}`); });
    const view = await handle.contentFrame();
    // MCPJam writes the page into the frame after a loader page: wait for ours.
    await view.waitForFunction(() => document.body && document.body.getAttribute("data-ready") === "true", null, { timeout: 20000 });
    const seen = await view.evaluate(() => ({ host: McpGenUiRuntime.current().getHostVersion(), caps: McpGenUiRuntime.current().getHostCapabilities() }));
    assert.equal(seen.host.name, "openai-apps-sdk", "the runtime speaks the Apps SDK dialect here");
    assert.ok(seen.caps.serverTools, "MCPJam's callTool is the page's way to call tools");
    assert.equal(await view.getByLabel(/^City/).inputValue(), "Oslo", "the form is filled with the call's input");
    await view.locator("#result").getByText("Oslo").first().waitFor({ timeout: 10000 });
    await p.screenshot({ path: join(ARTIFACTS, "apps-sdk-mcpjam.png") });

    await view.getByLabel(/^City/).fill("Bergen");
    await view.locator("#submit").click();
    if (await view.locator("#confirm").isVisible()) await view.locator("#confirm-run").click();
    await view.locator("#result").getByText("Bergen").first().waitFor({ timeout: 20000 });
    await p.screenshot({ path: join(ARTIFACTS, "apps-sdk-mcpjam-called.png") });

    // Its validator: the demo's output schemas compile and the results match them.
    await p.getByText("Raw JSON", { exact: true }).first().click();
    await validBadge(p).waitFor({ timeout: 10000 });
    await p.screenshot({ path: join(ARTIFACTS, "apps-sdk-mcpjam-valid.png") });
    assert.equal(await p.getByText("The provided outputSchema is invalid and could not be compiled.").count(), 0);
    assert.equal(await invalidBadges(p).count(), 0);
    // The demo's tools that declare an output schema (get_weather_map answers an image).
    for (const tool of ["get_forecast"]) {
      await execute(p, tool, { city: "Lisbon" });
      await p.waitForSelector(`iframe[title="OpenAI Component: ${tool}"]`, { timeout: 20000 });
      await p.getByText("Raw JSON", { exact: true }).first().click();
      await validBadge(p).waitFor({ timeout: 10000 });
      assert.equal(await invalidBadges(p).count(), 0, `${tool}'s output schema is valid`);
    }
    assert.deepEqual(errors, [], "console errors");
  } finally {
    await p.close();
    jam.stop();
    proxy.stop();
  }
});

// Issue 43 in MCPJam: the provisional page follows its page over window.openai, shows the
// model's markup as it is written (inert), and is replaced by the written page with the call.
const HEADING = "Weather, written for MCPJam";
const WRITTEN = markupFirstPage(HEADING, 200);

test("in MCPJam, the provisional page shows the page as it is written and is replaced by it", async () => {
  const llm = await pacedOpenAi((body) => (body.includes("rich or minimal") ? "rich" : WRITTEN), { first: 1.5, tps: 150 });
  const cfg = join(ARTIFACTS, "apps-sdk-streamed-config.json");
  writeFileSync(cfg, JSON.stringify({ ui: { appsSdk: "undeclared" }, generation: { timeoutMs: 1500 } }));
  const proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url, "--config", cfg], "apps-sdk-streamed");
  const jam = await startJam(`${proxy.base}/mcp`);
  const p = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  p.on("console", (m) => { if (m.type() === "error" && !/ERR_NAME_NOT_RESOLVED/.test(m.text())) errors.push(m.text()); });
  try {
    await openTools(p, jam);
    await execute(p, "get_current_weather", { city: "Oslo" });
    const handle = await p.waitForSelector('iframe[title="OpenAI Component: get_current_weather"]', { timeout: 20000 });
    const view = await handle.contentFrame();
    await view.locator("#mcp-gen-ui-writing").waitFor({ timeout: 20000 });
    await view.locator("#mcp-gen-ui-preview h1", { hasText: HEADING }).waitFor({ timeout: 30000 });
    await p.screenshot({ path: join(ARTIFACTS, "apps-sdk-mcpjam-streamed.png") });
    await view.locator("#written-marker").waitFor({ timeout: 60000 });
    assert.equal(await view.locator("#city").inputValue(), "Oslo", "the call's input carried into the written page");
    assert.deepEqual(errors, [], "console errors");
  } finally {
    await p.close();
    jam.stop();
    proxy.stop();
    llm.close();
  }
});
