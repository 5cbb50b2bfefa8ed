  /* ---- Errors ---- */
  var FIX = "Fix the highlighted fields.";
  function dropError(message) {
    var ctl = form.querySelector('[aria-describedby~="' + message.id + '"]');
    if (ctl) ctl.setAttribute("aria-describedby", ctl.getAttribute("aria-describedby").replace(message.id, "").trim());
    message.remove();
  }
  function clearErrors() {
    Array.prototype.forEach.call(form.querySelectorAll(".field-error"), function (message) { if (message !== jsonErr) dropError(message); });
    Array.prototype.forEach.call(form.querySelectorAll("[aria-invalid]"), function (elem) { elem.removeAttribute("aria-invalid"); elem.classList.remove("invalid"); });
    jsonErr.textContent = "";
  }
  /* Editing a field takes its message away (and those of the groups around it). */
  function clearAround(target) {
    for (var elem = target; elem && elem !== fieldsEl; elem = elem.parentElement) {
      var message = elem.querySelector(":scope > .field-error");
      if (message) dropError(message);
      elem.removeAttribute("aria-invalid"); elem.classList.remove("invalid");
    }
    if (statusEl.textContent === FIX && !fieldsEl.querySelector(".field-error")) statusEl.textContent = "";
  }
  function showError(target, text) {
    var box = target.el;
    if (box.querySelector(":scope > .field-error")) return;
    var message = el("div", "field-error", text), legend = box.querySelector(":scope > legend");
    message.id = "e-" + (++uid);
    if (legend) legend.after(message); else box.appendChild(message);
    var ctl = target.ctl || box.querySelector("input,select,textarea");
    if (ctl && target.ctl) {
      ctl.classList.add("invalid"); ctl.setAttribute("aria-invalid", "true");
      ctl.setAttribute("aria-describedby", ((ctl.getAttribute("aria-describedby") || "") + " " + message.id).trim());
    } else box.setAttribute("aria-invalid", "true");
  }
  function pathLabel(path) { return path ? path.slice(1).split("/").join(" \u203a ") : "arguments"; }
  /* The arguments to send, or null after showing what is wrong. */
  function gather() {
    clearErrors();
    var value, problems = 0;
    if (jsonMode) {
      try { value = JSON.parse(jsonArgs.value || "{}"); } catch (e) { jsonErr.textContent = "Not valid JSON: " + e.message; return null; }
      if (kindOf(value) !== "object") { jsonErr.textContent = "The arguments must be a JSON object."; return null; }
      var errs = check(ROOT, value, "", []);
      if (errs.length) { jsonErr.textContent = errs.map(function (err) { return pathLabel(err[0]) + ": " + err[1]; }).join("\n"); return null; }
      return value;
    }
    var unreadable = [];
    value = rootNode.get(unreadable);
    unreadable.forEach(function (bad) { showError(bad[0], bad[1]); problems++; });
    check(ROOT, value, "", []).forEach(function (err) {
      var parts = err[0] ? err[0].slice(1).split("/") : [];
      var target = rootNode.at(parts);
      if (target === rootNode) { statusEl.textContent = pathLabel(err[0]) + ": " + err[1]; } else showError(target, err[1]);
      problems++;
    });
    if (!problems) return value;
    var first = form.querySelector(".invalid, [aria-invalid=true]");
    if (first) { first.focus(); if (first.scrollIntoView) first.scrollIntoView({ block: "nearest" }); }
    return null;
  }

  /* ---- The JSON view: both ways at every edit, the form writes the JSON, valid JSON fills the form ---- */
  var jsonMode = false;
  function sync() { if (!jsonMode) jsonArgs.value = pretty(rootNode.get([])); }
  function onFieldEdit(event) { clearAround(event.target); sync(); }
  function setMode(json) {
    jsonMode = json;
    jsonToggle.setAttribute("aria-pressed", String(json));
    jsonToggle.textContent = json ? "Form" : "JSON";
    jsonToggle.title = json ? "Edit the arguments in the form" : "Edit the arguments as JSON";
    jsonView.hidden = !json; fieldsEl.hidden = json;
  }
  function toggleJson() {
    clearErrors();
    if (!jsonMode) { jsonArgs.value = pretty(rootNode.get([]) || {}); setMode(true); jsonArgs.focus(); return; }
    var value;
    try { value = JSON.parse(jsonArgs.value || "{}"); } catch (e) { jsonErr.textContent = "Fix the JSON before going back to the form: " + e.message; return; }
    if (kindOf(value) !== "object") { jsonErr.textContent = "The arguments must be a JSON object."; return; }
    rootNode.set(value); setMode(false); focusIn(fieldsEl);
  }
  function onJsonEdit() {
    var value;
    try { value = JSON.parse(jsonArgs.value || "{}"); } catch (e) { jsonErr.textContent = "Not valid JSON yet: " + e.message; return; }
    if (kindOf(value) !== "object") { jsonErr.textContent = "The arguments must be a JSON object."; return; }
    jsonErr.textContent = "";
    rootNode.set(value);
  }
  function fill(args) {
    if (!args || typeof args !== "object") return;
    rootNode.set(args);
    jsonArgs.value = pretty(args);
  }
