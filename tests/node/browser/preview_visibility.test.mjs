// MCP Apps visibility in the preview host: the `_ui_*` tools are `_meta.ui.visibility: ["model"]`,
// so a View (here an LLM-written page) that calls one is refused by the host, and nothing
// reaches the service; a tool visible to apps is still callable.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { fakeOpenAi, launch, startProxy } from "./views.mjs";

const page = `<!doctype html><html><head><meta charset="utf-8"><title>VIS</title></head>
<body><h1 id="marker">VISIBILITY</h1><button id="refine">Refine</button><button id="weather">Weather</button><pre id="out"></pre>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
const app = new App({ name: "vis", version: "1.0.0" });
const out = document.getElementById("out");
await app.connect();
document.getElementById("refine").addEventListener("click", async () => {
  try { await app.callServerTool({ name: "_ui_refine", arguments: { toolName: "get_current_weather", feedback: "spend money" } }); out.textContent = "CALLED"; }
  catch (e) { out.textContent = "REFUSED: " + e.message; }
});
document.getElementById("weather").addEventListener("click", async () => {
  const r = await app.callServerTool({ name: "get_current_weather", arguments: { city: "Oslo" } });
  out.textContent = "WEATHER " + JSON.stringify(r.structuredContent);
});
</script></body></html>`;

let browser, llm;
before(async () => {
  browser = await launch();
  llm = await fakeOpenAi((body) => (body.includes("rich or minimal") ? "rich" : page));
});
after(async () => { await browser?.close(); llm?.close(); });

async function viewFrame(p) {
  for (let i = 0; i < 100; i++) {
    for (const f of p.frames()) {
      if (f.parentFrame() && f.parentFrame().parentFrame() === p.mainFrame()) {
        if ((await f.locator("#marker").textContent({ timeout: 200 }).catch(() => null)) === "VISIBILITY") return f;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("no View frame");
}

test("the preview refuses a View's call to a model-only tool, and allows an app-visible one", async () => {
  const proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url], "preview-visibility");
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  try {
    await p.goto(`${proxy.base}/preview?tool=get_current_weather`);
    const view = await viewFrame(p);
    const generations = llm.bodies.length;
    await view.locator("#refine").click();
    await view.locator("#out").filter({ hasText: "REFUSED" }).waitFor({ timeout: 10000 });
    assert.match(await view.locator("#out").textContent(), /_ui_refine is not callable from a View/);
    assert.match(await p.locator("#log").textContent(), /refused: the View called _ui_refine/);
    assert.equal(llm.bodies.length, generations, "nothing reached the service: no regeneration was asked of the LLM");
    await view.locator("#weather").click();
    await view.locator("#out").filter({ hasText: "WEATHER" }).waitFor({ timeout: 10000 });
    assert.match(await view.locator("#out").textContent(), /"city":"Oslo"/);
  } finally {
    await p.close();
    proxy.stop();
  }
});
