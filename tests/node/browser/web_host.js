// A web host: a page on its own origin that talks to mcp-gen-ui straight from the browser with
// the official TypeScript SDK's StreamableHTTPClientTransport (bundled by esbuild for the test).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

window.runWebHost = async (url, token) => {
  const client = new Client({ name: "web-host", version: "1.0.0" }, { capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } } });
  const opts = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), opts);
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const call = await client.callTool({ name: "get_current_weather", arguments: { city: "Lisbon" } });
  const page = await client.readResource({ uri: "ui://get_current_weather" });
  const sessionId = transport.sessionId;
  await transport.terminateSession();
  return { tools, call: JSON.stringify(call.structuredContent ?? call.content), html: page.contents[0].text.length, sessionId };
};
