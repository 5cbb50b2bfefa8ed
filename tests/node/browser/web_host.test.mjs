// Issue 21, item 1: browser-based hosts. A page on another loopback origin connects with the
// official SDK's StreamableHTTPClientTransport (preflights, the session header read back, a
// bearer token), lists tools, calls one and reads a page; an origin that is not allowed fails.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { launch, startProxy } from "./views.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
let browser, bundle;
before(async () => {
  browser = await launch();
  const out = await build({ entryPoints: [join(HERE, "web_host.js")], bundle: true, format: "iife", write: false, platform: "browser", logLevel: "silent" });
  bundle = out.outputFiles[0].text;
});
after(async () => { await browser?.close(); });

/** A web host's page on its own origin (`host` names it: 127.0.0.1 or localhost). */
async function webHost() {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/html" });
    res.end(`<!doctype html><meta charset="utf-8"><title>web host</title><script>${bundle}</script>`);
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return { port: server.address().port, close: () => server.close() };
}

const TOKEN = "web-host-token-7d1f0c2b9e";

test("a web host on another origin uses the service from the browser", async () => {
  const proxy = await startProxy(["--demo", "--auth-token", TOKEN], "web-host");
  const site = await webHost();
  const p = await browser.newPage();
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  try {
    // The page on http://localhost:<site>, the service on http://127.0.0.1:<proxy>: two origins.
    await p.goto(`http://localhost:${site.port}/`);
    const r = await p.evaluate(([url, token]) => window.runWebHost(url, token), [`${proxy.base}/mcp`, TOKEN]);
    assert.ok(r.tools.includes("get_current_weather") && r.tools.includes("_ui_refine"), JSON.stringify(r.tools));
    assert.match(r.call, /Lisbon/);
    assert.ok(r.html > 1000, "the page was read");
    assert.match(r.sessionId, /^[0-9a-f]{32}$/, "the session header was readable (exposed)");
    assert.deepEqual(errors, []);
  } finally {
    await p.close();
    site.close();
    proxy.stop();
  }
});

test("an origin that is not allowed gets no CORS and cannot connect; --allowed-origin allows it", async () => {
  const site = await webHost();
  // Not a loopback name: the page's origin is http://web.test:<port>, resolved to 127.0.0.1.
  const origin = `http://web.test:${site.port}`;
  const launchArgs = { args: ["--host-resolver-rules=MAP web.test 127.0.0.1"] };
  const b = await launch(launchArgs);
  for (const allowed of [false, true]) {
    const proxy = await startProxy(["--demo", ...(allowed ? ["--allowed-origin", origin] : [])], `web-host-origin-${allowed}`);
    const p = await b.newPage();
    try {
      await p.goto(`${origin}/`);
      const outcome = await p.evaluate((url) => window.runWebHost(url).then(() => "connected", (e) => `failed: ${e.message}`), `${proxy.base}/mcp`);
      if (allowed) assert.equal(outcome, "connected");
      else assert.match(outcome, /^failed/, outcome);
      const pre = await fetch(`${proxy.base}/mcp`, { method: "OPTIONS", headers: { Origin: origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, mcp-protocol-version" } });
      assert.equal(pre.status, allowed ? 204 : 403);
      assert.equal(pre.headers.get("access-control-allow-origin"), allowed ? origin : null);
    } finally {
      await p.close();
      proxy.stop();
    }
  }
  await b.close();
  site.close();
});
