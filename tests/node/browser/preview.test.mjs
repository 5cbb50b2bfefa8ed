// The /preview page, driven like a person would: pick a tool, fill the form, see the result,
// switch the theme, send a refinement and see the page change. The View runs in an inner
// sandboxed iframe inside a sandbox proxy on the other loopback origin.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ARTIFACTS, fakeOpenAi, launch, startProxy } from "./views.mjs";

const page = (marker) => `<!doctype html><html><head><meta charset="utf-8"><title>${marker}</title>
<style>body{font:14px system-ui;margin:12px}:root[data-theme=dark] body{background:#111;color:#eee}</style></head>
<body><h1 id="marker">${marker}</h1>
<form id="f"><label for="city">City</label> <input id="city" name="city"> <button id="submit">Look up</button></form>
<div id="result"></div>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
const app = new App({ name: "${marker}", version: "1.0.0" });
const out = document.getElementById("result");
const show = (r) => { out.textContent = JSON.stringify(r.structuredContent ?? r.content); };
app.ontoolresult = show;
window.addEventListener("error", (e) => console.log(e.message));
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => {
  e.preventDefault();
  show(await app.callServerTool({ name: "get_current_weather", arguments: { city: document.getElementById("city").value } }));
});
</script></body></html>`;

let browser, llm;
before(async () => {
  browser = await launch();
  llm = await fakeOpenAi((body) => (body.includes("rich or minimal") ? "rich" : page(body.includes("make the heading say hello") ? "REFINED-PAGE" : "FIRST-PAGE")));
});
after(async () => { await browser?.close(); llm?.close(); });

/** The View's frame: the inner iframe of the sandbox proxy. */
async function viewFrame(p, marker) {
  for (let i = 0; i < 100; i++) {
    for (const f of p.frames()) {
      const parent = f.parentFrame();
      if (parent && parent.parentFrame() === p.mainFrame()) {
        const text = await f.locator("#marker").textContent({ timeout: 200 }).catch(() => null);
        if (text === marker) return f;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no View frame showing ${marker}`);
}

test("the preview page: pick, submit, theme, refine", async () => {
  const proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url], "preview");
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  p.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  try {
    // The tool is picked through the preview's ?tool= parameter: clicking it while the page
    // auto-opens the same first tool raced (the frame found could be replaced under the test).
    await p.goto(`${proxy.base}/preview?tool=get_current_weather`);
    await p.getByRole("button", { name: /Current weather/ }).waitFor();
    let view = await viewFrame(p, "FIRST-PAGE");
    const sandboxUrl = view.parentFrame().url();
    assert.ok(sandboxUrl.startsWith("http://localhost:"), `the sandbox proxy is on the other origin: ${sandboxUrl}`);
    assert.equal(await view.evaluate(() => window.origin), "null", "the View has an opaque origin");

    await view.locator("#city").fill("Lisbon");
    await view.locator("#submit").click();
    await view.locator("#result").filter({ hasText: "Lisbon" }).waitFor({ timeout: 10000 });
    assert.match(await view.locator("#result").textContent(), /"temperature"/);

    await p.getByRole("button", { name: "Dark theme" }).click();
    await view.waitForFunction(() => document.documentElement.getAttribute("data-theme") === "dark", null, { timeout: 5000 });
    await p.screenshot({ path: join(ARTIFACTS, "preview-dark.png") });

    await p.locator("#feedback").fill("make the heading say hello");
    await p.getByRole("button", { name: "Refine" }).click();
    view = await viewFrame(p, "REFINED-PAGE");
    assert.ok(llm.bodies.some((b) => b.includes("make the heading say hello")), "the refinement reached the LLM");
    assert.match(await p.locator("#log").textContent(), /regenerated/);
    await p.screenshot({ path: join(ARTIFACTS, "preview-refined.png") });
    assert.deepEqual(errors, []);
  } finally {
    await p.close();
    proxy.stop();
  }
});

test("the preview page and every template page it shows load with a clean console", async () => {
  const proxy = await startProxy(["--demo", "--provider", "offline"], "preview-console");
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [], failed = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  p.on("console", (m) => { if (m.type() === "error") errors.push(`${m.text()} (${m.location().url})`); });
  p.on("response", (r) => { if (r.status() >= 400) failed.push(`${r.status()} ${r.url()}`); });
  try {
    await p.goto(`${proxy.base}/preview`);
    const buttons = p.locator("nav button");
    await buttons.first().waitFor();
    const names = await buttons.evaluateAll((bs) => bs.map((b) => b.dataset.tool));
    assert.ok(names.length >= 4, "the demo's tools are listed");
    // The page opens the first tool by itself; clicking it again while that happens would
    // replace the frame under the test, so the first one is waited for, the others clicked.
    await p.locator("#status").filter({ hasText: `View connected: ${names[0]}` }).waitFor({ timeout: 10000 });
    for (const name of names) {
      if (name !== names[0]) {
        await p.locator(`nav button[data-tool="${name}"]`).click();
        await p.locator("#status").filter({ hasText: `View connected: ${name}` }).waitFor({ timeout: 10000 });
      }
      const view = p.frames().find((f) => f.parentFrame() && f.parentFrame().parentFrame() === p.mainFrame());
      await view.locator("#tool-form").waitFor();
      if (name === "get_current_weather") {
        await view.getByLabel(/^City/).fill("Lisbon");
        await view.locator("#submit").click();
        await view.locator("#result").getByText("Lisbon").first().waitFor({ timeout: 10000 });
        await p.screenshot({ path: join(ARTIFACTS, "preview-template.png") });
      }
    }
    assert.deepEqual(errors, [], "console errors");
    assert.deepEqual(failed, [], "failed requests");
  } finally {
    await p.close();
    proxy.stop();
  }
});
