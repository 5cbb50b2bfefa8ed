// Issue 21, item 2: the template page as if it were the host's own, in Chromium under the
// official AppBridge: the host's standardized CSS variables paint it (its own palette without
// them), its locale and time zone format numbers, full screen is offered for a large result
// when the host lists it, and a file is saved through ui/download-file when the host can.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, assertCleanConsole, connectClient, launch, openView, startProxy } from "./views.mjs";

const HOST_VARS = {
  "--color-background-primary": "rgb(250, 240, 230)",
  "--color-text-primary": "rgb(20, 40, 60)",
  "--color-border-primary": "rgb(200, 100, 50)",
  "--font-sans": "Georgia, serif",
};

let browser, demo, demoClient;
before(async () => {
  browser = await launch();
  demo = await startProxy(["--demo", "--provider", "offline"], "host-look");
  demoClient = await connectClient(demo.base);
});
after(async () => { await demoClient?.close(); demo?.stop(); await browser?.close(); });

async function templatePage(tool) {
  return (await demoClient.readResource({ uri: `ui://${tool}` })).contents[0].text;
}

const colours = (frame) => frame.evaluate(() => {
  const b = getComputedStyle(document.body), i = getComputedStyle(document.querySelector("input"));
  return { bg: b.backgroundColor, fg: b.color, border: i.borderTopColor, font: b.fontFamily };
});

test("the host's variables paint the page; without them its own palette", async () => {
  const html = await templatePage("get_current_weather");
  const hosted = await openView(browser, demoClient, html, { hostContext: { styles: { variables: HOST_VARS } } });
  const plain = await openView(browser, demoClient, html);
  try {
    await hosted.frame.locator("body[data-ready=true]").waitFor();
    await plain.frame.locator("body[data-ready=true]").waitFor();
    const h = await colours(hosted.frame), p = await colours(plain.frame);
    assert.equal(h.bg, HOST_VARS["--color-background-primary"]);
    assert.equal(h.fg, HOST_VARS["--color-text-primary"]);
    assert.equal(h.border, HOST_VARS["--color-border-primary"]);
    assert.match(h.font, /Georgia/);
    assert.equal(p.bg, "rgb(255, 255, 255)", "its own palette");
    assert.equal(p.fg, "rgb(27, 31, 36)");
    assertCleanConsole([...hosted.errors, ...plain.errors], "host look");
  } finally {
    await hosted.page.close();
    await plain.page.close();
  }
});

test("locale formats numbers; full screen is offered for a large result when the host lists it", async () => {
  const html = await templatePage("get_forecast");
  const ctx = { locale: "de-DE", timeZone: "Europe/Berlin", availableDisplayModes: ["inline", "fullscreen"] };
  const v = await openView(browser, demoClient, html, { hostContext: ctx });
  const inline = await openView(browser, demoClient, html);
  try {
    for (const view of [v, inline]) {
      await view.frame.locator("body[data-ready=true]").waitFor();
      await view.frame.getByLabel(/^City/).fill("Lisbon");
      await view.frame.getByLabel(/^Days/).fill("14");
      await view.frame.locator("#submit").click();
      await view.frame.locator("#result table").waitFor({ timeout: 10000 });
    }
    // The same call in both: each decimal the en-US View shows with a point, the de-DE View
    // shows with a comma, and nothing else differs (no grouping: "1,234" in en-US would fail).
    const nums = await v.frame.locator("#result td.num span").allTextContents();
    const en = await inline.frame.locator("#result td.num span").allTextContents();
    assert.equal(nums.length, en.length, "the same table in both");
    const decimals = en.map((e, i) => [e, nums[i]]).filter(([e]) => /^-?\d+\.\d+$/.test(e));
    assert.ok(decimals.length >= 3, `decimals to compare: ${en.slice(0, 8)}`);
    for (const [e, d] of decimals) assert.equal(d, e.replace(".", ","), `${e} in en-US is ${d} in de-DE`);
    for (const [e, d] of en.map((x, i) => [x, nums[i]]).filter(([x]) => /^-?\d+$/.test(x))) assert.equal(d, e, "whole numbers are not grouped");
    const full = v.frame.getByRole("button", { name: "Show the result in full screen" });
    await full.click();
    await v.frame.locator("html[data-display-mode=fullscreen]").waitFor();
    assert.deepEqual(await v.page.evaluate(() => window.__hostLog.modes), ["fullscreen"]);
    assert.match(await full.textContent(), /Exit full screen/);
    assert.equal(await inline.frame.getByRole("button", { name: "Show the result in full screen" }).count(), 0, "not offered where the host has no full screen");
    assertCleanConsole([...v.errors, ...inline.errors], "locale and full screen");
  } finally {
    await v.page.close();
    await inline.page.close();
  }
});

test("a file is saved through ui/download-file when the host declares it", async () => {
  const cfg = join(mkdtempSync(join(tmpdir(), "mcp-gen-ui-look-")), "config.json");
  writeFileSync(cfg, JSON.stringify({ results: { shaping: "artifacts" } }));
  const proxy = await startProxy(["--upstream", `${join(ROOT, "tests/.venv/bin/python")} ${join(ROOT, "tests/e2e/artifact_upstream.py")}`, "--config", cfg], "host-look-files");
  const client = await connectClient(proxy.base);
  const html = (await client.readResource({ uri: "ui://report" })).contents[0].text;
  const v = await openView(browser, client, html, { capabilities: { downloadFile: {} } });
  try {
    await v.frame.locator("#submit").click();
    const entry = v.frame.locator("#result .files details.file").first();
    await entry.waitFor();
    await entry.locator("summary").click();
    assert.equal(await entry.getByRole("link", { name: "Download" }).count(), 0, "no data link when the host saves files");
    await entry.getByRole("button", { name: "Download report.csv" }).click();
    await v.frame.locator("#status").filter({ hasText: "Saved report.csv" }).waitFor();
    const downloads = await v.page.evaluate(() => window.__hostLog.downloads);
    assert.equal(downloads.length, 1);
    const r = downloads[0][0];
    assert.equal(r.type, "resource");
    assert.equal(r.resource.mimeType, "text/csv");
    assert.match(r.resource.blob, /^Y2l0eSxoaWdo/);
    assert.match(r.resource.uri, /report\.csv$/);
    assertCleanConsole(v.errors, "download");
  } finally {
    await v.page.close();
    await client.close();
    proxy.stop();
  }
});
