import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { plain } from "./load.mjs";
import { variants } from "./served.mjs";

for (const [where, page] of variants(["values.js", "schema_model.js"], { ROOT: {} })) {
  describe(where, () => {
    const norm = (schema, refs) => plain(page.norm(schema, refs));

    test("humanize makes labels of property names", () => {
      assert.equal(page.humanize("start_date"), "Start date");
      assert.equal(page.humanize("maxResults"), "Max results");
      assert.equal(page.humanize("user-id"), "User id");
      assert.equal(page.humanize("__"), "__", "nothing left: the name as it is");
    });

    test("singular names one row of a list", () => {
      assert.equal(page.singular("Tags"), "Tag");
      assert.equal(page.singular("Categories"), "Category");
      assert.equal(page.singular("Boxes"), "Box");
      assert.equal(page.singular("Addresses"), "Address");
      assert.equal(page.singular("Matches"), "Match");
      assert.equal(page.singular("Children"), "Child");
      assert.equal(page.singular("Status"), "Item", "not a plural");
      assert.equal(page.singular("Data"), "Item");
      assert.equal(page.lower1("Tag"), "tag");
    });

    test("$ref resolves inside the input schema, keywords beside it win", () => {
      page.ROOT = { $defs: { point: { type: "object", description: "a point", properties: { x: { type: "number" } } },
        "a/b": { type: "string" }, "t~x": { type: "integer" }, "with space": { type: "boolean" } } };
      const n = norm({ $ref: "#/$defs/point", description: "here" });
      assert.deepEqual(n, { schema: { type: "object", description: "here", properties: { x: { type: "number" } } }, refs: ["#/$defs/point"], again: false });
      assert.equal(norm({ $ref: "#/$defs/a~1b" }).schema.type, "string");
      assert.equal(norm({ $ref: "#/$defs/t~0x" }).schema.type, "integer");
      assert.equal(norm({ $ref: "#/$defs/with%20space" }).schema.type, "boolean");
      assert.equal(page.pointer("#"), page.ROOT);
      assert.deepEqual(norm({ $ref: "https://example.com/s.json", title: "T" }).schema, { title: "T" }, "other documents are not fetched");
      assert.deepEqual(norm({ $ref: "#/$defs/missing" }).schema, {});
    });

    test("a $ref expanded again is marked, a loop of $refs is any value", () => {
      page.ROOT = { $defs: { node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/node" } } } },
        a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } } };
      const first = norm({ $ref: "#/$defs/node" });
      assert.equal(first.again, false);
      assert.equal(norm({ $ref: "#/$defs/node" }, first.refs).again, true);
      assert.deepEqual(norm({ $ref: "#/$defs/a" }), { schema: {}, refs: ["#/$defs/a", "#/$defs/b"], again: true });
    });

    test("allOf merges properties and required without duplicates", () => {
      page.ROOT = { $defs: { named: { properties: { name: { type: "string" } }, required: ["name"] } } };
      const n = norm({ type: "object", allOf: [{ $ref: "#/$defs/named" }, { properties: { age: { type: "integer" } }, required: ["name", "age"] }] });
      assert.deepEqual(Object.keys(n.schema.properties), ["name", "age"]);
      assert.deepEqual(n.schema.required, ["name", "age"]);
      assert.equal(n.schema.allOf, undefined);
      assert.deepEqual(n.refs, ["#/$defs/named"]);
      assert.deepEqual(plain(page.merge({ a: 1, required: ["x"] }, { a: 2 })), { a: 2, required: ["x"] });
    });

    test("type lists: null makes the value nullable, several types become variants", () => {
      assert.deepEqual(norm({ type: ["string", "null"] }).schema, { type: "string", nullable: true });
      assert.deepEqual(norm({ type: ["string", "integer"] }).schema, { anyOf: [{ type: "string" }, { type: "integer" }] });
      assert.deepEqual(norm({ type: ["null"] }).schema, { const: null, nullable: true });
    });

    test("variants merge the keywords beside them and take out null", () => {
      page.ROOT = { $defs: { id: { type: "integer", minimum: 1 } } };
      const v = plain(page.variants({ description: "d", anyOf: [{ $ref: "#/$defs/id" }, { type: "null" }] }));
      assert.equal(v.nullable, true);
      assert.deepEqual(v.list, [{ schema: { description: "d", type: "integer", minimum: 1 }, refs: ["#/$defs/id"], again: false }]);
      assert.equal(plain(page.variants({ oneOf: [{ const: null }, { enum: [null] }, { type: "string" }] })).list.length, 1);
      assert.equal(page.variants({ type: "string" }), null);
      assert.equal(page.variants({ oneOf: [] }), null);
    });

    test("typeOf reads the type from keywords and defaults", () => {
      assert.equal(page.typeOf({ type: "string" }), "string");
      assert.equal(page.typeOf({ properties: {} }), "object");
      assert.equal(page.typeOf({ required: ["a"] }), "object");
      assert.equal(page.typeOf({ items: {} }), "array");
      assert.equal(page.typeOf({ default: 3 }), "integer");
      assert.equal(page.typeOf({ examples: [1.5] }), "number");
      assert.equal(page.typeOf({ default: null }), undefined);
      assert.equal(page.typeOf({}), undefined);
    });

    test("constOf and variant labels", () => {
      assert.deepEqual(plain(page.constOf({ const: 0 })), { value: 0 });
      assert.deepEqual(plain(page.constOf({ enum: ["x"] })), { value: "x" });
      assert.equal(page.constOf({ enum: ["a", "b"] }), null);
      assert.equal(page.variantLabel({ title: "Circle", type: "object" }, 0), "Circle");
      assert.equal(page.variantLabel({ const: "fast" }, 0), "fast");
      assert.equal(page.variantLabel({ properties: { kind: { const: "circle_shape" }, r: {} } }, 0), "Circle shape");
      assert.equal(page.variantLabel({ type: "integer" }, 0), "Whole number");
      assert.equal(page.variantLabel({ type: "object", required: ["width", "max_height"] }, 0), "Width, Max height");
      assert.equal(page.variantLabel({ type: "constructor" }, 2), "Option 3", "type names are looked up as own keys");
    });
  });
}
