// A small stdio MCP server for the template page's browser tests. Its tools exercise what the
// page must handle: `showcase` takes a schema with every construct the form supports (arrays of
// objects and of scalars, nested objects, enums, oneOf/anyOf, const, formats, ranges, defaults,
// required, $ref/$defs with a recursive and a looping reference); `delete_records` has no
// annotations (so it is destructive by MCP's defaults); `render_media` answers with an image,
// audio, a resource link and embedded resources; `fail` answers with isError.
// Every tools/call's arguments are appended, one JSON line each, to $FIXTURE_LOG.
import { appendFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const SHOWCASE_SCHEMA = {
  type: "object",
  $defs: {
    Person: {
      type: "object",
      title: "Person",
      properties: { name: { type: "string", minLength: 1 }, email: { type: "string", format: "email" } },
      required: ["name"],
    },
    Node: {
      type: "object",
      properties: {
        label: { type: "string" },
        children: { type: "array", items: { $ref: "#/$defs/Node" } },
        next: { $ref: "#/$defs/Node", description: "The node after this one" },
      },
      required: ["label"],
    },
    LoopA: { $ref: "#/$defs/LoopB" },
    LoopB: { $ref: "#/$defs/LoopA" },
  },
  properties: {
    title: { type: "string", minLength: 3, maxLength: 40, description: "What the review is called" },
    kind: { const: "showcase" },
    count: { type: "integer", minimum: 1, maximum: 10, default: 3 },
    ratio: { type: "number", minimum: 0, maximum: 1, multipleOf: 0.05 },
    priority: { type: "string", enum: ["low", "normal", "high"], default: "normal" },
    level: { enum: [1, 2, 3], description: "A numeric enum" },
    enabled: { type: "boolean", default: true },
    notify: { type: "boolean" },
    due: { type: "string", format: "date" },
    startsAt: { type: "string", format: "date-time" },
    contact: { type: "string", format: "email" },
    homepage: { type: "string", format: "uri" },
    tags: { type: "array", items: { type: "string" }, uniqueItems: true },
    scores: { type: "array", items: { type: "number" } },
    weekdays: { type: "array", items: { enum: ["mon", "tue", "wed", "thu", "fri"] } },
    owner: { $ref: "#/$defs/Person" },
    address: {
      type: "object",
      properties: {
        street: { type: "string" },
        city: { type: "string" },
        geo: { type: "object", properties: { lat: { type: "number", minimum: -90, maximum: 90 }, lon: { type: "number", minimum: -180, maximum: 180 } } },
      },
      required: ["city"],
    },
    members: { type: "array", items: { $ref: "#/$defs/Person" }, minItems: 1 },
    shape: {
      oneOf: [
        { title: "Circle", type: "object", properties: { kind: { const: "circle" }, radius: { type: "number", exclusiveMinimum: 0 } }, required: ["kind", "radius"] },
        { title: "Rectangle", type: "object", properties: { kind: { const: "rect" }, width: { type: "number" }, height: { type: "number" } }, required: ["kind", "width", "height"] },
      ],
    },
    limit: { anyOf: [{ type: "integer" }, { type: "null" }], default: null, description: "Nullable, as pydantic writes Optional[int]" },
    target: {
      anyOf: [
        { title: "URL", type: "string", format: "uri" },
        { title: "Path", type: "object", properties: { path: { type: "string" } }, required: ["path"] },
      ],
    },
    tree: { $ref: "#/$defs/Node" },
    extra: { $ref: "#/$defs/LoopA", description: "A $ref loop: any JSON" },
    metadata: { type: "object", additionalProperties: { type: "string" } },
    constructor: { type: "string", description: "Named like an Object.prototype member" },
  },
  required: ["title", "kind", "owner", "members", "shape"],
  additionalProperties: false,
};

const PNG = "iVBORw0KGgoAAAANSUhEUgAAABgAAAAQCAIAAACDRijCAAACtklEQVR4nA3Moc6uIACA4XMlfzQajUaj0WhiBoMzkZiB4EgkZjA4EokZDI5EdG8yej3ney7g+fcnKASloBLUgkbQCjpBLxgEk0AKFsEqsIJNcAiC4BTcgix4BK/gE/z7GylGypFqpB5pRtqRbqQfGUamETmyjKwjdmQbOUbCyDlyj+SRZ+Qd+cZfNFPMlDPVTD3TzLQz3Uw/M8xMM3JmmVln7Mw2c8yEmXPmnskzz8w7882/SFJISkklqSWNpJV0kl4ySCaJlCySVWIlm+SQBMkpuSVZ8kheySd/kaJQlIpKUSsaRavoFL1iUEwKqVgUq8IqNsWhCIpTcSuy4lG8ik/9Ik2hKTWVptY0mlbTaXrNoJk0UrNoVo3VbJpDEzSn5tZkzaN5NZ/+RYbCUBoqQ21oDK2hM/SGwTAZpGExrAZr2AyHIRhOw23IhsfwGj7ziyyFpbRUltrSWFpLZ+ktg2WySMtiWS3WslkOS7CcltuSLY/ltXz2FzkKR+moHLWjcbSOztE7BsfkkI7FsTqsY3McjuA4HbcjOx7H6/jcL9opdsqdaqfeaXbanW6n3xl2ph25s+ysO3Zn2zl2ws65c+/knWfn3fn2X+QpPKWn8tSextN6Ok/vGTyTR3oWz+qxns1zeILn9Nye7Hk8r+fzvyhQBMpAFagDTaANdIE+MASmgAwsgTVgA1vgCITAGbgDOfAE3sAXflGkiJSRKlJHmkgb6SJ9ZIhMERlZImvERrbIEQmRM3JHcuSJvJEv/qKL4qK8qC7qi+aivegu+ovhYrqQF8vFemEvtovjIlycF/dFvngu3ovv+kWJIlEmqkSdaBJtokv0iSExJWRiSawJm9gSRyIkzsSdyIkn8Sa+9IsyRabMVJk602TaTJfpM0NmysjMklkzNrNljkzInJk7kzNP5s18mf+nULyfHo3ARAAAAABJRU5ErkJggg==";

/** A 0.1 s, 8 kHz, 8-bit mono WAV of a quiet square wave. */
function wav() {
  const n = 800, b = Buffer.alloc(44 + n);
  b.write("RIFF", 0); b.writeUInt32LE(36 + n, 4); b.write("WAVEfmt ", 8);
  b.writeUInt32LE(16, 16); b.writeUInt16LE(1, 20); b.writeUInt16LE(1, 22); b.writeUInt32LE(8000, 24); b.writeUInt32LE(8000, 28);
  b.writeUInt16LE(1, 32); b.writeUInt16LE(8, 34); b.write("data", 36); b.writeUInt32LE(n, 40);
  for (let i = 0; i < n; i++) b[44 + i] = (i >> 4) & 1 ? 140 : 116;
  return b.toString("base64");
}

const TOOLS = [
  { name: "showcase", title: "Schedule a review", description: "Takes every kind of argument the template form supports.", inputSchema: SHOWCASE_SCHEMA,
    annotations: { readOnlyHint: false, destructiveHint: false } },
  { name: "delete_records", description: "Deletes records by id. No annotations: destructive by MCP's defaults.",
    inputSchema: { type: "object", properties: { ids: { type: "array", items: { type: "integer" }, minItems: 1 }, reason: { type: "string" } }, required: ["ids"] } },
  { name: "render_media", description: "Answers with an image, audio, a resource link and embedded resources.", inputSchema: { type: "object", properties: {} },
    annotations: { readOnlyHint: true } },
  { name: "fail", description: "Always answers with an error.", inputSchema: { type: "object", properties: { path: { type: "string" } } },
    annotations: { readOnlyHint: true } },
];

function call(name, args) {
  switch (name) {
    case "showcase":
    case "delete_records":
      return { content: [{ type: "text", text: JSON.stringify({ received: args }) }] };
    case "render_media":
      return { content: [
        { type: "text", text: "Here is the chart and a beep." },
        { type: "image", data: PNG, mimeType: "image/png" },
        { type: "audio", data: wav(), mimeType: "audio/wav" },
        { type: "resource_link", uri: "file:///reports/q1.csv", name: "q1.csv", mimeType: "text/csv", description: "The quarter's figures" },
        { type: "resource", resource: { uri: "file:///reports/q1.json", mimeType: "application/json", text: JSON.stringify({ quarter: "Q1", total: 1234 }) } },
        { type: "resource", resource: { uri: "file:///reports/logo.png", mimeType: "image/png", blob: PNG } },
      ] };
    case "fail":
      return { isError: true, content: [{ type: "text", text: `Disk quota exceeded: cannot write ${args.path || "the file"}` }] };
    default:
      throw new Error(`unknown tool ${name}`);
  }
}

const server = new Server({ name: "mcp-gen-ui-schema-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
server.setRequestHandler(CallToolRequestSchema, async (req) => {
  const args = req.params.arguments ?? {};
  if (process.env.FIXTURE_LOG) appendFileSync(process.env.FIXTURE_LOG, JSON.stringify({ name: req.params.name, arguments: args }) + "\n");
  return call(req.params.name, args);
});
await server.connect(new StdioServerTransport());
