/* mcp-gen-ui call_tool page: the page of search mode's call_tool. A host lists call_tool, not
 * the tools it calls, so it shows this page for every tool called through it. Once the call's
 * input and result arrive, this page asks the service for the called tool's own page
 * (_ui_page_status, through the host) and puts it in its place (the runtime's replacePage),
 * with the tool's own arguments and result: the person sees the tool's page, as if the host had
 * listed it. Meanwhile, and where no page can be had, the result is shown as text. Every node
 * is filled with textContent. */
(function () {
  "use strict";
  var cfg = JSON.parse(document.getElementById("mcp-gen-ui-call-tool").textContent);
  var title = document.getElementById("mcp-gen-ui-call-title");
  var status = document.getElementById("mcp-gen-ui-call-status");
  var pre = document.getElementById("mcp-gen-ui-call-result");
  var input = null, result = null, asked = false, failures = 0;

  function say(msg) { status.textContent = msg; }
  function show(r) {
    var text = "";
    var content = (r && r.content) || [];
    for (var i = 0; i < content.length; i++) if (content[i].type === "text") text += content[i].text + "\n";
    if (!text) { try { text = JSON.stringify(r && (r.structuredContent || r), null, 2); } catch (e) { text = String(r); } }
    pre.textContent = text;
    pre.hidden = false;
  }
  function swap(app, html) {
    // The page that takes this one's place is the called tool's: its input is that tool's own.
    app._lastInput = { arguments: (input.arguments && input.arguments.arguments) || {} };
    app._lastResult = result;
    app.replacePage(html);
  }
  function ask(app, tool) {
    // make: a page nobody has read yet is started; past the read budget the answer is the
    // tool's provisional page, which follows the writing itself once in place.
    app.callServerTool({ name: cfg.statusTool, arguments: { toolName: tool, waitMs: cfg.waitMs, html: true, make: true } }).then(function (r) {
      failures = 0;
      var s = (r && r.structuredContent) || {};
      if (r && r.isError) return say("The result of " + tool + " (it has no page here).");
      if (typeof s.html === "string") return swap(app, s.html);
      if (s.state === "writing") { say("Opening the page of " + tool + "…"); return setTimeout(function () { ask(app, tool); }, 0); }
      if (s.state === "template") return say("The result of " + tool + " (no page could be written for it: " + (s.fallbackReason || "") + ").");
      say("The result of " + tool + ".");
    }, function () {
      if (++failures > 5) return say("The result of " + tool + " (its page could not be fetched).");
      setTimeout(function () { ask(app, tool); }, 1000 * failures);
    });
  }
  function maybeOpen(app) {
    if (asked || !input || !result) return;
    asked = true;
    var tool = String((input.arguments && input.arguments.name) || "");
    title.textContent = tool || "Calling a tool";
    show(result);
    if (!tool || result.isError) return say(result.isError ? "The call failed." : "The result.");
    if (!app.getHostCapabilities().serverTools) return say("The result of " + tool + " (this host cannot open its page here).");
    say("Opening the page of " + tool + "…");
    ask(app, tool);
  }
  var app = new McpGenUiRuntime.App({ name: "mcp-gen-ui call_tool", version: cfg.version });
  // call_tool's own input: {name, arguments}.
  app.ontoolinput = function (p) { input = { arguments: (p && p.arguments) || {} }; maybeOpen(app); };
  app.ontoolresult = function (r) { result = r; maybeOpen(app); };
  app.connect().catch(function (e) { say("Could not connect to the host: " + e); });
})();
