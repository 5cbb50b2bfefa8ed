// Issue 43: no blank wait. A model at a hosted pace that writes the visible markup first: the
// host's first read comes back as soon as the pace shows the page cannot be done within the
// budget, the provisional page shows the model's markup as it streams (inert: nothing of it
// runs, its controls take no input), and the written page replaces it once whole, showing the
// call. What the person typed in the template's form goes into the written page.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  ARTIFACTS, assertCleanConsole, assertHostileInert, connectClient, hostileMarkup, launch, openView, pacedOpenAi, startCanary, startProxy,
  markupFirstPage,
} from "./views.mjs";

// About 1,500 tokens, style and script last: ~10 s at 150 tokens a second.
const HEADING = "Weather, as it is being written";
const WRITTEN = markupFirstPage(HEADING, 260);

let browser, llm;
before(async () => {
  browser = await launch();
  llm = await pacedOpenAi((body) => (body.includes("rich or minimal") ? "rich" : WRITTEN), { first: 1.5, tps: 150 });
});
after(async () => { await browser?.close(); llm?.close(); });

/** When the model's stream had sent `text` whole. */
function writtenAt(req, text) {
  const end = req.text.indexOf(text) + text.length;
  return req.sent.find((s) => s.upto >= end)?.at;
}

async function proxyWithDefaultBudget(name) {
  const cfg = join(ARTIFACTS, `${name}-config.json`);
  // The default read budget (15 s): the pace, not the budget, ends the first read's wait.
  writeFileSync(cfg, JSON.stringify({ generation: { timeoutMs: 15000 } }));
  return startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url, "--config", cfg], name);
}

test("the model's markup is on screen as it is written, inert, and the whole page replaces it with the call", async () => {
  const proxy = await proxyWithDefaultBudget("streamed");
  const client = await connectClient(proxy.base);
  try {
    const t0 = Date.now();
    const res = await client.readResource({ uri: "ui://get_current_weather" });
    const waited = Date.now() - t0;
    const content = res.contents[0];
    assert.equal(content._meta["mcp-gen-ui"].provisional, true, "a model this slow cannot write the page within the budget");
    assert.ok(waited < 10000, `the read did not wait out its 15 s budget (${waited} ms)`);
    console.log(`# first read answered after ${waited} ms (budget 15000 ms)`);
    const args = { city: "Oslo" };
    const result = await client.callTool({ name: "get_current_weather", arguments: args });
    const { page, frame, errors } = await openView(browser, client, content.text);
    await page.evaluate(([a, r]) => { window.__bridge.sendToolInput({ arguments: a }); window.__bridge.sendToolResult(r); }, [args, result]);

    // The heading as the model wrote it, in the provisional page, while the model still writes.
    const heading = frame.locator("#mcp-gen-ui-preview h1", { hasText: HEADING });
    await heading.waitFor({ timeout: 30000 });
    const onScreen = Date.now();
    const gen = llm.requests.find((r) => !r.body.includes("rich or minimal") && r.body.includes("get_current_weather"));
    const wrote = writtenAt(gen, `${HEADING}</h1>`);
    assert.ok(wrote, "the heading was sent");
    assert.equal(gen.end, null, "the heading is shown before the model has finished the page");
    console.log(`# first heading on screen ${onScreen - wrote} ms after the model wrote it`);
    // Inert: nothing of it runs, its controls take no input, nothing of it has an id of the page's.
    assert.equal(await frame.evaluate(() => window.__writtenRan), undefined, "no script of the partial page ran");
    const preview = frame.locator("#mcp-gen-ui-preview");
    assert.equal(await preview.getAttribute("inert"), "", "the preview takes no input");
    assert.equal(await preview.locator("script, style, img, iframe, a[href], [onclick], [src]").count(), 0);
    assert.equal(await frame.locator("#written-marker").count(), 0, "the page's own elements are not in place yet");
    if ((await preview.locator("input").count()) > 0) assert.ok(await preview.locator("input").first().isDisabled());
    // The template's form still works meanwhile, with the call it was opened for.
    await frame.locator("#result").getByText("Oslo").first().waitFor({ timeout: 5000 });
    await page.screenshot({ path: join(ARTIFACTS, "streamed-partial.png") });

    // The whole page, once checked, takes its place with the call.
    await frame.locator("#written-marker").waitFor({ timeout: 60000 });
    const shownAt = Date.now();
    assert.ok(gen.end && !gen.closed, "the page was streamed to its end");
    console.log(`# whole page on screen ${shownAt - gen.end} ms after the model's end`);
    assert.equal(await frame.evaluate(() => window.__writtenRan), true, "the checked page runs");
    assert.equal(await frame.locator("#mcp-gen-ui-preview").count(), 0);
    await frame.locator("#result").getByText("Oslo").first().waitFor({ timeout: 5000 });
    assert.equal(await frame.locator("#city").inputValue(), "Oslo");
    assert.equal(llm.requests.filter((r) => !r.body.includes("rich or minimal") && r.body.includes("get_current_weather")).length, 1,
      "one page written");
    await page.screenshot({ path: join(ARTIFACTS, "streamed-written.png") });
    assertCleanConsole(errors, "streamed");
    await page.close();
  } finally {
    await client.close();
    proxy.stop();
  }
});

test("what a person typed in the template's form goes into the written page", async () => {
  const proxy = await proxyWithDefaultBudget("streamed-typed");
  const client = await connectClient(proxy.base);
  try {
    const content = (await client.readResource({ uri: "ui://get_forecast" })).contents[0];
    assert.equal(content._meta["mcp-gen-ui"].provisional, true);
    const { page, frame, errors } = await openView(browser, client, content.text);
    await frame.locator("#mcp-gen-ui-writing").waitFor({ timeout: 10000 });
    // The template's own field for `city`, typed into before the page is written.
    const field = frame.locator('form [name="city"]').first();
    await field.fill("Tromsø");
    // A person who typed is asked before the page changes under them.
    await frame.locator("#mcp-gen-ui-show-written").click({ timeout: 60000 });
    await frame.locator("#written-marker").waitFor({ timeout: 10000 });
    assert.equal(await frame.locator("#city").inputValue(), "Tromsø", "the typed city carried over");
    assertCleanConsole(errors, "streamed-typed");
    await page.close();
  } finally {
    await client.close();
    proxy.stop();
  }
});

// Issue 52: the checks above hold whatever the product does when the partial page has nothing
// hostile in it. Here it has: right after its heading, a script, an image with onerror, a
// javascript: link, a button with onclick, a form with an action, an animated svg, a style and
// an icon loading from a canary, a frame and an input; the model is still writing (the page,
// with its handlers, would be refused once whole) while the provisional page shows it.
test("hostile markup streamed after the heading neither runs, loads nor takes input in the provisional page", async () => {
  const canary = await startCanary();
  const heading = "Weather, with hostile markup after it";
  const hostile = await pacedOpenAi((body) => (body.includes("rich or minimal") ? "rich"
    : markupFirstPage(heading, 600, { afterHeading: hostileMarkup(canary.url) })), { first: 1, tps: 400 });
  const cfg = join(ARTIFACTS, "streamed-hostile-config.json");
  writeFileSync(cfg, JSON.stringify({ generation: { timeoutMs: 1500 } }));
  const proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", hostile.url, "--config", cfg], "streamed-hostile");
  const client = await connectClient(proxy.base);
  try {
    const content = (await client.readResource({ uri: "ui://get_current_weather" })).contents[0];
    assert.equal(content._meta["mcp-gen-ui"].provisional, true);
    const { page, frame } = await openView(browser, client, content.text);
    await frame.locator("#mcp-gen-ui-preview h1", { hasText: heading }).waitFor({ timeout: 30000 });
    await assertHostileInert(page, frame, canary);
    const gen = hostile.requests.find((r) => !r.body.includes("rich or minimal"));
    assert.equal(gen.end, null, "checked while the model was still writing");
    assert.equal(await frame.locator("#mcp-gen-ui-preview").count(), 1, "the preview was still on screen");
    await page.screenshot({ path: join(ARTIFACTS, "streamed-hostile.png") });
    await page.close();
  } finally {
    await client.close();
    proxy.stop();
    hostile.close();
    canary.close();
  }
});

// Issue 51: forms named like document's own methods. In a browser `<form name="open">` is
// `document.open` (named access), so a preview that kept the name left the provisional page
// unable to put the written page in its place; a written page with `<form name="close">` did the
// same to the runtime's `document.close()`.
test("forms named open, createElement, write and close in the page do not stop the written page from taking its place", async () => {
  const heading = "Weather, with forms named like document methods";
  const named = `<form name="open"><input name="createElement" value="x"></form><form name="createElement"><p>named forms</p></form>
<form name="write"></form><form name="close"></form>`;
  const llmNamed = await pacedOpenAi((body) => (body.includes("rich or minimal") ? "rich"
    : markupFirstPage(heading, 200, { afterHeading: named })), { first: 1, tps: 300 });
  const cfg = join(ARTIFACTS, "streamed-named-config.json");
  writeFileSync(cfg, JSON.stringify({ generation: { timeoutMs: 1500 } }));
  const proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llmNamed.url, "--config", cfg], "streamed-named");
  const client = await connectClient(proxy.base);
  try {
    const content = (await client.readResource({ uri: "ui://get_current_weather" })).contents[0];
    assert.equal(content._meta["mcp-gen-ui"].provisional, true);
    const args = { city: "Oslo" };
    const result = await client.callTool({ name: "get_current_weather", arguments: args });
    const { page, frame, errors } = await openView(browser, client, content.text);
    await page.evaluate(([a, r]) => { window.__bridge.sendToolInput({ arguments: a }); window.__bridge.sendToolResult(r); }, [args, result]);
    // The named forms are in the preview, and document's methods are still its own.
    await frame.locator("#mcp-gen-ui-preview", { hasText: "named forms" }).waitFor({ timeout: 30000 });
    assert.deepEqual(await frame.evaluate(() => ["open", "write", "close", "createElement", "getElementById"].map((m) => typeof document[m])),
      ["function", "function", "function", "function", "function"], "document's methods are its own in the provisional page");
    await frame.locator("#written-marker").waitFor({ timeout: 60000 });
    assert.equal(await frame.evaluate(() => window.__writtenRan), true, "the written page runs");
    assert.equal(await frame.locator("#mcp-gen-ui-writing").count(), 0, "the provisional page is gone");
    await frame.locator("#result").getByText("Oslo").first().waitFor({ timeout: 5000 });
    assertCleanConsole(errors, "streamed-named");
    await page.close();
  } finally {
    await client.close();
    proxy.stop();
    llmNamed.close();
  }
});
