// The template UI in a real browser against the official AppBridge, for the demo upstream and
// server-everything, each wrapped by the proxy and fetched through a real MCP client.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, checkView, connectClient, launch, startProxy } from "./views.mjs";

const EVERYTHING = join(ROOT, "tests/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
// Tools that are fast and offline when called with sample values; the others are still
// loaded and checked for handshake, controls and pushed results.
const SUBMIT = new Set(["get_current_weather", "get_forecast", "set_units", "get_weather_map", "echo", "get-sum", "get-tiny-image", "get-structured-content", "get-annotated-message", "get-resource-links"]);

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

for (const [server, args] of [["demo", ["--demo"]], ["everything", ["--upstream", `node ${EVERYTHING} stdio`]]]) {
  test(`every ${server} tool's ui:// page works in a real host`, async () => {
    const proxy = await startProxy(args, server);
    const client = await connectClient(proxy.base);
    try {
      const { tools } = await client.listTools();
      assert.ok(tools.length >= 4, "tools listed");
      for (const tool of tools) {
        const uri = tool._meta?.ui?.resourceUri;
        assert.equal(uri, `ui://${tool.name}`);
        const res = await client.readResource({ uri });
        const html = res.contents[0].text;
        const report = await checkView(browser, client, tool, html, { label: `${server}-${tool.name}`, submit: SUBMIT.has(tool.name) });
        if (SUBMIT.has(tool.name)) assert.ok(report.call, `${tool.name} was called`);
        assert.ok(report.sizes > 0, `${tool.name}: the View reported its size`);
      }
    } finally {
      await client.close();
      proxy.stop();
    }
  });
}
