  /* ---- JSON values ---- */
  /* Schema keys are data: "constructor" or "__proto__" must behave like any other name. */
  function own(map, key) { return map != null && Object.prototype.hasOwnProperty.call(map, key) ? map[key] : undefined; }
  function put(obj, key, value) { Object.defineProperty(obj, key, { value: value, enumerable: true, writable: true, configurable: true }); }
  function eq(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
  function kindOf(value) {
    return value === null ? "null" : Array.isArray(value) ? "array" : typeof value === "number" ? (Number.isInteger(value) ? "integer" : "number") : typeof value;
  }
  function pretty(value) { return value === undefined ? "" : JSON.stringify(value, null, 2); }
