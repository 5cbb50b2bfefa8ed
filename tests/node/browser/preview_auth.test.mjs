// The /preview page on a service that needs a bearer token (issue 10): opened as
// /preview#token=..., the page sends the token in the Authorization header of its /mcp requests,
// the tool list loads and a call works; the token never appears in a URL sent over the network
// nor in the server's log; without a token (or with a wrong one) the page says what to do.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ARTIFACTS, fakeOpenAi, launch, startProxy } from "./views.mjs";

const TOKEN = "preview-test-token-4f1c2a9b7e";

const page = `<!doctype html><html><head><meta charset="utf-8"><title>AUTH-PAGE</title></head>
<body><h1 id="marker">AUTH-PAGE</h1>
<form id="f"><label for="city">City</label> <input id="city" name="city"> <button id="submit">Look up</button></form>
<div id="result"></div>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
const app = new App({ name: "AUTH-PAGE", version: "1.0.0" });
const out = document.getElementById("result");
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => {
  e.preventDefault();
  const r = await app.callServerTool({ name: "get_current_weather", arguments: { city: document.getElementById("city").value } });
  out.textContent = JSON.stringify(r.structuredContent ?? r.content);
});
</script></body></html>`;

let browser, llm, proxy;
before(async () => {
  browser = await launch();
  llm = await fakeOpenAi((body) => (body.includes("rich or minimal") ? "rich" : page));
  proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url, "--auth-token", TOKEN, "--log-level", "debug"], "preview-auth");
});
after(async () => { proxy?.stop(); await browser?.close(); llm?.close(); });

async function viewFrame(p) {
  for (let i = 0; i < 100; i++) {
    for (const f of p.frames()) {
      const parent = f.parentFrame();
      if (parent && parent.parentFrame() === p.mainFrame()) {
        const text = await f.locator("#marker").textContent({ timeout: 200 }).catch(() => null);
        if (text === "AUTH-PAGE") return f;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no View frame showing AUTH-PAGE; status: ${await p.locator("#status").textContent()}; meta: ${await p.locator("#meta").textContent()}; frames: ${p.frames().map((f) => f.url()).join(" ")}`);
}

test("with #token= the page lists the tools and a call works; the token stays out of URLs and logs", async () => {
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const requests = [];
  const errors = [];
  p.on("request", (r) => requests.push({ url: r.url(), auth: r.headers()["authorization"] }));
  p.on("pageerror", (e) => errors.push(String(e)));
  try {
    await p.goto(`${proxy.base}/preview#token=${TOKEN}`);
    // The tool list loads and the page opens the first tool (get_current_weather) by itself.
    await p.getByRole("button", { name: /Current weather/ }).waitFor({ timeout: 10000 });
    assert.equal(await p.locator("nav button").count(), 4, "the demo's four tools");
    await p.locator("#status").filter({ hasText: "View connected: get_current_weather" }).waitFor({ timeout: 15000 });
    const view = await viewFrame(p);
    await view.locator("#city").fill("Lisbon");
    await view.locator("#submit").click();
    await view.locator("#result").filter({ hasText: "Lisbon" }).waitFor({ timeout: 10000 });
    assert.match(await view.locator("#result").textContent(), /"temperature"/);
    await p.screenshot({ path: join(ARTIFACTS, "preview-auth.png") });

    const mcp = requests.filter((r) => new URL(r.url).pathname === "/mcp");
    assert.ok(mcp.length >= 4, `the page spoke MCP: ${mcp.length} requests`);
    assert.ok(mcp.every((r) => r.auth === `Bearer ${TOKEN}`), "every /mcp request carries the bearer token");
    assert.deepEqual(requests.filter((r) => r.url.includes(TOKEN)).map((r) => r.url), [], "no URL sent over the network holds the token");
    assert.ok(!p.url().includes(TOKEN), `the token left the address bar: ${p.url()}`);
    assert.ok(!proxy.stderr().includes(TOKEN), "the server's log never holds the token");
    assert.match(proxy.stderr(), /token --auth-token\[0\] authenticated/, "the log names the token by its label");
    assert.deepEqual(errors, []);

    // A reload keeps working: the token stays in this tab's sessionStorage.
    await p.reload();
    await p.getByRole("button", { name: /Current weather/ }).waitFor({ timeout: 10000 });
  } finally {
    await p.close();
  }
});

test("without a token, or with a wrong one, the page says what to do", async () => {
  const p = await browser.newPage();
  try {
    await p.goto(`${proxy.base}/preview`);
    const alert = p.getByRole("alert");
    await alert.waitFor({ timeout: 10000 });
    assert.match(await alert.textContent(), /needs a token.*\/preview#token=/);
    assert.equal(await p.locator("#status").textContent(), "authorization needed");
    assert.equal(await p.locator("nav button").count(), 0, "no tools without the token");
    await p.screenshot({ path: join(ARTIFACTS, "preview-no-token.png") });

    await p.goto(`${proxy.base}/preview#token=not-the-token`);
    await p.reload(); // a hash change alone does not reload the page
    await p.getByRole("alert").filter({ hasText: "refused this token" }).waitFor({ timeout: 10000 });
  } finally {
    await p.close();
  }
});
