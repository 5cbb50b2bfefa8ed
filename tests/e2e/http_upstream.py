"""A small Streamable HTTP MCP server (plain stdlib, runs inside the test process) that records
the order in which messages arrive, so tests can check what order the proxy sent them in, and
that can send a server-to-client request on the SSE stream of one particular POST.

It is single-threaded (asyncio), like most MCP servers (Node's among them): a message is
recorded in `arrivals`, as (session id, message), the moment its POST body is complete, in the
order the bytes reached it, with no thread scheduling in between. Requests are answered on an
SSE stream whose headers go out at once (so a client that waits for the headers of one POST
before sending the next is never held up by a slow tool). Tools:
  `echo`      answers at once.
  `slow`      answers after `seconds` (default 3), or never if the call is cancelled first.
  `ask_host`  after `delay` seconds (default 1) sends `sampling/createMessage` on this POST's
              own stream, waits for the answer, and returns "sampled: <text of the answer>".
GET answers 405 (no session stream offered); DELETE ends a session.
"""

import asyncio
import itertools
import json
import threading
import uuid

TOOLS = [
    {"name": "echo", "description": "Answers at once", "inputSchema": {"type": "object"}},
    {"name": "slow", "description": "Answers after a pause", "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}},
    {"name": "ask_host", "description": "Asks the host to sample, on this call's stream", "inputSchema": {"type": "object", "properties": {"delay": {"type": "number"}}}},
]


class HttpUpstream:
    def __init__(self):
        self.lock = threading.Lock()
        self.arrivals: list[tuple[str | None, dict]] = []
        self.post_headers: list[dict] = []  # the headers of every POST, in order
        self.server_requests: list[tuple[str | None, dict]] = []
        self.cancelled: set = set()
        self.answers: dict = {}  # our server-request id -> the client's response
        self.waiting: dict = {}  # our server-request id -> asyncio.Event
        self.ids = itertools.count(1)
        self.loop = asyncio.new_event_loop()
        started = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.server = self.loop.run_until_complete(asyncio.start_server(self.connection, "127.0.0.1", 0))
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        started.wait(10)
        self.url = f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/mcp"

    def stop(self):
        async def shutdown():
            self.server.close()
            for t in asyncio.all_tasks():
                if t is not asyncio.current_task():
                    t.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def messages(self, session: str | None = None) -> list[dict]:
        with self.lock:
            return [m for s, m in self.arrivals if session is None or s == session]

    # --- wire -------------------------------------------------------------------------------

    async def connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        try:
            while True:
                head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
                method = head[0].split(" ")[0]
                headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in head[1:] if ":" in line)}
                if headers.get("transfer-encoding", "").lower() == "chunked":
                    body = b""
                    while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                        body += (await reader.readexactly(size + 2))[:-2]
                    await reader.readuntil(b"\r\n")
                else:
                    body = await reader.readexactly(int(headers.get("content-length", 0)))
                if method == "POST":
                    await self.post(headers, body, writer)
                else:
                    await self.reply(writer, 405 if method == "GET" else 200)
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    @staticmethod
    async def reply(writer, status: int, body: bytes = b"", headers: dict | None = None):
        reason = {200: "OK", 202: "Accepted", 405: "Method Not Allowed"}.get(status, "OK")
        lines = [f"HTTP/1.1 {status} {reason}", f"content-length: {len(body)}"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
        await writer.drain()

    async def post(self, headers: dict, body: bytes, writer):
        session = headers.get("mcp-session-id")
        parsed = json.loads(body)
        msgs = parsed if isinstance(parsed, list) else [parsed]
        with self.lock:
            self.arrivals += [(session, m) for m in msgs]
            self.post_headers.append(headers)
        for m in msgs:
            if m.get("method") == "notifications/cancelled":
                self.cancelled.add((session, json.dumps(m["params"].get("requestId"))))
            elif "method" not in m and "id" in m:
                self.answers[m["id"]] = m
                if m["id"] in self.waiting:
                    self.waiting[m["id"]].set()
        requests = [m for m in msgs if "method" in m and "id" in m]
        if not requests:
            return await self.reply(writer, 202)
        if requests[0]["method"] == "initialize":
            req = requests[0]
            answer = {"jsonrpc": "2.0", "id": req["id"], "result": {
                "protocolVersion": req["params"].get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "http-upstream", "version": "1"}}}
            return await self.reply(writer, 200, json.dumps(answer).encode(), {"content-type": "application/json", "mcp-session-id": uuid.uuid4().hex})
        # Headers first, at once: the answer may take a while.
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n")
        await writer.drain()

        async def event(msg):
            data = f"event: message\ndata: {json.dumps(msg)}\n\n".encode()
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            await writer.drain()

        for r in requests:
            answer = await self.answer(session, r, event)
            if answer is not None:
                await event(answer)
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    # --- tools ------------------------------------------------------------------------------

    async def answer(self, session, req: dict, send) -> dict | None:
        rid, method, params = req["id"], req["method"], req.get("params") or {}
        if method == "tools/list":
            return {"jsonrpc": "2.0", "id": rid, "result": {"tools": TOOLS}}
        if method == "ping":
            return {"jsonrpc": "2.0", "id": rid, "result": {}}
        if method != "tools/call":
            return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}}
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            return self.text(rid, json.dumps(args))
        if name == "slow":
            key = (session, json.dumps(rid))
            for _ in range(int(args.get("seconds", 3) / 0.02)):
                if key in self.cancelled:
                    return None  # cancelled: no answer, the stream just ends
                await asyncio.sleep(0.02)
            return self.text(rid, "slow done")
        if name == "ask_host":
            await asyncio.sleep(args.get("delay", 1))
            sid = f"srv-{next(self.ids)}"
            ask = {"jsonrpc": "2.0", "id": sid, "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "who are you?"}}], "maxTokens": 20}}
            with self.lock:
                self.server_requests.append((session, ask))
            self.waiting[sid] = asyncio.Event()
            await send(ask)
            try:
                await asyncio.wait_for(self.waiting[sid].wait(), 10)
            except asyncio.TimeoutError:
                return self.text(rid, "sampling: no answer")
            got = self.answers[sid]
            if "error" in got:
                return self.text(rid, f"sampling error: {got['error'].get('message')}")
            return self.text(rid, f"sampled: {got['result']['content']['text']}")
        return {"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"unknown tool {name}"}}

    @staticmethod
    def text(rid, text: str) -> dict:
        return {"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}}


if __name__ == "__main__":
    with HttpUpstream() as up:
        print(up.url, flush=True)
        threading.Event().wait()
