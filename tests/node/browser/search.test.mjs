// Issue 32: a tool found by search keeps its page. A host on a search profile (/mcp/all) lists
// call_tool, not the weather tools; it calls one through call_tool and shows call_tool's page
// under the official AppBridge. That page fetches the called tool's own page and puts it in its
// place with the call's input and result; the tool's own form then calls the tool from inside
// the View, through the host, and shows the answer. The console stays clean.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ARTIFACTS, BIN, ROOT, assertCleanConsole, connectClient, launch, openView, startProxy } from "./views.mjs";

let browser, proxy;
before(async () => {
  browser = await launch();
  const dir = mkdtempSync(join(tmpdir(), "search-"));
  writeFileSync(join(dir, "servers.json"), JSON.stringify({ mcpServers: {
    weather: { command: BIN, args: ["demo-upstream"] },
    time: { command: join(ROOT, "tests/.venv/bin/mcp-server-time"), args: ["--local-timezone", "UTC"] },
  } }));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ profiles: { all: { tools: ["*"], discovery: "search", pin: ["time__*"] } } }));
  proxy = await startProxy(["--servers-file", join(dir, "servers.json"), "--config", join(dir, "config.json"), "--no-auth"], "search");
});
after(async () => { proxy?.stop(); await browser?.close(); });

test("a tool called through call_tool shows its own page, whose own call works", async () => {
  const client = await connectClient(proxy.base, "/mcp/all");
  try {
    const listed = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(listed.includes("call_tool") && !listed.includes("weather__get_current_weather"), `the weather tools are found by search: ${listed}`);
    const found = await client.callTool({ name: "search_tools", arguments: { query: "current weather in a city", limit: 3 } });
    assert.equal(found.structuredContent.tools[0].name, "weather__get_current_weather");

    const callTool = (await client.listTools()).tools.find((t) => t.name === "call_tool");
    const page = await client.readResource({ uri: callTool._meta.ui.resourceUri });
    const args = { name: "weather__get_current_weather", arguments: { city: "Oslo" } };
    const result = await client.callTool({ name: "call_tool", arguments: args });
    assert.ok(!result.isError && JSON.stringify(result).includes("Oslo"), "call_tool's result is the tool's own");

    const { page: tab, frame, errors } = await openView(browser, client, page.contents[0].text);
    await tab.evaluate(([a, r]) => { window.__bridge.sendToolInput({ arguments: a }); window.__bridge.sendToolResult(r); }, [args, result]);
    // call_tool's page gives way to the weather tool's own page (its form, one field per input).
    await frame.locator("#fields [data-field=city]").waitFor({ timeout: 20000 });
    assert.equal(await frame.locator("#mcp-gen-ui-call-title").count(), 0, "the call_tool page is gone");
    assert.equal(await frame.locator("[name=city]").inputValue(), "Oslo", "the tool's page shows the call's own input");
    await frame.locator("#result").getByText("Oslo").first().waitFor({ timeout: 5000 });
    await tab.screenshot({ path: join(ARTIFACTS, "search-call-tool.png") });

    // Its own call, from inside the View, by the tool's name: the profile routes it.
    await frame.locator("[name=city]").fill("Lisbon");
    await frame.locator("#submit").click();
    await frame.locator("#result").getByText("Lisbon").first().waitFor({ timeout: 10000 });
    const calls = await tab.evaluate(() => window.__hostLog.calls.map((c) => c.name));
    assert.ok(calls.includes("weather__get_current_weather"), `the page called its tool: ${calls}`);
    assertCleanConsole(errors, "search");
    await tab.close();
  } finally {
    await client.close();
  }
});
