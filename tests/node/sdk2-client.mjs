#!/usr/bin/env node
// The official TypeScript SDK v2 client (@modelcontextprotocol/client 2.4) in protocol
// 2026-07-28 mode, as a host would use it, calling server-everything's task-only tool
// `simulate-research-query` through mcp-gen-ui over Streamable HTTP (tests/e2e/test_tasks_sdk2.py).
//
//   node sdk2-client.mjs <url> <variant> [--token T] [--topic X] [--pin] [--cancel-after-ms N]
//                        [--ambiguous] [--declare-ext] [--no-progress]
//
// variants:
//   discover      connect; print the era, the server's capabilities and the tool as listed
//   plain         without the tasks extension: callTool with onprogress (the service runs the
//                 call as a task: its statuses come as progress) -> the result
//   cancel        without the extension: callTool with an AbortSignal, aborted after the first
//                 progress (or --cancel-after-ms): the SDK aborts the POST
//   tasks         with the extension, through @modelcontextprotocol/ext-tasks: the call makes a
//                 task, ext-tasks polls tasks/get to its outcome (input rounds by tasks/update)
//   tasks-cancel  as tasks, then execution.cancel() once the task works
//
// Prints one JSON object per line: {"t": ms, "event": ..., ...}.

const NM = new URL('./node_modules/', import.meta.url);
const { Client, StreamableHTTPClientTransport } = await import(new URL('@modelcontextprotocol/client/dist/index.mjs', NM));
const extTasks = await import(new URL('@modelcontextprotocol/ext-tasks/dist/client/index.js', NM));

const TOOL = 'simulate-research-query';
const EXT = 'io.modelcontextprotocol/tasks';
const VERSION = '2026-07-28';

const argv = process.argv.slice(2);
const url = argv[0];
const variant = argv[1] ?? 'plain';
function opt(name, dflt) {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : dflt;
}
const token = opt('--token', process.env.MCP_TOKEN);
const topic = opt('--topic', `ts26-${variant}-${Date.now() % 100000}`);
const pin = argv.includes('--pin');
const cancelAfterMs = Number(opt('--cancel-after-ms', '0'));
const ambiguous = argv.includes('--ambiguous');
const toolArgs = ambiguous ? { topic, ambiguous: true } : { topic };
const t0 = Date.now();

function out(event, data = {}) {
  process.stdout.write(JSON.stringify({ t: Date.now() - t0, event, ...data }) + '\n');
}
function errInfo(e) {
  if (!e || typeof e !== 'object') return { message: String(e) };
  const o = { name: e.name ?? e.constructor?.name, message: e.message };
  if (e.code !== undefined) o.code = e.code;
  if (e.data !== undefined) o.data = e.data;
  if (e.cause) o.cause = errInfo(e.cause);
  return o;
}
function textOf(result) {
  return (result?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

if (!url) {
  console.error('usage: node sdk2-client.mjs <url> <discover|plain|cancel|tasks|tasks-cancel> [--token T] [--topic X] [--pin]');
  process.exit(2);
}

const clientInfo = { name: 'mcp-gen-ui-sdk2-client', version: '0.0.1' };
const withTasksExt = variant.startsWith('tasks') || argv.includes('--declare-ext');
// Capabilities the Client itself advertises (its per-request _meta envelope carries them in
// the modern era). With the extension declared here too, tools/list / tools/call from the
// plain SDK path also declare it; ext-tasks adds it on its own v2 task requests anyway.
const clientCapabilities = {
  ...(ambiguous ? { elicitation: {} } : {}),
  ...(withTasksExt ? { extensions: { [EXT]: {} } } : {}),
};

const client = new Client(clientInfo, {
  capabilities: clientCapabilities,
  // 'legacy' is the default; 'auto' probes with server/discover and picks 2026-07-28 when
  // offered; { pin: '2026-07-28' } fails unless the server offers exactly it.
  versionNegotiation: { mode: pin ? { pin: VERSION } : 'auto' },
});
client.onerror = (e) => out('client_onerror', { error: errInfo(e) });
if (ambiguous) {
  // The server's clarification (elicitation), however it reaches us: as a server->client
  // request, or (2026) embedded in an input_required result that the Client auto-fulfils
  // through this same handler.
  client.setRequestHandler('elicitation/create', async (req) => {
    out('elicitation', { params: req.params });
    return { action: 'accept', content: { interpretation: `${topic} meaning` } };
  });
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: token ? { headers: { Authorization: `Bearer ${token}` } } : undefined,
});

// Log every notification the Client receives that it has no handler for (e.g. task status).
client.fallbackNotificationHandler = async (n) => out('notification', { method: n.method, params: n.params });

async function connect() {
  await client.connect(transport);
  const disc = client.getDiscoverResult();
  out('connected', {
    era: client.getProtocolEra(),
    protocolVersion: client.getNegotiatedProtocolVersion(),
    serverVersion: client.getServerVersion(),
    serverCapabilities: client.getServerCapabilities(),
    supportedVersions: disc?.supportedVersions,
  });
}

async function listedTool() {
  const { tools } = await client.listTools();
  const t = tools.find((x) => x.name === TOOL);
  out('tool_listed', { found: !!t, execution: t?.execution, inputSchema: t?.inputSchema });
  return t;
}

// ---- rawDispatch for ext-tasks: a request coordinator on the Client's own transport --------------
// The SDK's modern wire codec rejects `resultType: "task"` (SdkError UnsupportedResultType), so
// ext-tasks asks the host for a raw path. We send JSON-RPC requests with our own ids on the same
// StreamableHTTPClientTransport (so the same auth headers, and the transport's body-derived
// MCP-Protocol-Version / Mcp-Method / Mcp-Name headers apply), and take their responses off
// transport.onmessage before the Client sees them.
function installRawDispatch(tr) {
  const pending = new Map();
  let next = 1;
  const inner = tr.onmessage;
  tr.onmessage = (msg, extra) => {
    if (msg && typeof msg === 'object' && 'id' in msg && !('method' in msg) && pending.has(msg.id)) {
      const p = pending.get(msg.id);
      pending.delete(msg.id);
      p(msg);
      return;
    }
    if (msg && msg.method === 'notifications/progress' && typeof msg.params?.progressToken === 'string' && msg.params.progressToken.startsWith('raw-')) {
      out('raw_progress', { params: msg.params });
      return;
    }
    return inner?.(msg, extra);
  };
  return async function rawDispatch(request, options = {}) {
    const id = `raw-${next++}`;
    const message = { jsonrpc: '2.0', id, method: request.method, ...(request.params ? { params: request.params } : {}) };
    out('raw_send', { id, method: message.method, params: message.params });
    const timeoutMs = options.context?.requestTimeoutMs ?? 60000;
    const response = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => { pending.delete(id); reject(new extTasks.DispatchError(`raw ${message.method} timed out after ${timeoutMs} ms`, true)); }, timeoutMs);
      pending.set(id, (m) => { clearTimeout(timer); resolve(m); });
      if (options.signal) {
        if (options.signal.aborted) { clearTimeout(timer); pending.delete(id); return reject(options.signal.reason ?? new Error('aborted')); }
        options.signal.addEventListener('abort', () => { clearTimeout(timer); pending.delete(id); reject(options.signal.reason ?? new Error('aborted')); }, { once: true });
      }
      tr.send(message, { requestSignal: options.signal, ...(options.context?.headers ? { headers: options.context.headers } : {}) })
        .catch((e) => { clearTimeout(timer); pending.delete(id); reject(new extTasks.DispatchError(`raw ${message.method} send failed: ${e?.message ?? e}`, false, { cause: e })); });
    });
    out('raw_recv', { id, response: response.error ? { error: response.error } : { result: response.result } });
    if (response.error) return { kind: 'error', error: response.error };
    return { kind: 'result', result: response.result };
  };
}

// ---- variants ----------------------------------------------------------------------------------
async function plain() {
  await listedTool();
  const progress = [];
  const result = await client.callTool(
    { name: TOOL, arguments: toolArgs },
    {
      onprogress: (p) => { progress.push(p); out('progress', p); },
      resetTimeoutOnProgress: true,
      timeout: 60000,
    },
  );
  out('result', { isError: result.isError ?? false, text: textOf(result), meta: result._meta });
  out('summary', { progressMessages: progress.map((p) => p.message), progressValues: progress.map((p) => p.progress) });
}

async function cancel() {
  await listedTool();
  const ac = new AbortController();
  let first = true;
  if (cancelAfterMs > 0) setTimeout(() => { out('aborting', { after: 'timer', at: new Date().toISOString() }); ac.abort(new Error('user cancelled')); }, cancelAfterMs);
  try {
    const result = await client.callTool(
      { name: TOOL, arguments: toolArgs },
      {
        signal: ac.signal,
        onprogress: argv.includes('--no-progress') ? undefined : (p) => {
          out('progress', p);
          if (first && cancelAfterMs === 0) { first = false; out('aborting', { after: 'first progress', at: new Date().toISOString() }); ac.abort(new Error('user cancelled')); }
        },
        resetTimeoutOnProgress: true,
        timeout: 60000,
      },
    );
    out('result_despite_abort', { text: textOf(result) });
  } catch (e) {
    out('call_rejected', { error: errInfo(e) });
  }
  // Give the transport a moment to tear the POST down before we exit.
  await new Promise((r) => setTimeout(r, 1500));
}

async function tasks(cancelIt = false) {
  const tool = await listedTool();
  const rawDispatch = installRawDispatch(transport);
  const session = extTasks.createTaskSessionFromClient(client, {
    endpointId: url,
    rawDispatch,
    v2RequestFraming: { protocolVersion: VERSION, clientInfo, clientCapabilities },
    tools: { currentTool: (name) => (name === TOOL && tool ? extTasks.toolDeclarationFromMcpTool(tool) : undefined) },
    onError: (e) => out('session_error', { error: errInfo(e) }),
    onInputRequest: async (request) => {
      out('input_request', { request });
      if (request.kind === 'elicitation') return { action: 'accept', content: { interpretation: `${topic} meaning` } };
      throw new Error(`unsupported input ${request.kind}`);
    },
  });
  out('session', { capabilities: session.capabilities });
  try {
    const execution = await session.callTool(TOOL, toolArgs, { requestTimeoutMs: 30000 });
    out('execution', { kind: execution.kind, handle: execution.handle });
    if (cancelIt && execution.kind === 'task') {
      setTimeout(() => { out('cancelling', { taskId: execution.handle.taskId }); execution.cancel().then(() => out('cancel_acked'), (e) => out('cancel_failed', { error: errInfo(e) })); }, 1500);
    }
    const { outcome, lastTask } = await execution.settle({
      onEvent: (ev) => out('task_event', ev.type === 'task' ? { status: ev.task.status, statusMessage: ev.task.statusMessage, taskId: ev.task.taskId, pollMs: ev.task.suggestedPollIntervalMs } : { outcome: ev.outcome.status }),
    });
    out('outcome', { status: outcome.status, lastStatus: lastTask?.status });
    if (outcome.status === 'completed') out('result', { isError: outcome.result.isError ?? false, text: textOf(outcome.result) });
    if (outcome.status === 'failed') out('task_failed', { error: errInfo(outcome.error) });
  } catch (e) {
    out('tasks_error', { error: errInfo(e) });
  } finally {
    await session.close().catch((e) => out('session_close_error', { error: errInfo(e) }));
  }
}

try {
  await connect();
  if (variant === 'discover') await listedTool();
  else if (variant === 'plain') await plain();
  else if (variant === 'cancel') await cancel();
  else if (variant === 'tasks') await tasks(false);
  else if (variant === 'tasks-cancel') await tasks(true);
  else throw new Error(`unknown variant ${variant}`);
} catch (e) {
  out('error', { error: errInfo(e), stack: e?.stack?.split('\n').slice(0, 6) });
  process.exitCode = 1;
} finally {
  await client.close().catch(() => {});
  out('done');
}
