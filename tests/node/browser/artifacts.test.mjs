// Issue 14 item 5 in the browser: with `results.shaping: artifacts`, a result whose files should
// never reach the model shows them in the template page (official AppBridge, Debian Chromium):
// each file named with its type and size, a preview, and a download link carrying its bytes.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, assertCleanConsole, connectClient, launch, openView, startProxy } from "./views.mjs";

const PYTHON = join(ROOT, "tests/.venv/bin/python");
const UPSTREAM = join(ROOT, "tests/e2e/artifact_upstream.py");

let browser, proxy, client;
before(async () => {
  const cfg = join(mkdtempSync(join(tmpdir(), "mcp-gen-ui-artifacts-")), "config.json");
  writeFileSync(cfg, JSON.stringify({ results: { shaping: "artifacts" } }));
  browser = await launch();
  proxy = await startProxy(["--upstream", `${PYTHON} ${UPSTREAM}`, "--config", cfg], "artifacts");
  client = await connectClient(proxy.base);
});
after(async () => {
  await client?.close();
  proxy?.stop();
  await browser?.close();
});

test("file artifacts: listed with type and size, previewed, downloadable, kept from the model", async () => {
  const direct = await client.callTool({ name: "report", arguments: { rows: 2 } });
  assert.doesNotMatch(direct.content[0].text, /Y2l0eSxoaWdo/, "the model's content carries no file bytes");
  const html = (await client.readResource({ uri: "ui://report" })).contents[0].text;
  const v = await openView(browser, client, html, { autoHeight: true });
  try {
    const f = v.frame;
    await f.locator("#submit").click();
    const files = f.locator("#result .files");
    await files.waitFor();
    assert.match(await files.textContent(), /Files \(1\)/);
    const entry = files.locator("details.file").first();
    assert.match(await entry.locator("summary").textContent(), /report\.csv · text\/csv · 27 bytes/);
    await entry.locator("summary").click();
    const link = entry.getByRole("link", { name: "Download" });
    assert.equal(await link.getAttribute("download"), "report.csv");
    assert.match(await link.getAttribute("href"), /^data:text\/csv;base64,Y2l0eSxoaWdo/);
    assert.match(await entry.textContent(), /Lisbon,21/, "the CSV is previewed as text");
    assertCleanConsole(v.errors, "report");
  } finally {
    await v.page.close();
  }
});
