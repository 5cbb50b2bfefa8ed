  /* ---- The form, continued: nodes that hold others (objects, lists, variants) and the whole form ---- */
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
