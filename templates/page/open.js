/* mcp-gen-ui template page: a form built from the tool's input schema (the whole schema: rows for
 * arrays, fieldsets for objects, variant pickers, $ref resolved), a JSON view kept in sync with it,
 * a confirmation before destructive calls, and results rendered by shape. Runs after the View
 * runtime; reads the tool's name, confirmation flag and input schema from #tool-meta. Never
 * writes HTML strings: every node is made with createElement and filled with textContent.
 *
 * Assembled from templates/page/ in the order of PAGE_PARTS (actors/build.rs):
 * one function, opened here and closed in main.js, so the parts share its scope. The parts between
 * only declare (host.js also makes the App); main.js builds the form and wires the page. */
(function () {
  "use strict";
  var meta = JSON.parse(document.getElementById("tool-meta").textContent);
  var ROOT = meta.inputSchema && typeof meta.inputSchema === "object" ? meta.inputSchema : {};
  var $ = function (id) { return document.getElementById(id); };
  var form = $("tool-form"), fieldsEl = $("fields"), statusEl = $("status"), resultEl = $("result"), submitBtn = $("submit");
  var jsonView = $("json-view"), jsonArgs = $("json-args"), jsonErr = $("json-error"), jsonToggle = $("json-toggle");
  var uid = 0;
