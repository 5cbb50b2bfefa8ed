// host.js: a call's progress on the status line while it runs (a task's status, when the
// service runs the tool as one), cleared by its answer.
import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { load } from "./load.mjs";
import { variants } from "./served.mjs";

for (const [where, page] of variants(["values.js", "dom.js", "host.js"], { $: () => ({}), meta: { name: "research" }, McpGenUiRuntime: { App: function App() {} } })) {
  describe(where, () => {
    test("progressNote: the message, and how far when the total is known", () => {
      assert.equal(page.progressNote({ progress: 1, message: "Gathering sources..." }), " Gathering sources...");
      assert.equal(page.progressNote({ progress: 2, total: 4, message: "Analyzing content..." }), " Analyzing content... (50%)");
      assert.equal(page.progressNote({ progress: 1, total: 3 }), " (33%)");
      assert.equal(page.progressNote({ progress: 7, total: 4 }), " (100%)", "never past the whole");
      assert.equal(page.progressNote({ progress: 3 }), "", "a count without a total says nothing");
      assert.equal(page.progressNote({ progress: 3, total: 0 }), "");
      assert.equal(page.progressNote({ progress: 1, message: { text: "not a string" } }), "");
      assert.equal(page.progressNote({ progress: 1, message: "  two\n\tlines  " }), " two lines", "one line");
      assert.equal(page.progressNote({ progress: 1, message: "x".repeat(500) }).length, 201, "a long message cut");
      assert.equal(page.progressNote(undefined), "");
    });
  });
}

test("run: the status line follows the call's progress, and its answer replaces it", async () => {
  const status = { textContent: "" }, submit = { disabled: false }, shown = [];
  const page = load(["values.js", "dom.js", "host.js"], {
    $: () => ({}), meta: { name: "research" }, McpGenUiRuntime: { App: function App() {} },
    statusEl: status, submitBtn: submit, showResult: (r) => shown.push(r), showFailure: (m) => shown.push(m),
  });
  const calls = [];
  let settle;
  page.app = { callServerTool: (p, options) => { calls.push({ p, options }); return new Promise((ok) => { settle = ok; }); } };
  page.run({ topic: "tides" });
  assert.equal(status.textContent, "Running research\u2026");
  assert.equal(submit.disabled, true);
  assert.equal(typeof calls[0].options.onprogress, "function", "the call asks for progress");
  calls[0].options.onprogress({ progress: 1, message: "Gathering sources..." });
  assert.equal(status.textContent, "Running research\u2026 Gathering sources...");
  calls[0].options.onprogress({ progress: 2, message: "Analyzing content..." });
  assert.equal(status.textContent, "Running research\u2026 Analyzing content...", "each report replaces the one before");
  settle({ content: [{ type: "text", text: "report" }] });
  await new Promise((r) => setTimeout(r, 0));
  assert.equal(status.textContent, "Done.");
  assert.equal(submit.disabled, false);
  assert.equal(shown.length, 1);
});
