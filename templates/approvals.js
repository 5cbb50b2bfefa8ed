/* mcp-gen-ui approvals page: the page of _ui_approvals. It shows the calls waiting for the
 * person's approval (who asked, the tool, the exact arguments, when the request expires) with
 * Approve and Decline buttons, which call _ui_approve through the host, and the person's own
 * calls waiting. It lists again after each decision and when the host says the page changed.
 * Every node is filled with textContent: arguments come from other people. */
(function () {
  "use strict";
  var list = document.getElementById("mcp-gen-ui-approvals");
  var yours = document.getElementById("mcp-gen-ui-approvals-yours");
  var status = document.getElementById("mcp-gen-ui-approvals-status");
  var app = new McpGenUiRuntime.App({ name: "mcp-gen-ui approvals", version: "1" });

  function el(tag, text, cls) { var e = document.createElement(tag); if (text != null) e.textContent = text; if (cls) e.className = cls; return e; }
  function item(a, decidable) {
    var li = el("li");
    li.setAttribute("data-id", a.id);
    li.appendChild(el("strong", a.tool));
    li.appendChild(el("span", " asked by " + a.person + " (rule " + a.rule + "), expires " + a.expiresAt));
    li.appendChild(el("pre", JSON.stringify(a.arguments, null, 2), "args"));
    if (decidable) {
      [["approve", "Approve"], ["decline", "Decline"]].forEach(function (d) {
        var b = el("button", d[1]);
        b.type = "button";
        b.setAttribute("data-decision", d[0]);
        b.addEventListener("click", function () { decide(a.id, d[0]); });
        li.appendChild(b);
      });
    } else {
      li.appendChild(el("span", "waiting for " + a.approvers));
    }
    return li;
  }
  function show(r) {
    var s = (r && r.structuredContent) || {};
    var pending = s.pending || [], own = s.yours || [];
    list.textContent = "";
    yours.textContent = "";
    pending.forEach(function (a) { list.appendChild(item(a, true)); });
    own.forEach(function (a) { yours.appendChild(item(a, false)); });
    if (!own.length) yours.appendChild(el("li", "None.", "none"));
    status.textContent = pending.length ? pending.length + " call(s) wait for you." : "No call waits for you.";
  }
  function refresh() {
    return app.callServerTool({ name: "_ui_approvals", arguments: {} }).then(show, function (e) { status.textContent = "Could not list: " + e; });
  }
  function decide(id, decision) {
    status.textContent = (decision === "approve" ? "Approving" : "Declining") + "…";
    app.callServerTool({ name: "_ui_approve", arguments: { id: id, decision: decision } }).then(function (r) {
      var said = (r && r.content && r.content[0] && r.content[0].text) || "";
      if (r && r.isError) { status.textContent = said; return; }
      var d = (r && r.structuredContent && r.structuredContent.decided) || {};
      status.textContent = "The call of " + d.tool + " by " + d.person + " was " + d.state + ".";
      return refresh().then(function () { status.textContent = "The call of " + d.tool + " by " + d.person + " was " + d.state + "."; });
    }, function (e) { status.textContent = "Could not decide: " + e; });
  }
  app.ontoolresult = function (r) { show(r); };
  app.connect().then(refresh, function (e) { status.textContent = "Could not connect to the host: " + e; });
})();
