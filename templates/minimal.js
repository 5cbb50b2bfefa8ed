/* mcp-gen-ui template page: a form built from the tool's input schema (the whole schema: rows for
 * arrays, fieldsets for objects, variant pickers, $ref resolved), a JSON view kept in sync with it,
 * a confirmation before destructive calls, and results rendered by shape. Runs after the View
 * runtime; reads the tool's name, confirmation flag and input schema from #tool-meta. Never
 * writes HTML strings: every node is made with createElement and filled with textContent. */
(function () {
  "use strict";
  var meta = JSON.parse(document.getElementById("tool-meta").textContent);
  var ROOT = meta.inputSchema && typeof meta.inputSchema === "object" ? meta.inputSchema : {};
  var $ = function (id) { return document.getElementById(id); };
  var form = $("tool-form"), fieldsEl = $("fields"), statusEl = $("status"), resultEl = $("result"), submitBtn = $("submit");
  var jsonView = $("json-view"), jsonArgs = $("json-args"), jsonErr = $("json-error"), jsonToggle = $("json-toggle");
  var app = new McpGenUiRuntime.App({ name: "mcp-gen-ui-template", version: meta.templateVersion });
  var uid = 0, MAX_DEPTH = 10, jsonMode = false;

  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text != null) e.textContent = text; return e; }
  function btn(text, cls, onClick, aria) {
    var b = el("button", cls, text); b.type = "button";
    if (aria) { b.setAttribute("aria-label", aria); b.title = aria; }
    b.addEventListener("click", onClick);
    return b;
  }
  function humanize(n) {
    var s = String(n).replace(/[_-]+/g, " ").replace(/([a-z0-9])([A-Z])/g, function (m, a, b) { return a + " " + b.toLowerCase(); }).trim();
    return s ? s.charAt(0).toUpperCase() + s.slice(1) : String(n);
  }
  var IRREGULAR = { children: "Child", people: "Person", data: "Item", criteria: "Criterion" };
  function singular(label) {
    var irr = own(IRREGULAR, label.toLowerCase());
    if (irr) return irr;
    var w = label.replace(/ies$/, "y").replace(/(ss|x|ch|sh)es$/, "$1").replace(/([^su])s$/, "$1");
    return w !== label ? w : "Item";
  }
  /* Schema keys are data: "constructor" or "__proto__" must behave like any other name. */
  function own(map, k) { return map != null && Object.prototype.hasOwnProperty.call(map, k) ? map[k] : undefined; }
  function put(obj, k, v) { Object.defineProperty(obj, k, { value: v, enumerable: true, writable: true, configurable: true }); }
  function lower1(s) { return s.charAt(0).toLowerCase() + s.slice(1); }
  function eq(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  function kindOf(v) {
    return v === null ? "null" : Array.isArray(v) ? "array" : typeof v === "number" ? (Number.isInteger(v) ? "integer" : "number") : typeof v;
  }
  function pretty(v) { return v === undefined ? "" : JSON.stringify(v, null, 2); }

  /* ---- Schemas ---------------------------------------------------------------------------- */
  function pointer(ref) {
    if (ref === "#") return ROOT;
    if (ref.indexOf("#/") !== 0) return undefined;
    var node = ROOT;
    ref.slice(2).split("/").forEach(function (p) {
      p = decodeURIComponent(p).replace(/~1/g, "/").replace(/~0/g, "~");
      node = node && typeof node === "object" ? node[p] : undefined;
    });
    return node;
  }
  function merge(a, b) {
    var m = Object.assign({}, a, b), ra = a.required || [];
    if (a.properties || b.properties) m.properties = Object.assign({}, a.properties, b.properties);
    if (a.required || b.required) m.required = ra.concat((b.required || []).filter(function (r) { return ra.indexOf(r) < 0; }));
    return m;
  }
  /* The schema with $ref resolved (keywords beside a $ref win), allOf merged and "null" taken out
     of type lists. refs: the $refs expanded on the way here; `again` says this schema expands one
     of them once more (a recursive schema), which the form then renders only on demand. A chain of
     $refs that loops with nothing in between stands for any JSON value. */
  function norm(s, refs) {
    refs = refs || [];
    if (!s || typeof s !== "object") return { s: {}, refs: refs, again: false };
    var again = false, chain = [];
    while (typeof s.$ref === "string") {
      var ref = s.$ref, target = pointer(ref), rest = Object.assign({}, s);
      delete rest.$ref;
      if (chain.indexOf(ref) >= 0) return { s: rest, refs: refs, again: true };
      chain.push(ref);
      if (refs.indexOf(ref) >= 0) again = true; else refs = refs.concat(ref);
      s = target && typeof target === "object" ? Object.assign({}, target, rest) : rest;
    }
    if (Array.isArray(s.allOf)) {
      var base = Object.assign({}, s);
      delete base.allOf;
      s = s.allOf.reduce(function (acc, part) {
        var n = norm(part, refs);
        refs = n.refs; again = again || n.again;
        return merge(acc, n.s);
      }, base);
    }
    if (Array.isArray(s.type)) {
      var types = s.type.filter(function (t) { return t !== "null"; }), t = Object.assign({}, s);
      if (types.length > 1) { delete t.type; t.anyOf = types.map(function (x) { return { type: x }; }); }
      else if (types.length) t.type = types[0];
      else { delete t.type; t["const"] = null; }
      if (types.length < s.type.length) t.nullable = true;
      s = t;
    }
    return { s: s, refs: refs, again: again };
  }
  function isNull(s) { return s.type === "null" || (s["const"] === null && !s.type) || (Array.isArray(s["enum"]) && s["enum"].length === 1 && s["enum"][0] === null); }
  /* oneOf / anyOf as a list of whole schemas (the keywords beside them merged in), without the
     "null" alternative, which makes the value nullable instead. */
  function variants(s, refs) {
    var list = s.oneOf || s.anyOf;
    if (!Array.isArray(list) || !list.length) return null;
    var base = Object.assign({}, s), out = [], nullable = false;
    delete base.oneOf; delete base.anyOf;
    list.forEach(function (v) {
      var n = norm(v, refs);
      if (isNull(n.s)) nullable = true;
      else out.push({ s: merge(base, n.s), refs: n.refs, again: n.again });
    });
    return { list: out, nullable: nullable };
  }
  function typeOf(s) {
    if (typeof s.type === "string") return s.type;
    if (s.properties || s.additionalProperties || s.required) return "object";
    if (s.items || s.prefixItems) return "array";
    var d = s["default"] !== undefined ? s["default"] : s.examples && s.examples[0];
    return d !== undefined && d !== null ? kindOf(d) : undefined;
  }
  function constOf(s) { return s["const"] !== undefined ? { v: s["const"] } : Array.isArray(s["enum"]) && s["enum"].length === 1 ? { v: s["enum"][0] } : null; }
  function variantLabel(v, i) {
    if (v.title) return v.title;
    var c = constOf(v);
    if (c) return String(c.v);
    var props = v.properties || {};
    for (var k in props) { var pc = constOf(norm(props[k]).s); if (pc) return humanize(String(pc.v)); }
    var names = { string: "Text", number: "Number", integer: "Whole number", boolean: "Yes / no", array: "List" };
    if (own(names, v.type)) return names[v.type];
    return v.required && v.required.length ? v.required.map(humanize).join(", ") : "Option " + (i + 1);
  }

  /* ---- Validation: one checker for the form and the JSON view. Errors are [path, message]. -- */
  var FORMATS = {
    email: [/^[^\s@]+@[^\s@]+\.[^\s@]+$/, "Not an email address"],
    uri: [/^[a-z][a-z0-9+.-]*:[^\s]+$/i, "Not a URL (it needs a scheme, like https://)"],
    url: [/^[a-z][a-z0-9+.-]*:[^\s]+$/i, "Not a URL (it needs a scheme, like https://)"],
    date: [/^\d{4}-\d\d-\d\d$/, "Not a date (YYYY-MM-DD)"],
    "date-time": [/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(z|[+-]\d\d:\d\d)$/i, "Not a date and time (YYYY-MM-DDTHH:MM:SSZ)"]
  };
  var TYPE_NAMES = { string: "text", number: "a number", integer: "a whole number", boolean: "true or false", object: "an object", array: "a list", "null": "null" };
  function check(raw, v, path, out, depth) {
    depth = depth || 0;
    if (v === undefined || depth > 60) return out;
    var n = norm(raw), s = n.s;
    if (v === null && s.nullable) return out;
    var vs = variants(s);
    if (vs) {
      if (v === null && vs.nullable) return out;
      var best = null;
      vs.list.forEach(function (x) { var e = check(x.s, v, path, [], depth + 1); if (!best || e.length < best.length) best = e; });
      if (best && best.length) Array.prototype.push.apply(out, best);
      return out;
    }
    if (s["const"] !== undefined && !eq(v, s["const"])) { out.push([path, "Must be " + JSON.stringify(s["const"])]); return out; }
    if (Array.isArray(s["enum"]) && !s["enum"].some(function (e) { return eq(e, v); })) {
      out.push([path, "Must be one of: " + s["enum"].map(function (e) { return JSON.stringify(e); }).join(", ")]); return out;
    }
    var t = s.type, k = kindOf(v);
    if (t && t !== k && !(t === "number" && k === "integer")) { out.push([path, "Expected " + (own(TYPE_NAMES, t) || t)]); return out; }
    if (k === "string") {
      var len = Array.from(v).length;
      if (s.minLength != null && len < s.minLength) out.push([path, "At least " + s.minLength + " characters"]);
      if (s.maxLength != null && len > s.maxLength) out.push([path, "At most " + s.maxLength + " characters"]);
      if (s.pattern) { try { if (!new RegExp(s.pattern, "u").test(v)) out.push([path, "Must match " + s.pattern]); } catch (e) { /* a pattern this browser cannot read is not checked */ } }
      var f = own(FORMATS, s.format);
      if (f && (!f[0].test(v) || (/date/.test(s.format) && isNaN(new Date(v))))) out.push([path, f[1]]);
    } else if (k === "number" || k === "integer") {
      var xmin = s.exclusiveMinimum, xmax = s.exclusiveMaximum;
      if (s.minimum != null && (xmin === true ? v <= s.minimum : v < s.minimum)) out.push([path, (xmin === true ? "Must be more than " : "Must be at least ") + s.minimum]);
      if (s.maximum != null && (xmax === true ? v >= s.maximum : v > s.maximum)) out.push([path, (xmax === true ? "Must be less than " : "Must be at most ") + s.maximum]);
      if (typeof xmin === "number" && v <= xmin) out.push([path, "Must be more than " + xmin]);
      if (typeof xmax === "number" && v >= xmax) out.push([path, "Must be less than " + xmax]);
      if (s.multipleOf && Math.abs(v / s.multipleOf - Math.round(v / s.multipleOf)) > 1e-9) out.push([path, "Must be a multiple of " + s.multipleOf]);
    } else if (k === "array") {
      if (s.minItems != null && v.length < s.minItems) out.push([path, "At least " + s.minItems + (s.minItems === 1 ? " item" : " items")]);
      if (s.maxItems != null && v.length > s.maxItems) out.push([path, "At most " + s.maxItems + " items"]);
      if (s.uniqueItems && new Set(v.map(function (x) { return JSON.stringify(x); })).size !== v.length) out.push([path, "Items must all differ"]);
      if (s.items && !Array.isArray(s.items)) v.forEach(function (x, i) { check(s.items, x, path + "/" + i, out, depth + 1); });
    } else if (k === "object") {
      var props = s.properties || {};
      (s.required || []).forEach(function (r) { if (own(v, r) === undefined) out.push([path + "/" + r, "Required"]); });
      Object.keys(v).forEach(function (key) {
        if (own(props, key)) check(props[key], v[key], path + "/" + key, out, depth + 1);
        else if (s.additionalProperties === false) out.push([path + "/" + key, "Not an argument of this tool"]);
        else if (s.additionalProperties && typeof s.additionalProperties === "object") check(s.additionalProperties, v[key], path + "/" + key, out, depth + 1);
      });
    }
    return out;
  }

  /* ---- The form: one node per schema, each {el, get(errs), set(v), at(path), label(text)}.
     get() gives undefined for "nothing entered"; errs collects [node, message] for values that
     cannot even be read (a number field holding text, JSON that does not parse). ---------- */
  function describe(o, s, w, ctl) {
    var d = s.description;
    if (!d || (o.item && !ctl)) return;
    var h = el("div", "hint", d); h.id = "h-" + (++uid);
    w.appendChild(h);
    if (ctl) ctl.setAttribute("aria-describedby", h.id);
  }
  function reqMark() { var r = el("span", "req", "*"); r.setAttribute("aria-hidden", "true"); return r; }
  function labelFor(o, text, id) {
    var l = el("label", null, text); l.htmlFor = id;
    if (o.mark) l.appendChild(reqMark());
    return l;
  }
  function fieldBox(o) {
    var w = el("div", "field");
    if (o.depth === 1) w.setAttribute("data-field", o.key);
    return w;
  }
  function group(o, text) {
    var w = el("fieldset", "group" + (o.item ? " row-body" : "")), lg = el("legend");
    var t = el("span", null, text); lg.appendChild(t);
    if (o.mark) lg.appendChild(reqMark());
    lg.id = "l-" + (++uid);
    w.appendChild(lg);
    if (o.depth === 1) w.setAttribute("data-field", o.key);
    return { w: w, legend: lg, text: t };
  }
  function node(o, w, extra) {
    var n = { el: w, o: o, nullable: !!o.nullable, at: function () { return n; }, label: function () {} };
    return Object.assign(n, extra || {});
  }
  function render(raw, o) {
    var n = norm(raw, o.refs), s = n.s;
    o = Object.assign({}, o, { refs: n.refs, again: n.again || !!o.again });
    var label = (raw && raw.title) || o.label || s.title || "Value";
    if (s.nullable) o.nullable = true;
    if (o.depth > MAX_DEPTH) return jsonNode(s, o, label);
    var vs = variants(s, o.refs);
    if (vs) {
      if (vs.nullable) o.nullable = true;
      if (vs.list.length === 1) return render(vs.list[0].s, Object.assign({}, o, { refs: vs.list[0].refs, label: label, again: o.again || vs.list[0].again }));
      if (!vs.list.length) return constNode(s, o, label, null);
      if (vs.list.every(function (v) { return constOf(v.s); })) {
        return enumNode(s, o, label, vs.list.map(function (v) { return constOf(v.s).v; }), vs.list.map(function (v, i) { return variantLabel(v.s, i); }));
      }
      return variantNode(s, o, label, vs.list);
    }
    if (s["const"] !== undefined) return constNode(s, o, label, s["const"]);
    if (Array.isArray(s["enum"])) return enumNode(s, o, label, s["enum"], s["enum"].map(function (e) { return typeof e === "string" ? e : JSON.stringify(e); }));
    var t = typeOf(s);
    if (t === "object" && s.properties) return o.again && !o.item ? lazyNode(s, o, label) : objectNode(s, o, label);
    if (t === "array" && s.items && !Array.isArray(s.items) && !s.prefixItems) return arrayNode(s, o, label);
    if (t === "string" || t === "number" || t === "integer" || t === "boolean") return scalarNode(s, o, label, t);
    if (t === "null") return constNode(s, o, label, null);
    return jsonNode(s, o, label);
  }
  var INPUT_TYPES = { email: "email", uri: "url", url: "url", date: "date", "date-time": "datetime-local", time: "time" };
  var LONG_WORDS = /content|body|text|message|code|query|prompt|script|markdown|thought/i;
  function localIso(d) { return new Date(d.getTime() - d.getTimezoneOffset() * 60000).toISOString().slice(0, 19); }
  function scalarNode(s, o, label, t) {
    var id = "f-" + (++uid), w = fieldBox(o), ctl, fmt = s.format || "", dirty = false, lab = null, nul = false, hint = "";
    if (t === "boolean") {
      ctl = el("input"); ctl.type = "checkbox";
      var row = el("div", "check"); row.appendChild(ctl);
      if (!o.bare) { lab = labelFor(o, label, id); row.appendChild(lab); }
      w.appendChild(row);
    } else {
      var long = t === "string" && !fmt && (s.maxLength == null || s.maxLength > 500) && (LONG_WORDS.test(o.key || "") || /multi-line/i.test(s.description || ""));
      ctl = el(long ? "textarea" : "input");
      if (!long) ctl.type = t === "string" ? own(INPUT_TYPES, fmt) || "text" : "number";
      if (!o.bare) { lab = labelFor(o, label, id); w.appendChild(lab); }
      w.appendChild(ctl);
      if (t !== "string") {
        if (s.minimum != null) ctl.min = s.minimum; else if (typeof s.exclusiveMinimum === "number") ctl.min = s.exclusiveMinimum;
        if (s.maximum != null) ctl.max = s.maximum; else if (typeof s.exclusiveMaximum === "number") ctl.max = s.exclusiveMaximum;
        ctl.step = s.multipleOf || (t === "integer" ? 1 : "any");
        ctl.inputMode = t === "integer" ? "numeric" : "decimal";
      } else {
        if (s.maxLength != null) ctl.maxLength = s.maxLength;
        if (fmt === "date-time" || fmt === "time") ctl.step = 1;
      }
      var ex = s.examples && s.examples[0];
      if (ex != null && typeof ex !== "object") ctl.placeholder = "e.g. " + ex;
    }
    if (o.bare) ctl.setAttribute("aria-label", label);
    ctl.id = id;
    if (o.depth === 1) ctl.name = o.key;
    ctl.setAttribute("data-type", t);
    if (o.mark) ctl.setAttribute("aria-required", "true");
    ctl.addEventListener("change", function () { dirty = true; });
    /* A nullable field given null (by the host or the JSON view) keeps it until edited. */
    function setNull(on) { nul = on; if (t !== "boolean") ctl.placeholder = on ? "null" : hint; }
    ctl.addEventListener("input", function () { if (nul) setNull(false); });
    hint = ctl.placeholder || "";
    describe(o, s, w, ctl);
    var n = node(o, w, {
      ctl: ctl,
      get: function (errs) {
        if (t === "boolean") return ctl.checked ? true : nul ? null : o.mark || s["default"] !== undefined || dirty ? false : undefined;
        var raw = ctl.value;
        if (raw === "" && nul) return null;
        if (raw === "") {
          if (ctl.validity && ctl.validity.badInput) errs.push([n, t === "string" ? "Not a complete value" : "Enter a number"]);
          return undefined;
        }
        if (t !== "string") return Number(raw);
        if (ctl.type === "datetime-local") { var d = new Date(raw); return isNaN(d) ? raw : d.toISOString().replace(".000Z", "Z"); }
        if (ctl.type === "time" && /^\d\d:\d\d$/.test(raw)) return raw + ":00";
        return raw;
      },
      set: function (v) {
        dirty = v !== undefined;
        setNull(v === null && n.nullable);
        if (t === "boolean") { ctl.checked = v === true; return; }
        if (v === undefined || v === null) { ctl.value = ""; return; }
        if (ctl.type === "datetime-local" && typeof v === "string") { var d = new Date(v); if (!isNaN(d)) v = localIso(d); }
        if (ctl.type === "time" && typeof v === "string") v = v.replace(/^(\d\d:\d\d(:\d\d)?).*$/, "$1");
        ctl.value = typeof v === "object" ? JSON.stringify(v) : String(v);
      },
      label: function (text) { if (lab) lab.firstChild.textContent = text; else ctl.setAttribute("aria-label", text); }
    });
    if (s["default"] !== undefined && s["default"] !== null) n.set(s["default"]);
    return n;
  }
  function enumNode(s, o, label, values, names) {
    var id = "f-" + (++uid), w = fieldBox(o), sel = el("select"), lab = null, hasDefault = s["default"] !== undefined && s["default"] !== null, nul = false;
    sel.addEventListener("change", function () { nul = false; });
    sel.id = id;
    if (o.depth === 1) sel.name = o.key;
    sel.setAttribute("data-type", "enum");
    if (!o.required) sel.appendChild(new Option("(not set)", ""));
    values.forEach(function (v, i) { sel.appendChild(new Option(names[i], String(i))); });
    if (o.bare) sel.setAttribute("aria-label", label); else { lab = labelFor(o, label, id); w.appendChild(lab); }
    w.appendChild(sel);
    describe(o, s, w, sel);
    var n = node(o, w, {
      ctl: sel,
      get: function () { return sel.value === "" ? (nul ? null : undefined) : values[Number(sel.value)]; },
      set: function (v) {
        nul = v === null && n.nullable;
        var i = values.findIndex(function (x) { return eq(x, v); });
        if (i >= 0) sel.value = String(i);
        else if (sel.options[0] && sel.options[0].value === "") sel.value = "";
      },
      label: function (text) { if (lab) lab.firstChild.textContent = text; else sel.setAttribute("aria-label", text); }
    });
    if (hasDefault) n.set(s["default"]);
    return n;
  }
  function constNode(s, o, label, value) {
    var id = "f-" + (++uid), w = fieldBox(o), ctl = el("input", "const"), lab = null;
    ctl.id = id; ctl.readOnly = true; ctl.value = typeof value === "string" ? value : JSON.stringify(value);
    if (o.depth === 1) ctl.name = o.key;
    ctl.setAttribute("data-type", "const");
    if (o.bare) ctl.setAttribute("aria-label", label); else { lab = labelFor(o, label, id); w.appendChild(lab); }
    w.appendChild(ctl);
    describe(o, s, w, ctl);
    return node(o, w, {
      ctl: ctl, get: function () { return value; }, set: function () {},
      label: function (text) { if (lab) lab.firstChild.textContent = text; }
    });
  }
  function jsonNode(s, o, label) {
    var id = "f-" + (++uid), w = fieldBox(o), ta = el("textarea", "json"), lab = null, t = typeOf(s);
    ta.id = id; ta.spellcheck = false;
    if (o.depth === 1) ta.name = o.key;
    ta.setAttribute("data-type", "json" + (t === "object" || t === "array" ? "-" + t : ""));
    ta.placeholder = t === "array" ? "[ JSON ]" : t === "object" ? "{ JSON }" : "JSON";
    if (o.bare) ta.setAttribute("aria-label", label); else { lab = labelFor(o, label, id); lab.appendChild(el("span", "tag", "JSON")); w.appendChild(lab); }
    w.appendChild(ta);
    describe(o, s, w, ta);
    var n = node(o, w, {
      ctl: ta,
      get: function (errs) {
        if (!ta.value.trim()) return undefined;
        try { return JSON.parse(ta.value); } catch (e) { errs.push([n, "Not valid JSON: " + e.message]); return undefined; }
      },
      set: function (v) { ta.value = pretty(v); },
      label: function (text) { if (lab) lab.firstChild.textContent = text; else ta.setAttribute("aria-label", text); }
    });
    if (s["default"] !== undefined) n.set(s["default"]);
    return n;
  }
  function objectNode(s, o, label) {
    var root = o.depth === 0, g = root || o.bare ? null : group(o, label), w = g ? g.w : el("div", "fields-body");
    var props = s.properties || {}, req = s.required || [], kids = Object.create(null), extra = Object.create(null), touched = false;
    if (g) describe(o, s, w, null);
    Object.keys(props).forEach(function (k) {
      var mark = req.indexOf(k) >= 0;
      kids[k] = render(props[k], { key: k, label: humanize(k), mark: mark, required: mark, refs: o.refs, depth: o.depth + 1 });
      w.appendChild(kids[k].el);
    });
    w.addEventListener("input", function () { touched = true; });
    w.addEventListener("change", function () { touched = true; });
    var n = node(o, w, {
      kids: kids,
      get: function (errs) {
        var v = {}, any = false;
        Object.keys(kids).forEach(function (k) {
          var x = kids[k].get(errs);
          if (x === undefined && kids[k].o.required && kids[k].nullable) x = null;
          if (x !== undefined) { put(v, k, x); any = true; }
        });
        Object.keys(extra).forEach(function (k) { if (!own(v, k)) { put(v, k, extra[k]); any = true; } });
        return root || o.required || (touched && any) ? v : undefined;
      },
      set: function (v) {
        extra = Object.create(null);
        var obj = v && typeof v === "object" && !Array.isArray(v) ? v : {};
        touched = v !== undefined;
        Object.keys(kids).forEach(function (k) { kids[k].set(own(obj, k)); });
        Object.keys(obj).forEach(function (k) { if (!kids[k]) extra[k] = obj[k]; });
      },
      at: function (path) { return path.length && kids[path[0]] ? kids[path[0]].at(path.slice(1)) : n; },
      label: function (text) { if (g) g.text.textContent = text; }
    });
    if (s["default"] !== undefined) n.set(s["default"]);
    return n;
  }
  /* A schema that refers back to itself: its fields appear when asked for, so a tree-shaped
     schema gives a form only as deep as the value being written. */
  function lazyNode(s, o, label) {
    var w = fieldBox(o), inner = null, add, holder = el("div");
    add = btn("Add " + lower1(label), "secondary small add", function () { open(undefined); fire(w); focusIn(inner.el); });
    w.appendChild(add); w.appendChild(holder);
    function open(v) {
      inner = render(s, Object.assign({}, o, { again: false, required: true, depth: o.depth + 1 }));
      var rm = btn("Remove", "secondary small", function () { close(); fire(w); add.focus(); }, "Remove " + lower1(label));
      inner.el.querySelector("legend").appendChild(rm);
      holder.appendChild(inner.el); add.hidden = true;
      if (v !== undefined) inner.set(v);
    }
    function close() { holder.textContent = ""; inner = null; add.hidden = false; }
    var n = node(o, w, {
      get: function (errs) { return inner ? inner.get(errs) : undefined; },
      set: function (v) { close(); if (v !== undefined && v !== null) open(v); },
      at: function (path) { return inner ? inner.at(path) : n; }
    });
    return n;
  }
  function fire(target) { target.dispatchEvent(new Event("change", { bubbles: true })); }
  function focusIn(box) { var c = box && box.querySelector("input:not([readonly]),select,textarea"); if (c) c.focus(); }
  function arrayNode(s, o, label) {
    var items = s.items, is = norm(items, o.refs), it = is.s, ivs = variants(it, is.refs);
    var ienum = !ivs && Array.isArray(it["enum"]) ? it["enum"] : null;
    if (ienum) return checksNode(s, o, label, ienum);
    var itemType = typeOf(it), scalarItems = !ivs && (itemType === "string" || itemType === "number" || itemType === "integer" || itemType === "boolean");
    var g = group(o, label), w = g.w, list = el("div", "rows" + (scalarItems ? " lines" : "")), rows = [], map = [];
    var itemLabel = (items && items.title) || it.title || singular(label);
    describe(o, s, w, null);
    w.appendChild(list);
    var addBtn = btn("+ Add " + lower1(itemLabel), "secondary small add", function () { add(undefined); fire(w); focusIn(rows[rows.length - 1].el); });
    w.appendChild(addBtn);
    function relabel() {
      rows.forEach(function (r, i) {
        var name = itemLabel + " " + (i + 1);
        r.node.label(name);
        r.up.setAttribute("aria-label", "Move " + name + " up"); r.up.title = r.up.getAttribute("aria-label"); r.up.disabled = i === 0;
        r.down.setAttribute("aria-label", "Move " + name + " down"); r.down.title = r.down.getAttribute("aria-label"); r.down.disabled = i === rows.length - 1;
        r.rm.setAttribute("aria-label", "Remove " + name); r.rm.title = r.rm.getAttribute("aria-label");
      });
      addBtn.disabled = s.maxItems != null && rows.length >= s.maxItems;
    }
    function move(r, by) {
      var i = rows.indexOf(r), j = i + by;
      if (j < 0 || j >= rows.length) return;
      rows.splice(i, 1); rows.splice(j, 0, r);
      list.insertBefore(r.el, rows[j + 1] ? rows[j + 1].el : null);
      relabel(); fire(w);
      (by < 0 ? (r.up.disabled ? r.down : r.up) : (r.down.disabled ? r.up : r.down)).focus();
    }
    function add(v) {
      var child = render(items, { label: itemLabel + " " + (rows.length + 1), required: true, item: true, bare: scalarItems, refs: o.refs, depth: o.depth + 1 });
      var r = { node: child, el: el("div", "row") }, tools = el("div", "row-tools");
      r.up = btn("\u2191", "icon", function () { move(r, -1); });
      r.down = btn("\u2193", "icon", function () { move(r, 1); });
      r.rm = btn("\u2715", "icon", function () {
        var i = rows.indexOf(r);
        rows.splice(i, 1); r.el.remove(); relabel(); fire(w);
        var next = rows[i] || rows[i - 1];
        (next ? next.rm : addBtn).focus();
      });
      tools.appendChild(r.up); tools.appendChild(r.down); tools.appendChild(r.rm);
      r.el.appendChild(child.el); r.el.appendChild(tools);
      list.appendChild(r.el); rows.push(r);
      if (v !== undefined) child.set(v);
      relabel();
    }
    var n = node(o, w, {
      get: function (errs) {
        var out = [];
        map = [];
        rows.forEach(function (r, i) {
          var v = r.node.get(errs);
          if (v === undefined && r.node.nullable) v = null;
          if (v !== undefined) { out.push(v); map.push(i); }
        });
        return out.length || o.required ? out : undefined;
      },
      set: function (v) {
        rows.forEach(function (r) { r.el.remove(); });
        rows = [];
        if (Array.isArray(v)) v.forEach(function (x) { add(x); });
        relabel();
      },
      at: function (path) {
        if (!path.length) return n;
        var r = rows[map[Number(path[0])]];
        return r ? r.node.at(path.slice(1)) : n;
      },
      label: function (text) { g.text.textContent = text; }
    });
    if (Array.isArray(s["default"])) n.set(s["default"]);
    else for (var i = 0; i < (s.minItems || (o.required && !is.again ? 1 : 0)); i++) add(undefined);
    return n;
  }
  function sync() { if (!jsonMode) jsonArgs.value = pretty(rootNode.get([])); }
  /* An array of enum values: one checkbox per value. */
  function checksNode(s, o, label, values) {
    var g = group(o, label), w = g.w, box = el("div", "checks"), ctls = [];
    describe(o, s, w, null);
    values.forEach(function (v) {
      var id = "f-" + (++uid), c = el("input"), l = el("label", "check");
      c.type = "checkbox"; c.id = id; c.setAttribute("data-type", "enum-item");
      l.appendChild(c); l.appendChild(document.createTextNode(" " + (typeof v === "string" ? v : JSON.stringify(v))));
      box.appendChild(l); ctls.push(c);
    });
    w.appendChild(box);
    var n = node(o, w, {
      get: function () {
        var out = values.filter(function (v, i) { return ctls[i].checked; });
        return out.length || o.required ? out : undefined;
      },
      set: function (v) { ctls.forEach(function (c, i) { c.checked = Array.isArray(v) && v.some(function (x) { return eq(x, values[i]); }); }); },
      label: function (text) { g.text.textContent = text; }
    });
    if (s["default"] !== undefined) n.set(s["default"]);
    return n;
  }
  /* oneOf / anyOf: pick a variant, then fill its fields. */
  function variantNode(s, o, label, list) {
    var g = o.bare ? null : group(o, label), w = g ? g.w : fieldBox(o), sel = el("select", "variant"), holder = el("div", "variant-body"), cur = null, nul = false;
    sel.id = "f-" + (++uid);
    if (g) sel.setAttribute("aria-labelledby", g.legend.id); else sel.setAttribute("aria-label", label);
    if (o.depth === 1) sel.name = o.key;
    sel.setAttribute("data-type", "variant");
    if (!o.required) sel.appendChild(new Option("(not set)", ""));
    list.forEach(function (v, i) { sel.appendChild(new Option(variantLabel(v.s, i), String(i))); });
    if (g) describe(o, s, w, sel);
    w.appendChild(sel); w.appendChild(holder);
    function pick(i) {
      holder.textContent = ""; cur = null;
      sel.value = i < 0 ? "" : String(i);
      if (i < 0) return;
      var v = list[i];
      cur = render(v.s, { key: o.key, label: label, required: true, bare: true, refs: v.refs, depth: o.depth + 1, again: false });
      holder.appendChild(cur.el);
    }
    sel.addEventListener("change", function () { nul = false; pick(sel.value === "" ? -1 : Number(sel.value)); });
    var n = node(o, w, {
      ctl: sel,
      get: function (errs) { return nul ? null : cur ? cur.get(errs) : undefined; },
      set: function (v) {
        nul = v === null && n.nullable;
        if (v === undefined || v === null) { pick(o.required && !nul ? 0 : -1); return; }
        var i = list.findIndex(function (x) { return !check(x.s, v, "", []).length; });
        if (i < 0) i = list.findIndex(function (x) { var t = typeOf(x.s); return !t || t === kindOf(v) || (t === "number" && kindOf(v) === "integer"); });
        pick(i < 0 ? 0 : i);
        cur.set(v);
      },
      at: function (path) { return cur ? cur.at(path) : n; },
      label: function (text) { if (g) g.text.textContent = text; else sel.setAttribute("aria-label", text); }
    });
    n.set(s["default"] === null ? undefined : s["default"]);
    return n;
  }

  /* ---- Building the form, errors, the JSON view -------------------------------------------- */
  var rootNode;
  if (meta.schemaTooLarge) {
    rootNode = jsonNode({ type: "object" }, { key: "arguments", label: "Arguments", depth: 0, required: true }, "Arguments");
    fieldsEl.appendChild(el("p", "hint", "This tool's input schema is too large for a form: write the arguments as JSON."));
  } else {
    var rn = norm(ROOT, []), ro = { key: "", label: "Arguments", depth: 0, required: true, refs: rn.refs };
    rootNode = variants(rn.s, rn.refs) ? render(ROOT, ro) : objectNode(rn.s, ro, "Arguments");
  }
  fieldsEl.appendChild(rootNode.el);
  if (!meta.schemaTooLarge && !Object.keys(norm(ROOT).s.properties || {}).length && !variants(norm(ROOT).s)) {
    fieldsEl.appendChild(el("p", "hint", "This tool declares no arguments."));
    jsonToggle.hidden = true;
  }
  function dropError(m) {
    var c = form.querySelector('[aria-describedby~="' + m.id + '"]');
    if (c) c.setAttribute("aria-describedby", c.getAttribute("aria-describedby").replace(m.id, "").trim());
    m.remove();
  }
  function clearErrors() {
    Array.prototype.forEach.call(form.querySelectorAll(".field-error"), function (e) { if (e !== jsonErr) dropError(e); });
    Array.prototype.forEach.call(form.querySelectorAll("[aria-invalid]"), function (e) { e.removeAttribute("aria-invalid"); e.classList.remove("invalid"); });
    jsonErr.textContent = "";
  }
  /* Editing a field takes its message away (and those of the groups around it). */
  function clearAround(t) {
    for (var e = t; e && e !== fieldsEl; e = e.parentElement) {
      var m = e.querySelector(":scope > .field-error");
      if (m) dropError(m);
      e.removeAttribute("aria-invalid"); e.classList.remove("invalid");
    }
    if (statusEl.textContent === FIX && !fieldsEl.querySelector(".field-error")) statusEl.textContent = "";
  }
  var FIX = "Fix the highlighted fields.";
  function showError(n, msg) {
    var w = n.el;
    if (w.querySelector(":scope > .field-error")) return;
    var m = el("div", "field-error", msg), legend = w.querySelector(":scope > legend");
    m.id = "e-" + (++uid);
    if (legend) legend.after(m); else w.appendChild(m);
    var ctl = n.ctl || w.querySelector("input,select,textarea");
    if (ctl && n.ctl) {
      ctl.classList.add("invalid"); ctl.setAttribute("aria-invalid", "true");
      ctl.setAttribute("aria-describedby", ((ctl.getAttribute("aria-describedby") || "") + " " + m.id).trim());
    } else w.setAttribute("aria-invalid", "true");
  }
  function pathLabel(p) { return p ? p.slice(1).split("/").join(" \u203a ") : "arguments"; }
  /* The arguments to send, or null after showing what is wrong. */
  function gather() {
    clearErrors();
    var v, problems = 0;
    if (jsonMode) {
      try { v = JSON.parse(jsonArgs.value || "{}"); } catch (e) { jsonErr.textContent = "Not valid JSON: " + e.message; return null; }
      if (kindOf(v) !== "object") { jsonErr.textContent = "The arguments must be a JSON object."; return null; }
      var errs = check(ROOT, v, "", []);
      if (errs.length) { jsonErr.textContent = errs.map(function (e) { return pathLabel(e[0]) + ": " + e[1]; }).join("\n"); return null; }
      return v;
    }
    var bad = [];
    v = rootNode.get(bad);
    bad.forEach(function (b) { showError(b[0], b[1]); problems++; });
    check(ROOT, v, "", []).forEach(function (e) {
      var parts = e[0] ? e[0].slice(1).split("/") : [];
      var n = rootNode.at(parts);
      if (n === rootNode) { statusEl.textContent = pathLabel(e[0]) + ": " + e[1]; } else showError(n, e[1]);
      problems++;
    });
    if (!problems) return v;
    var first = form.querySelector(".invalid, [aria-invalid=true]");
    if (first) { first.focus(); if (first.scrollIntoView) first.scrollIntoView({ block: "nearest" }); }
    return null;
  }
  function setMode(json) {
    jsonMode = json;
    jsonToggle.setAttribute("aria-pressed", String(json));
    jsonToggle.textContent = json ? "Form" : "JSON";
    jsonToggle.title = json ? "Edit the arguments in the form" : "Edit the arguments as JSON";
    jsonView.hidden = !json; fieldsEl.hidden = json;
  }
  jsonToggle.addEventListener("click", function () {
    clearErrors();
    if (!jsonMode) { jsonArgs.value = pretty(rootNode.get([]) || {}); setMode(true); jsonArgs.focus(); return; }
    var v;
    try { v = JSON.parse(jsonArgs.value || "{}"); } catch (e) { jsonErr.textContent = "Fix the JSON before going back to the form: " + e.message; return; }
    if (kindOf(v) !== "object") { jsonErr.textContent = "The arguments must be a JSON object."; return; }
    rootNode.set(v); setMode(false); focusIn(fieldsEl);
  });
  /* Both ways at every edit: the form writes the JSON, valid JSON fills the form. */
  fieldsEl.addEventListener("input", function (e) { clearAround(e.target); sync(); });
  fieldsEl.addEventListener("change", function (e) { clearAround(e.target); sync(); });
  jsonArgs.addEventListener("input", function () {
    var v;
    try { v = JSON.parse(jsonArgs.value || "{}"); } catch (e) { jsonErr.textContent = "Not valid JSON yet: " + e.message; return; }
    if (kindOf(v) !== "object") { jsonErr.textContent = "The arguments must be a JSON object."; return; }
    jsonErr.textContent = "";
    rootNode.set(v);
  });
  function fill(args) {
    if (!args || typeof args !== "object") return;
    rootNode.set(args);
    jsonArgs.value = pretty(args);
  }

  /* ---- Results ------------------------------------------------------------------------------ */
  var LIMIT = 100 * 1024;
  function copyText(text, b) {
    function done(ok) { var t = b.textContent; b.textContent = ok ? "Copied" : "Copy failed"; setTimeout(function () { b.textContent = t; }, 1200); }
    var policy = document.permissionsPolicy || document.featurePolicy;
    if (navigator.clipboard && policy && policy.allowsFeature("clipboard-write")) {
      navigator.clipboard.writeText(text).then(function () { done(true); }, function () { done(legacyCopy(text)); });
    } else done(legacyCopy(text));
  }
  function legacyCopy(text) {
    var ta = el("textarea"); ta.value = text; ta.setAttribute("readonly", ""); ta.style.position = "fixed"; ta.style.opacity = "0";
    document.body.appendChild(ta); ta.select();
    var ok = false;
    try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    ta.remove();
    return ok;
  }
  function copyBtn(text, what) {
    var b = btn("Copy", "secondary small copy", function () { copyText(typeof text === "function" ? text() : text, b); }, "Copy " + what);
    return b;
  }
  function head(label, copy) {
    var h = el("div", "block-head"); h.appendChild(el("span", "label", label));
    if (copy) h.appendChild(copy);
    return h;
  }
  function kb(n) { return n < 1024 ? n + " bytes" : (n / 1024).toFixed(1) + " KB"; }
  function b64size(d) { d = d || ""; return Math.floor(d.length * 3 / 4) - (/==$/.test(d) ? 2 : /=$/.test(d) ? 1 : 0); }
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
  function local(v) {
    var ctx = app.getHostContext() || {}, loc = typeof ctx.locale === "string" ? ctx.locale : undefined;
    try {
      /* No grouping: a year, an id or a port must read as it is; the decimal mark is the locale's. */
      if (typeof v === "number" && isFinite(v)) return new Intl.NumberFormat(loc, { maximumFractionDigits: 6, useGrouping: false }).format(v);
      if (typeof v === "string" && ISO_DATE.test(v)) {
        var d = new Date(v);
        if (isNaN(d.getTime())) return v;
        var opts = v.length > 10 ? { dateStyle: "medium", timeStyle: "short" } : { dateStyle: "medium", timeZone: "UTC" };
        if (v.length > 10 && typeof ctx.timeZone === "string") opts.timeZone = ctx.timeZone;
        return new Intl.DateTimeFormat(loc, opts).format(d);
      }
    } catch (e) { /* an unknown locale or time zone: the value as sent */ }
    return v === null ? "null" : String(v);
  }
  function scalarEl(v) {
    var shown = local(v), span = el("span", typeof v === "number" ? "num" : null, shown);
    if (shown !== String(v)) span.title = String(v);
    return span;
  }
  function isRecordList(v) {
    return Array.isArray(v) && v.length > 0 && v.length <= 2000 && v.every(function (r) { return r && typeof r === "object" && !Array.isArray(r); });
  }
  function scalar(v) { return v === null || typeof v !== "object"; }
  /* Data rendered by its shape: records as a sortable table, an object as a key/value list,
     nested values collapsible, long text truncated. */
  function renderValue(v, depth) {
    depth = depth || 0;
    if (scalar(v)) {
      var t = v === null ? "null" : String(v);
      return t.length > 200 ? longText(t, "pre") : scalarEl(v);
    }
    if (depth > 6) return longText(JSON.stringify(v, null, 2));
    if (isRecordList(v)) return table(v, depth);
    if (Array.isArray(v)) {
      var ol = el("ol");
      v.slice(0, 500).forEach(function (item) { var li = el("li"); li.appendChild(renderValue(item, depth + 1)); ol.appendChild(li); });
      if (v.length > 500) ol.appendChild(el("li", "hint", "\u2026 " + (v.length - 500) + " more (see Raw JSON)"));
      return ol;
    }
    var dl = el("dl", "kv");
    Object.keys(v).forEach(function (k) {
      dl.appendChild(el("dt", null, k));
      var dd = el("dd"), child = v[k];
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
    rows.forEach(function (r) { Object.keys(r).forEach(function (k) { if (cols.indexOf(k) < 0) cols.push(k); }); });
    var t = el("table", "data"), thead = el("thead"), tr = el("tr"), tbody = el("tbody");
    var order = rows.slice(), sortCol = null, dir = 1;
    function fillRows() {
      tbody.textContent = "";
      order.forEach(function (r) {
        var row = el("tr");
        cols.forEach(function (c) {
          var v = r[c], td = el("td", typeof v === "number" ? "num" : null);
          if (v !== undefined) td.appendChild(scalar(v) ? scalarEl(v) : renderValue(v, depth + 2));
          row.appendChild(td);
        });
        tbody.appendChild(row);
      });
    }
    cols.forEach(function (c) {
      var th = el("th", null, c); th.setAttribute("scope", "col"); th.tabIndex = 0;
      function sort() {
        dir = sortCol === c ? -dir : 1; sortCol = c;
        order.sort(function (a, b) {
          var x = a[c], y = b[c];
          if (x === y) return 0; if (x === undefined || x === null) return 1; if (y === undefined || y === null) return -1;
          return (typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
        });
        Array.prototype.forEach.call(tr.children, function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending");
        fillRows();
      }
      th.addEventListener("click", sort);
      th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); } });
      tr.appendChild(th);
    });
    thead.appendChild(tr); t.appendChild(thead); t.appendChild(tbody); fillRows();
    return t;
  }
  function renderText(text) {
    try { var v = JSON.parse(text); if (v && typeof v === "object") return renderValue(v); } catch (e) { /* plain text */ }
    return longText(text);
  }
  function media(kind, mime, data, alt) {
    var m = el(kind === "audio" ? "audio" : "img");
    if (kind === "audio") m.controls = true; else m.alt = alt;
    m.src = "data:" + mime + ";base64," + data;
    return m;
  }
  function renderBlock(c) {
    var b = el("div", "block");
    if (c.type === "text") {
      b.appendChild(head("Text", copyBtn(c.text || "", "text")));
      b.appendChild(renderText(c.text || ""));
    } else if (c.type === "image" || c.type === "audio") {
      b.appendChild(head((c.type === "image" ? "Image" : "Audio") + " \u00b7 " + (c.mimeType || "?") + " \u00b7 " + kb(b64size(c.data)), copyBtn(c.data || "", c.type + " as base64")));
      b.appendChild(media(c.type, c.mimeType, c.data, "image result"));
    } else if (c.type === "resource_link") {
      b.appendChild(head("Resource link" + (c.mimeType ? " \u00b7 " + c.mimeType : "") + (c.size != null ? " \u00b7 " + kb(c.size) : ""), copyBtn(c.uri || "", "link")));
      var link = el("a", null, c.name || c.title || c.uri); link.href = "#"; link.title = c.uri;
      link.addEventListener("click", function (e) { e.preventDefault(); app.openLink({ url: c.uri }).catch(function () {}); });
      b.appendChild(link);
      if (c.name && c.uri) b.appendChild(el("div", "hint uri", c.uri));
      if (c.description) b.appendChild(el("div", "hint", c.description));
    } else if (c.type === "resource" && c.resource) {
      var r = c.resource, mime = r.mimeType || (r.text != null ? "text" : "binary");
      b.appendChild(head("Embedded resource \u00b7 " + mime, copyBtn(r.text != null ? r.text : r.blob || "", r.text != null ? "resource text" : "resource as base64")));
      b.appendChild(el("div", "hint uri", r.uri));
      if (r.text != null) b.appendChild(renderText(r.text));
      else if (/^image\//.test(mime)) b.appendChild(media("image", mime, r.blob, r.uri));
      else if (/^audio\//.test(mime)) b.appendChild(media("audio", mime, r.blob, r.uri));
      else b.appendChild(el("div", "hint", kb(b64size(r.blob)) + " of " + mime));
    } else b.appendChild(longText(JSON.stringify(c, null, 2)));
    return b;
  }
  /* Results with file artifacts ({results, meta_data, returned_file_names,
     returned_file_contents}): each file with a preview and a way to save it. */
  var FILE_MIME = { csv: "text/csv", txt: "text/plain", md: "text/markdown", json: "application/json", png: "image/png",
    jpg: "image/jpeg", jpeg: "image/jpeg", gif: "image/gif", svg: "image/svg+xml", html: "text/html", xml: "application/xml" };
  function fileMime(name) { var m = /\.([a-z0-9]+)$/i.exec(name || ""); return (m && FILE_MIME[m[1].toLowerCase()]) || "application/octet-stream"; }
  function decodeText(b64) {
    try { var bin = atob(b64 || ""), bytes = new Uint8Array(bin.length); for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i); return new TextDecoder().decode(bytes); } catch (e) { return null; }
  }
  function renderFiles(sc) {
    var names = Array.isArray(sc.returned_file_names) ? sc.returned_file_names : [];
    var datas = Array.isArray(sc.returned_file_contents) ? sc.returned_file_contents : [];
    var box = el("div", "block files");
    box.appendChild(head("Files (" + names.length + ")"));
    names.forEach(function (name, i) {
      var data = typeof datas[i] === "string" ? datas[i] : "", mime = fileMime(name);
      var f = el("details", "file");
      var sum = el("summary", null, String(name) + " \u00b7 " + mime + " \u00b7 " + kb(b64size(data)));
      f.appendChild(sum);
      var safe = String(name).replace(/[\\/]/g, "_");
      if ((app.getHostCapabilities() || {}).downloadFile) {
        /* A sandboxed View cannot download: the host saves the file (ui/download-file). */
        f.appendChild(btn("Download", null, function () {
          app.downloadFile({ contents: [{ type: "resource", resource: { uri: "file:///" + encodeURIComponent(safe), mimeType: mime, blob: data } }] })
            .then(function (r) { statusEl.textContent = r && r.isError ? "The host did not save " + safe + "." : "Saved " + safe + "."; },
                  function (e) { statusEl.textContent = "The host could not save " + safe + ": " + e.message; });
        }, "Download " + safe));
      } else {
        var save = el("a", "button", "Download"); save.href = "data:" + mime + ";base64," + data; save.download = safe;
        f.appendChild(save);
      }
      if (/^image\//.test(mime) && mime !== "image/svg+xml") f.appendChild(media("image", mime, data, String(name)));
      else {
        var text = decodeText(data);
        if (text != null) { f.appendChild(copyBtn(text, String(name))); f.appendChild(mime === "application/json" ? renderText(text) : longText(text)); }
      }
      box.appendChild(f);
    });
    return box;
  }
  function showResult(result, heading) {
    resultEl.textContent = "";
    if (!result) return;
    var content = result.content || [];
    if (result.isError) {
      /* The error's message first, then anything else it carries. */
      var texts = content.filter(function (c) { return c.type === "text"; }).map(function (c) { return c.text; }).join("\n");
      var eb = el("div", "block error");
      eb.setAttribute("role", "alert");
      eb.appendChild(head("Error from " + meta.name, copyBtn(texts, "error message")));
      eb.appendChild(longText(texts || "The tool reported an error without a message.", "div"));
      resultEl.appendChild(eb);
      content = content.filter(function (c) { return c.type !== "text"; });
    } else if (heading) resultEl.appendChild(el("div", "label", heading));
    var box = el("div");
    if (result.structuredContent !== undefined && result.structuredContent !== null) {
      var sb = el("div", "block");
      sb.appendChild(head("Structured result", copyBtn(function () { return JSON.stringify(result.structuredContent, null, 2); }, "structured result")));
      var sc = result.structuredContent;
      var files = sc && typeof sc === "object" && Array.isArray(sc.returned_file_names);
      if (files) {
        /* The files get their own panel; the rest shows as usual. */
        var rest = {}; Object.keys(sc).forEach(function (k) { if (k !== "returned_file_contents") rest[k] = sc[k]; });
        sb.appendChild(renderValue(rest));
      } else sb.appendChild(renderValue(sc));
      box.appendChild(sb);
      if (files) box.appendChild(renderFiles(sc));
      if (!result.isError) content = content.filter(function (c) { return c.type !== "text"; });
    }
    content.forEach(function (c) { box.appendChild(renderBlock(c)); });
    resultEl.appendChild(box);
    var raw = el("details", "raw"), sum = el("summary", null, "Raw JSON");
    raw.appendChild(sum);
    raw.appendChild(copyBtn(function () { return JSON.stringify(result, null, 2); }, "raw JSON"));
    raw.appendChild(longText(JSON.stringify(result, null, 2)));
    resultEl.appendChild(raw);
    offerFullscreen(result);
  }
  /* A large result may use the whole window, when the host offers that mode. */
  function offerFullscreen(result) {
    var ctx = app.getHostContext() || {}, modes = Array.isArray(ctx.availableDisplayModes) ? ctx.availableDisplayModes : [];
    if (modes.indexOf("fullscreen") < 0 || JSON.stringify(result).length < 1500) return;
    var full = ctx.displayMode === "fullscreen";
    var b = btn(full ? "Exit full screen" : "Full screen", "fullscreen", function () {
      var want = (app.getHostContext() || {}).displayMode === "fullscreen" ? "inline" : "fullscreen";
      app.requestDisplayMode({ mode: want }).then(function (r) {
        var mode = (r && r.mode) || want;
        document.documentElement.setAttribute("data-display-mode", mode);
        (app.getHostContext() || {}).displayMode = mode;
        b.textContent = mode === "fullscreen" ? "Exit full screen" : "Full screen";
      }, function (e) { statusEl.textContent = "The host kept this view as it is: " + e.message; });
    }, "Show the result in full screen");
    resultEl.insertBefore(b, resultEl.firstChild);
  }
  function showFailure(msg) {
    resultEl.textContent = "";
    var b = el("div", "block error"); b.setAttribute("role", "alert");
    b.appendChild(head("The call failed")); b.appendChild(el("div", null, msg));
    resultEl.appendChild(b);
  }

  /* ---- Calling the tool: destructive tools ask first ------------------------------------------ */
  var confirmBox = $("confirm"), pending = null;
  function run(args) {
    submitBtn.disabled = true; statusEl.textContent = "Running " + meta.name + "\u2026";
    app.callServerTool({ name: meta.name, arguments: args }).then(function (res) {
      statusEl.textContent = res && res.isError ? "The tool reported an error." : "Done.";
      showResult(res, "Result");
    }, function (err) {
      statusEl.textContent = "Failed.";
      showFailure(err.message || String(err));
    }).then(function () { submitBtn.disabled = false; });
  }
  function closeConfirm(msg) {
    confirmBox.hidden = true; pending = null; submitBtn.disabled = false;
    if (msg) statusEl.textContent = msg;
  }
  $("confirm-run").addEventListener("click", function () { var a = pending; closeConfirm(); run(a); });
  $("confirm-cancel").addEventListener("click", function () { closeConfirm("Not run."); submitBtn.focus(); });
  confirmBox.addEventListener("keydown", function (e) { if (e.key === "Escape") { e.preventDefault(); closeConfirm("Not run."); submitBtn.focus(); } });
  form.addEventListener("submit", function (e) {
    e.preventDefault();
    if (pending) return;
    statusEl.textContent = "";
    var args = gather();
    if (!args) { if (!statusEl.textContent) statusEl.textContent = FIX; return; }
    if (!meta.confirm) { run(args); return; }
    pending = args;
    $("confirm-args").textContent = JSON.stringify(args, null, 2);
    confirmBox.hidden = false; submitBtn.disabled = true;
    $("confirm-cancel").focus();
  });
  app.ontoolinput = function (p) { fill(p && p.arguments); };
  app.ontoolresult = function (r) { showResult(r, "Result"); };
  app.ontoolcancelled = function (p) { statusEl.textContent = "Cancelled" + (p && p.reason ? ": " + p.reason : "."); };
  app.connect().then(function () { document.body.setAttribute("data-ready", "true"); }, function (e) {
    statusEl.textContent = "Not connected to a host: " + e.message;
  });
})();
