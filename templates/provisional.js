/* mcp-gen-ui provisional page: the template, shown while the tool's own page is being written.
 * Asks the service how far the page has got (the app-only tool _ui_page_status, through the
 * host, waiting a few seconds each time), shows it, and once the page is written puts it in
 * this page's place (the runtime's replacePage), with the call this page showed. A person who
 * has started filling the form is asked first rather than losing what they typed. Every node is
 * made with createElement and filled with textContent. */
(function () {
  "use strict";
  var cfg = JSON.parse(document.getElementById("mcp-gen-ui-provisional").textContent);
  var box = document.getElementById("mcp-gen-ui-writing");
  var text = document.getElementById("mcp-gen-ui-writing-text");
  var touched = false, failures = 0, MAX_FAILURES = 5;

  function say(msg) { text.textContent = msg; }
  function seconds(ms) { return Math.max(0, Math.round((ms || 0) / 1000)); }
  function count(n) {
    try { return Number(n || 0).toLocaleString(document.documentElement.lang || undefined, { useGrouping: true }); } catch (e) { return String(n || 0); }
  }
  function progress(s) {
    var t = seconds(s.elapsedMs) + " s";
    switch (s.phase) {
      case "queued": return "A page for this tool is waiting for a free writer (" + t + "). This form works meanwhile.";
      case "other_replica": return "A page for this tool is being written on another replica (" + t + "). This form works meanwhile.";
      case "checking": return "Checking the page that was written (" + count(s.chars) + " characters, " + t + ").";
      case "retrying": return "Writing a page for this tool: trying again (" + t + "). This form works meanwhile.";
      case "writing": return "Writing a page for this tool: " + count(s.chars) + " characters so far (" + t + "). This form works meanwhile.";
      default: return "Writing a page for this tool (" + t + "). This form works meanwhile.";
    }
  }
  function stop(msg) {
    box.setAttribute("data-state", "done");
    say(msg);
    box.hidden = !msg;
  }
  function swap(app, html) {
    box.setAttribute("data-state", "ready");
    app.replacePage(html);
  }
  function offer(app, html) {
    box.setAttribute("data-state", "ready");
    say("The page written for this tool is ready. ");
    var b = document.createElement("button");
    b.type = "button"; b.className = "small"; b.id = "mcp-gen-ui-show-written"; b.textContent = "Show it";
    b.addEventListener("click", function () { swap(app, html); });
    text.appendChild(b);
  }
  function ask(app) {
    app.callServerTool({ name: cfg.statusTool, arguments: { toolName: cfg.tool, waitMs: cfg.waitMs, html: true } }).then(function (r) {
      failures = 0;
      var s = (r && r.structuredContent) || {};
      if (r && r.isError) return stop("The service could not say how the page is going; this form works.");
      if (s.state === "ready" && typeof s.html === "string") return touched ? offer(app, s.html) : swap(app, s.html);
      if (s.state === "template") return stop(s.fallbackReason ? "No page could be written for this tool (" + s.fallbackReason + "); this form works." : "");
      if (s.state === "writing") { say(progress(s)); return setTimeout(function () { ask(app); }, 0); }
      stop("The page is no longer being written; it will be written the next time this tool's UI opens.");
    }, function () {
      if (++failures > MAX_FAILURES) return stop("Could not reach the service to follow the page; it will show the next time this tool's UI opens.");
      setTimeout(function () { ask(app); }, 1000 * failures);
    });
  }
  document.addEventListener("input", function (e) { if (!box.contains(e.target)) touched = true; }, true);
  (function whenConnected(tries) {
    var app = McpGenUiRuntime.current();
    if (!app) return tries < 600 ? setTimeout(function () { whenConnected(tries + 1); }, 50) : undefined;
    app._ownTool = cfg.tool;
    if (!app.getHostCapabilities().serverTools) {
      return stop("A page for this tool is being written. This host cannot follow it here: it shows the next time this tool's UI opens.");
    }
    say(progress(cfg.writing || {}));
    ask(app);
  })(0);
})();
