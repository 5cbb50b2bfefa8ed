import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { plain } from "./load.mjs";
import { variants } from "./served.mjs";

const FORECAST = { type: "object", required: ["city"], additionalProperties: false, properties: {
  city: { type: "string", minLength: 2, maxLength: 4, pattern: "^[A-Z]" },
  days: { type: "integer", minimum: 1, maximum: 14 },
  units: { type: "string", enum: ["metric", "imperial"] },
  step: { type: "number", multipleOf: 0.1, exclusiveMinimum: 0, exclusiveMaximum: 1 },
  tags: { type: "array", minItems: 1, maxItems: 2, uniqueItems: true, items: { type: "string", format: "email" } } } };

for (const [where, page] of variants(["values.js", "schema_model.js", "validate.js"], { ROOT: {} })) {
  describe(where, () => {
    /** The errors of `value` against `schema`, as [path, message] pairs. */
    const errors = (schema, value) => plain(page.check(schema, value, "", []));

    test("a valid value has no errors", () => {
      assert.deepEqual(errors(FORECAST, { city: "Oslo", days: 7, units: "metric", step: 0.3, tags: ["a@b.io"] }), []);
    });

    test("required, type, enum and unknown keys, each at its path", () => {
      assert.deepEqual(errors(FORECAST, {}), [["/city", "Required"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", days: 1.5 }), [["/days", "Expected a whole number"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", units: "kelvin" }), [["/units", 'Must be one of: "metric", "imperial"']]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", extra: 1 }), [["/extra", "Not an argument of this tool"]]);
      assert.deepEqual(errors(FORECAST, JSON.parse('{"city": "Oslo", "constructor": 1}')), [["/constructor", "Not an argument of this tool"]],
        "keys are data: constructor is not a property schema");
      assert.deepEqual(errors(FORECAST, []), [["", "Expected an object"]]);
      assert.deepEqual(errors({ type: "number" }, 3), [], "an integer is a number");
    });

    test("string lengths (in code points), pattern and formats", () => {
      assert.deepEqual(errors(FORECAST, { city: "O" }), [["/city", "At least 2 characters"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo!" }), [["/city", "At most 4 characters"]]);
      assert.deepEqual(errors(FORECAST, { city: "oslo" }), [["/city", "Must match ^[A-Z]"]]);
      assert.deepEqual(errors({ type: "string", maxLength: 2 }, "😀😀"), []);
      assert.deepEqual(errors({ type: "string", pattern: "(" }, "x"), [], "a pattern that does not compile is not checked");
      assert.deepEqual(errors({ format: "email" }, "nobody"), [["", "Not an email address"]]);
      assert.deepEqual(errors({ format: "uri" }, "example.com"), [["", "Not a URL (it needs a scheme, like https://)"]]);
      assert.deepEqual(errors({ format: "date" }, "2024-13-01"), [["", "Not a date (YYYY-MM-DD)"]]);
      assert.deepEqual(errors({ format: "date-time" }, "2024-03-05T10:00:00Z"), []);
      assert.deepEqual(errors({ format: "date-time" }, "2024-03-05 10:00"), [["", "Not a date and time (YYYY-MM-DDTHH:MM:SSZ)"]]);
      assert.deepEqual(errors({ format: "constructor" }, "x"), [], "format names are looked up as own keys");
    });

    test("numbers: minimum, maximum, exclusive bounds of both drafts, multipleOf", () => {
      assert.deepEqual(errors(FORECAST, { city: "Oslo", days: 0 }), [["/days", "Must be at least 1"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", days: 15 }), [["/days", "Must be at most 14"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", step: 0 }), [["/step", "Must be more than 0"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", step: 1 }), [["/step", "Must be less than 1"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", step: 0.35 }), [["/step", "Must be a multiple of 0.1"]]);
      assert.deepEqual(errors({ minimum: 5, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: true }, 5), [["", "Must be more than 5"]]);
      assert.deepEqual(errors({ minimum: 5, exclusiveMinimum: true, maximum: 9, exclusiveMaximum: true }, 9), [["", "Must be less than 9"]]);
    });

    test("arrays: sizes, unique items and each item at its index", () => {
      assert.deepEqual(errors(FORECAST, { city: "Oslo", tags: [] }), [["/tags", "At least 1 item"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", tags: ["a@b.io", "x"] }), [["/tags/1", "Not an email address"]]);
      assert.deepEqual(errors(FORECAST, { city: "Oslo", tags: ["a@b.io", "a@b.io", "c@d.io"] }),
        [["/tags", "At most 2 items"], ["/tags", "Items must all differ"]]);
      assert.deepEqual(errors({ minItems: 3 }, [1]), [["", "At least 3 items"]]);
    });

    test("const, null and nullable", () => {
      assert.deepEqual(errors({ const: "x" }, "y"), [["", 'Must be "x"']]);
      assert.deepEqual(errors({ type: ["string", "null"] }, null), []);
      assert.deepEqual(errors({ type: "string" }, null), [["", "Expected text"]]);
      assert.deepEqual(errors({ anyOf: [{ type: "integer" }, { type: "null" }] }, null), []);
      assert.deepEqual(errors(FORECAST, undefined), [], "nothing entered is not checked here");
    });

    test("variants: the closest one's errors", () => {
      const shape = { oneOf: [
        { type: "object", properties: { a: {}, b: {} }, required: ["a", "b"] },
        { type: "object", properties: { c: { type: "integer" } }, required: ["c"] }] };
      assert.deepEqual(errors(shape, {}), [["/c", "Required"]]);
      assert.deepEqual(errors(shape, { c: 1 }), []);
      assert.deepEqual(errors(shape, { c: "one" }), [["/c", "Expected a whole number"]]);
    });

    test("$ref and recursive schemas are checked at depth", () => {
      page.ROOT = { $defs: { node: { type: "object", required: ["name"], properties: {
        name: { type: "string" }, children: { type: "array", items: { $ref: "#/$defs/node" } } } } } };
      const tree = { name: "root", children: [{ name: "a", children: [{ children: [] }] }] };
      assert.deepEqual(errors({ $ref: "#/$defs/node" }, tree), [["/children/0/children/0/name", "Required"]]);
      assert.deepEqual(errors({ type: "object", additionalProperties: { type: "integer" } }, { n: 1, m: "2" }), [["/m", "Expected a whole number"]]);
    });
  });
}
