// Where the conformance fixture keeps its MCP tasks (2025-11-25, SEP-1686): one task store and
// one task message queue for the whole process, shared by every HTTP session, as a server that
// keeps its tasks in a database shares them.
//
// Why not the SDK's InMemoryTaskStore: it binds a task to the session that made it (createTask
// keeps the caller's sessionId, and every later call with another session id reads the task as
// "not found"). That suits one client per process, not what the fixture stands in for in the
// proxy's tests: two replicas of mcp-gen-ui, each with its own upstream session, polling and
// answering the same task. So the session id the SDK passes is ignored here and a task is found
// by its id alone: 32 random hex characters, unguessable. The fixture has no authorization
// context to bind tasks to; the spec then asks for unguessable ids and for the limitation to be
// said, which this is. Who may see a task is the proxy's business.
import { randomBytes } from "node:crypto";
import { isTerminal } from "@modelcontextprotocol/sdk/experimental/tasks";

// Short, so that tasks/result (which re-checks a task every pollInterval) delivers a question soon.
const POLL_INTERVAL_MS = 200;
const DEFAULT_TTL_MS = 5 * 60_000;
// The spec asks receivers to bound ttl; a requested ttl is kept within these.
const MIN_TTL_MS = 1_000;
const MAX_TTL_MS = 60 * 60_000;
const PAGE_SIZE = 10;

/**
 * A TaskStore (the SDK's interface) whose tasks every session sees. Besides that interface it
 * keeps what the SDK's store cannot: a JSON-RPC error as a task's outcome (`fail`), so that
 * tasks/result answers the very error the plain call would have answered, and a signal per task
 * that fires when the task is cancelled or expires, so that its work stops.
 */
export class SharedTaskStore {
  #tasks = new Map(); // taskId -> { task, result?, error?, abort, timer? }

  async createTask(params, _requestId, _request, _sessionId) {
    const taskId = randomBytes(16).toString("hex");
    const now = new Date().toISOString();
    const ttl = Math.min(Math.max(params?.ttl ?? DEFAULT_TTL_MS, MIN_TTL_MS), MAX_TTL_MS);
    const task = { taskId, status: "working", ttl, createdAt: now, lastUpdatedAt: now, pollInterval: params?.pollInterval ?? POLL_INTERVAL_MS };
    this.#tasks.set(taskId, { task, abort: new AbortController() });
    this.#expireIn(taskId, ttl);
    return { ...task };
  }

  async getTask(taskId, _sessionId) {
    const stored = this.#tasks.get(taskId);
    return stored ? { ...stored.task } : null;
  }

  async storeTaskResult(taskId, status, result, _sessionId) {
    const stored = this.#live(taskId);
    stored.result = result;
    // A failed tool result (isError) says why in tasks/get too (the spec's SHOULD).
    const why = status === "failed" ? result?.content?.find?.((c) => c.type === "text")?.text : undefined;
    if (why) stored.task.statusMessage = why;
    this.#settle(stored, status);
  }

  async getTaskResult(taskId, _sessionId) {
    const stored = this.#tasks.get(taskId);
    if (!stored) throw new Error(`Task with ID ${taskId} not found`);
    // The SDK's tasks/result turns a thrown error with a code into that JSON-RPC error.
    if (stored.error && stored.task.status === "failed") throw Object.assign(new Error(stored.error.message), stored.error);
    if (!stored.result) throw new Error(`Task ${taskId} has no result stored`);
    return stored.result;
  }

  async updateTaskStatus(taskId, status, statusMessage, _sessionId) {
    const stored = this.#live(taskId);
    if (statusMessage) stored.task.statusMessage = statusMessage;
    this.#settle(stored, status);
  }

  async listTasks(cursor, _sessionId) {
    const ids = [...this.#tasks.keys()];
    let start = 0;
    if (cursor) {
      const at = ids.indexOf(cursor);
      if (at < 0) throw new Error(`Invalid cursor: ${cursor}`);
      start = at + 1;
    }
    const page = ids.slice(start, start + PAGE_SIZE);
    const nextCursor = start + PAGE_SIZE < ids.length ? page[page.length - 1] : undefined;
    return { tasks: page.map((id) => ({ ...this.#tasks.get(id).task })), nextCursor };
  }

  /** Ends a live task `failed` with a JSON-RPC error as its outcome ({code, message, data?}). */
  async fail(taskId, error) {
    const stored = this.#live(taskId);
    stored.error = { code: Number.isSafeInteger(error?.code) ? error.code : -32603, message: String(error?.message ?? error) };
    if (error?.data !== undefined) stored.error.data = error.data;
    stored.task.statusMessage = stored.error.message;
    this.#settle(stored, "failed");
  }

  /** Whether the task exists and has not ended: its work may still set its outcome. */
  isLive(taskId) {
    const stored = this.#tasks.get(taskId);
    return Boolean(stored) && !isTerminal(stored.task.status);
  }

  /** Fires when the task is cancelled or expires (already fired for an unknown task). */
  signal(taskId) {
    return this.#tasks.get(taskId)?.abort.signal ?? AbortSignal.abort(new Error(`Task ${taskId} not found`));
  }

  #live(taskId) {
    const stored = this.#tasks.get(taskId);
    if (!stored) throw new Error(`Task with ID ${taskId} not found`);
    if (isTerminal(stored.task.status)) {
      throw new Error(`Cannot update task ${taskId} from terminal status '${stored.task.status}': a task ends once.`);
    }
    return stored;
  }

  #settle(stored, status) {
    stored.task.status = status;
    stored.task.lastUpdatedAt = new Date().toISOString();
    if (!isTerminal(status)) return;
    // As the SDK's store: a task is kept for its ttl after it ends.
    this.#expireIn(stored.task.taskId, stored.task.ttl);
    if (status === "cancelled") stored.abort.abort(new Error(`Task ${stored.task.taskId} was cancelled`));
  }

  #expireIn(taskId, ms) {
    const stored = this.#tasks.get(taskId);
    clearTimeout(stored.timer);
    stored.timer = setTimeout(() => {
      this.#tasks.delete(taskId);
      stored.abort.abort(new Error(`Task ${taskId} expired`));
    }, ms);
    stored.timer.unref?.();
  }
}

/**
 * A TaskMessageQueue (the SDK's interface) shared the same way. The SDK queues what a task's
 * work sends its requestor (an elicitation it waits on, say) and delivers it only inside a
 * tasks/result call, which may come on another session than the one whose work asked. A request
 * keeps the id its own session numbered it with, and another session's ids overlap, so on another
 * session it travels under a relay id (`relay-N`) and its answer, which comes back on that other
 * session, is handed to the asking session's transport under the original id (`relayAnswers`
 * wires that into each session's transport). On one session, and over stdio, messages go exactly
 * as the SDK's own queue sends them.
 */
export class SharedTaskMessageQueue {
  #queues = new Map(); // taskId -> [{ type, message, timestamp, origin }]
  #relays = new Map(); // relay id -> { origin, id }
  #next = 1;

  /** `transportOf(sessionId)`: the transport of a live session, to hand a relayed answer to. */
  constructor(transportOf = () => undefined) {
    this.transportOf = transportOf;
  }

  async enqueue(taskId, message, sessionId, maxSize) {
    const queue = this.#queues.get(taskId) ?? [];
    if (maxSize !== undefined && queue.length >= maxSize) {
      throw new Error(`Task message queue overflow: queue size (${queue.length}) exceeds maximum (${maxSize})`);
    }
    queue.push({ ...message, origin: sessionId });
    this.#queues.set(taskId, queue);
  }

  async dequeue(taskId, sessionId) {
    const queue = this.#queues.get(taskId) ?? [];
    // Queued responses are settled against the queuing session's own pending requests, so only
    // that session takes them; requests and notifications go out on whichever session asks.
    const at = queue.findIndex((m) => m.origin === sessionId || (m.type !== "response" && m.type !== "error"));
    if (at < 0) return undefined;
    const [entry] = queue.splice(at, 1);
    return entry.type === "request" && entry.origin !== sessionId ? this.#relay(entry) : entry;
  }

  async dequeueAll(taskId, sessionId) {
    const queue = this.#queues.get(taskId) ?? [];
    this.#queues.delete(taskId);
    // The SDK rejects the returned requests' waiters in the calling session; another session's
    // waiters are told here, as that session would have been.
    for (const m of queue) {
      if (m.origin !== sessionId && m.type === "request") {
        this.#answerAt(m.origin, { jsonrpc: "2.0", id: m.message.id, error: { code: -32603, message: "Task cancelled or completed" } });
      }
    }
    return queue.filter((m) => m.origin === sessionId);
  }

  /** Wraps a connected transport so that answers to relayed requests reach the session that asked. */
  relayAnswers(transport) {
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const relay = "method" in message ? undefined : this.#relays.get(message.id);
      if (!relay) return deliver?.call(transport, message, extra);
      this.#relays.delete(message.id);
      this.#answerAt(relay.origin, { ...message, id: relay.id });
    };
  }

  #relay(entry) {
    const id = `relay-${this.#next++}`;
    this.#relays.set(id, { origin: entry.origin, id: entry.message.id });
    return { ...entry, message: { ...entry.message, id } };
  }

  #answerAt(origin, message) {
    this.transportOf(origin)?.onmessage?.(message);
  }
}
