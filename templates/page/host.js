  /* ---- The host: the App, calls to the tool (destructive tools ask first), display modes ---- */
  var app = new McpGenUiRuntime.App({ name: "mcp-gen-ui-template", version: meta.templateVersion });
  var confirmBox = $("confirm"), pending = null;
  /* What a running call's progress says (a task's status, when the service runs the tool as
     one): its message, and how far when the total is known. */
  function progressNote(p) {
    var msg = p && typeof p.message === "string" ? p.message.replace(/\s+/g, " ").trim().slice(0, 200) : "";
    var done = p && p.progress, total = p && p.total;
    var pct = typeof done === "number" && typeof total === "number" && total > 0 ? " (" + Math.floor(Math.min(Math.max(done / total, 0), 1) * 100) + "%)" : "";
    var note = (msg + pct).trim();
    return note ? " " + note : "";
  }
  function run(args) {
    var running = "Running " + meta.name + "\u2026";
    submitBtn.disabled = true; statusEl.textContent = running;
    app.callServerTool({ name: meta.name, arguments: args }, { onprogress: function (p) { statusEl.textContent = running + progressNote(p); } }).then(function (res) {
      statusEl.textContent = res && res.isError ? "The tool reported an error." : "Done.";
      showResult(res, "Result");
    }, function (err) {
      statusEl.textContent = "Failed.";
      showFailure(err.message || String(err));
    }).then(function () { submitBtn.disabled = false; });
  }
  function closeConfirm(status) {
    confirmBox.hidden = true; pending = null; submitBtn.disabled = false;
    if (status) statusEl.textContent = status;
  }
  function confirmRun() { var args = pending; closeConfirm(); run(args); }
  function cancelRun() { closeConfirm("Not run."); submitBtn.focus(); }
  function onConfirmKey(event) { if (event.key === "Escape") { event.preventDefault(); closeConfirm("Not run."); submitBtn.focus(); } }
  function submit(event) {
    event.preventDefault();
    if (pending) return;
    statusEl.textContent = "";
    var args = gather();
    if (!args) { if (!statusEl.textContent) statusEl.textContent = FIX; return; }
    if (!meta.confirm) { run(args); return; }
    pending = args;
    $("confirm-args").textContent = JSON.stringify(args, null, 2);
    confirmBox.hidden = false; submitBtn.disabled = true;
    $("confirm-cancel").focus();
  }
  /* A large result may use the whole window, when the host offers that mode. */
  function offerFullscreen(result) {
    var ctx = app.getHostContext() || {}, modes = Array.isArray(ctx.availableDisplayModes) ? ctx.availableDisplayModes : [];
    if (modes.indexOf("fullscreen") < 0 || JSON.stringify(result).length < 1500) return;
    var full = ctx.displayMode === "fullscreen";
    var button = btn(full ? "Exit full screen" : "Full screen", "fullscreen", function () {
      var want = (app.getHostContext() || {}).displayMode === "fullscreen" ? "inline" : "fullscreen";
      app.requestDisplayMode({ mode: want }).then(function (res) {
        var mode = (res && res.mode) || want;
        document.documentElement.setAttribute("data-display-mode", mode);
        (app.getHostContext() || {}).displayMode = mode;
        button.textContent = mode === "fullscreen" ? "Exit full screen" : "Full screen";
      }, function (err) { statusEl.textContent = "The host kept this view as it is: " + err.message; });
    }, "Show the result in full screen");
    resultEl.insertBefore(button, resultEl.firstChild);
  }
