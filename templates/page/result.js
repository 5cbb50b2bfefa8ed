  /* ---- Results ---- */
  var LIMIT = 100 * 1024;
  function copyText(text, button) {
    function done(ok) { var label = button.textContent; button.textContent = ok ? "Copied" : "Copy failed"; setTimeout(function () { button.textContent = label; }, 1200); }
    var policy = document.permissionsPolicy || document.featurePolicy;
    if (navigator.clipboard && policy && policy.allowsFeature("clipboard-write")) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(legacyCopy(text)); });
    } else done(legacyCopy(text));
  }
  /* For hosts whose iframe does not allow clipboard-write. */
  function legacyCopy(text) {
    var area = el("textarea"); area.value = text; area.setAttribute("readonly", ""); area.style.position = "fixed"; area.style.opacity = "0";
    document.body.appendChild(area); area.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    area.remove();
    return ok;
  }
  /* text may be a function: a large result is stringified only when copied. */
  function copyBtn(text, what) {
    var button = btn("Copy", "secondary small copy", function () { copyText(typeof text === "function" ? text() : text, button); }, "Copy " + what);
    return button;
  }
  function head(label, copy) {
    var bar = el("div", "block-head"); bar.appendChild(el("span", "label", label));
    if (copy) bar.appendChild(copy);
    return bar;
  }
  function kb(bytes) { return bytes < 1024 ? bytes + " bytes" : (bytes / 1024).toFixed(1) + " KB"; }
  function b64size(b64) { b64 = b64 || ""; return Math.floor(b64.length * 3 / 4) - (/==$/.test(b64) ? 2 : /=$/.test(b64) ? 1 : 0); }
  /* Text over 100 KB shows its first 100 KB and a button for the rest. */
  function longText(text, tag) {
    var box = el(tag || "pre", null, text.length > LIMIT ? text.slice(0, LIMIT) : text);
    if (text.length <= LIMIT) return box;
    var wrap = el("div"); wrap.appendChild(box);
    var more = btn("Show all " + Math.round(text.length / 1024) + " KB", "secondary more", function () { box.textContent = text; more.remove(); });
    wrap.appendChild(more);
    return wrap;
  }
  /* Numbers and dates the host's way (hostContext.locale, timeZone); the value as sent stays in
     the title. Anything the host sends that Intl refuses falls back to the value as it is. */
  var ISO_DATE = /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?$/;
  function local(value) {
    var ctx = app.getHostContext() || {}, locale = typeof ctx.locale === "string" ? ctx.locale : undefined;
    try {
      /* No grouping: a year, an id or a port must read as it is; the decimal mark is the locale's. */
      if (typeof value === "number" && isFinite(value)) return new Intl.NumberFormat(locale, { maximumFractionDigits: 6, useGrouping: false }).format(value);
      if (typeof value === "string" && ISO_DATE.test(value)) {
        var date = new Date(value);
        if (isNaN(date.getTime())) return value;
        var opts = value.length > 10 ? { dateStyle: "medium", timeStyle: "short" } : { dateStyle: "medium", timeZone: "UTC" };
        if (value.length > 10 && typeof ctx.timeZone === "string") opts.timeZone = ctx.timeZone;
        return new Intl.DateTimeFormat(locale, opts).format(date);
      }
    } catch (e) { /* an unknown locale or time zone: the value as sent */ }
    return value === null ? "null" : String(value);
  }
  function scalarEl(value) {
    var shown = local(value), span = el("span", typeof value === "number" ? "num" : null, shown);
    if (shown !== String(value)) span.title = String(value);
    return span;
  }
  function isRecordList(value) {
    return Array.isArray(value) && value.length > 0 && value.length <= 2000 && value.every(function (row) { return row && typeof row === "object" && !Array.isArray(row); });
  }
  function scalar(value) { return value === null || typeof value !== "object"; }
  /* Data rendered by its shape: records as a sortable table, an object as a key/value list,
     nested values collapsible, long text truncated. */
  function renderValue(value, depth) {
    depth = depth || 0;
    if (scalar(value)) {
      var text = value === null ? "null" : String(value);
      return text.length > 200 ? longText(text, "pre") : scalarEl(value);
    }
    if (depth > 6) return longText(JSON.stringify(value, null, 2));
    if (isRecordList(value)) return table(value, depth);
    if (Array.isArray(value)) {
      var ol = el("ol");
      value.slice(0, 500).forEach(function (item) { var li = el("li"); li.appendChild(renderValue(item, depth + 1)); ol.appendChild(li); });
      if (value.length > 500) ol.appendChild(el("li", "hint", "\u2026 " + (value.length - 500) + " more (see Raw JSON)"));
      return ol;
    }
    var dl = el("dl", "kv");
    Object.keys(value).forEach(function (key) {
      dl.appendChild(el("dt", null, key));
      var dd = el("dd"), child = value[key];
      if (!scalar(child) && depth >= 1) {
        var det = el("details", "nested"); det.appendChild(el("summary", null, Array.isArray(child) ? child.length + " items" : Object.keys(child).length + " fields"));
        det.appendChild(renderValue(child, depth + 1)); dd.appendChild(det);
      } else dd.appendChild(renderValue(child, depth + 1));
      dl.appendChild(dd);
    });
    return dl;
  }
  function table(rows, depth) {
    var cols = [];
    rows.forEach(function (row) { Object.keys(row).forEach(function (key) { if (cols.indexOf(key) < 0) cols.push(key); }); });
    var tableEl = el("table", "data"), thead = el("thead"), headRow = el("tr"), tbody = el("tbody");
    var order = rows.slice(), sortCol = null, dir = 1;
    function fillRows() {
      tbody.textContent = "";
      order.forEach(function (row) {
        var tr = el("tr");
        cols.forEach(function (col) {
          var value = row[col], td = el("td", typeof value === "number" ? "num" : null);
          if (value !== undefined) td.appendChild(scalar(value) ? scalarEl(value) : renderValue(value, depth + 2));
          tr.appendChild(td);
        });
        tbody.appendChild(tr);
      });
    }
    cols.forEach(function (col) {
      var th = el("th", null, col); th.setAttribute("scope", "col"); th.tabIndex = 0;
      function sort() {
        dir = sortCol === col ? -dir : 1; sortCol = col;
        order.sort(function (a, b) {
          var x = a[col], y = b[col];
          if (x === y) return 0; if (x === undefined || x === null) return 1; if (y === undefined || y === null) return -1;
          return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
        });
        Array.prototype.forEach.call(headRow.children, function (cell) { cell.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        fillRows();
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (event) { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); sort(); } });
      headRow.appendChild(th);
    });
    thead.appendChild(headRow); tableEl.appendChild(thead); tableEl.appendChild(tbody); fillRows();
    return tableEl;
  }
  function renderText(text) {
    try { var value = JSON.parse(text); if (value && typeof value === "object") return renderValue(value); } catch (e) { /* plain text */ }
    return longText(text);
  }
  function media(kind, mime, data, alt) {
    var elem = el(kind === "audio" ? "audio" : "img");
    if (kind === "audio") elem.controls = true; else elem.alt = alt;
    elem.src = "data:" + mime + ";base64," + data;
    return elem;
  }
  function renderBlock(block) {
    var box = el("div", "block");
    if (block.type === "text") {
      box.appendChild(head("Text", copyBtn(block.text || "", "text")));
      box.appendChild(renderText(block.text || ""));
    } else if (block.type === "image" || block.type === "audio") {
      box.appendChild(head((block.type === "image" ? "Image" : "Audio") + " \u00b7 " + (block.mimeType || "?") + " \u00b7 " + kb(b64size(block.data)), copyBtn(block.data || "", block.type + " as base64")));
      box.appendChild(media(block.type, block.mimeType, block.data, "image result"));
    } else if (block.type === "resource_link") {
      box.appendChild(head("Resource link" + (block.mimeType ? " \u00b7 " + block.mimeType : "") + (block.size != null ? " \u00b7 " + kb(block.size) : ""), copyBtn(block.uri || "", "link")));
      var link = el("a", null, block.name || block.title || block.uri); link.href = "#"; link.title = block.uri;
      link.addEventListener("click", function (event) { event.preventDefault(); app.openLink({ url: block.uri }).catch(function () {}); });
      box.appendChild(link);
      if (block.name && block.uri) box.appendChild(el("div", "hint uri", block.uri));
      if (block.description) box.appendChild(el("div", "hint", block.description));
    } else if (block.type === "resource" && block.resource) {
      var res = block.resource, mime = res.mimeType || (res.text != null ? "text" : "binary");
      box.appendChild(head("Embedded resource \u00b7 " + mime, copyBtn(res.text != null ? res.text : res.blob || "", res.text != null ? "resource text" : "resource as base64")));
      box.appendChild(el("div", "hint uri", res.uri));
      if (res.text != null) box.appendChild(renderText(res.text));
      else if (/^image\//.test(mime)) box.appendChild(media("image", mime, res.blob, res.uri));
      else if (/^audio\//.test(mime)) box.appendChild(media("audio", mime, res.blob, res.uri));
      else box.appendChild(el("div", "hint", kb(b64size(res.blob)) + " of " + mime));
    } else box.appendChild(longText(JSON.stringify(block, null, 2)));
    return box;
  }
  /* Results with file artifacts ({results, meta_data, returned_file_names,
     returned_file_contents}): each file with a preview and a way to save it. */
  var FILE_MIME = { csv: "text/csv", txt: "text/plain", md: "text/markdown", json: "application/json", png: "image/png",
    jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", svg: "image/svg+xml", html: "text/html", xml: "application/xml" };
  function fileMime(name) { var ext = /\.([a-z0-9]+)$/i.exec(name || ""); return (ext && own(FILE_MIME, ext[1].toLowerCase())) || "application/octet-stream"; }
  function decodeText(b64) {
    try { var bin = atob(b64 || ""), bytes = new Uint8Array(bin.length); for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i); return new TextDecoder().decode(bytes); } catch (e) { return null; }
  }
  function renderFiles(structured) {
    var names = Array.isArray(structured.returned_file_names) ? structured.returned_file_names : [];
    var datas = Array.isArray(structured.returned_file_contents) ? structured.returned_file_contents : [];
    var box = el("div", "block files");
    box.appendChild(head("Files (" + names.length + ")"));
    names.forEach(function (name, i) {
      var data = typeof datas[i] === "string" ? datas[i] : "", mime = fileMime(name);
      var file = el("details", "file");
      var summary = el("summary", null, String(name) + " \u00b7 " + mime + " \u00b7 " + kb(b64size(data)));
      file.appendChild(summary);
      var safe = String(name).replace(/[\\/]/g, "_");
      if ((app.getHostCapabilities() || {}).downloadFile) {
        /* A sandboxed View cannot download: the host saves the file (ui/download-file). */
        file.appendChild(btn("Download", null, function () {
          app.downloadFile({ contents: [{ type: "resource", resource: { uri: "file:///" + encodeURIComponent(safe), mimeType: mime, blob: data } }] })
            .then(function (res) { statusEl.textContent = res && res.isError ? "The host did not save " + safe + "." : "Saved " + safe + "."; },
                  function (err) { statusEl.textContent = "The host could not save " + safe + ": " + err.message; });
        }, "Download " + safe));
      } else {
        var save = el("a", "button", "Download"); save.href = "data:" + mime + ";base64," + data; save.download = safe;
        file.appendChild(save);
      }
      if (/^image\//.test(mime) && mime !== "image/svg+xml") file.appendChild(media("image", mime, data, String(name)));
      else {
        var text = decodeText(data);
        if (text != null) { file.appendChild(copyBtn(text, String(name))); file.appendChild(mime === "application/json" ? renderText(text) : longText(text)); }
      }
      box.appendChild(file);
    });
    return box;
  }
  function showResult(result, heading) {
    resultEl.textContent = "";
    if (!result) return;
    var content = result.content || [];
    if (result.isError) {
      /* The error's message first, then anything else it carries. */
      var texts = content.filter(function (block) { return block.type === "text"; }).map(function (block) { return block.text; }).join("\n");
      var errorBox = el("div", "block error");
      errorBox.setAttribute("role", "alert");
      errorBox.appendChild(head("Error from " + meta.name, copyBtn(texts, "error message")));
      errorBox.appendChild(longText(texts || "The tool reported an error without a message.", "div"));
      resultEl.appendChild(errorBox);
      content = content.filter(function (block) { return block.type !== "text"; });
    } else if (heading) resultEl.appendChild(el("div", "label", heading));
    var box = el("div");
    if (result.structuredContent !== undefined && result.structuredContent !== null) {
      var structuredBox = el("div", "block");
      structuredBox.appendChild(head("Structured result", copyBtn(function () { return JSON.stringify(result.structuredContent, null, 2); }, "structured result")));
      var structured = result.structuredContent;
      var files = structured && typeof structured === "object" && Array.isArray(structured.returned_file_names);
      if (files) {
        /* The files get their own panel; the rest shows as usual. */
        var rest = {}; Object.keys(structured).forEach(function (key) { if (key !== "returned_file_contents") rest[key] = structured[key]; });
        structuredBox.appendChild(renderValue(rest));
      } else structuredBox.appendChild(renderValue(structured));
      box.appendChild(structuredBox);
      if (files) box.appendChild(renderFiles(structured));
      /* Text blocks beside structured content repeat it (for older clients). */
      if (!result.isError) content = content.filter(function (block) { return block.type !== "text"; });
    }
    content.forEach(function (block) { box.appendChild(renderBlock(block)); });
    resultEl.appendChild(box);
    var raw = el("details", "raw"), summary = el("summary", null, "Raw JSON");
    raw.appendChild(summary);
    raw.appendChild(copyBtn(function () { return JSON.stringify(result, null, 2); }, "raw JSON"));
    raw.appendChild(longText(JSON.stringify(result, null, 2)));
    resultEl.appendChild(raw);
    offerFullscreen(result);
  }
  function showFailure(text) {
    resultEl.textContent = "";
    var box = el("div", "block error"); box.setAttribute("role", "alert");
    box.appendChild(head("The call failed")); box.appendChild(el("div", null, text));
    resultEl.appendChild(box);
  }
