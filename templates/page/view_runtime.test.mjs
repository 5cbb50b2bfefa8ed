// The View runtime every page carries ahead of its own script (templates/runtime.js, then
// apps_sdk.js, as actors/build.rs joins them), run in a context with a stand-in window: the
// ui/initialize handshake and the App API the pages use, over postMessage with a fake host, and
// over window.openai. With SERVED_PAGE (served.mjs), also the runtime as that page carries it.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import vm from "node:vm";
import { plain } from "./load.mjs";
import { runtimes } from "./served.mjs";

/** A frame for the runtime: its parent (the host), its root element, its message listeners. */
function frame(script, extra = {}) {
  const posted = [];
  const listeners = new Map();
  const parent = { postMessage: (message, origin) => posted.push({ message: plain(message), origin }) };
  const attrs = {}, props = {};
  const root = {
    setAttribute: (k, v) => { attrs[k] = String(v); },
    removeAttribute: (k) => { delete attrs[k]; },
    style: { setProperty: (k, v) => { props[k] = v; }, removeProperty: (k) => { delete props[k]; } },
    scrollWidth: 320.4, scrollHeight: 200,
  };
  const document = { documentElement: root, head: null, getElementById: () => null };
  const context = vm.createContext({ document, parent, console, setTimeout, clearTimeout, ...extra });
  context.window = context;
  context.addEventListener = (type, fn) => listeners.set(type, [...(listeners.get(type) || []), fn]);
  context.removeEventListener = (type, fn) => listeners.set(type, (listeners.get(type) || []).filter((f) => f !== fn));
  vm.runInContext(script, context, { filename: "runtime" });
  /** A message event as the browser gives it: from `source` (the parent unless said). */
  const deliver = (data, source = parent) => (listeners.get("message") || []).forEach((fn) => fn({ source, data }));
  const sent = (method) => posted.map((p) => p.message).filter((m) => m.method === method);
  return { context, posted, deliver, sent, attrs, props, listeners };
}

const HOST_CONTEXT = { theme: "dark", locale: "de-DE", displayMode: "inline", availableDisplayModes: ["inline", "fullscreen"],
  containerDimensions: { maxHeight: 600 }, safeAreaInsets: { top: 4, right: 0, bottom: 0, left: 0 } };

/** The page's App, connected to the fake host: ui/initialize asked and answered. */
async function connected(script) {
  const f = frame(script);
  const app = new f.context.McpGenUiRuntime.App({ name: "mcp-gen-ui-template", version: "7" });
  const ready = app.connect();
  f.ready = ready;
  f.app = app;
  return f;
}

for (const [where, script] of runtimes()) {
  describe(where, () => {
    test("connect: ui/initialize to the parent, answered by it alone; then initialized and the size", async () => {
      const f = await connected(script);
      const { app } = f;
      const [init] = f.sent("ui/initialize");
      assert.deepEqual(init, { jsonrpc: "2.0", id: 1, method: "ui/initialize",
        params: { appInfo: { name: "mcp-gen-ui-template", version: "7" }, appCapabilities: {}, protocolVersion: "2026-01-26" } });
      assert.equal(f.posted[0].origin, "*");
      assert.deepEqual(f.sent("ui/notifications/initialized"), [], "not before the host answered");
      // Another frame's answer is not the host's: ignored.
      f.deliver({ jsonrpc: "2.0", id: 1, result: { hostContext: { theme: "light" }, hostInfo: { name: "stranger" } } }, {});
      f.deliver({ jsonrpc: "2.0", id: 1, result: { protocolVersion: "2026-01-26", hostInfo: { name: "fake-host", version: "1" },
        hostCapabilities: { serverTools: {} }, hostContext: HOST_CONTEXT } });
      const res = plain(await f.ready);
      assert.equal(res.hostInfo.name, "fake-host");
      assert.deepEqual(plain(app.getHostContext()), HOST_CONTEXT);
      assert.deepEqual(plain(app.getHostCapabilities()), { serverTools: {} });
      assert.deepEqual(plain(app.getHostVersion()), { name: "fake-host", version: "1" });
      assert.equal(f.context.McpGenUiRuntime.current(), app);
      assert.deepEqual(f.sent("ui/notifications/initialized"), [{ jsonrpc: "2.0", method: "ui/notifications/initialized", params: {} }]);
      assert.deepEqual(f.sent("ui/notifications/size-changed").map((m) => m.params), [{ width: 321, height: 200 }]);
      // The host's look and place, on the root for the page's CSS.
      assert.equal(f.attrs["data-theme"], "dark");
      assert.equal(f.attrs.lang, "de-DE");
      assert.equal(f.attrs["data-display-mode"], "inline");
      assert.equal(f.props["--host-max-height"], "600px");
      assert.equal(f.props["--safe-area-top"], "4px");
    });

    test("the App API: tools/call (its result unwrapped), errors, notifications, ping, unknown methods", async () => {
      const f = await connected(script);
      const { app } = f;
      f.deliver({ jsonrpc: "2.0", id: 1, result: { hostContext: {} } });
      await f.ready;

      const call = app.callServerTool({ name: "get_forecast", arguments: { city: "Oslo" } });
      const [req] = f.sent("tools/call");
      assert.deepEqual(req, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "get_forecast", arguments: { city: "Oslo" }, _meta: { progressToken: 2 } } },
        "every call asks for progress, as the SDK's App does, under its own id");
      f.deliver({ jsonrpc: "2.0", id: 2, result: { content: [{ type: "text", text: "{}" }], structuredContent: { result: '{"temp": 3}' } } });
      assert.deepEqual(plain(await call).structuredContent, { temp: 3 }, "FastMCP's {result: X} unwrapped, X parsed");

      const refused = app.requestDisplayMode({ mode: "fullscreen" });
      const [mode] = f.sent("ui/request-display-mode");
      assert.deepEqual(mode.params, { mode: "fullscreen" });
      f.deliver({ jsonrpc: "2.0", id: mode.id, error: { code: -32000, message: "not now" } });
      await assert.rejects(refused, (e) => e.message === "not now" && e.code === -32000);

      const seen = [];
      app.ontoolinput = (p) => seen.push(["input", plain(p)]);
      app.ontoolresult = (r) => seen.push(["result", plain(r)]);
      app.ontoolcancelled = (p) => seen.push(["cancelled", plain(p)]);
      f.deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: { city: "Rome" } } });
      f.deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: { content: [], structuredContent: { result: { a: 1 } } } });
      f.deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: { content: [] } }, {}); // not from the host
      f.deliver({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason: "user" } });
      assert.deepEqual(seen, [["input", { arguments: { city: "Rome" } }], ["result", { content: [], structuredContent: { a: 1 } }],
        ["cancelled", { reason: "user" }]]);

      f.deliver({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: { theme: "light" } });
      assert.equal(app.getHostContext().theme, "light");
      assert.equal(f.attrs["data-theme"], "light");

      const before = f.posted.length;
      f.deliver({ jsonrpc: "2.0", id: 70, method: "ping" });
      f.deliver({ jsonrpc: "2.0", id: 71, method: "ui/nothing-like-this" });
      assert.deepEqual(f.posted.slice(before).map((p) => p.message), [{ jsonrpc: "2.0", id: 70, result: {} },
        { jsonrpc: "2.0", id: 71, error: { code: -32601, message: "Method not found: ui/nothing-like-this" } }]);

      app.close();
      assert.deepEqual(f.listeners.get("message"), [], "close removes the listener");
    });

    test("progress: the host's reports under a call's token reach its onprogress while it waits, and keep it alive", async () => {
      const f = frame(script);
      const app = new f.context.McpGenUiRuntime.App({ name: "page", version: "1" }, {}, { requestTimeoutMs: 300 });
      const ready = app.connect();
      f.deliver({ jsonrpc: "2.0", id: 1, result: { hostContext: {} } });
      await ready;
      const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
      const seen = [];
      const call = app.callServerTool({ name: "research", arguments: { topic: "tides" } }, { onprogress: (p) => seen.push(plain(p)) });
      const silent = app.callServerTool({ name: "research", arguments: {} }).then(() => null, (e) => e);
      const [req, other] = f.sent("tools/call");
      assert.deepEqual(req.params._meta, { progressToken: req.id }, "the SDK's token: the request's id");
      const progress = (token, more, source) => f.deliver({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: token, ...more } }, source);
      progress(req.id, { progress: 1, message: "Gathering sources..." });
      progress(String(req.id), { progress: 2, total: 4, message: "Analyzing content..." }); // a host that made the token a string
      progress(999, { progress: 1, message: "not this call's" });
      progress(req.id, { progress: 3, message: "from another frame" }, {});
      progress(other.id, { progress: 1, message: "the other call's" });
      assert.deepEqual(other.params._meta, { progressToken: other.id }, "a call without onprogress asks for progress too");
      assert.deepEqual(seen, [{ progress: 1, message: "Gathering sources..." }, { progress: 2, total: 4, message: "Analyzing content..." }]);
      // Each report starts the call's time again: past two timeouts in all, still waiting.
      for (let i = 3; i < 6; i++) { await sleep(150); progress(req.id, { progress: i }); }
      assert.match(String(await silent), /tools\/call: the host did not answer within 300 ms/, "a call with no more progress times out");
      f.deliver({ jsonrpc: "2.0", id: req.id, result: { content: [{ type: "text", text: "report" }] } });
      assert.equal(plain(await call).content[0].text, "report");
      progress(req.id, { progress: 9, message: "after the answer" });
      assert.equal(seen.length, 5, "nothing after the answer");
      app.close();
    });

    test("over window.openai (the Apps SDK dialect): no ui/initialize, calls through callTool", async () => {
      const calls = [];
      const openai = { theme: "dark", locale: "fr-FR", toolInput: { city: "Lyon" }, toolOutput: null,
        callTool: async (name, args) => { calls.push([name, plain(args)]); return { structuredContent: { temp: 12 }, content: [] }; } };
      const f = frame(script, { openai });
      const app = new f.context.McpGenUiRuntime.App({ name: "page", version: "1" });
      const seen = [];
      app.ontoolinput = (p) => seen.push(plain(p));
      const res = plain(await app.connect());
      assert.equal(res.hostInfo.name, "openai-apps-sdk");
      assert.deepEqual(f.sent("ui/initialize"), []);
      assert.equal(app.getHostContext().locale, "fr-FR");
      assert.equal(f.attrs["data-theme"], "dark");
      assert.deepEqual(plain(await app.callServerTool({ name: "get_forecast", arguments: { city: "Lyon" } })).structuredContent, { temp: 12 });
      assert.deepEqual(calls, [["get_forecast", { city: "Lyon" }]]);
      await new Promise((r) => setTimeout(r, 5)); // the globals are read after connect
      assert.deepEqual(seen, [{ arguments: { city: "Lyon" } }]);
      app.close();
    });
  });
}
