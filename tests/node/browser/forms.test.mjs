// The template page as people use it, in headless Chromium under the official AppBridge: forms
// filled and submitted through real controls (rows, fieldsets, variant pickers, the JSON view),
// with the arguments that reach the upstream checked exactly (recorded by the upstream itself or
// by a tee in front of it), a confirmation before destructive calls, and results with images,
// audio, resources and errors. Any console error fails a test.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ARTIFACTS, ROOT, assertCleanConsole, connectClient, launch, openView, startProxy } from "./views.mjs";

const MODULES = join(ROOT, "tests/node/node_modules/@modelcontextprotocol");
const FIXTURE = join(ROOT, "tests/node/schema-fixture.mjs");
const TEE = join(ROOT, "tests/node/tee-upstream.mjs");
const WORK = mkdtempSync(join(tmpdir(), "mcp-gen-ui-forms-"));

/** The tools/call arguments an upstream recorded, in order. */
function recorded(log) {
  return existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
}
async function nextCall(log, count) {
  for (let i = 0; i < 200; i++) {
    const calls = recorded(log);
    if (calls.length > count) return calls[count];
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`no tools/call reached the upstream (${log})`);
}
/** A screenshot of the whole View: the viewport grows to the iframe's height first (Chromium
    paints an iframe's content only within the viewport). */
async function shot(page, name) {
  const height = await page.evaluate(() => Math.ceil(document.querySelector("iframe").getBoundingClientRect().bottom) + 8);
  await page.setViewportSize({ width: 900, height: Math.max(300, Math.min(height, 6000)) });
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.frames()[1].evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`) });
}
async function uiPage(client, tool) {
  return (await client.readResource({ uri: `ui://${tool}` })).contents[0].text;
}

let browser, fixture;
const FIXTURE_LOG = join(WORK, "fixture.jsonl");
before(async () => {
  browser = await launch();
  const proxy = await startProxy(["--upstream", `node ${FIXTURE}`, "--upstream-env", `FIXTURE_LOG=${FIXTURE_LOG}`], "fixture");
  fixture = { proxy, client: await connectClient(proxy.base) };
});
after(async () => {
  await fixture?.client.close();
  fixture?.proxy.stop();
  await browser?.close();
});

test("memory create_entities: two entities, one with two observations, typed in rows", async () => {
  const log = join(WORK, "memory-calls.jsonl"), memory = join(WORK, "memory.jsonl");
  const proxy = await startProxy(["--upstream", `node ${TEE} ${log} node ${join(MODULES, "server-memory/dist/index.js")}`, "--upstream-env", `MEMORY_FILE_PATH=${memory}`], "memory");
  const client = await connectClient(proxy.base);
  const v = await openView(browser, client, await uiPage(client, "create_entities"), { autoHeight: true });
  try {
    const f = v.frame;
    const first = f.getByRole("group", { name: "Entity 1" });
    await first.getByLabel(/^Name/).fill("Ada Lovelace");
    await first.getByLabel(/^Entity type/).fill("person");
    await first.getByLabel("Observation 1", { exact: true }).fill("wrote the first program");
    await first.getByRole("button", { name: "+ Add observation" }).click();
    await first.getByLabel("Observation 2", { exact: true }).fill("worked with Babbage");
    await f.getByRole("button", { name: "+ Add entity" }).click();
    const second = f.getByRole("group", { name: "Entity 2" });
    await second.getByLabel(/^Name/).fill("Analytical Engine");
    await second.getByLabel(/^Entity type/).fill("machine");
    await shot(v.page, "form-memory-create_entities");
    await f.locator("#submit").click();
    const expected = {
      entities: [
        { name: "Ada Lovelace", entityType: "person", observations: ["wrote the first program", "worked with Babbage"] },
        { name: "Analytical Engine", entityType: "machine", observations: [] },
      ],
    };
    assert.deepStrictEqual(await nextCall(log, 0), { name: "create_entities", arguments: expected });
    await f.locator("#result").getByText("Analytical Engine").first().waitFor();
    const stored = readFileSync(memory, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assert.deepStrictEqual(stored.map(({ name, entityType, observations }) => ({ name, entityType, observations })), expected.entities);
    assertCleanConsole(v.errors, "create_entities");
  } finally {
    await v.page.close();
    await client.close();
    proxy.stop();
  }
});

test("filesystem edit_file: two edits in rows, confirmed first (destructiveHint)", async () => {
  const log = join(WORK, "fs-calls.jsonl"), dir = mkdtempSync(join(WORK, "fs-")), file = join(dir, "notes.txt");
  writeFileSync(file, "alpha\nbeta\ngamma\n");
  const proxy = await startProxy(["--upstream", `node ${TEE} ${log} node ${join(MODULES, "server-filesystem/dist/index.js")} ${dir}`], "filesystem");
  const client = await connectClient(proxy.base);
  const v = await openView(browser, client, await uiPage(client, "edit_file"), { autoHeight: true });
  try {
    const f = v.frame;
    await f.getByLabel(/^Path/).fill(file);
    const e1 = f.getByRole("group", { name: "Edit 1" });
    await e1.getByLabel(/^Old text/).fill("alpha");
    await e1.getByLabel(/^New text/).fill("ALPHA");
    await f.getByRole("button", { name: "+ Add edit" }).click();
    const e2 = f.getByRole("group", { name: "Edit 2" });
    await e2.getByLabel(/^Old text/).fill("gamma");
    await e2.getByLabel(/^New text/).fill("GAMMA");
    assert.equal(await f.getByLabel("Dry run", { exact: true }).isChecked(), false, "the default is pre-filled");
    await f.locator("#submit").click();
    const dialog = f.getByRole("alertdialog", { name: "Run edit_file?" });
    await dialog.waitFor();
    const expected = { path: file, edits: [{ oldText: "alpha", newText: "ALPHA" }, { oldText: "gamma", newText: "GAMMA" }], dryRun: false };
    assert.deepStrictEqual(JSON.parse(await dialog.locator("pre").textContent()), expected, "the dialog names the arguments");
    assert.equal(recorded(log).length, 0, "nothing is called before the confirmation");
    await shot(v.page, "form-filesystem-edit_file-confirm");
    await dialog.getByRole("button", { name: "Run edit_file" }).click();
    assert.deepStrictEqual(await nextCall(log, 0), { name: "edit_file", arguments: expected });
    await f.locator("#result .block").first().waitFor();
    assert.equal(readFileSync(file, "utf8"), "ALPHA\nbeta\nGAMMA\n");
    assertCleanConsole(v.errors, "edit_file");
  } finally {
    await v.page.close();
    await client.close();
    proxy.stop();
  }
});

// What the showcase form is filled with below, and must send exactly.
const SHOWCASE = {
  title: "Quarterly review", kind: "showcase", count: 5, ratio: 0.25, priority: "high", level: 2,
  enabled: true, notify: true, due: "2026-03-31", startsAt: "2026-03-31T09:30:00Z",
  contact: "ada@example.com", homepage: "https://example.com/review",
  tags: ["q1", "finance"], scores: [1.5, 2], weekdays: ["mon", "wed"],
  owner: { name: "Ada", email: "ada@example.com" },
  address: { city: "Lisbon", geo: { lat: 38.7, lon: -9.14 } },
  members: [{ name: "Grace" }, { name: "Linus", email: "linus@example.com" }],
  shape: { kind: "rect", width: 3, height: 4 },
  limit: 7,
  target: { path: "/srv/reviews" },
  tree: { label: "root", children: [{ label: "leaf" }], next: { label: "after root" } },
  extra: { any: [1, true] },
  metadata: { team: "core" },
  constructor: "builder",
};

test("schema fixture: every construct, validation before the call, JSON view in sync, exact arguments", async () => {
  const { client } = fixture;
  const v = await openView(browser, client, await uiPage(client, "showcase"), { autoHeight: true });
  const f = v.frame;
  const field = (name) => f.locator(`[data-field="${name}"]`);
  try {
    const start = recorded(FIXTURE_LOG).length;
    // Defaults are pre-filled, const shown, required marked.
    assert.equal(await f.getByLabel(/^Count/).inputValue(), "3");
    assert.equal(await f.getByLabel(/^Priority/).inputValue(), "1", "enum default selected (option index)");
    assert.equal(await f.getByLabel(/^Enabled/).isChecked(), true);
    assert.equal(await f.getByLabel(/^Kind/).first().inputValue(), "showcase");
    assert.equal(await field("title").locator(".req").count(), 1, "required mark");
    assert.equal(await f.getByLabel(/^Count/).getAttribute("max"), "10");
    assert.equal(await f.getByLabel(/^Ratio/).getAttribute("step"), "0.05");
    assert.equal(await f.getByLabel(/^Due/).getAttribute("type"), "date");
    assert.equal(await f.getByLabel(/^Starts at/).getAttribute("type"), "datetime-local");
    assert.equal(await f.getByLabel(/^Contact/).getAttribute("type"), "email");
    assert.equal(await f.getByLabel(/^Homepage/).getAttribute("type"), "url");

    // Validation messages before any call.
    await f.getByLabel(/^Title/).fill("ab");
    await f.getByLabel(/^Count/).fill("11");
    await f.getByLabel(/^Contact/).fill("nope");
    await f.locator("#submit").click();
    await f.locator("#status").filter({ hasText: "Fix the highlighted fields." }).waitFor();
    const errorsShown = async (name) => (await field(name).locator(".field-error").allTextContents()).join(" | ");
    assert.match(await errorsShown("title"), /At least 3 characters/);
    assert.match(await errorsShown("count"), /Must be at most 10/);
    assert.match(await errorsShown("contact"), /Not an email address/);
    assert.match(await errorsShown("owner"), /Required/, "the owner's name is required");
    assert.match(await errorsShown("shape"), /Required/, "the circle's radius is required");
    await shot(v.page, "form-showcase-errors");
    assert.equal(recorded(FIXTURE_LOG).length, start, "an invalid form calls nothing");

    // Every construct, filled like a person would.
    await f.getByLabel(/^Title/).fill("Quarterly review");
    await f.getByLabel(/^Count/).fill("5");
    await f.getByLabel(/^Ratio/).fill("0.25");
    await f.getByLabel(/^Priority/).selectOption({ label: "high" });
    await f.getByLabel(/^Level/).selectOption({ label: "2" });
    await f.getByLabel(/^Notify/).check();
    await f.getByLabel(/^Due/).fill("2026-03-31");
    await f.getByLabel(/^Starts at/).fill("2026-03-31T09:30");
    await f.getByLabel(/^Contact/).fill("ada@example.com");
    await f.getByLabel(/^Homepage/).fill("https://example.com/review");
    await f.getByRole("button", { name: "+ Add tag" }).click();
    await f.getByLabel("Tag 1", { exact: true }).fill("finance");
    await f.getByRole("button", { name: "+ Add tag" }).click();
    await f.getByLabel("Tag 2", { exact: true }).fill("q1");
    await f.getByRole("button", { name: "Move Tag 2 up" }).click();
    assert.equal(await f.getByLabel("Tag 1", { exact: true }).inputValue(), "q1", "reordered");
    await f.getByRole("button", { name: "+ Add score" }).click();
    await f.getByLabel("Score 1", { exact: true }).fill("1.5");
    await f.getByRole("button", { name: "+ Add score" }).click();
    await f.getByLabel("Score 2", { exact: true }).fill("2");
    await field("weekdays").getByLabel("mon", { exact: true }).check();
    await field("weekdays").getByLabel("wed", { exact: true }).check();
    const owner = f.getByRole("group", { name: /^Owner/ });
    await owner.getByLabel(/^Name/).fill("Ada");
    await owner.getByLabel(/^Email/).fill("ada@example.com");
    const address = f.getByRole("group", { name: /^Address/ });
    await address.getByLabel(/^City/).fill("Lisbon");
    await address.getByRole("group", { name: "Geo" }).getByLabel("Lat", { exact: true }).fill("38.7");
    await address.getByRole("group", { name: "Geo" }).getByLabel("Lon", { exact: true }).fill("-9.14");
    await f.getByRole("group", { name: "Person 1" }).getByLabel(/^Name/).fill("Grace");
    await f.getByRole("button", { name: "+ Add person" }).click();
    await f.getByRole("group", { name: "Person 2" }).getByLabel(/^Name/).fill("Temporary");
    await f.getByRole("button", { name: "+ Add person" }).click();
    await f.getByRole("group", { name: "Person 3" }).getByLabel(/^Name/).fill("Linus");
    await f.getByRole("group", { name: "Person 3" }).getByLabel(/^Email/).fill("linus@example.com");
    await f.getByRole("button", { name: "Remove Person 2" }).click();
    assert.equal(await f.getByRole("group", { name: "Person 2" }).getByLabel(/^Name/).inputValue(), "Linus", "renumbered after removal");
    const shape = f.getByRole("group", { name: /^Shape/ });
    await shape.getByRole("combobox", { name: /^Shape/ }).selectOption({ label: "Rectangle" });
    assert.equal(await shape.getByLabel(/^Kind/).inputValue(), "rect", "the variant's const");
    await shape.getByLabel(/^Width/).fill("3");
    await shape.getByLabel(/^Height/).fill("4");
    await f.getByLabel(/^Limit/).fill("7");
    const target = f.getByRole("group", { name: /^Target/ });
    await target.getByRole("combobox", { name: /^Target/ }).selectOption({ label: "Path" });
    await target.getByLabel(/^Path/).fill("/srv/reviews");
    const tree = f.getByRole("group", { name: /^Tree/ });
    await tree.getByLabel(/^Label/).first().fill("root");
    await tree.getByRole("button", { name: "+ Add child" }).click();
    await tree.getByRole("group", { name: "Child 1" }).getByLabel(/^Label/).fill("leaf");
    await tree.getByRole("button", { name: "Add next" }).last().click();
    await tree.getByRole("group", { name: /^Next/ }).last().getByLabel(/^Label/).first().fill("after root");
    await f.getByLabel(/^Extra/).fill('{"any": [1, true]}');
    await f.getByLabel(/^Metadata/).fill('{"team": "core"}');
    await f.getByLabel(/^Constructor/).fill("builder");
    await shot(v.page, "form-showcase-filled");

    // The JSON view shows exactly the form's arguments; edits there come back to the form.
    await f.getByRole("button", { name: "JSON", exact: true }).click();
    assert.deepStrictEqual(JSON.parse(await f.locator("#json-args").inputValue()), SHOWCASE);
    await shot(v.page, "form-showcase-json");
    await f.locator("#json-args").fill(JSON.stringify({ ...SHOWCASE, count: 6 }, null, 2));
    await f.getByRole("button", { name: "Form", exact: true }).click();
    assert.equal(await f.getByLabel(/^Count/).inputValue(), "6", "JSON edits reach the form");
    assert.equal(await f.getByRole("group", { name: "Person 2" }).getByLabel(/^Email/).inputValue(), "linus@example.com");
    await f.locator("#submit").click();
    assert.deepStrictEqual(await nextCall(FIXTURE_LOG, start), { name: "showcase", arguments: { ...SHOWCASE, count: 6 } });
    await f.locator("#result").getByText("Quarterly review").first().waitFor();

    // Arguments the host pushes fill everything: submitting them unchanged sends them exactly.
    const pushed = {
      ...SHOWCASE, title: "Pushed by the host", notify: false, enabled: false, tags: ["x"], weekdays: ["fri"],
      shape: { kind: "circle", radius: 2.5 }, target: "https://example.com/t", limit: null,
      tree: { label: "a", children: [{ label: "b", children: [{ label: "c" }] }], next: { label: "d", next: { label: "e" } } },
      members: [{ name: "Only" }],
    };
    delete pushed.address;
    await v.page.evaluate((a) => window.__bridge.sendToolInput({ arguments: a }), pushed);
    await f.waitForFunction(() => document.querySelector('[name="title"]').value === "Pushed by the host");
    assert.equal(await f.getByRole("combobox", { name: /^Shape/ }).locator("option:checked").textContent(), "Circle");
    await f.locator("#submit").click();
    assert.deepStrictEqual(await nextCall(FIXTURE_LOG, start + 1), { name: "showcase", arguments: pushed });
    assertCleanConsole(v.errors, "showcase");
  } finally {
    await v.page.close();
  }
});

test("destructive tools ask first, naming the tool and the arguments; Cancel calls nothing", async () => {
  const { client } = fixture;
  const v = await openView(browser, client, await uiPage(client, "delete_records"), { autoHeight: true });
  const f = v.frame;
  try {
    const start = recorded(FIXTURE_LOG).length;
    await f.getByText("asks before running").waitFor();
    await f.getByLabel("Id 1", { exact: true }).fill("7");
    await f.getByRole("button", { name: "+ Add id" }).click();
    await f.getByLabel("Id 2", { exact: true }).fill("9");
    await f.getByLabel(/^Reason/).fill("cleanup");
    await f.locator("#submit").click();
    const dialog = f.getByRole("alertdialog", { name: "Run delete_records?" });
    await dialog.waitFor();
    assert.deepStrictEqual(JSON.parse(await dialog.locator("pre").textContent()), { ids: [7, 9], reason: "cleanup" });
    assert.equal(await f.locator("#submit").isDisabled(), true);
    await shot(v.page, "confirm-delete_records");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden" });
    assert.equal(await f.locator("#status").textContent(), "Not run.");
    assert.deepEqual(await v.calls(), [], "Cancel calls nothing");
    await f.locator("#submit").click();
    await dialog.getByRole("button", { name: "Run delete_records" }).click();
    assert.deepStrictEqual(await nextCall(FIXTURE_LOG, start), { name: "delete_records", arguments: { ids: [7, 9], reason: "cleanup" } });
    assertCleanConsole(v.errors, "delete_records");
  } finally {
    await v.page.close();
  }
});

test("results: image and audio inline, resources with their MIME types, copy buttons; errors first", async () => {
  const { client } = fixture;
  let v = await openView(browser, client, await uiPage(client, "render_media"), { autoHeight: true });
  try {
    const f = v.frame;
    await f.locator("#submit").click();
    assert.equal(await f.locator("#confirm").isVisible(), false, "read-only tools do not ask");
    const img = f.locator('#result img[alt="image result"]');
    await img.waitFor();
    await f.waitForFunction(() => document.querySelector('#result img[alt="image result"]').naturalWidth === 24);
    assert.match(await f.locator("#result").textContent(), /Image · image\/png · /);
    assert.equal(await f.locator('#result audio[src^="data:audio/wav;base64,"]').count(), 1);
    assert.match(await f.locator("#result").textContent(), /Resource link · text\/csv/);
    assert.match(await f.locator("#result").textContent(), /Embedded resource · application\/json/);
    assert.match(await f.locator("#result").textContent(), /file:\/\/\/reports\/q1\.csv/);
    await f.waitForFunction(() => document.querySelector('#result img[alt="file:///reports/logo.png"]').naturalWidth === 24);
    await f.locator("#result dl.kv").getByText("1234").waitFor();
    const copy = f.getByRole("button", { name: "Copy link" });
    await copy.click();
    await f.getByRole("button", { name: "Copy link" }).filter({ hasText: "Copied" }).waitFor();
    await shot(v.page, "result-media");
    assertCleanConsole(v.errors, "render_media");
    await v.page.close();

    v = await openView(browser, client, await uiPage(client, "fail"), { autoHeight: true });
    await v.frame.getByLabel(/^Path/).fill("/data/report.csv");
    await v.frame.locator("#submit").click();
    const first = v.frame.locator("#result > *").first();
    await first.waitFor();
    assert.equal(await first.getAttribute("role"), "alert");
    assert.match(await first.getAttribute("class"), /\berror\b/);
    assert.match(await first.textContent(), /Error from fail.*Disk quota exceeded: cannot write \/data\/report\.csv/);
    assert.equal(await v.frame.locator("#status").textContent(), "The tool reported an error.");
    await shot(v.page, "result-error");
    assertCleanConsole(v.errors, "fail");
  } finally {
    await v.page.close();
  }
});
