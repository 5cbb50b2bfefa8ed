// Checks the conformance fixture's MCP tasks (2025-11-25) over Streamable HTTP with two client
// sessions, as two proxy replicas would hold them: what each tool does as a task and as a plain
// call, and that a task one session made is polled, answered, listed and cancelled through the
// other. Usage: node fixture-tasks-check.mjs http://127.0.0.1:PORT/mcp
// Prints one line per check and exits 1 if any failed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CallToolResultSchema, CreateTaskResultSchema, GetTaskResultSchema, ListTasksResultSchema, CancelTaskResultSchema,
  ListToolsResultSchema, ElicitRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const url = new URL(process.argv[2] ?? "http://127.0.0.1:3210/mcp");
const RELATED = "io.modelcontextprotocol/related-task";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let failures = 0;
const check = (name, ok, detail) => {
  if (!ok) failures++;
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : `: ${typeof detail === "string" ? detail : JSON.stringify(detail)}`}`);
};

// A session whose user answers elicitations with `answer(params)` and records what was asked.
async function session(name, answer) {
  const client = new Client({ name, version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req);
    return answer(req.params);
  });
  await client.connect(new StreamableHTTPClientTransport(url));
  return { client, asked };
}
const call = (s, name, args, task) =>
  s.client.request({ method: "tools/call", params: { name, arguments: args, ...(task ? { task } : {}) } }, task ? CreateTaskResultSchema : CallToolResultSchema);
const get = (s, taskId) => s.client.request({ method: "tasks/get", params: { taskId } }, GetTaskResultSchema);
const result = (s, taskId) => s.client.request({ method: "tasks/result", params: { taskId } }, CallToolResultSchema, { timeout: 30_000 });
const cancel = (s, taskId) => s.client.request({ method: "tasks/cancel", params: { taskId } }, CancelTaskResultSchema);
const list = (s) => s.client.request({ method: "tasks/list", params: {} }, ListTasksResultSchema);
const error = (promise) => promise.then((r) => ({ unexpectedResult: r }), (e) => e);
async function until(s, taskId, wanted, ms = 10_000) {
  const deadline = Date.now() + ms;
  let task;
  while (Date.now() < deadline) {
    task = await get(s, taskId);
    if (wanted.includes(task.status)) return task;
    await sleep(100);
  }
  return task;
}
const textOf = (r) => r?.content?.[0]?.text;

const accept = (params) => ({ action: "accept", content: "confirm" in params.requestedSchema.properties ? { confirm: true } : { name: "Alice" } });
const a = await session("replica-a", accept);
const b = await session("replica-b", accept);
try {
  const tools = (await a.client.request({ method: "tools/list" }, ListToolsResultSchema)).tools;
  const support = Object.fromEntries(tools.map((t) => [t.name, t.execution?.taskSupport ?? "forbidden"]));
  check("tools/list says each task tool's taskSupport", support.greet === "forbidden" && support.slow_compute === "optional"
    && support.failing_job === "required" && support.test_tool_with_task === "required" && support.confirm_delete === "optional", support);

  check("greet answers Hello, {name}!", textOf(await call(a, "greet", { name: "World" })) === "Hello, World!");
  const greetTask = await error(call(a, "greet", { name: "x" }, { ttl: 60_000 }));
  check("greet as a task is -32601 (taskSupport forbidden)", greetTask.code === -32601, greetTask);
  const plainRequired = await error(call(a, "failing_job", {}));
  check("failing_job without a task is -32601 (taskSupport required)", plainRequired.code === -32601, plainRequired);
  const badSeconds = await error(call(a, "slow_compute", { seconds: "soon" }));
  check("slow_compute with bad seconds is -32602 naming the field", badSeconds.code === -32602 && /"seconds"/.test(badSeconds.message), badSeconds);
  check("slow_compute without a task answers plainly", /computed after 0 s/.test(textOf(await call(a, "slow_compute", { seconds: 0, label: "instant" }))));

  // Made by A, seen and finished through B.
  const made = (await call(a, "slow_compute", { seconds: 1, label: "shared" }, { ttl: 60_000 })).task;
  check("a task is created working, with the ttl asked and a poll interval", made.status === "working" && made.ttl === 60_000 && made.pollInterval > 0, made);
  const seen = await get(b, made.taskId);
  check("another session gets the task", seen.taskId === made.taskId, seen);
  check("another session lists the task", (await list(b)).tasks.some((t) => t.taskId === made.taskId));
  const done = await result(b, made.taskId);
  check("another session's tasks/result waits for the result and carries related-task _meta",
    /shared: computed after 1 s/.test(textOf(done)) && done._meta?.[RELATED]?.taskId === made.taskId, done);
  check("the task ends completed", (await get(a, made.taskId)).status === "completed");
  const again = await error(cancel(b, made.taskId));
  check("cancelling a completed task is -32602", again.code === -32602, again);

  const slow = (await call(a, "slow_compute", { seconds: 1 }, { ttl: 60_000 })).task;
  const cancelled = await cancel(b, slow.taskId);
  check("another session cancels a task", cancelled.status === "cancelled", cancelled);
  await sleep(1500);
  check("a cancelled task stays cancelled", (await get(a, slow.taskId)).status === "cancelled");

  const failing = (await call(a, "failing_job", {}, { ttl: 60_000 })).task;
  const failed = await until(a, failing.taskId, ["completed", "failed", "cancelled"]);
  const failingResult = await result(a, failing.taskId);
  check("failing_job ends failed with its error result (isError)", failed.status === "failed" && failingResult.isError === true
    && /failed on purpose/.test(failed.statusMessage), { failed, failingResult });

  const crashing = (await call(a, "protocol_error_job", {}, { ttl: 60_000 })).task;
  const crashed = await until(a, crashing.taskId, ["completed", "failed", "cancelled"]);
  const crash = await error(result(b, crashing.taskId));
  check("protocol_error_job ends failed and its tasks/result is its JSON-RPC error", crashed.status === "failed" && crash.code === -32603
    && /worker crashed/.test(crash.message) && crash.data?.job === "protocol_error_job", { crashed, crash });
  const plainCrash = await error(call(a, "protocol_error_job", {}));
  check("protocol_error_job called plainly is the same JSON-RPC error", plainCrash.code === -32603 && /worker crashed/.test(plainCrash.message), plainCrash);

  // A's task asks; B's tasks/result delivers the question, B's answer reaches A's work.
  const deleting = (await call(a, "confirm_delete", { filename: "x.txt" }, { ttl: 60_000 })).task;
  check("a task that asks goes input_required", (await until(a, deleting.taskId, ["input_required"])).status === "input_required");
  const deleted = await result(b, deleting.taskId);
  const question = b.asked.at(-1);
  check("the question reaches the session that called tasks/result, with related-task _meta",
    question?.params?._meta?.[RELATED]?.taskId === deleting.taskId && "confirm" in question.params.requestedSchema.properties, question);
  check("its answer resumes the task, which completes", textOf(deleted) === "Deleted x.txt"
    && (await get(a, deleting.taskId)).status === "completed", deleted);

  const asking = b.asked.length;
  const multi = (await call(a, "multi_input", {}, { ttl: 60_000 })).task;
  const both = await result(a, multi.taskId);
  check("multi_input asks two questions and completes with both answers", /name=Alice \(accept\), confirm=true \(accept\)/.test(textOf(both))
    && a.asked.filter((r) => r.params._meta?.[RELATED]?.taskId === multi.taskId).length === 2 && b.asked.length === asking, both);

  const asked = a.asked.length;
  const named = (await call(a, "test_tool_with_task", {}, { ttl: 60_000 })).task;
  const plainQuestion = a.asked[asked];
  check("test_tool_with_task asks the name on the call itself, before its task", plainQuestion && !plainQuestion.params._meta?.[RELATED]
    && named.status === "working", plainQuestion);
  check("test_tool_with_task's result has the name", /Alice/.test(textOf(await result(b, named.taskId))));

  const parked = (await call(a, "confirm_delete", { filename: "y.txt" }, { ttl: 60_000 })).task;
  await until(a, parked.taskId, ["input_required"]);
  await cancel(b, parked.taskId);
  await sleep(500);
  check("a task cancelled while it waits for an answer stays cancelled", (await get(a, parked.taskId)).status === "cancelled");
  const gone = await error(get(b, "no-such-task"));
  check("an unknown task is -32602", gone.code === -32602, gone);
} catch (e) {
  check("the checks ran to their end", false, String(e));
} finally {
  await a.client.close();
  await b.client.close();
}
console.log(failures ? `${failures} check(s) failed` : "all checks passed");
process.exit(failures ? 1 : 0);
