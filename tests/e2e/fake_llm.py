"""A local HTTP server that speaks the wire formats of the Anthropic Messages API, OpenAI Chat
Completions and Ollama /api/chat, streamed as each provider streams (SSE events, SSE chunks,
NDJSON lines) when the request asks for it, and as one JSON body when not, including their error
bodies, so the real provider clients can be tested without the network. Tests script its answers
and read what it received.

Each answer is a dict: {"html": text} (a good answer), {"status": 429, "type": ..., "message":
..., "headers": {...}} (an error in the provider's own format), {"raw": text} (a 200 whose body
is not JSON), {"hang": True} (never answers; notes when the client hangs up), optionally with
"delay" seconds first. Classification prompts get `classification` ("rich" unless set, followed by
a short reason when the prompt asks for one, as a model writes it; a dict
answers by the first of its keys, a tool name, that the prompt names, else
`classification_default`).

Pace: `pace` (on the answer, or `fake.pace` for every answer) is {"first": seconds to the first
token, "tps": tokens a second}, a token being 4 characters, as a hosted model writes; without it
the whole answer goes at once. A streamed answer may also "stop": "max_tokens" (cut at the token
limit), "stall_after": N (send N characters, then nothing until the client hangs up), or
"error_after": N with "error_type" (a provider error inside the stream after N characters).
"""

import json
import select
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{marker}</title>{padding}</head>
<body><h1>{marker}</h1><form id="f"><label for="city">City</label><input id="city" name="city"><button id="submit">Go</button></form>
<pre id="out"></pre>
<script type="module">
import {{ App }} from "@modelcontextprotocol/ext-apps";
const app = new App({{ name: "{marker}", version: "1.0.0" }});
app.ontoolinput = (p) => {{ document.getElementById("city").value = (p.arguments && p.arguments.city) || ""; }};
app.ontoolresult = (r) => {{ document.getElementById("out").textContent = JSON.stringify(r.structuredContent ?? r.content); }};
window.addEventListener("error", (e) => console.log(e.message));
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => {{
  e.preventDefault();
  const r = await app.callServerTool({{ name: "{tool}", arguments: {{ city: document.getElementById("city").value }} }});
  document.getElementById("out").textContent = JSON.stringify(r.structuredContent ?? r.content);
}});
</script></body></html>"""


# What the fake says after its classification word.
REASONS = {"rich": "its results are records that read best as a table with a form", "minimal": "a single status value needs no layout"}


def page(marker: str, tool: str = "get_current_weather", tokens: int = 0, markup_first: bool = False) -> str:
    """A good page; `tokens` pads it with a style sheet to about that many tokens (4 characters
    each), as large as a page a strong model writes: in <head> (style first), or with
    `markup_first` at the end of <body>, after the visible markup, as the prompt asks."""
    base = PAGE.format(marker=marker, tool=tool, padding="")
    missing = tokens * 4 - len(base)
    if missing <= 0:
        return base
    rules, i = [], 0
    while sum(len(r) for r in rules) < missing:
        rules.append(f".c{i}{{margin:{i % 9}px;padding:{i % 7}px;color:#{i % 4096:03x}}}\n")
        i += 1
    style = "<style>\n" + "".join(rules) + "</style>"
    if markup_first:
        return base.replace("<pre id=\"out\"></pre>", "<pre id=\"out\"></pre>" + style, 1)
    return PAGE.format(marker=marker, tool=tool, padding=style)


def error_body(provider: str, status: int, etype: str, message: str) -> dict:
    if provider == "anthropic":
        return {"type": "error", "error": {"type": etype, "message": message}}
    if provider == "openai":
        return {"error": {"message": message, "type": etype, "code": etype, "param": None}}
    return {"error": message}


def ok_body(provider: str, text: str, model: str, stop: str = "done") -> dict:
    cut = stop == "max_tokens"
    if provider == "anthropic":
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [{"type": "text", "text": text}],
                "stop_reason": "max_tokens" if cut else "end_turn", "usage": {"input_tokens": 120, "output_tokens": 340}}
    if provider == "openai":
        return {"id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length" if cut else "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 340, "total_tokens": 460}}
    return {"model": model, "message": {"role": "assistant", "content": text}, "done": True, "done_reason": "length" if cut else "stop",
            "prompt_eval_count": 120, "eval_count": 340}


class ClientGone(Exception):
    pass


class Stream:
    """One streamed answer in a provider's format, written as HTTP chunks."""

    def __init__(self, h: BaseHTTPRequestHandler, provider: str, model: str):
        self.h, self.provider, self.model = h, provider, model

    def start(self):
        h = self.h
        h.send_response(200)
        h.send_header("content-type", "application/x-ndjson" if self.provider == "ollama" else "text/event-stream")
        h.send_header("transfer-encoding", "chunked")
        h.send_header("cache-control", "no-cache")
        h.end_headers()
        if self.provider == "anthropic":
            self.event("message_start", {"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant",
                       "model": self.model, "content": [], "stop_reason": None, "usage": {"input_tokens": 120, "output_tokens": 1}}})
            self.event("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
            self.event("ping", {"type": "ping"})
        elif self.provider == "openai":
            self.data(self.chunk({"role": "assistant", "content": ""}, None))

    def chunk(self, delta, finish):
        return {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": self.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    def write(self, data: bytes):
        try:
            self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            raise ClientGone()

    def event(self, name, obj):
        self.write(f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode())

    def data(self, obj):
        self.write(f"data: {obj if isinstance(obj, str) else json.dumps(obj)}\n\n".encode())

    def text(self, t: str):
        if self.provider == "anthropic":
            self.event("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}})
        elif self.provider == "openai":
            self.data(self.chunk({"content": t}, None))
        else:
            self.write((json.dumps({"model": self.model, "message": {"role": "assistant", "content": t}, "done": False}) + "\n").encode())

    def error(self, etype: str, message: str):
        if self.provider == "anthropic":
            self.event("error", {"type": "error", "error": {"type": etype, "message": message}})
        elif self.provider == "openai":
            self.data({"error": {"message": message, "type": etype, "code": etype}})
        else:
            self.write((json.dumps({"error": message}) + "\n").encode())
        self.end()

    def finish(self, stop: str, chars: int) -> int:
        """Ends the answer; returns the output tokens it reported (a token is 4 characters)."""
        cut = stop == "max_tokens"
        out_tokens = max(1, chars // 4)
        if self.provider == "anthropic":
            self.event("content_block_stop", {"type": "content_block_stop", "index": 0})
            self.event("message_delta", {"type": "message_delta", "delta": {"stop_reason": "max_tokens" if cut else "end_turn",
                       "stop_sequence": None}, "usage": {"output_tokens": out_tokens}})
            self.event("message_stop", {"type": "message_stop"})
        elif self.provider == "openai":
            self.data(self.chunk({}, "length" if cut else "stop"))
            self.data({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": self.model, "choices": [],
                       "usage": {"prompt_tokens": 120, "completion_tokens": out_tokens, "total_tokens": 120 + out_tokens}})
            self.data("[DONE]")
        else:
            self.write((json.dumps({"model": self.model, "message": {"role": "assistant", "content": ""}, "done": True,
                                    "done_reason": "length" if cut else "stop", "prompt_eval_count": 120, "eval_count": out_tokens}) + "\n").encode())
        self.end()
        return out_tokens

    def end(self):
        try:
            self.h.wfile.write(b"0\r\n\r\n")
            self.h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            raise ClientGone()


def wait_for_hangup(conn, record):
    """Blocks until the client closes the connection (the socket turns readable with no data)."""
    while True:
        r, _, _ = select.select([conn], [], [], 0.05)
        if r:
            try:
                if not conn.recv(1, 2):  # MSG_PEEK
                    record["client_closed"] = True
                    return
            except OSError:
                record["client_closed"] = True
                return


class FakeLLM:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.script: list[dict] = []
        self.default: dict = {"html": page("GENERATED-PAGE")}
        self.classification = "rich"
        # What a `classification` dict answers for a tool it does not name.
        self.classification_default = "rich"
        self.pace: dict | None = None
        self.open = 0
        self.max_open = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                fake.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def base(self, provider: str) -> str:
        return f"http://127.0.0.1:{self.port}" + ("/v1" if provider == "openai" else "")

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def output_tokens(self) -> int:
        """The output tokens of every completed answer, as the answers reported them."""
        with self.lock:
            return sum(r["output_tokens"] for r in self.requests)

    def generations(self) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["kind"] == "generate"]

    def classify(self, prompt: str) -> str:
        if isinstance(self.classification, dict):
            word = next((v for k, v in self.classification.items() if f"Tool name: {k}\\n" in prompt), self.classification_default)
        else:
            word = self.classification
        # As a model does when the prompt asks for the word and a short reason.
        if word in ("rich", "minimal") and "the reason in at most twelve words" in prompt:
            return f"{word}: {REASONS[word]}"
        return word

    def handle(self, h: BaseHTTPRequestHandler):
        provider = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai", "/api/chat": "ollama"}.get(h.path)
        length = int(h.headers.get("content-length", 0))
        body = json.loads(h.rfile.read(length) or b"{}")
        if provider is None:
            return self.reply(h, 404, {"error": f"no route {h.path}"})
        prompt = json.dumps(body)
        kind = "classify" if "rich or minimal" in prompt else "generate"
        record = {"kind": kind, "provider": provider, "headers": dict(h.headers), "body": body, "start": time.monotonic(), "end": None,
                  "client_closed": False, "chars_sent": 0, "completed": False, "streamed": bool(body.get("stream")), "output_tokens": 0}
        with self.lock:
            self.requests.append(record)
            self.open += 1
            self.max_open = max(self.max_open, self.open)
            if kind == "classify":
                answer = {"html": self.classify(prompt)}
            else:
                answer = self.script.pop(0) if self.script else self.default
            pace = answer.get("pace", self.pace)
        try:
            if answer.get("delay"):
                time.sleep(answer["delay"])
            if answer.get("hang"):
                return wait_for_hangup(h.connection, record)
            model = body.get("model", "fake-model")
            if "status" in answer:
                err = error_body(provider, answer["status"], answer.get("type", "error"), answer.get("message", "scripted error"))
                return self.reply(h, answer["status"], err, answer.get("headers"))
            if "raw" in answer:
                return self.reply(h, 200, None, raw=answer["raw"])
            if not record["streamed"]:
                if pace:
                    time.sleep(pace.get("first", 0) + len(answer["html"]) / 4 / pace.get("tps", 1e9))
                record["chars_sent"] = len(answer["html"])
                record["completed"] = True
                record["output_tokens"] = 340
                return self.reply(h, 200, ok_body(provider, answer["html"], model, answer.get("stop", "done")))
            self.stream(h, Stream(h, provider, model), answer, pace, record)
        except ClientGone:
            record["client_closed"] = True
        finally:
            record["end"] = time.monotonic()
            with self.lock:
                self.open -= 1

    def stream(self, h, out: Stream, answer: dict, pace: dict | None, record: dict):
        text = answer["html"]
        limit = answer.get("stall_after", answer.get("error_after", len(text)))
        first = (pace or {}).get("first", 0)
        tps = (pace or {}).get("tps")
        time.sleep(first)
        out.start()
        began = time.monotonic()
        sent = 0
        while sent < min(limit, len(text)):
            if tps:
                due = int((time.monotonic() - began) * tps * 4) + 4
                part = text[sent:min(due, limit, len(text))]
            else:
                part = text[sent:limit]
            if part:
                out.text(part)
                sent += len(part)
                record["chars_sent"] = sent
            if tps and sent < min(limit, len(text)):
                time.sleep(0.05)
        if "stall_after" in answer:
            return wait_for_hangup(h.connection, record)
        if "error_after" in answer:
            return out.error(answer.get("error_type", "overloaded_error"), answer.get("message", "Overloaded"))
        record["output_tokens"] = out.finish(answer.get("stop", "done"), sent)
        record["completed"] = True

    @staticmethod
    def reply(h, status, obj, headers=None, raw=None):
        data = (raw if raw is not None else json.dumps(obj)).encode()
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        try:
            h.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
