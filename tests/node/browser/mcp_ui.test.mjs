// Issue 43 in a host built on @mcp-ui/client's AppRenderer (React; npm @mcp-ui/client 7): the
// page's own origin runs the MCP client, the View runs behind mcp-gen-ui's sandbox proxy on
// another origin. The provisional page follows its page through the host's bridge, shows the
// model's markup as it is written (inert), and is replaced by the written page with the call.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { ARTIFACTS, assertHostileInert, hostileMarkup, launch, pacedOpenAi, startCanary, startProxy, markupFirstPage } from "./views.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const HEADING = "Weather, written for an mcp-ui host";

let browser, llm, bundle, canary;
before(async () => {
  browser = await launch();
  // Hostile markup right after the heading (issue 52), without inline handlers, so the whole
  // page passes the checks and takes the provisional page's place: until then none of it may
  // run, load or take input.
  canary = await startCanary();
  const written = markupFirstPage(HEADING, 200, { afterHeading: hostileMarkup(canary.url, { handlers: false }) });
  llm = await pacedOpenAi((body) => (body.includes("rich or minimal") ? "rich" : written), { first: 1.5, tps: 150 });
  const out = await build({ entryPoints: [join(HERE, "mcp_ui_host.js")], bundle: true, format: "iife", write: false, platform: "browser",
    logLevel: "silent", define: { "process.env.NODE_ENV": '"production"' } });
  bundle = out.outputFiles[0].text;
});
after(async () => { await browser?.close(); llm?.close(); canary?.close(); });

test("in an @mcp-ui/client AppRenderer host, the page is seen as it is written and then replaces the provisional one", async () => {
  const site = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><meta charset="utf-8"><title>mcp-ui host</title><div id="root" style="height:800px"></div><script>${bundle}</script>`);
  });
  await new Promise((ok) => site.listen(0, "127.0.0.1", ok));
  const hostOrigin = `http://localhost:${site.address().port}`;
  const cfg = join(ARTIFACTS, "mcp-ui-config.json");
  writeFileSync(cfg, JSON.stringify({ generation: { timeoutMs: 1500 } }));
  const proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url, "--config", cfg], "mcp-ui");
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  p.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  try {
    await p.goto(`${hostOrigin}/`);
    await p.evaluate((a) => window.startMcpUiHost(a), {
      mcpUrl: `${proxy.base}/mcp`,
      sandboxUrl: `${proxy.base}/preview/sandbox?host=${encodeURIComponent(hostOrigin)}`,
      toolName: "get_current_weather",
      toolInput: { city: "Oslo" },
    });
    // The View: the host page, then the service's sandbox proxy, then our page.
    let view = null;
    for (let i = 0; i < 300 && !view; i++) {
      for (const f of p.frames()) {
        if (f !== p.mainFrame() && (await f.locator("#mcp-gen-ui-writing").count().catch(() => 0)) > 0) view = f;
      }
      if (!view) await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(view, `the provisional page showed in the host; host errors: ${JSON.stringify(await p.evaluate(() => window.__hostErrors))}`);
    await view.locator("#mcp-gen-ui-preview h1", { hasText: HEADING }).waitFor({ timeout: 30000 });
    // Nobody types here: a person who typed is asked before the written page replaces this one.
    await assertHostileInert(p, view, canary, { typing: false });
    assert.equal(await view.evaluate(() => window.__writtenRan), undefined, "nothing of the partial page ran");
    await p.screenshot({ path: join(ARTIFACTS, "mcp-ui-streamed.png") });
    await view.locator("#written-marker").waitFor({ timeout: 60000 });
    assert.equal(await view.evaluate(() => window.__writtenRan), true);
    assert.equal(await view.locator("#city").inputValue(), "Oslo", "the call's input carried into the written page");
    await view.locator("#result").getByText("Oslo").first().waitFor({ timeout: 5000 });
    await p.screenshot({ path: join(ARTIFACTS, "mcp-ui-written.png") });
    assert.deepEqual(await p.evaluate(() => window.__hostErrors), [], "the host reported no error");
    // What the written page itself does with that markup (loads from the canary, refused by the
    // sandbox's CSP; its autofocus, refused in a cross-origin frame) the browser reports.
    assert.deepEqual(errors.filter((e) => !e.includes(canary.url) && !/autofocusing/.test(e)), [], "console errors");
  } finally {
    await p.close();
    site.close();
    proxy.stop();
  }
});
