  /* ---- The form: one node per schema, each {el, get(errs), set(value), at(path), label(text)}.
     get() gives undefined for "nothing entered"; errs collects [node, message] for values that
     cannot even be read (a number field holding text, JSON that does not parse). opts: key,
     label, depth, required, mark (shows *), item (a list's row), bare (no label of its own),
     refs and again (see norm), nullable. */
  var MAX_DEPTH = 10;
  var rootNode;
  function describe(opts, schema, box, ctl) {
    var text = schema.description;
    if (!text || (opts.item && !ctl)) return;
    var hint = el("div", "hint", text); hint.id = "h-" + (++uid);
    box.appendChild(hint);
    if (ctl) ctl.setAttribute("aria-describedby", hint.id);
  }
  function reqMark() { var mark = el("span", "req", "*"); mark.setAttribute("aria-hidden", "true"); return mark; }
  function labelFor(opts, text, id) {
    var label = el("label", null, text); label.htmlFor = id;
    if (opts.mark) label.appendChild(reqMark());
    return label;
  }
  function fieldBox(opts) {
    var box = el("div", "field");
    if (opts.depth === 1) box.setAttribute("data-field", opts.key);
    return box;
  }
  function groupBox(opts, text) {
    var box = el("fieldset", "group" + (opts.item ? " row-body" : "")), legend = el("legend");
    var title = el("span", null, text); legend.appendChild(title);
    if (opts.mark) legend.appendChild(reqMark());
    legend.id = "l-" + (++uid);
    box.appendChild(legend);
    if (opts.depth === 1) box.setAttribute("data-field", opts.key);
    return { box: box, legend: legend, text: title };
  }
  function formNode(opts, box, methods) {
    var self = { el: box, opts: opts, nullable: !!opts.nullable, at: function () { return self; }, label: function () {} };
    return Object.assign(self, methods || {});
  }
  function render(raw, opts) {
    var normed = norm(raw, opts.refs), schema = normed.schema;
    opts = Object.assign({}, opts, { refs: normed.refs, again: normed.again || !!opts.again });
    var label = (raw && raw.title) || opts.label || schema.title || "Value";
    if (schema.nullable) opts.nullable = true;
    if (opts.depth > MAX_DEPTH) return jsonNode(schema, opts, label);
    var alternatives = variants(schema, opts.refs);
    if (alternatives) {
      var list = alternatives.list;
      if (alternatives.nullable) opts.nullable = true;
      if (list.length === 1) return render(list[0].schema, Object.assign({}, opts, { refs: list[0].refs, label: label, again: opts.again || list[0].again }));
      if (!list.length) return constNode(schema, opts, label, null);
      if (list.every(function (alt) { return constOf(alt.schema); })) {
        return enumNode(schema, opts, label, list.map(function (alt) { return constOf(alt.schema).value; }), list.map(function (alt, i) { return variantLabel(alt.schema, i); }));
      }
      return variantNode(schema, opts, label, list);
    }
    if (schema["const"] !== undefined) return constNode(schema, opts, label, schema["const"]);
    if (Array.isArray(schema["enum"])) return enumNode(schema, opts, label, schema["enum"], schema["enum"].map(function (value) { return typeof value === "string" ? value : JSON.stringify(value); }));
    var type = typeOf(schema);
    if (type === "object" && schema.properties) return opts.again && !opts.item ? lazyNode(schema, opts, label) : objectNode(schema, opts, label);
    if (type === "array" && schema.items && !Array.isArray(schema.items) && !schema.prefixItems) return arrayNode(schema, opts, label);
    if (type === "string" || type === "number" || type === "integer" || type === "boolean") return scalarNode(schema, opts, label, type);
    if (type === "null") return constNode(schema, opts, label, null);
    return jsonNode(schema, opts, label);
  }
  var INPUT_TYPES = { email: "email", uri: "url", url: "url", date: "date", "date-time": "datetime-local", time: "time" };
  var LONG_WORDS = /content|body|text|message|code|query|prompt|script|markdown|thought/i;
  function localIso(date) { return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 19); }
  function scalarNode(schema, opts, label, type) {
    var id = "f-" + (++uid), box = fieldBox(opts), ctl, fmt = schema.format || "", dirty = false, labelEl = null, keepsNull = false, placeholder = "";
    if (type === "boolean") {
      ctl = el("input"); ctl.type = "checkbox";
      var row = el("div", "check"); row.appendChild(ctl);
      if (!opts.bare) { labelEl = labelFor(opts, label, id); row.appendChild(labelEl); }
      box.appendChild(row);
    } else {
      var multiline = type === "string" && !fmt && (schema.maxLength == null || schema.maxLength > 500) && (LONG_WORDS.test(opts.key || "") || /multi-line/i.test(schema.description || ""));
      ctl = el(multiline ? "textarea" : "input");
      if (!multiline) ctl.type = type === "string" ? own(INPUT_TYPES, fmt) || "text" : "number";
      if (!opts.bare) { labelEl = labelFor(opts, label, id); box.appendChild(labelEl); }
      box.appendChild(ctl);
      if (type !== "string") {
        if (schema.minimum != null) ctl.min = schema.minimum; else if (typeof schema.exclusiveMinimum === "number") ctl.min = schema.exclusiveMinimum;
        if (schema.maximum != null) ctl.max = schema.maximum; else if (typeof schema.exclusiveMaximum === "number") ctl.max = schema.exclusiveMaximum;
        ctl.step = schema.multipleOf || (type === "integer" ? 1 : "any");
        ctl.inputMode = type === "integer" ? "numeric" : "decimal";
      } else {
        if (schema.maxLength != null) ctl.maxLength = schema.maxLength;
        if (fmt === "date-time" || fmt === "time") ctl.step = 1;
      }
      var example = schema.examples && schema.examples[0];
      if (example != null && typeof example !== "object") ctl.placeholder = "e.g. " + example;
    }
    if (opts.bare) ctl.setAttribute("aria-label", label);
    ctl.id = id;
    if (opts.depth === 1) ctl.name = opts.key;
    ctl.setAttribute("data-type", type);
    if (opts.mark) ctl.setAttribute("aria-required", "true");
    ctl.addEventListener("change", function () { dirty = true; });
    /* A nullable field given null (by the host or the JSON view) keeps it until edited. */
    function setNull(on) { keepsNull = on; if (type !== "boolean") ctl.placeholder = on ? "null" : placeholder; }
    ctl.addEventListener("input", function () { if (keepsNull) setNull(false); });
    placeholder = ctl.placeholder || "";
    describe(opts, schema, box, ctl);
    var self = formNode(opts, box, {
      ctl: ctl,
      get: function (errs) {
        if (type === "boolean") return ctl.checked ? true : keepsNull ? null : opts.mark || schema["default"] !== undefined || dirty ? false : undefined;
        var raw = ctl.value;
        if (raw === "" && keepsNull) return null;
        if (raw === "") {
          if (ctl.validity && ctl.validity.badInput) errs.push([self, type === "string" ? "Not a complete value" : "Enter a number"]);
          return undefined;
        }
        if (type !== "string") return Number(raw);
        if (ctl.type === "datetime-local") { var date = new Date(raw); return isNaN(date) ? raw : date.toISOString().replace(".000Z", "Z"); }
        if (ctl.type === "time" && /^\d\d:\d\d$/.test(raw)) return raw + ":00";
        return raw;
      },
      set: function (value) {
        dirty = value !== undefined;
        setNull(value === null && self.nullable);
        if (type === "boolean") { ctl.checked = value === true; return; }
        if (value === undefined || value === null) { ctl.value = ""; return; }
        if (ctl.type === "datetime-local" && typeof value === "string") { var date = new Date(value); if (!isNaN(date)) value = localIso(date); }
        if (ctl.type === "time" && typeof value === "string") value = value.replace(/^(\d\d:\d\d(:\d\d)?).*$/, "$1");
        ctl.value = typeof value === "object" ? JSON.stringify(value) : String(value);
      },
      label: function (text) { if (labelEl) labelEl.firstChild.textContent = text; else ctl.setAttribute("aria-label", text); }
    });
    if (schema["default"] !== undefined && schema["default"] !== null) self.set(schema["default"]);
    return self;
  }
  function enumNode(schema, opts, label, values, names) {
    var id = "f-" + (++uid), box = fieldBox(opts), sel = el("select"), labelEl = null, hasDefault = schema["default"] !== undefined && schema["default"] !== null, keepsNull = false;
    sel.addEventListener("change", function () { keepsNull = false; });
    sel.id = id;
    if (opts.depth === 1) sel.name = opts.key;
    sel.setAttribute("data-type", "enum");
    if (!opts.required) sel.appendChild(new Option("(not set)", ""));
    values.forEach(function (value, i) { sel.appendChild(new Option(names[i], String(i))); });
    if (opts.bare) sel.setAttribute("aria-label", label); else { labelEl = labelFor(opts, label, id); box.appendChild(labelEl); }
    box.appendChild(sel);
    describe(opts, schema, box, sel);
    var self = formNode(opts, box, {
      ctl: sel,
      get: function () { return sel.value === "" ? (keepsNull ? null : undefined) : values[Number(sel.value)]; },
      set: function (value) {
        keepsNull = value === null && self.nullable;
        var i = values.findIndex(function (allowed) { return eq(allowed, value); });
        if (i >= 0) sel.value = String(i);
        else if (sel.options[0] && sel.options[0].value === "") sel.value = "";
      },
      label: function (text) { if (labelEl) labelEl.firstChild.textContent = text; else sel.setAttribute("aria-label", text); }
    });
    if (hasDefault) self.set(schema["default"]);
    return self;
  }
  function constNode(schema, opts, label, value) {
    var id = "f-" + (++uid), box = fieldBox(opts), ctl = el("input", "const"), labelEl = null;
    ctl.id = id; ctl.readOnly = true; ctl.value = typeof value === "string" ? value : JSON.stringify(value);
    if (opts.depth === 1) ctl.name = opts.key;
    ctl.setAttribute("data-type", "const");
    if (opts.bare) ctl.setAttribute("aria-label", label); else { labelEl = labelFor(opts, label, id); box.appendChild(labelEl); }
    box.appendChild(ctl);
    describe(opts, schema, box, ctl);
    return formNode(opts, box, {
      ctl: ctl, get: function () { return value; }, set: function () {},
      label: function (text) { if (labelEl) labelEl.firstChild.textContent = text; }
    });
  }
  function jsonNode(schema, opts, label) {
    var id = "f-" + (++uid), box = fieldBox(opts), area = el("textarea", "json"), labelEl = null, type = typeOf(schema);
    area.id = id; area.spellcheck = false;
    if (opts.depth === 1) area.name = opts.key;
    area.setAttribute("data-type", "json" + (type === "object" || type === "array" ? "-" + type : ""));
    area.placeholder = type === "array" ? "[ JSON ]" : type === "object" ? "{ JSON }" : "JSON";
    if (opts.bare) area.setAttribute("aria-label", label); else { labelEl = labelFor(opts, label, id); labelEl.appendChild(el("span", "tag", "JSON")); box.appendChild(labelEl); }
    box.appendChild(area);
    describe(opts, schema, box, area);
    var self = formNode(opts, box, {
      ctl: area,
      get: function (errs) {
        if (!area.value.trim()) return undefined;
        try { return JSON.parse(area.value); } catch (e) { errs.push([self, "Not valid JSON: " + e.message]); return undefined; }
      },
      set: function (value) { area.value = pretty(value); },
      label: function (text) { if (labelEl) labelEl.firstChild.textContent = text; else area.setAttribute("aria-label", text); }
    });
    if (schema["default"] !== undefined) self.set(schema["default"]);
    return self;
  }
