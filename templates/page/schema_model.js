  /* ---- Labels ---- */
  function humanize(name) {
    var text = String(name).replace(/[_-]+/g, " ").replace(/([a-z0-9])([A-Z])/g, function (match, before, upper) { return before + " " + upper.toLowerCase(); }).trim();
    return text ? text.charAt(0).toUpperCase() + text.slice(1) : String(name);
  }
  var IRREGULAR = { children: "Child", people: "Person", data: "Item", criteria: "Criterion" };
  function singular(label) {
    var irregular = own(IRREGULAR, label.toLowerCase());
    if (irregular) return irregular;
    var word = label.replace(/ies$/, "y").replace(/(ss|x|ch|sh)es$/, "$1").replace(/([^su])s$/, "$1");
    return word !== label ? word : "Item";
  }
  function lower1(text) { return text.charAt(0).toLowerCase() + text.slice(1); }

  /* ---- Schemas ---- */
  /* Only refs inside the tool's input schema resolve: a page fetches nothing. */
  function pointer(ref) {
    if (ref === "#") return ROOT;
    if (ref.indexOf("#/") !== 0) return undefined;
    var node = ROOT;
    ref.slice(2).split("/").forEach(function (part) {
      part = decodeURIComponent(part).replace(/~1/g, "/").replace(/~0/g, "~");
      node = node && typeof node === "object" ? node[part] : undefined;
    });
    return node;
  }
  function merge(first, second) {
    var merged = Object.assign({}, first, second), required = first.required || [];
    if (first.properties || second.properties) merged.properties = Object.assign({}, first.properties, second.properties);
    if (first.required || second.required) merged.required = required.concat((second.required || []).filter(function (name) { return required.indexOf(name) < 0; }));
    return merged;
  }
  /* The schema with $ref resolved (keywords beside a $ref win), allOf merged and "null" taken out
     of type lists. refs: the $refs expanded on the way here; `again` says this schema expands one
     of them once more (a recursive schema), which the form then renders only on demand. A chain of
     $refs that loops with nothing in between stands for any JSON value. */
  function norm(schema, refs) {
    refs = refs || [];
    if (!schema || typeof schema !== "object") return { schema: {}, refs: refs, again: false };
    var again = false, chain = [];
    while (typeof schema.$ref === "string") {
      var ref = schema.$ref, target = pointer(ref), rest = Object.assign({}, schema);
      delete rest.$ref;
      if (chain.indexOf(ref) >= 0) return { schema: rest, refs: refs, again: true };
      chain.push(ref);
      if (refs.indexOf(ref) >= 0) again = true; else refs = refs.concat(ref);
      schema = target && typeof target === "object" ? Object.assign({}, target, rest) : rest;
    }
    if (Array.isArray(schema.allOf)) {
      var base = Object.assign({}, schema);
      delete base.allOf;
      schema = schema.allOf.reduce(function (acc, part) {
        var normed = norm(part, refs);
        refs = normed.refs; again = again || normed.again;
        return merge(acc, normed.schema);
      }, base);
    }
    if (Array.isArray(schema.type)) {
      var types = schema.type.filter(function (type) { return type !== "null"; }), out = Object.assign({}, schema);
      if (types.length > 1) { delete out.type; out.anyOf = types.map(function (type) { return { type: type }; }); }
      else if (types.length) out.type = types[0];
      else { delete out.type; out["const"] = null; }
      if (types.length < schema.type.length) out.nullable = true;
      schema = out;
    }
    return { schema: schema, refs: refs, again: again };
  }
  function isNull(schema) {
    return schema.type === "null" || (schema["const"] === null && !schema.type) || (Array.isArray(schema["enum"]) && schema["enum"].length === 1 && schema["enum"][0] === null);
  }
  /* oneOf / anyOf as a list of whole schemas (the keywords beside them merged in), without the
     "null" alternative, which makes the value nullable instead. */
  function variants(schema, refs) {
    var list = schema.oneOf || schema.anyOf;
    if (!Array.isArray(list) || !list.length) return null;
    var base = Object.assign({}, schema), out = [], nullable = false;
    delete base.oneOf; delete base.anyOf;
    list.forEach(function (variant) {
      var normed = norm(variant, refs);
      if (isNull(normed.schema)) nullable = true;
      else out.push({ schema: merge(base, normed.schema), refs: normed.refs, again: normed.again });
    });
    return { list: out, nullable: nullable };
  }
  function typeOf(schema) {
    if (typeof schema.type === "string") return schema.type;
    if (schema.properties || schema.additionalProperties || schema.required) return "object";
    if (schema.items || schema.prefixItems) return "array";
    var sample = schema["default"] !== undefined ? schema["default"] : schema.examples && schema.examples[0];
    return sample !== undefined && sample !== null ? kindOf(sample) : undefined;
  }
  function constOf(schema) {
    return schema["const"] !== undefined ? { value: schema["const"] } : Array.isArray(schema["enum"]) && schema["enum"].length === 1 ? { value: schema["enum"][0] } : null;
  }
  var VARIANT_NAMES = { string: "Text", number: "Number", integer: "Whole number", boolean: "Yes / no", array: "List" };
  function variantLabel(variant, index) {
    if (variant.title) return variant.title;
    var only = constOf(variant);
    if (only) return String(only.value);
    var props = variant.properties || {};
    for (var key in props) { var tag = constOf(norm(props[key]).schema); if (tag) return humanize(String(tag.value)); }
    if (own(VARIANT_NAMES, variant.type)) return VARIANT_NAMES[variant.type];
    return variant.required && variant.required.length ? variant.required.map(humanize).join(", ") : "Option " + (index + 1);
  }
