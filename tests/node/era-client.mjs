// A TypeScript SDK 1.x host (MCP 2025-11-25) for test_protocol_eras.py:
// `node era-client.mjs URL PLAN_JSON`. It connects over Streamable HTTP declaring the MCP Apps
// extension and elicitation, runs the plan (list tools, read one ui:// page, a call with
// progress, a call that elicits, a call it cancels, then one more call) and prints one JSON
// report on stdout; the Python test makes the assertions, the same ones as for its own host.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, planJson] = process.argv.slice(2);
const plan = JSON.parse(planJson);
const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join("\n");

const client = new Client(
  { name: "era-client", version: "1.0.0" },
  { capabilities: { elicitation: { form: {} }, extensions: plan.ui_ext } },
);
let elicitations = 0;
client.setRequestHandler(ElicitRequestSchema, async () => {
  elicitations += 1;
  return { action: "accept", content: plan.elicit.answer };
});

const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);
const report = { protocolVersion: transport.protocolVersion };

const { tools } = await client.listTools();
report.tools = Object.fromEntries(tools.map((t) => [t.name, t._meta ?? null]));

const uri = report.tools[plan.ui_tool]?.ui?.resourceUri ?? `ui://${plan.ui_tool}`;
const page = (await client.readResource({ uri })).contents[0];
report.page = { uri, mimeType: page.mimeType, text: page.text };

let progress = 0;
const done = await client.callTool({ name: plan.progress.name, arguments: plan.progress.arguments }, CallToolResultSchema, {
  onprogress: () => { progress += 1; },
});
report.progress = { count: progress, text: text(done) };

const elicited = await client.callTool({ name: plan.elicit.name, arguments: plan.elicit.arguments });
report.elicit = { calls: elicitations, text: text(elicited) };

// Cancel once the slow call is surely running upstream (its first progress arrived): the SDK
// then sends notifications/cancelled and rejects the call.
const abort = new AbortController();
report.cancel = { progress: 0, error: null };
try {
  await client.callTool({ name: plan.slow.name, arguments: plan.slow.arguments }, CallToolResultSchema, {
    signal: abort.signal,
    onprogress: () => { report.cancel.progress += 1; abort.abort("test cancels"); },
  });
} catch (e) {
  report.cancel.error = String(e);
}

report.after = text(await client.callTool({ name: plan.after.name, arguments: plan.after.arguments }));
await client.close();
console.log(JSON.stringify(report));
