// A minimal MCP Apps host page built on the official AppBridge (bundled by esbuild at test time).
// The test driver injects the View's HTML and answers the View's tools/call through a real MCP
// client connected to the proxy (window.hostCallTool, exposed by playwright). The AppBridge
// forwards no progress by itself (its own forwarding, with a client, calls tools/call without
// onprogress): a View's call that carries `_meta.progressToken` is made with the driver's
// client reporting progress, and each report goes to the View under the View's token, through
// the request's own `extra.mcpReq.notify`, as a host that shows progress would do.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

/** The progress of the View's calls in flight, by the key the driver reports it under. */
const sinks = { next: 0 };
window.hostProgress = (key, p) => sinks[key]?.(p);

window.mountView = async function mountView(html, opts = {}) {
  document.body.textContent = "";
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts allow-forms");
  iframe.style.cssText = "width:860px;height:900px;border:1px solid #999";
  document.body.appendChild(iframe);
  const log = { initialized: false, calls: [], sizes: [], links: [], logs: [], downloads: [], modes: [], progress: [] };
  window.__hostLog = log;
  const bridge = new AppBridge(
    null,
    { name: "mcp-gen-ui-test-host", version: "1.0.0" },
    { openLinks: {}, serverTools: {}, logging: {}, ...(opts.capabilities || {}) },
    { hostContext: { theme: opts.theme || "light", displayMode: "inline", availableDisplayModes: ["inline"], platform: "web", locale: "en-US", ...(opts.hostContext || {}) } },
  );
  bridge.ondownloadfile = async ({ contents }) => { log.downloads.push(contents); return {}; };
  bridge.onrequestdisplaymode = async ({ mode }) => { log.modes.push(mode); return { mode }; };
  bridge.oninitialized = () => { log.initialized = true; };
  bridge.oncalltool = async (params, extra) => {
    log.calls.push(params);
    const token = params._meta?.progressToken;
    if (token === undefined) return await window.hostCallTool(params);
    const key = ++sinks.next;
    sinks[key] = (p) => {
      log.progress.push({ ...p, progressToken: token });
      return extra.mcpReq.notify({ method: "notifications/progress", params: { ...p, progressToken: token } });
    };
    try { return await window.hostCallTool(params, key); } finally { delete sinks[key]; }
  };
  bridge.onsizechange = (s) => {
    log.sizes.push(s);
    if (opts.autoHeight && s.height) iframe.style.height = `${s.height + 2}px`;
  };
  bridge.onopenlink = async ({ url }) => { log.links.push(url); return {}; };
  bridge.onloggingmessage = (m) => log.logs.push(m);
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  window.__bridge = bridge;
  iframe.srcdoc = html;
};
