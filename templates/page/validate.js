  /* ---- Validation: one checker for the form and the JSON view. Errors are [path, message]. -- */
  var FORMATS = {
    email: [/^[^\s@]+@[^\s@]+\.[^\s@]+$/, "Not an email address"],
    uri: [/^[a-z][a-z0-9+.-]*:[^\s]+$/i, "Not a URL (it needs a scheme, like https://)"],
    url: [/^[a-z][a-z0-9+.-]*:[^\s]+$/i, "Not a URL (it needs a scheme, like https://)"],
    date: [/^\d{4}-\d\d-\d\d$/, "Not a date (YYYY-MM-DD)"],
    "date-time": [/^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(z|[+-]\d\d:\d\d)$/i, "Not a date and time (YYYY-MM-DDTHH:MM:SSZ)"]
  };
  var TYPE_NAMES = { string: "text", number: "a number", integer: "a whole number", boolean: "true or false", object: "an object", array: "a list", "null": "null" };
  /* Of several variants, the one with the fewest errors speaks. */
  function check(raw, value, path, out, depth) {
    depth = depth || 0;
    if (value === undefined || depth > 60) return out;
    var schema = norm(raw).schema;
    if (value === null && schema.nullable) return out;
    var alternatives = variants(schema);
    if (alternatives) {
      if (value === null && alternatives.nullable) return out;
      var best = null;
      alternatives.list.forEach(function (alt) { var errs = check(alt.schema, value, path, [], depth + 1); if (!best || errs.length < best.length) best = errs; });
      if (best && best.length) Array.prototype.push.apply(out, best);
      return out;
    }
    if (schema["const"] !== undefined && !eq(value, schema["const"])) { out.push([path, "Must be " + JSON.stringify(schema["const"])]); return out; }
    if (Array.isArray(schema["enum"]) && !schema["enum"].some(function (allowed) { return eq(allowed, value); })) {
      out.push([path, "Must be one of: " + schema["enum"].map(function (allowed) { return JSON.stringify(allowed); }).join(", ")]); return out;
    }
    var type = schema.type, kind = kindOf(value);
    if (type && type !== kind && !(type === "number" && kind === "integer")) { out.push([path, "Expected " + (own(TYPE_NAMES, type) || type)]); return out; }
    if (kind === "string") checkString(schema, value, path, out);
    else if (kind === "number" || kind === "integer") checkNumber(schema, value, path, out);
    else if (kind === "array") {
      checkArraySize(schema, value, path, out);
      if (schema.items && !Array.isArray(schema.items)) value.forEach(function (item, i) { check(schema.items, item, path + "/" + i, out, depth + 1); });
    } else if (kind === "object") {
      var props = schema.properties || {}, extra = schema.additionalProperties;
      (schema.required || []).forEach(function (name) { if (own(value, name) === undefined) out.push([path + "/" + name, "Required"]); });
      Object.keys(value).forEach(function (key) {
        if (own(props, key)) check(props[key], value[key], path + "/" + key, out, depth + 1);
        else if (extra === false) out.push([path + "/" + key, "Not an argument of this tool"]);
        else if (extra && typeof extra === "object") check(extra, value[key], path + "/" + key, out, depth + 1);
      });
    }
    return out;
  }
  function checkString(schema, text, path, out) {
    var len = Array.from(text).length;
    if (schema.minLength != null && len < schema.minLength) out.push([path, "At least " + schema.minLength + " characters"]);
    if (schema.maxLength != null && len > schema.maxLength) out.push([path, "At most " + schema.maxLength + " characters"]);
    if (schema.pattern) { try { if (!new RegExp(schema.pattern, "u").test(text)) out.push([path, "Must match " + schema.pattern]); } catch (e) { /* a pattern this browser cannot read is not checked */ } }
    var format = own(FORMATS, schema.format);
    if (format && (!format[0].test(text) || (/date/.test(schema.format) && isNaN(new Date(text))))) out.push([path, format[1]]);
  }
  /* exclusiveMinimum/Maximum: a boolean beside minimum (draft 4) or a number (later drafts). */
  function checkNumber(schema, num, path, out) {
    var xmin = schema.exclusiveMinimum, xmax = schema.exclusiveMaximum;
    if (schema.minimum != null && (xmin === true ? num <= schema.minimum : num < schema.minimum)) out.push([path, (xmin === true ? "Must be more than " : "Must be at least ") + schema.minimum]);
    if (schema.maximum != null && (xmax === true ? num >= schema.maximum : num > schema.maximum)) out.push([path, (xmax === true ? "Must be less than " : "Must be at most ") + schema.maximum]);
    if (typeof xmin === "number" && num <= xmin) out.push([path, "Must be more than " + xmin]);
    if (typeof xmax === "number" && num >= xmax) out.push([path, "Must be less than " + xmax]);
    if (schema.multipleOf && Math.abs(num / schema.multipleOf - Math.round(num / schema.multipleOf)) > 1e-9) out.push([path, "Must be a multiple of " + schema.multipleOf]);
  }
  function checkArraySize(schema, list, path, out) {
    if (schema.minItems != null && list.length < schema.minItems) out.push([path, "At least " + schema.minItems + (schema.minItems === 1 ? " item" : " items")]);
    if (schema.maxItems != null && list.length > schema.maxItems) out.push([path, "At most " + schema.maxItems + " items"]);
    if (schema.uniqueItems && new Set(list.map(function (item) { return JSON.stringify(item); })).size !== list.length) out.push([path, "Items must all differ"]);
  }
