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
  function objectNode(schema, opts, label) {
    var root = opts.depth === 0, fieldset = root || opts.bare ? null : groupBox(opts, label), box = fieldset ? fieldset.box : el("div", "fields-body");
    var props = schema.properties || {}, required = schema.required || [], kids = Object.create(null), extra = Object.create(null), touched = false;
    if (fieldset) describe(opts, schema, box, null);
    Object.keys(props).forEach(function (key) {
      var mark = required.indexOf(key) >= 0;
      kids[key] = render(props[key], { key: key, label: humanize(key), mark: mark, required: mark, refs: opts.refs, depth: opts.depth + 1 });
      box.appendChild(kids[key].el);
    });
    box.addEventListener("input", function () { touched = true; });
    box.addEventListener("change", function () { touched = true; });
    var self = formNode(opts, box, {
      kids: kids,
      get: function (errs) {
        var value = {}, any = false;
        Object.keys(kids).forEach(function (key) {
          var kid = kids[key], got = kid.get(errs);
          if (got === undefined && kid.opts.required && kid.nullable) got = null;
          if (got !== undefined) { put(value, key, got); any = true; }
        });
        /* Keys the form has no field for (from the host or the JSON view) are kept. */
        Object.keys(extra).forEach(function (key) { if (!own(value, key)) { put(value, key, extra[key]); any = true; } });
        return root || opts.required || (touched && any) ? value : undefined;
      },
      set: function (value) {
        extra = Object.create(null);
        var obj = value && typeof value === "object" && !Array.isArray(value) ? value : {};
        touched = value !== undefined;
        Object.keys(kids).forEach(function (key) { kids[key].set(own(obj, key)); });
        Object.keys(obj).forEach(function (key) { if (!kids[key]) extra[key] = obj[key]; });
      },
      at: function (path) { return path.length && kids[path[0]] ? kids[path[0]].at(path.slice(1)) : self; },
      label: function (text) { if (fieldset) fieldset.text.textContent = text; }
    });
    if (schema["default"] !== undefined) self.set(schema["default"]);
    return self;
  }
  /* A schema that refers back to itself: its fields appear when asked for, so a tree-shaped
     schema gives a form only as deep as the value being written. */
  function lazyNode(schema, opts, label) {
    var box = fieldBox(opts), inner = null, addBtn, holder = el("div");
    addBtn = btn("Add " + lower1(label), "secondary small add", function () { expand(undefined); fire(box); focusIn(inner.el); });
    box.appendChild(addBtn); box.appendChild(holder);
    function expand(value) {
      inner = render(schema, Object.assign({}, opts, { again: false, required: true, depth: opts.depth + 1 }));
      var removeBtn = btn("Remove", "secondary small", function () { collapse(); fire(box); addBtn.focus(); }, "Remove " + lower1(label));
      inner.el.querySelector("legend").appendChild(removeBtn);
      holder.appendChild(inner.el); addBtn.hidden = true;
      if (value !== undefined) inner.set(value);
    }
    function collapse() { holder.textContent = ""; inner = null; addBtn.hidden = false; }
    var self = formNode(opts, box, {
      get: function (errs) { return inner ? inner.get(errs) : undefined; },
      set: function (value) { collapse(); if (value !== undefined && value !== null) expand(value); },
      at: function (path) { return inner ? inner.at(path) : self; }
    });
    return self;
  }
  function arrayNode(schema, opts, label) {
    var items = schema.items, itemNorm = norm(items, opts.refs), itemSchema = itemNorm.schema, itemVariants = variants(itemSchema, itemNorm.refs);
    var itemEnum = !itemVariants && Array.isArray(itemSchema["enum"]) ? itemSchema["enum"] : null;
    if (itemEnum) return checksNode(schema, opts, label, itemEnum);
    var itemType = typeOf(itemSchema), scalarItems = !itemVariants && (itemType === "string" || itemType === "number" || itemType === "integer" || itemType === "boolean");
    var fieldset = groupBox(opts, label), box = fieldset.box, list = el("div", "rows" + (scalarItems ? " lines" : "")), rows = [], sentRows = [];
    var itemLabel = (items && items.title) || itemSchema.title || singular(label);
    describe(opts, schema, box, null);
    box.appendChild(list);
    var addBtn = btn("+ Add " + lower1(itemLabel), "secondary small add", function () { add(undefined); fire(box); focusIn(rows[rows.length - 1].el); });
    box.appendChild(addBtn);
    function relabel() {
      rows.forEach(function (row, i) {
        var name = itemLabel + " " + (i + 1);
        row.node.label(name);
        row.up.setAttribute("aria-label", "Move " + name + " up"); row.up.title = row.up.getAttribute("aria-label"); row.up.disabled = i === 0;
        row.down.setAttribute("aria-label", "Move " + name + " down"); row.down.title = row.down.getAttribute("aria-label"); row.down.disabled = i === rows.length - 1;
        row.rm.setAttribute("aria-label", "Remove " + name); row.rm.title = row.rm.getAttribute("aria-label");
      });
      addBtn.disabled = schema.maxItems != null && rows.length >= schema.maxItems;
    }
    function move(row, by) {
      var from = rows.indexOf(row), to = from + by;
      if (to < 0 || to >= rows.length) return;
      rows.splice(from, 1); rows.splice(to, 0, row);
      list.insertBefore(row.el, rows[to + 1] ? rows[to + 1].el : null);
      relabel(); fire(box);
      (by < 0 ? (row.up.disabled ? row.down : row.up) : (row.down.disabled ? row.up : row.down)).focus();
    }
    function add(value) {
      var child = render(items, { label: itemLabel + " " + (rows.length + 1), required: true, item: true, bare: scalarItems, refs: opts.refs, depth: opts.depth + 1 });
      var row = { node: child, el: el("div", "row") }, tools = el("div", "row-tools");
      row.up = btn("\u2191", "icon", function () { move(row, -1); });
      row.down = btn("\u2193", "icon", function () { move(row, 1); });
      row.rm = btn("\u2715", "icon", function () {
        var i = rows.indexOf(row);
        rows.splice(i, 1); row.el.remove(); relabel(); fire(box);
        var next = rows[i] || rows[i - 1];
        (next ? next.rm : addBtn).focus();
      });
      tools.appendChild(row.up); tools.appendChild(row.down); tools.appendChild(row.rm);
      row.el.appendChild(child.el); row.el.appendChild(tools);
      list.appendChild(row.el); rows.push(row);
      if (value !== undefined) child.set(value);
      relabel();
    }
    var self = formNode(opts, box, {
      get: function (errs) {
        var out = [];
        /* Empty rows are left out: sentRows maps a path's index back to its row. */
        sentRows = [];
        rows.forEach(function (row, i) {
          var value = row.node.get(errs);
          if (value === undefined && row.node.nullable) value = null;
          if (value !== undefined) { out.push(value); sentRows.push(i); }
        });
        return out.length || opts.required ? out : undefined;
      },
      set: function (value) {
        rows.forEach(function (row) { row.el.remove(); });
        rows = [];
        if (Array.isArray(value)) value.forEach(function (item) { add(item); });
        relabel();
      },
      at: function (path) {
        if (!path.length) return self;
        var row = rows[sentRows[Number(path[0])]];
        return row ? row.node.at(path.slice(1)) : self;
      },
      label: function (text) { fieldset.text.textContent = text; }
    });
    if (Array.isArray(schema["default"])) self.set(schema["default"]);
    else for (var i = 0; i < (schema.minItems || (opts.required && !itemNorm.again ? 1 : 0)); i++) add(undefined);
    return self;
  }
  /* An array of enum values: one checkbox per value. */
  function checksNode(schema, opts, label, values) {
    var fieldset = groupBox(opts, label), box = fieldset.box, checks = el("div", "checks"), ctls = [];
    describe(opts, schema, box, null);
    values.forEach(function (value) {
      var id = "f-" + (++uid), ctl = el("input"), labelEl = el("label", "check");
      ctl.type = "checkbox"; ctl.id = id; ctl.setAttribute("data-type", "enum-item");
      labelEl.appendChild(ctl); labelEl.appendChild(document.createTextNode(" " + (typeof value === "string" ? value : JSON.stringify(value))));
      checks.appendChild(labelEl); ctls.push(ctl);
    });
    box.appendChild(checks);
    var self = formNode(opts, box, {
      get: function () {
        var out = values.filter(function (value, i) { return ctls[i].checked; });
        return out.length || opts.required ? out : undefined;
      },
      set: function (value) { ctls.forEach(function (ctl, i) { ctl.checked = Array.isArray(value) && value.some(function (item) { return eq(item, values[i]); }); }); },
      label: function (text) { fieldset.text.textContent = text; }
    });
    if (schema["default"] !== undefined) self.set(schema["default"]);
    return self;
  }
  /* oneOf / anyOf: pick a variant, then fill its fields. */
  function variantNode(schema, opts, label, list) {
    var fieldset = opts.bare ? null : groupBox(opts, label), box = fieldset ? fieldset.box : fieldBox(opts), sel = el("select", "variant"), holder = el("div", "variant-body"), current = null, keepsNull = false;
    sel.id = "f-" + (++uid);
    if (fieldset) sel.setAttribute("aria-labelledby", fieldset.legend.id); else sel.setAttribute("aria-label", label);
    if (opts.depth === 1) sel.name = opts.key;
    sel.setAttribute("data-type", "variant");
    if (!opts.required) sel.appendChild(new Option("(not set)", ""));
    list.forEach(function (alt, i) { sel.appendChild(new Option(variantLabel(alt.schema, i), String(i))); });
    if (fieldset) describe(opts, schema, box, sel);
    box.appendChild(sel); box.appendChild(holder);
    function pick(index) {
      holder.textContent = ""; current = null;
      sel.value = index < 0 ? "" : String(index);
      if (index < 0) return;
      var chosen = list[index];
      current = render(chosen.schema, { key: opts.key, label: label, required: true, bare: true, refs: chosen.refs, depth: opts.depth + 1, again: false });
      holder.appendChild(current.el);
    }
    sel.addEventListener("change", function () { keepsNull = false; pick(sel.value === "" ? -1 : Number(sel.value)); });
    var self = formNode(opts, box, {
      ctl: sel,
      get: function (errs) { return keepsNull ? null : current ? current.get(errs) : undefined; },
      set: function (value) {
        keepsNull = value === null && self.nullable;
        if (value === undefined || value === null) { pick(opts.required && !keepsNull ? 0 : -1); return; }
        /* The first variant the value passes, else the first of its type. */
        var i = list.findIndex(function (alt) { return !check(alt.schema, value, "", []).length; });
        if (i < 0) i = list.findIndex(function (alt) { var type = typeOf(alt.schema); return !type || type === kindOf(value) || (type === "number" && kindOf(value) === "integer"); });
        pick(i < 0 ? 0 : i);
        current.set(value);
      },
      at: function (path) { return current ? current.at(path) : self; },
      label: function (text) { if (fieldset) fieldset.text.textContent = text; else sel.setAttribute("aria-label", text); }
    });
    self.set(schema["default"] === null ? undefined : schema["default"]);
    return self;
  }
  /* The form of the whole input schema (a JSON editor when it is too large), in #fields. */
  function buildForm() {
    if (meta.schemaTooLarge) {
      rootNode = jsonNode({ type: "object" }, { key: "arguments", label: "Arguments", depth: 0, required: true }, "Arguments");
      fieldsEl.appendChild(el("p", "hint", "This tool's input schema is too large for a form: write the arguments as JSON."));
    } else {
      var normed = norm(ROOT, []), rootOpts = { key: "", label: "Arguments", depth: 0, required: true, refs: normed.refs };
      rootNode = variants(normed.schema, normed.refs) ? render(ROOT, rootOpts) : objectNode(normed.schema, rootOpts, "Arguments");
    }
    fieldsEl.appendChild(rootNode.el);
    if (!meta.schemaTooLarge && !Object.keys(norm(ROOT).schema.properties || {}).length && !variants(norm(ROOT).schema)) {
      fieldsEl.appendChild(el("p", "hint", "This tool declares no arguments."));
      jsonToggle.hidden = true;
    }
  }

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
