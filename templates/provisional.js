/* mcp-gen-ui provisional page: the template, shown while the tool's own page is being written.
 * Asks the service how far the page has got (the app-only tool _ui_page_status, through the
 * host), says so in the host's language, and shows the page as the model writes it: the
 * service sends its visible structure only, as plain data (elements from a short list, no
 * script, style, link or image), built here with createElement and textContent inside an inert
 * box, so nothing of it runs or takes input. Once the page is written and checked it takes this
 * page's place (the runtime's replacePage) with the call this page showed and what the person
 * typed here. A person who has started filling the form is asked first. */
(function () {
  "use strict";
  var cfg = JSON.parse(document.getElementById("mcp-gen-ui-provisional").textContent);
  var box = document.getElementById("mcp-gen-ui-writing");
  var text = document.getElementById("mcp-gen-ui-writing-text");
  var touched = false, failures = 0, MAX_FAILURES = 5, preview = null, shownChars = -1;
  var typed = {};
  var MAX_PREVIEW_NODES = 1500;

  /* What the box says, by the host's language (English when the locale names no other). */
  var WORDS = {
    en: {
      queued: "A page for this tool is waiting for a free writer ({t}). This form works meanwhile.",
      other: "A page for this tool is being written on another replica ({t}). This form works meanwhile.",
      checking: "Checking the page that was written ({n} characters, {t}).",
      retrying: "Writing a page for this tool: trying again ({t}). This form works meanwhile.",
      writing: "Writing a page for this tool: {n} characters so far ({t}). This form works meanwhile.",
      writingEta: "Writing a page for this tool: {n} characters so far, about {eta} to go. This form works meanwhile.",
      asking: "Writing a page for this tool ({t}). This form works meanwhile.",
      preview: "The page as it is being written",
      ready: "The page written for this tool is ready. ",
      show: "Show it"
    },
    de: {
      queued: "Eine Seite f\u00fcr dieses Werkzeug wartet auf einen freien Schreiber ({t}). Dieses Formular funktioniert inzwischen.",
      other: "Eine Seite f\u00fcr dieses Werkzeug wird auf einer anderen Instanz geschrieben ({t}). Dieses Formular funktioniert inzwischen.",
      checking: "Die geschriebene Seite wird gepr\u00fcft ({n} Zeichen, {t}).",
      retrying: "Eine Seite f\u00fcr dieses Werkzeug wird geschrieben: neuer Versuch ({t}). Dieses Formular funktioniert inzwischen.",
      writing: "Eine Seite f\u00fcr dieses Werkzeug wird geschrieben: bisher {n} Zeichen ({t}). Dieses Formular funktioniert inzwischen.",
      writingEta: "Eine Seite f\u00fcr dieses Werkzeug wird geschrieben: bisher {n} Zeichen, noch etwa {eta}. Dieses Formular funktioniert inzwischen.",
      asking: "Eine Seite f\u00fcr dieses Werkzeug wird geschrieben ({t}). Dieses Formular funktioniert inzwischen.",
      preview: "Die Seite, w\u00e4hrend sie geschrieben wird",
      ready: "Die f\u00fcr dieses Werkzeug geschriebene Seite ist fertig. ",
      show: "Anzeigen"
    },
    fr: {
      queued: "Une page pour cet outil attend un r\u00e9dacteur libre ({t}). Ce formulaire fonctionne en attendant.",
      other: "Une page pour cet outil est en cours d\u2019\u00e9criture sur une autre instance ({t}). Ce formulaire fonctionne en attendant.",
      checking: "V\u00e9rification de la page \u00e9crite ({n} caract\u00e8res, {t}).",
      retrying: "\u00c9criture d\u2019une page pour cet outil : nouvel essai ({t}). Ce formulaire fonctionne en attendant.",
      writing: "\u00c9criture d\u2019une page pour cet outil : {n} caract\u00e8res jusqu\u2019ici ({t}). Ce formulaire fonctionne en attendant.",
      writingEta: "\u00c9criture d\u2019une page pour cet outil : {n} caract\u00e8res jusqu\u2019ici, encore environ {eta}. Ce formulaire fonctionne en attendant.",
      asking: "\u00c9criture d\u2019une page pour cet outil ({t}). Ce formulaire fonctionne en attendant.",
      preview: "La page en cours d\u2019\u00e9criture",
      ready: "La page \u00e9crite pour cet outil est pr\u00eate. ",
      show: "L\u2019afficher"
    },
    es: {
      queued: "Una p\u00e1gina para esta herramienta espera un redactor libre ({t}). Este formulario funciona mientras tanto.",
      other: "Una p\u00e1gina para esta herramienta se est\u00e1 escribiendo en otra r\u00e9plica ({t}). Este formulario funciona mientras tanto.",
      checking: "Comprobando la p\u00e1gina escrita ({n} caracteres, {t}).",
      retrying: "Escribiendo una p\u00e1gina para esta herramienta: otro intento ({t}). Este formulario funciona mientras tanto.",
      writing: "Escribiendo una p\u00e1gina para esta herramienta: {n} caracteres hasta ahora ({t}). Este formulario funciona mientras tanto.",
      writingEta: "Escribiendo una p\u00e1gina para esta herramienta: {n} caracteres hasta ahora, faltan unos {eta}. Este formulario funciona mientras tanto.",
      asking: "Escribiendo una p\u00e1gina para esta herramienta ({t}). Este formulario funciona mientras tanto.",
      preview: "La p\u00e1gina mientras se escribe",
      ready: "La p\u00e1gina escrita para esta herramienta est\u00e1 lista. ",
      show: "Mostrarla"
    }
  };
  function locale(app) {
    var ctx = (app && app.getHostContext && app.getHostContext()) || {};
    return typeof ctx.locale === "string" && ctx.locale ? ctx.locale : (document.documentElement.lang || "en");
  }
  function words(app) { return WORDS[locale(app).toLowerCase().split(/[-_]/)[0]] || WORDS.en; }
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (m, k) { return values[k] === undefined ? m : values[k]; });
  }
  function say(msg) { text.textContent = msg; }
  function duration(app, ms) {
    var s = Math.max(0, Math.round((ms || 0) / 1000));
    try {
      if (s >= 90) return new Intl.NumberFormat(locale(app), { style: "unit", unit: "minute", unitDisplay: "long", maximumFractionDigits: 0 }).format(Math.round(s / 60));
      return new Intl.NumberFormat(locale(app), { style: "unit", unit: "second", unitDisplay: "short" }).format(s);
    } catch (e) { return s + " s"; }
  }
  function count(app, n) {
    try { return Number(n || 0).toLocaleString(locale(app), { useGrouping: true }); } catch (e) { return String(n || 0); }
  }
  function progress(app, s) {
    var w = words(app), v = { t: duration(app, s.elapsedMs), n: count(app, s.chars), eta: duration(app, s.etaMs) };
    switch (s.phase) {
      case "queued": return fill(w.queued, v);
      case "other_replica": return fill(w.other, v);
      case "checking": return fill(w.checking, v);
      case "retrying": return fill(w.retrying, v);
      case "writing": return fill(typeof s.etaMs === "number" ? w.writingEta : w.writing, v);
      default: return fill(w.asking, v);
    }
  }

  /* ---- The page as it is written: plain data to elements, in an inert box ---- */
  var SAFE = /^(h[1-6]|p|div|span|section|article|header|footer|main|nav|aside|form|fieldset|legend|label|input|select|option|optgroup|textarea|button|table|caption|thead|tbody|tfoot|tr|th|td|ul|ol|li|dl|dt|dd|strong|em|b|i|u|small|code|pre|blockquote|br|hr|figure|figcaption|details|summary|output|progress|meter|abbr|time|mark|sub|sup)$/;
  /* No attribute that names an element: a <form name="open"> would stand for document.open
     here (named access), and the written page could not take this page's place. */
  var SAFE_ATTR = /^(class|type|placeholder|value|min|max|step|minlength|maxlength|required|checked|selected|multiple|rows|cols|colspan|rowspan|scope|role|title|open|lang|dir|datetime|size|low|high|optimum|aria-label|aria-hidden|aria-live)$/;
  function build(nodes, into, budget) {
    for (var i = 0; i < nodes.length && budget.left > 0; i++) {
      var n = nodes[i];
      budget.left--;
      if (typeof n === "string") { into.appendChild(document.createTextNode(n)); continue; }
      /* The service keeps to the list; this page checks again rather than trust the wire. */
      if (!Array.isArray(n) || typeof n[0] !== "string" || !SAFE.test(n[0])) continue;
      var el = document.createElement(n[0]), attrs = n[1] || {};
      for (var k in attrs) {
        if (Object.prototype.hasOwnProperty.call(attrs, k) && SAFE_ATTR.test(k) && typeof attrs[k] === "string") el.setAttribute(k, attrs[k]);
      }
      if (n[0] === "button") el.setAttribute("type", "button");
      if (/^(input|select|textarea|button)$/.test(n[0])) { el.disabled = true; el.tabIndex = -1; }
      if (Array.isArray(n[2])) build(n[2], el, budget);
      into.appendChild(el);
    }
  }
  function showPreview(app, tree, chars) {
    if (!Array.isArray(tree) || !tree.length || chars === shownChars) return;
    shownChars = chars;
    if (!preview) {
      preview = document.createElement("section");
      preview.id = "mcp-gen-ui-preview";
      preview.className = "preview";
      preview.setAttribute("inert", "");
      preview.setAttribute("aria-label", words(app).preview);
      preview.setAttribute("data-state", "writing");
      box.parentNode.insertBefore(preview, box.nextSibling);
    }
    var fresh = document.createDocumentFragment();
    build(tree, fresh, { left: MAX_PREVIEW_NODES });
    while (preview.firstChild) preview.removeChild(preview.firstChild);
    preview.appendChild(fresh);
  }
  function dropPreview() {
    if (preview && preview.parentNode) preview.parentNode.removeChild(preview);
    preview = null;
  }

  function stop(msg) {
    box.setAttribute("data-state", "done");
    dropPreview();
    say(msg);
    box.hidden = !msg;
  }
  function swap(app, html) {
    box.setAttribute("data-state", "ready");
    app.replacePage(html, touched ? typed : null);
  }
  function offer(app, html) {
    box.setAttribute("data-state", "ready");
    dropPreview();
    say(words(app).ready);
    var b = document.createElement("button");
    b.type = "button"; b.className = "small"; b.id = "mcp-gen-ui-show-written"; b.textContent = words(app).show;
    b.addEventListener("click", function () { swap(app, html); });
    text.appendChild(b);
  }
  function ask(app) {
    app.callServerTool({ name: cfg.statusTool, arguments: { toolName: cfg.tool, waitMs: cfg.waitMs, html: true, preview: true } }).then(function (r) {
      failures = 0;
      var s = (r && r.structuredContent) || {};
      if (r && r.isError) return stop("The service could not say how the page is going; this form works.");
      if (s.state === "ready" && typeof s.html === "string") return touched ? offer(app, s.html) : swap(app, s.html);
      if (s.state === "template") return stop(s.fallbackReason ? "No page could be written for this tool (" + s.fallbackReason + "); this form works." : "");
      if (s.state === "writing") {
        say(progress(app, s));
        showPreview(app, s.preview, s.chars);
        return setTimeout(function () { ask(app); }, 0);
      }
      stop("The page is no longer being written; it will be written the next time this tool's UI opens.");
    }, function () {
      if (++failures > MAX_FAILURES) return stop("Could not reach the service to follow the page; it will show the next time this tool's UI opens.");
      setTimeout(function () { ask(app); }, 1000 * failures);
    });
  }
  /* What the person typed, by field name, to carry into the written page. */
  function note(el) {
    if (!el || !el.name || box.contains(el)) return;
    var v;
    if (el.type === "checkbox") v = el.checked;
    else if (el.type === "number" || el.type === "range") v = el.value === "" ? undefined : Number(el.value);
    else v = el.value;
    if (v === undefined || (typeof v === "number" && !isFinite(v))) delete typed[el.name];
    else typed[el.name] = v;
  }
  document.addEventListener("input", function (e) {
    if (box.contains(e.target) || (preview && preview.contains(e.target))) return;
    touched = true;
    note(e.target);
  }, true);
  document.addEventListener("change", function (e) { if (touched) note(e.target); }, true);
  (function whenConnected(tries) {
    var app = McpGenUiRuntime.current();
    if (!app) return tries < 600 ? setTimeout(function () { whenConnected(tries + 1); }, 50) : undefined;
    app._ownTool = cfg.tool;
    if (!app.getHostCapabilities().serverTools) {
      return stop("A page for this tool is being written. This host cannot follow it here: it shows the next time this tool's UI opens.");
    }
    say(progress(app, cfg.writing || {}));
    ask(app);
  })(0);
})();
