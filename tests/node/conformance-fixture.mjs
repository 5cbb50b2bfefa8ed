// A fixture MCP server that answers the scenarios of the official conformance suite
// (@modelcontextprotocol/conformance). Run it directly over Streamable HTTP (`http PORT`) to
// see what the suite says of it, and over stdio (`stdio`) wrapped by mcp-gen-ui to see what the
// suite says of the proxy: the proxy must pass every scenario the fixture passes.
//
// It runs MCP tasks the 2025-11-25 way (capabilities.tasks, tools/call with params.task,
// tasks/get|result|list|cancel) with the tools the suite's tasks scenarios call (greet,
// slow_compute, failing_job, protocol_error_job, confirm_delete, multi_input,
// test_tool_with_task), so the proxy's translation for 2026-07-28 hosts is judged by them. Its
// tasks are shared by all its HTTP sessions (shared-tasks.mjs says why).
import { createServer } from "node:http";
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema, ListToolsRequestSchema, ListResourcesRequestSchema, ReadResourceRequestSchema,
  ListResourceTemplatesRequestSchema, SubscribeRequestSchema, UnsubscribeRequestSchema, ListPromptsRequestSchema,
  GetPromptRequestSchema, CompleteRequestSchema, SetLevelRequestSchema, CreateMessageResultSchema, ElicitResultSchema,
  ListRootsResultSchema, McpError, ErrorCode,
} from "@modelcontextprotocol/sdk/types.js";
import { SharedTaskStore, SharedTaskMessageQueue } from "./shared-tasks.mjs";

// 1x1 red PNG and a 1-sample WAV: the smallest valid files of their kind.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";
const WAV = Buffer.concat([
  Buffer.from("RIFF"), Buffer.from([38, 0, 0, 0]), Buffer.from("WAVEfmt "), Buffer.from([16, 0, 0, 0, 1, 0, 1, 0, 0x40, 0x1f, 0, 0, 0x80, 0x3e, 0, 0, 2, 0, 16, 0]),
  Buffer.from("data"), Buffer.from([2, 0, 0, 0, 0, 0]),
]).toString("base64");
// A pause that ends early, rejecting, when `signal` fires (a cancelled request or task).
const sleep = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason);
  const stop = () => { clearTimeout(timer); reject(signal.reason); };
  const timer = setTimeout(() => { signal?.removeEventListener("abort", stop); resolve(); }, ms);
  signal?.addEventListener("abort", stop, { once: true });
});
// `promise`, or a rejection as soon as `signal` fires.
const unlessAborted = (promise, signal) => !signal ? promise : Promise.race([
  promise,
  new Promise((_, reject) => signal.aborted ? reject(signal.reason) : signal.addEventListener("abort", () => reject(signal.reason), { once: true })),
]);
const noArgs = { type: "object", properties: {} };

const TOOLS = [
  { name: "test_simple_text", description: "Returns simple text", inputSchema: noArgs },
  { name: "test_image_content", description: "Returns an image", inputSchema: noArgs },
  { name: "test_audio_content", description: "Returns audio", inputSchema: noArgs },
  { name: "test_embedded_resource", description: "Returns an embedded resource", inputSchema: noArgs },
  { name: "test_multiple_content_types", description: "Returns text, image and resource", inputSchema: noArgs },
  { name: "test_tool_with_logging", description: "Logs while it runs", inputSchema: noArgs },
  { name: "test_error_handling", description: "Always fails", inputSchema: noArgs },
  { name: "test_tool_with_progress", description: "Reports progress", inputSchema: noArgs },
  { name: "test_reconnection", description: "Answers after a pause", inputSchema: noArgs },
  { name: "test_sampling", description: "Asks the client's LLM", inputSchema: { type: "object", properties: { prompt: { type: "string" } }, required: ["prompt"] } },
  { name: "test_elicitation", description: "Asks the user", inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] } },
  { name: "test_elicitation_sep1034_defaults", description: "Elicitation with defaults", inputSchema: noArgs },
  { name: "test_elicitation_sep1330_enums", description: "Elicitation with enums", inputSchema: noArgs },
  {
    name: "json_schema_2020_12_tool", description: "Tool with JSON Schema 2020-12 features",
    inputSchema: {
      $schema: "https://json-schema.org/draft/2020-12/schema", type: "object",
      $defs: { address: { $anchor: "addressDef", type: "object", properties: { street: { type: "string" }, city: { type: "string" } } } },
      properties: {
        name: { type: "string" }, address: { $ref: "#/$defs/address" }, contactMethod: { type: "string", enum: ["phone", "email"] },
        phone: { type: "string" }, email: { type: "string" },
      },
      allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
      if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
      then: { required: ["phone"] }, else: { required: ["email"] },
      additionalProperties: false,
    },
  },
  // The 2026-07-28 scenarios' tools, written the 2025 way: they ask the client through server
  // requests, which mcp-gen-ui turns into input_required results for a stateless host.
  { name: "test_missing_capability", description: "Needs the client's sampling", inputSchema: noArgs },
  { name: "test_streaming_elicitation", description: "Asks the user while it runs", inputSchema: noArgs },
  { name: "test_logging_tool", description: "Logs once", inputSchema: noArgs },
  { name: "test_input_required_result_elicitation", description: "Asks the user's name", inputSchema: noArgs },
  { name: "test_input_required_result_sampling", description: "Asks the client's LLM", inputSchema: noArgs },
  { name: "test_input_required_result_list_roots", description: "Asks for the client's roots", inputSchema: noArgs },
  { name: "test_input_required_result_request_state", description: "Asks for a confirmation", inputSchema: noArgs },
  { name: "test_input_required_result_multiple_inputs", description: "Asks three things at once", inputSchema: noArgs },
  { name: "test_input_required_result_multi_round", description: "Asks twice, one after the other", inputSchema: noArgs },
  { name: "test_input_required_result_tampered_state", description: "Asks for a confirmation", inputSchema: noArgs },
  { name: "test_input_required_result_capabilities", description: "Asks whatever the client can answer", inputSchema: noArgs },
  // An argument that travels in an Mcp-Param-Region header too (2026-07-28, SEP-2243).
  {
    name: "test_custom_header", description: "Echoes a region that also travels as a header",
    inputSchema: { type: "object", properties: { region: { type: "string", "x-mcp-header": "Region" } }, required: ["region"] },
  },
  // The tasks scenarios' tools (conformance 0.2.0-alpha.12, io.modelcontextprotocol/tasks).
  // `execution.taskSupport` absent is "forbidden": greet never runs as a task.
  { name: "greet", description: "Says hello", inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } },
  {
    name: "slow_compute", description: "Waits `seconds`, then answers; as a task when asked, cancellable",
    inputSchema: { type: "object", properties: { seconds: { type: "number", minimum: 0 }, label: { type: "string" } }, required: ["seconds"] },
    execution: { taskSupport: "optional" },
  },
  { name: "failing_job", description: "A task whose tool result is an error, after about a second", inputSchema: noArgs, execution: { taskSupport: "required" } },
  { name: "protocol_error_job", description: "Ends in a JSON-RPC error (as a task: failed, no result)", inputSchema: noArgs, execution: { taskSupport: "optional" } },
  {
    name: "confirm_delete", description: "Asks the user to confirm deleting a file, then answers",
    inputSchema: { type: "object", properties: { filename: { type: "string" } }, required: ["filename"] },
    execution: { taskSupport: "optional" },
  },
  { name: "multi_input", description: "Asks the user two things at once", inputSchema: noArgs, execution: { taskSupport: "optional" } },
  { name: "test_tool_with_task", description: "Asks the user's name, then runs as a task", inputSchema: noArgs, execution: { taskSupport: "required" } },
];
const TOOL_BY_NAME = new Map(TOOLS.map((t) => [t.name, t]));

const RESOURCES = [
  { uri: "test://static-text", name: "static-text", description: "A static text resource", mimeType: "text/plain" },
  { uri: "test://static-binary", name: "static-binary", description: "A static binary resource", mimeType: "image/png" },
  { uri: "test://watched-resource", name: "watched-resource", description: "A resource that can be subscribed to", mimeType: "text/plain" },
];

const PROMPTS = [
  { name: "test_simple_prompt", description: "A simple prompt" },
  { name: "test_prompt_with_arguments", description: "A prompt with arguments", arguments: [{ name: "arg1", description: "First test argument", required: true }, { name: "arg2", description: "Second test argument", required: true }] },
  { name: "test_prompt_with_embedded_resource", description: "A prompt with a resource", arguments: [{ name: "resourceUri", description: "URI of the resource to embed", required: true }] },
  { name: "test_prompt_with_image", description: "A prompt with an image" },
  { name: "test_input_required_result_prompt", description: "A prompt that asks the user for context" },
];

// Server-to-client requests go through `extra` so that over HTTP they travel on the stream of
// the tools/call that caused them (the session's GET stream may not be open yet).
const elicit = (extra, params) => extra.sendRequest({ method: "elicitation/create", params }, ElicitResultSchema);
const ask = (extra, message, field, type = "string") =>
  elicit(extra, { message, requestedSchema: { type: "object", properties: { [field]: { type } }, required: [field] } });
const sample = (extra, text) => extra.sendRequest(
  { method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text } }], maxTokens: 100 } },
  CreateMessageResultSchema,
);
const roots = (extra) => extra.sendRequest({ method: "roots/list" }, ListRootsResultSchema);
const text = (t) => ({ content: [{ type: "text", text: t }] });
const badArgument = (tool, field, what) => new McpError(ErrorCode.InvalidParams, `${tool}: argument "${field}" ${what}`);
const stringArgument = (tool, args, field) => {
  if (typeof args[field] !== "string" || !args[field]) throw badArgument(tool, field, "must be a non-empty string");
  return args[field];
};

// The fixture's tasks: one store and one queue for the process, every HTTP session's
// (shared-tasks.mjs says why). SESSIONS lets a relayed answer find the session that asked.
const SESSIONS = new Map(); // HTTP session id -> its transport
const TASKS = new SharedTaskStore();
const TASK_MESSAGES = new SharedTaskMessageQueue((sid) => SESSIONS.get(sid));

// What the task-supporting tools do, the same whether they run as a task or as a plain call:
// `run` is how the work waits (run.signal fires on cancellation), asks the user (run.ask),
// says it goes on after an answer (run.resumed) and reports progress (run.progress). A result
// is the tool's answer; a thrown error its JSON-RPC error.
const TASK_WORK = {
  async slow_compute(args, run) {
    const seconds = args.seconds;
    if (typeof seconds !== "number" || !Number.isFinite(seconds) || seconds < 0 || seconds > 3600) {
      throw badArgument("slow_compute", "seconds", "must be a number of seconds from 0 to 3600");
    }
    if (args.label !== undefined && typeof args.label !== "string") throw badArgument("slow_compute", "label", "must be a string when given");
    const label = args.label || "slow_compute";
    for (let done = 0; done < seconds; done = Math.min(done + 1, seconds)) {
      await sleep(Math.min(1, seconds - done) * 1000, run.signal);
      if (done + 1 < seconds) await run.progress(done + 1, seconds, `${label}: ${done + 1} of ${seconds} s`);
    }
    return text(`${label}: computed after ${seconds} s`);
  },
  async failing_job(_args, run) {
    await sleep(1000, run.signal);
    return { isError: true, content: [{ type: "text", text: "failing_job failed on purpose: the job reported an error" }] };
  },
  async protocol_error_job(_args, run) {
    await sleep(500, run.signal);
    throw Object.assign(new Error("protocol_error_job failed on purpose: its worker crashed"), { code: ErrorCode.InternalError, data: { job: "protocol_error_job" } });
  },
  async confirm_delete(args, run) {
    const filename = stringArgument("confirm_delete", args, "filename");
    const r = await run.ask({
      message: `Delete ${filename}?`,
      requestedSchema: { type: "object", properties: { confirm: { type: "boolean", title: "Confirm", description: `Delete ${filename}` } }, required: ["confirm"] },
    });
    await run.resumed();
    return text(r.action === "accept" && r.content?.confirm === true ? `Deleted ${filename}` : `Kept ${filename} (${r.action})`);
  },
  async multi_input(_args, run) {
    const [who, ok] = await Promise.all([
      run.ask({ message: "Your name?", requestedSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] } }),
      run.ask({ message: "Go ahead?", requestedSchema: { type: "object", properties: { confirm: { type: "boolean" } }, required: ["confirm"] } }),
    ]);
    await run.resumed();
    return text(`name=${who.content?.name} (${who.action}), confirm=${ok.content?.confirm} (${ok.action})`);
  },
};

// The `run` of a plain call: it asks on the call's own stream and stops if the call is cancelled.
function plainRun(req, extra) {
  const token = req.params._meta?.progressToken;
  return {
    signal: extra.signal,
    ask: (params) => unlessAborted(elicit(extra, params), extra.signal),
    resumed: async () => {},
    progress: async (progress, total, message) => {
      if (token !== undefined) await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress, total, message } });
    },
  };
}

// Creates the task a tools/call asked for (params.task) and answers its CreateTaskResult at
// once, while `work(run)` goes on: what it returns or throws becomes the task's outcome, as it
// would have been the plain call's answer, unless the task was cancelled (or expired) first.
// Its questions are queued for tasks/result with the task's related-task _meta (the SDK does
// that, and turns the task input_required). Status notices (notifications/tasks/status) and
// progress on the call's token go out as the SDK's own helpers send them, at best: the session
// that made the task may be gone while the task is not.
async function startTask(server, req, extra, work) {
  // The session id goes to the store as the SDK's own helpers pass it; this store ignores it.
  const task = await TASKS.createTask({ ttl: req.params.task.ttl }, extra.requestId, req, extra.sessionId);
  const { taskId } = task;
  const signal = TASKS.signal(taskId);
  const token = req.params._meta?.progressToken;
  const notify = async () => {
    const now = await TASKS.getTask(taskId);
    if (now) await server.notification({ method: "notifications/tasks/status", params: now }).catch(() => {});
  };
  const run = {
    signal,
    ask: (params) => unlessAborted(extra.sendRequest({ method: "elicitation/create", params }, ElicitResultSchema, { relatedTask: { taskId } }), signal),
    resumed: async () => { await TASKS.updateTaskStatus(taskId, "working"); await notify(); },
    progress: async (progress, total, message) => {
      await TASKS.updateTaskStatus(taskId, "working", message);
      await notify();
      if (token !== undefined) await server.notification({ method: "notifications/progress", params: { progressToken: token, progress, total, message } }).catch(() => {});
    },
  };
  (async () => {
    let outcome;
    try {
      outcome = await work(run);
    } catch (error) {
      if (!TASKS.isLive(taskId)) return;
      console.error(`task ${taskId} (${req.params.name}) failed: ${error?.message ?? error}`);
      await TASKS.fail(taskId, error).then(notify);
      return;
    }
    if (TASKS.isLive(taskId)) await TASKS.storeTaskResult(taskId, outcome.isError ? "failed" : "completed", outcome).then(notify);
  })().catch((error) => console.error(`task ${taskId}: ${error}`));
  return { task };
}

function makeServer() {
  const server = new Server(
    { name: "mcp-gen-ui-conformance-fixture", version: "1.0.0" },
    {
      capabilities: {
        tools: {}, resources: { subscribe: true }, prompts: {}, logging: {}, completions: {},
        tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
      },
      taskStore: TASKS,
      taskMessageQueue: TASK_MESSAGES,
    },
  );
  const subscriptions = new Set();

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
    const args = req.params.arguments || {};
    const tool = TOOL_BY_NAME.get(req.params.name);
    const support = tool?.execution?.taskSupport ?? "forbidden";
    const asTask = req.params.task !== undefined;
    // The spec's answers for a call that does not fit the tool's execution.taskSupport.
    if (tool && asTask && support === "forbidden") {
      throw new McpError(ErrorCode.MethodNotFound, `Tool ${tool.name} does not run as a task (execution.taskSupport is forbidden): call it without params.task`);
    }
    if (tool && !asTask && support === "required") {
      throw new McpError(ErrorCode.MethodNotFound, `Tool ${tool.name} runs only as a task (execution.taskSupport is required): call it with params.task, e.g. "task": {"ttl": 60000}`);
    }
    const work = TASK_WORK[req.params.name];
    if (work) return asTask ? startTask(server, req, extra, (run) => work(args, run)) : work(args, plainRun(req, extra));
    switch (req.params.name) {
      case "greet": return text(`Hello, ${stringArgument("greet", args, "name")}!`);
      case "test_tool_with_task": {
        // Asked before the task exists, on the tools/call itself: for a 2026-07-28 host, the
        // MRTR rounds that come before the CreateTaskResult.
        const who = await ask(extra, "What is your name?", "name");
        const name = who.action === "accept" && who.content?.name ? String(who.content.name) : "stranger";
        return startTask(server, req, extra, async (run) => {
          await sleep(200, run.signal);
          return text(`Hello, ${name}! Your task is done.`);
        });
      }
      case "test_simple_text": return text("This is a simple text response for testing.");
      case "test_image_content": return { content: [{ type: "image", data: PNG, mimeType: "image/png" }] };
      case "test_audio_content": return { content: [{ type: "audio", data: WAV, mimeType: "audio/wav" }] };
      case "test_embedded_resource":
        return { content: [{ type: "resource", resource: { uri: "test://embedded-resource", mimeType: "text/plain", text: "This is an embedded resource content." } }] };
      case "test_multiple_content_types":
        return { content: [
          { type: "text", text: "Multiple content types test:" },
          { type: "image", data: PNG, mimeType: "image/png" },
          { type: "resource", resource: { uri: "test://mixed-content-resource", mimeType: "application/json", text: JSON.stringify({ test: "data", value: 123 }) } },
        ] };
      case "test_tool_with_logging":
        for (const [i, msg] of ["Tool execution started", "Tool processing data", "Tool execution completed"].entries()) {
          if (i) await sleep(50);
          await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: msg } });
        }
        return text("Tool with logging executed successfully");
      case "test_error_handling":
        return { isError: true, content: [{ type: "text", text: "This tool intentionally returns an error for testing" }] };
      case "test_tool_with_progress": {
        const token = req.params._meta?.progressToken;
        for (const [i, p] of [0, 50, 100].entries()) {
          if (i) await sleep(50);
          if (token !== undefined) await extra.sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: p, total: 100 } });
        }
        return text("Tool with progress executed successfully");
      }
      case "test_reconnection":
        await sleep(100);
        return text("Reconnection test completed");
      case "test_sampling": {
        const r = await extra.sendRequest({ method: "sampling/createMessage", params: { messages: [{ role: "user", content: { type: "text", text: String(args.prompt ?? "") } }], maxTokens: 100 } }, CreateMessageResultSchema);
        return text(`LLM response: ${r.content?.text ?? JSON.stringify(r.content)}`);
      }
      case "test_elicitation": {
        const r = await elicit(extra, {
          message: String(args.message ?? ""),
          requestedSchema: { type: "object", properties: { username: { type: "string", description: "User's response" }, email: { type: "string", description: "User's email address" } }, required: ["username", "email"] },
        });
        return text(`User response: ${JSON.stringify({ action: r.action, content: r.content })}`);
      }
      case "test_elicitation_sep1034_defaults": {
        const r = await elicit(extra, {
          message: "Please review and update the form fields with defaults",
          requestedSchema: { type: "object", properties: {
            name: { type: "string", description: "User name", default: "John Doe" },
            age: { type: "integer", description: "User age", default: 30 },
            score: { type: "number", description: "User score", default: 95.5 },
            status: { type: "string", description: "User status", enum: ["active", "inactive", "pending"], default: "active" },
            verified: { type: "boolean", description: "Verification status", default: true },
          } },
        });
        return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
      }
      case "test_elicitation_sep1330_enums": {
        const r = await elicit(extra, {
          message: "Please select options from the enum fields",
          requestedSchema: { type: "object", properties: {
            untitledSingle: { type: "string", description: "Select one option", enum: ["option1", "option2", "option3"] },
            titledSingle: { type: "string", description: "Select one option with titles", oneOf: [{ const: "value1", title: "First Option" }, { const: "value2", title: "Second Option" }, { const: "value3", title: "Third Option" }] },
            legacyEnum: { type: "string", description: "Select one option (legacy)", enum: ["opt1", "opt2", "opt3"], enumNames: ["Option One", "Option Two", "Option Three"] },
            untitledMulti: { type: "array", description: "Select multiple options", minItems: 1, maxItems: 3, items: { type: "string", enum: ["option1", "option2", "option3"] } },
            titledMulti: { type: "array", description: "Select multiple options with titles", minItems: 1, maxItems: 3, items: { anyOf: [{ const: "value1", title: "First Choice" }, { const: "value2", title: "Second Choice" }, { const: "value3", title: "Third Choice" }] } },
          } },
        });
        return text(`Elicitation completed: action=${r.action}, content=${JSON.stringify(r.content ?? {})}`);
      }
      case "json_schema_2020_12_tool": return text(`Received: ${JSON.stringify(args)}`);
      // A refusal (the client lacks sampling) goes back as it came, code and data included.
      case "test_custom_header": return text(`Region: ${args.region}`);
      case "test_missing_capability": return text(`Sampled: ${JSON.stringify((await sample(extra, "hello")).content)}`);
      case "test_streaming_elicitation": return text(`Answered: ${(await ask(extra, "Anything to add?", "note")).action}`);
      case "test_logging_tool":
        await extra.sendNotification({ method: "notifications/message", params: { level: "info", data: "test_logging_tool ran" } });
        return text("Logged once");
      case "test_input_required_result_elicitation":
      case "test_input_required_result_tampered_state": {
        const r = await ask(extra, "What is your name?", "name");
        return text(`Hello, ${r.content?.name ?? "stranger"} (${r.action})`);
      }
      case "test_input_required_result_sampling": return text(`Sampled: ${(await sample(extra, "What is the capital of France?")).content?.text}`);
      case "test_input_required_result_list_roots": return text(`Roots: ${(await roots(extra)).roots.map((r) => r.uri).join(", ")}`);
      case "test_input_required_result_request_state": {
        const r = await ask(extra, "Confirm?", "ok", "boolean");
        return text(`state-ok: ${JSON.stringify(r.content)}`);
      }
      case "test_input_required_result_multiple_inputs": {
        const [who, said, rs] = await Promise.all([ask(extra, "Your name?", "name"), sample(extra, "Say hello"), roots(extra)]);
        return text(`name=${who.content?.name} said=${said.content?.text} roots=${rs.roots.length}`);
      }
      case "test_input_required_result_multi_round": {
        const who = await ask(extra, "Your name?", "name");
        const color = await ask(extra, `Favourite colour, ${who.content?.name}?`, "color");
        return text(`${who.content?.name} likes ${color.content?.color}`);
      }
      case "test_input_required_result_capabilities": {
        const [e, s] = await Promise.allSettled([ask(extra, "Your name?", "name"), sample(extra, "Say hi")]);
        return text(`elicitation: ${e.status}, sampling: ${s.status}`);
      }
      default: throw new Error(`Unknown tool: ${req.params.name}`);
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: RESOURCES }));
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [{ uriTemplate: "test://template/{id}/data", name: "template", description: "A resource template", mimeType: "application/json" }],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    const uri = req.params.uri;
    if (uri === "test://static-text") return { contents: [{ uri, mimeType: "text/plain", text: "This is the content of the static text resource." }] };
    if (uri === "test://static-binary") return { contents: [{ uri, mimeType: "image/png", blob: PNG }] };
    if (uri === "test://watched-resource") return { contents: [{ uri, mimeType: "text/plain", text: "Watched resource content" }] };
    const m = /^test:\/\/template\/([^/]+)\/data$/.exec(uri);
    if (m) return { contents: [{ uri, mimeType: "application/json", text: JSON.stringify({ id: m[1], templateTest: true, data: `Data for ID: ${m[1]}` }) }] };
    const err = new Error(`Resource not found: ${uri}`);
    err.code = -32002;
    throw err;
  });
  server.setRequestHandler(SubscribeRequestSchema, async (req) => { subscriptions.add(req.params.uri); return {}; });
  server.setRequestHandler(UnsubscribeRequestSchema, async (req) => { subscriptions.delete(req.params.uri); return {}; });

  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: PROMPTS }));
  server.setRequestHandler(GetPromptRequestSchema, async (req, extra) => {
    const a = req.params.arguments || {};
    const user = (content) => ({ role: "user", content });
    switch (req.params.name) {
      case "test_simple_prompt": return { messages: [user({ type: "text", text: "This is a simple prompt for testing." })] };
      case "test_prompt_with_arguments": return { messages: [user({ type: "text", text: `Prompt with arguments: arg1='${a.arg1}', arg2='${a.arg2}'` })] };
      case "test_prompt_with_embedded_resource":
        return { messages: [
          user({ type: "resource", resource: { uri: a.resourceUri, mimeType: "text/plain", text: "Embedded resource content for testing." } }),
          user({ type: "text", text: "Please process the embedded resource above." }),
        ] };
      case "test_prompt_with_image":
        return { messages: [user({ type: "image", data: PNG, mimeType: "image/png" }), user({ type: "text", text: "Please analyze the image above." })] };
      case "test_input_required_result_prompt": {
        const r = await ask(extra, "Context for the prompt?", "context");
        return { messages: [user({ type: "text", text: `Prompt with context: ${r.content?.context}` })] };
      }
      default: throw new Error(`Unknown prompt: ${req.params.name}`);
    }
  });
  server.setRequestHandler(CompleteRequestSchema, async (req) => {
    const v = String(req.params.argument?.value ?? "");
    const values = ["paris", "park", "party"].filter((x) => x.startsWith(v));
    return { completion: { values, total: values.length, hasMore: false } };
  });
  server.setRequestHandler(SetLevelRequestSchema, async () => ({}));
  return server;
}

const LOCAL = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

async function serveHttp(port) {
  const http = createServer(async (req, res) => {
    const origin = req.headers.origin;
    if (!LOCAL.test(req.headers.host || "") || (origin && !/^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i.test(origin))) {
      res.writeHead(403, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32600, message: "Host/Origin not allowed" } }));
      return;
    }
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? SESSIONS.get(sid) : undefined;
    if (!transport) {
      if (sid) { res.writeHead(404).end(); return; }
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: (id) => SESSIONS.set(id, transport) });
      transport.onclose = () => transport.sessionId && SESSIONS.delete(transport.sessionId);
      await makeServer().connect(transport);
      TASK_MESSAGES.relayAnswers(transport);
    }
    await transport.handleRequest(req, res);
  });
  http.listen(port, "127.0.0.1");
}

if (process.argv[2] === "http") await serveHttp(Number(process.argv[3] || 3210));
else await makeServer().connect(new StdioServerTransport());
