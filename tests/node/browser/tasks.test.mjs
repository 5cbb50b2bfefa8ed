// Issue 50: a tool that runs only as a task (server-everything's simulate-research-query,
// taskSupport "required", about 4 s through four statuses), called from its template page in
// the official AppBridge host, which does not speak tasks. The service runs the call as a task
// (the bridge) and sends the task's status as progress of the call; the page's call asks for
// progress, the host forwards it to the View under the View's token, and the page shows each
// status while the call runs, then the report.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ARTIFACTS, ROOT, assertCleanConsole, connectClient, launch, openView, startProxy } from "./views.mjs";

const EVERYTHING = join(ROOT, "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const TOOL = "simulate-research-query";
const STAGES = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."];

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

test("a task-only tool's template page shows the task's status while it runs, then its result", async () => {
  const proxy = await startProxy(["--upstream", `node ${EVERYTHING} stdio`], "tasks");
  const client = await connectClient(proxy.base);
  try {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === TOOL);
    assert.ok(tool, `${TOOL} is listed`);
    assert.equal(tool.execution?.taskSupport, undefined, "to a host without tasks it is a plain tool");
    const html = (await client.readResource({ uri: `ui://${TOOL}` })).contents[0].text;
    const { page, frame, errors, calls } = await openView(browser, client, html);
    // Every text the status line shows, in order, and what the result area held meanwhile.
    await frame.evaluate(() => {
      const status = document.getElementById("status"), result = document.getElementById("result");
      window.__statuses = [];
      new MutationObserver(() => window.__statuses.push({ status: status.textContent, result: result.textContent }))
        .observe(status, { childList: true, characterData: true, subtree: true });
    });
    const topic = `lighthouses of the Lofoten ${Date.now().toString(36)}`;
    await frame.locator('[name="topic"]').fill(topic);
    const started = Date.now();
    await frame.locator("#submit").click();

    // While the call runs: a status of the task on screen, before any result.
    const shown = await frame.waitForFunction((stages) => {
      const s = document.getElementById("status").textContent;
      return stages.some((t) => s.includes(t)) && { status: s, result: document.getElementById("result").textContent };
    }, STAGES, { timeout: 10000, polling: 50 }).then((h) => h.jsonValue()).catch(async () => {
      const sent = (await calls()).at(-1);
      const forwarded = await page.evaluate(() => window.__hostLog.progress);
      throw new Error(`no task status on screen while the call ran; status: ${await frame.locator("#status").textContent()}; ` +
        `the View's call: ${JSON.stringify(sent)}; progress the host forwarded: ${JSON.stringify(forwarded)}`);
    });
    assert.match(shown.status, new RegExp(`^Running ${TOOL}\u2026 `), shown.status);
    assert.ok(!shown.result.includes(topic), `the status showed before the result: ${JSON.stringify(shown)}`);
    await page.screenshot({ path: join(ARTIFACTS, "task-running.png") });

    // Then the report, naming the topic, and the status line says the call is done.
    await frame.locator("#result").getByText(`Research Report: ${topic}`).first().waitFor({ timeout: 20000 })
      .catch(async () => { throw new Error(`the report never showed; status: ${await frame.locator("#status").textContent()}; result: ${await frame.locator("#result").textContent()}`); });
    const took = Date.now() - started;
    assert.equal(await frame.locator("#status").textContent(), "Done.", "the status is cleared with the result");
    await page.screenshot({ path: join(ARTIFACTS, "task-done.png") });

    const [call] = (await calls()).filter((c) => c.name === TOOL);
    assert.equal(call.arguments.topic, topic, "the form's topic");
    assert.ok(!call.arguments.ambiguous, "not the ambiguous query (it would ask for a clarification)");
    assert.equal(typeof call._meta?.progressToken, "number", "the View's call asks for progress");
    const statuses = await frame.evaluate(() => window.__statuses);
    const during = statuses.filter((s) => !s.result.includes(topic)).map((s) => s.status);
    const stages = STAGES.filter((t) => during.some((s) => s.includes(t)));
    assert.ok(stages.length >= 2, `the statuses followed the task: ${JSON.stringify(during)}`);
    const forwarded = await page.evaluate(() => window.__hostLog.progress);
    // What the host forwarded is what the service sent it for the call (the task's statuses),
    // and there was some: an empty list would pass any check of each item.
    assert.ok(forwarded.length >= 2, `the service's progress reached the View: ${JSON.stringify(forwarded)}`);
    assert.ok(forwarded.every((p) => STAGES.includes(p.message)), `each is a status of the task: ${JSON.stringify(forwarded)}`);
    assert.ok(forwarded.every((p) => p.progressToken === call._meta.progressToken), "progress went to the View under its own token");
    console.log(`# ${TOOL}: ${took} ms; statuses shown while it ran: ${JSON.stringify([...new Set(during)])}`);
    assertCleanConsole(errors, "task page");
    await page.close();
  } finally {
    await client.close();
    proxy.stop();
  }
});
