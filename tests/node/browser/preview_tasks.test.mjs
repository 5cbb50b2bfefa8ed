// Issue 63: the preview passes a call's progress to the View, as hosts do, so the template page
// of a task-only tool (server-everything's simulate-research-query, run by the service as a task
// for the preview, which speaks no tasks) shows the task's status while it runs, then the report.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ARTIFACTS, ROOT, launch, startProxy } from "./views.mjs";

const EVERYTHING = join(ROOT, "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const STAGES = ["Gathering sources", "Analyzing content", "Synthesizing findings", "Generating report"];

let browser, proxy;
before(async () => {
  browser = await launch();
  proxy = await startProxy(["--upstream", `node ${EVERYTHING} stdio`], "preview-tasks");
});
after(async () => { proxy?.stop(); await browser?.close(); });

async function viewFrame(p) {
  for (let i = 0; i < 150; i++) {
    for (const f of p.frames()) {
      const parent = f.parentFrame();
      if (parent && parent.parentFrame() === p.mainFrame() && (await f.locator('[name="topic"]').count().catch(() => 0)) > 0) return f;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no View frame with the research form; status: ${await p.locator("#status").textContent()}`);
}

test("the preview's template page shows a bridged task's status while it runs", async () => {
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  try {
    await p.goto(`${proxy.base}/preview`);
    await p.locator("nav button").filter({ hasText: /research/i }).first().click({ timeout: 15000 });
    const view = await viewFrame(p);
    await view.evaluate(() => {
      const status = document.getElementById("status");
      window.__statuses = [];
      new MutationObserver(() => window.__statuses.push(status.textContent)).observe(status, { childList: true, characterData: true, subtree: true });
    });
    const topic = `tide pools ${Date.now().toString(36)}`;
    await view.locator('[name="topic"]').fill(topic);
    await view.locator("#submit").click();
    await view.waitForFunction((stages) => stages.some((s) => document.getElementById("status").textContent.includes(s)), STAGES, { timeout: 15000, polling: 50 })
      .catch(async () => { throw new Error(`no task status on screen; status: ${await view.locator("#status").textContent()}`); });
    await p.screenshot({ path: join(ARTIFACTS, "preview-task-running.png") });
    await view.locator("#result").getByText(`Research Report: ${topic}`).first().waitFor({ timeout: 20000 });
    const seen = await view.evaluate(() => window.__statuses);
    // Each status, the first included (the server sets it before its answer names the task).
    for (const stage of STAGES) assert.ok(seen.some((s) => s.includes(stage)), `${stage} shown: ${JSON.stringify(seen)}`);
  } finally {
    await p.close();
  }
});
