// Issue 31: a View's own calls are checked like any call. In the /preview host, bob's page of
// get_current_weather calls the tool from inside the sandbox: a city the rules refuse gets the
// refusal (and nothing reaches the upstream), another city the result; the tool bob may not
// see is not in the preview's list at all.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ARTIFACTS, fakeOpenAi, launch, startProxy } from "./views.mjs";

const BOB = "bob-policy-token-9c1e4f2a";

const page = `<!doctype html><html><head><meta charset="utf-8"><title>POLICY-PAGE</title></head>
<body><h1 id="marker">POLICY-PAGE</h1>
<form id="f"><label for="city">City</label> <input id="city" name="city"> <button id="submit">Look up</button></form>
<div id="result"></div>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
const app = new App({ name: "POLICY-PAGE", version: "1.0.0" });
const out = document.getElementById("result");
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const r = await app.callServerTool({ name: "get_current_weather", arguments: { city: document.getElementById("city").value } });
    out.textContent = "RESULT " + JSON.stringify(r.structuredContent ?? r.content);
  } catch (err) {
    out.textContent = "REFUSED " + String(err.message ?? err);
  }
});
</script></body></html>`;

const rules = {
  policy: {
    default: "deny",
    rules: [
      { name: "no secret city", tools: ["*"], effect: "deny", when: "has(args.city) && args.city == 'Secret'" },
      { name: "bob weather", tools: ["get_current_weather"], effect: "allow", when: "principal.name == 'bob'" },
      { name: "everyone the ui tools", tools: ["_ui_*"], kinds: ["tools"], effect: "allow" },
    ],
  },
};

let browser, llm, proxy;
before(async () => {
  browser = await launch();
  llm = await fakeOpenAi((body) => (body.includes("rich or minimal") ? "rich" : page));
  const dir = mkdtempSync(join(tmpdir(), "policy-"));
  writeFileSync(join(dir, "config.json"), JSON.stringify(rules));
  proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url, "--auth-token", `bob:${BOB}`, "--config", join(dir, "config.json")], "preview-policy");
});
after(async () => { proxy?.stop(); await browser?.close(); llm?.close(); });

async function viewFrame(p) {
  for (let i = 0; i < 100; i++) {
    for (const f of p.frames()) {
      const parent = f.parentFrame();
      if (parent && parent.parentFrame() === p.mainFrame()) {
        const text = await f.locator("#marker").textContent({ timeout: 200 }).catch(() => null);
        if (text === "POLICY-PAGE") return f;
      }
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no View frame showing POLICY-PAGE; status: ${await p.locator("#status").textContent()}`);
}

test("a View's call is decided by the rules with its arguments; what bob may not see is not listed", async () => {
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  try {
    await p.goto(`${proxy.base}/preview#token=${BOB}`);
    await p.getByRole("button", { name: /Current weather/ }).waitFor({ timeout: 10000 });
    assert.equal(await p.locator("nav button").count(), 1, "bob is shown the one tool the rules let him see");
    await p.locator("#status").filter({ hasText: "View connected: get_current_weather" }).waitFor({ timeout: 15000 });
    const view = await viewFrame(p);

    await view.locator("#city").fill("Secret");
    await view.locator("#submit").click();
    await view.locator("#result").filter({ hasText: "REFUSED" }).waitFor({ timeout: 10000 });
    assert.match(await view.locator("#result").textContent(), /not allowed/);

    await view.locator("#city").fill("Lisbon");
    await view.locator("#submit").click();
    await view.locator("#result").filter({ hasText: "RESULT" }).waitFor({ timeout: 10000 });
    assert.match(await view.locator("#result").textContent(), /Lisbon/);
    await p.screenshot({ path: join(ARTIFACTS, "preview-policy.png") });

    const metrics = await (await fetch(`${proxy.base}/metrics`, { headers: { authorization: `Bearer ${BOB}` } })).text();
    assert.match(metrics, /mcp_gen_ui_policy_decisions_total\{outcome="deny",rule="no secret city"\} 1/);
  } finally {
    await p.close();
  }
});
