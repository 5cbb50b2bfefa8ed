// A page written by the generation pipeline (a fake OpenAI-compatible endpoint answering with a
// page that imports App from "@modelcontextprotocol/ext-apps", the form LLMs know) must load and
// work under the official AppBridge once the proxy has rewritten the import.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { checkView, connectClient, fakeOpenAi, launch, startProxy } from "./views.mjs";

const PAGE = `Here is the interface you asked for:

\`\`\`html
<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Weather</title>
<style>body{font:14px system-ui;margin:16px} .block{border:1px solid #ccc;padding:8px;margin-top:8px}</style></head>
<body>
<h1>Current weather (generated)</h1>
<form id="f">
  <label for="city">City</label> <input id="city" name="city" required>
  <label for="units">Units</label>
  <select id="units" name="units"><option value="metric">metric</option><option value="imperial">imperial</option></select>
  <button id="submit" type="submit">Look up</button>
</form>
<div id="result"></div>
<script type="module">
import { App } from "@modelcontextprotocol/ext-apps";
const app = new App({ name: "Weather UI", version: "1.0.0" });
const result = document.getElementById("result");
function show(r) {
  result.textContent = "";
  const box = document.createElement("div");
  box.className = "block";
  const data = r.structuredContent ?? (r.content || []).map((c) => c.text).join("\\n");
  box.textContent = typeof data === "string" ? data : JSON.stringify(data, null, 2);
  result.appendChild(box);
}
app.ontoolresult = show;
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => {
  e.preventDefault();
  show(await app.callServerTool({ name: "get_current_weather", arguments: { city: document.getElementById("city").value, units: document.getElementById("units").value } }));
});
</script>
</body></html>
\`\`\``;

let browser, llm;
before(async () => {
  browser = await launch();
  llm = await fakeOpenAi((body) => (body.includes("rich or minimal") ? "rich" : PAGE));
});
after(async () => { await browser?.close(); llm?.close(); });

test("a generated page that imports App from the SDK works in a real host", async () => {
  const proxy = await startProxy(["--demo", "--provider", "openai", "--llm-base-url", llm.url], "generated");
  const client = await connectClient(proxy.base);
  try {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name === "get_current_weather");
    const res = await client.readResource({ uri: "ui://get_current_weather" });
    const content = res.contents[0];
    assert.ok(["generated", "repaired"].includes(content._meta["mcp-gen-ui"].kind), content._meta["mcp-gen-ui"].kind);
    assert.ok(!content.text.includes('from "@modelcontextprotocol/ext-apps"'), "the import was rewritten");
    const report = await checkView(browser, client, tool, content.text, { label: "generated-get_current_weather", submit: true, prefill: false });
    assert.deepEqual(Object.keys(report.call.arguments).sort(), ["city", "units"]);
  } finally {
    await client.close();
    proxy.stop();
  }
});
