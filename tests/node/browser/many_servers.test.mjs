// Several servers behind one endpoint (issue 19): a ui:// page of each server, fetched through
// a real MCP client from one proxy, works under the official AppBridge in Chromium, and its
// form calls its tool by the name hosts see (<server>__<tool>), routed to that server.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, checkView, connectClient, launch, startProxy } from "./views.mjs";

const MODULES = join(ROOT, "tests/node/node_modules/@modelcontextprotocol");
const EVERYTHING = join(MODULES, "server-everything/dist/index.js");
const WORK = mkdtempSync(join(tmpdir(), "mcp-gen-ui-many-"));

async function freePort() {
  const s = createServer();
  await new Promise((ok) => s.listen(0, "127.0.0.1", ok));
  const port = s.address().port;
  await new Promise((ok) => s.close(ok));
  return port;
}

let browser, httpEverything, proxy, client;
before(async () => {
  browser = await launch();
  const port = await freePort();
  httpEverything = spawn(process.execPath, [EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(port) }, stdio: "ignore", detached: true });
  for (let i = 0; i < 300; i++) {
    try { await fetch(`http://127.0.0.1:${port}/mcp`); break; } catch { await new Promise((r) => setTimeout(r, 100)); }
  }
  const servers = join(WORK, "claude_desktop_config.json");
  writeFileSync(servers, JSON.stringify({ mcpServers: {
    everything: { command: process.execPath, args: [EVERYTHING, "stdio"] },
    memory: { command: process.execPath, args: [join(MODULES, "server-memory/dist/index.js")], env: { MEMORY_FILE_PATH: join(WORK, "memory.jsonl") } },
    time: { command: join(ROOT, "tests/.venv/bin/mcp-server-time"), args: ["--local-timezone", "UTC"] },
    "everything-http": { type: "http", url: `http://127.0.0.1:${port}/mcp` },
  } }));
  proxy = await startProxy(["--servers-file", servers], "many-servers");
  client = await connectClient(proxy.base);
});
after(async () => {
  await client?.close();
  proxy?.stop();
  try { process.kill(-httpEverything.pid, "SIGTERM"); } catch {}
  await browser?.close();
});

for (const [tool, uri] of [
  ["everything__echo", "ui://everything/echo"],
  ["memory__read_graph", "ui://memory/read_graph"],
  ["time__get_current_time", "ui://time/get_current_time"],
  ["everything-http__get-sum", "ui://everything-http/get-sum"],
]) {
  test(`${tool}: its page works in a real host and its form calls it`, async () => {
    const { tools } = await client.listTools();
    const t = tools.find((x) => x.name === tool);
    assert.ok(t, `${tool} is listed`);
    assert.equal(t._meta?.ui?.resourceUri, uri);
    const html = (await client.readResource({ uri })).contents[0].text;
    const report = await checkView(browser, client, t, html, { label: `many-${tool}`, submit: true });
    assert.equal(report.call.name, tool, "the page calls the name hosts see");
  });
}

test("the preview groups the tools by server and shows what each server calls them", async () => {
  const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
  const errors = [];
  p.on("pageerror", (e) => errors.push(String(e)));
  p.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  try {
    await p.goto(`${proxy.base}/preview?tool=time__get_current_time`);
    await p.locator("nav li.server").first().waitFor({ timeout: 15000 }).catch(async (e) => {
      throw new Error(`no server groups: status ${await p.locator("#status").textContent()}; log ${await p.locator("#log").textContent()}; ${errors.join(" | ")}`);
    });
    const groups = await p.locator("nav li.server").allTextContents();
    assert.deepEqual(groups.map((g) => g.toLowerCase()), ["everything", "memory", "time", "everything-http"]);
    const row = p.getByRole("button", { name: /time__get_current_time/ });
    await row.waitFor();
    assert.match(await row.textContent(), /time__get_current_time/);
    await p.screenshot({ path: join(ROOT, "tests/artifacts/screens/many-servers-preview.png") });
    assert.deepEqual(errors, []);
  } finally {
    await p.close();
  }
});
