// A host built on @mcp-ui/client's AppRenderer (React), as web apps embed MCP Apps: the MCP
// client talks to mcp-gen-ui from the browser, and the View runs behind the service's own
// sandbox proxy on another origin. Bundled by esbuild for the test.
import React from "react";
import { createRoot } from "react-dom/client";
import { AppRenderer } from "@mcp-ui/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

window.startMcpUiHost = async ({ mcpUrl, sandboxUrl, toolName, toolInput }) => {
  const client = new Client({ name: "mcp-ui-host", version: "1.0.0" },
    { capabilities: { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } } });
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl)));
  const toolResult = await client.callTool({ name: toolName, arguments: toolInput });
  window.__hostErrors = [];
  createRoot(document.getElementById("root")).render(React.createElement(AppRenderer, {
    client, toolName, toolInput, toolResult,
    sandbox: { url: new URL(sandboxUrl) },
    onError: (e) => window.__hostErrors.push(String(e && e.message || e)),
  }));
};
