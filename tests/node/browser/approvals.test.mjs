// Issue 62: the approvals page in a real browser host (the official AppBridge). bob's write_file
// through server-filesystem is held for an admin; carol opens the approvals page (the page of
// _ui_approvals) as her host would, sees bob's exact call and clicks Approve; bob's call is
// made with exactly his arguments. bob's own view of the page shows his call waiting, with no
// button to approve it.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, existsSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ARTIFACTS, ROOT, UI_EXT, assertCleanConsole, launch, openView, startProxy } from "./views.mjs";

const FILESYSTEM = join(ROOT, "tests/node/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const BOB = "bob-approvals-token-5e2c8a1f";
const CAROL = "carol-approvals-token-9b4d7e3a";

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

async function clientOf(base, token) {
  const client = new Client({ name: "approvals-test", version: "1.0.0" }, { capabilities: { extensions: UI_EXT } });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  return client;
}

test("an admin approves a held call on the approvals page; it is made with exactly its arguments", async () => {
  const dir = mkdtempSync(join(tmpdir(), "approvals-"));
  const files = join(dir, "files");
  mkdirSync(files);
  writeFileSync(join(dir, "servers.json"), JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [FILESYSTEM, files] } } }));
  const rule = { name: "writes need an admin", tools: ["fs__write_file"], effect: "approve", approvers: ["admins"] };
  writeFileSync(join(dir, "config.json"), JSON.stringify({ policy: { rules: [rule] }, server: { auth: { admins: ["carol"] } } }));
  const proxy = await startProxy(["--servers-file", join(dir, "servers.json"), "--config", join(dir, "config.json"),
    "--auth-token", `bob:${BOB}`, "--auth-token", `carol:${CAROL}`], "approvals");
  const [bob, carol] = [await clientOf(proxy.base, BOB), await clientOf(proxy.base, CAROL)];
  const target = join(files, "plan.txt");
  const canary = `BOB-CANARY-${Date.now().toString(36)}`;
  try {
    const tools = (await carol.listTools()).tools;
    const listing = tools.find((t) => t.name === "_ui_approvals");
    assert.equal(listing?._meta?.ui?.resourceUri, "ui://mcp-gen-ui/approvals", "the tool names its page");
    const held = bob.callTool({ name: "fs__write_file", arguments: { path: target, content: canary } }, undefined, { timeout: 60000 });
    const html = (await carol.readResource({ uri: "ui://mcp-gen-ui/approvals" })).contents[0].text;

    // bob's own page: his call waiting, nothing for him to approve.
    const mine = await openView(browser, bob, html);
    await mine.frame.locator("#mcp-gen-ui-approvals-yours li").filter({ hasText: canary }).waitFor({ timeout: 15000 });
    assert.equal(await mine.frame.locator("#mcp-gen-ui-approvals-status").textContent(), "No call waits for you.");
    assert.equal(await mine.frame.locator("#mcp-gen-ui-approvals button").count(), 0, "nothing of his own to approve");
    await mine.page.close();

    const { page, frame, errors } = await openView(browser, carol, html);
    const item = frame.locator("#mcp-gen-ui-approvals li").filter({ hasText: canary });
    await item.waitFor({ timeout: 15000 });
    assert.match(await item.textContent(), /fs__write_file asked by bob/);
    assert.ok(!existsSync(target), "held, not made");
    await page.screenshot({ path: join(ARTIFACTS, "approvals-page.png") });
    await item.locator('button[data-decision="approve"]').click();
    await frame.locator("#mcp-gen-ui-approvals-status").filter({ hasText: "was approved" }).waitFor({ timeout: 15000 });
    const done = await held;
    assert.ok(!done.isError, JSON.stringify(done));
    assert.equal(readFileSync(target, "utf8"), canary, "exactly bob's arguments");
    await item.waitFor({ state: "detached", timeout: 15000 });
    assertCleanConsole(errors, "approvals page");
    await page.close();
  } finally {
    await bob.close();
    await carol.close();
    proxy.stop();
  }
});
