"""A local HTTP server that speaks the wire formats of the Anthropic Messages API, OpenAI Chat
Completions and Ollama /api/chat, including their error bodies, so the real provider clients
can be tested without the network. Tests script its answers and read what it received.

Each answer is a dict: {"html": text} (a good answer), {"status": 429, "type": ..., "message":
..., "headers": {...}} (an error in the provider's own format), {"raw": text} (a 200 whose body
is not JSON), {"hang": True} (never answers; notes when the client hangs up), optionally with
"delay" seconds first. Classification prompts get `classification` ("rich" unless set).
"""

import json
import select
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>{marker}</title></head>
<body><h1>{marker}</h1><form id="f"><label for="city">City</label><input id="city" name="city"><button id="submit">Go</button></form>
<pre id="out"></pre>
<script type="module">
import {{ App }} from "@modelcontextprotocol/ext-apps";
const app = new App({{ name: "{marker}", version: "1.0.0" }});
app.ontoolresult = (r) => {{ document.getElementById("out").textContent = JSON.stringify(r.structuredContent ?? r.content); }};
window.addEventListener("error", (e) => console.log(e.message));
await app.connect();
document.getElementById("f").addEventListener("submit", async (e) => {{
  e.preventDefault();
  const r = await app.callServerTool({{ name: "{tool}", arguments: {{ city: document.getElementById("city").value }} }});
  document.getElementById("out").textContent = JSON.stringify(r.structuredContent ?? r.content);
}});
</script></body></html>"""


def page(marker: str, tool: str = "get_current_weather") -> str:
    return PAGE.format(marker=marker, tool=tool)


def error_body(provider: str, status: int, etype: str, message: str) -> dict:
    if provider == "anthropic":
        return {"type": "error", "error": {"type": etype, "message": message}}
    if provider == "openai":
        return {"error": {"message": message, "type": etype, "code": etype, "param": None}}
    return {"error": message}


def ok_body(provider: str, text: str, model: str) -> dict:
    if provider == "anthropic":
        return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 120, "output_tokens": 340}}
    if provider == "openai":
        return {"id": "chatcmpl-fake", "object": "chat.completion", "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 120, "completion_tokens": 340, "total_tokens": 460}}
    return {"model": model, "message": {"role": "assistant", "content": text}, "done": True, "prompt_eval_count": 120, "eval_count": 340}


class FakeLLM:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.script: list[dict] = []
        self.default: dict = {"html": page("GENERATED-PAGE")}
        self.classification = "rich"
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

    def generations(self) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["kind"] == "generate"]

    def handle(self, h: BaseHTTPRequestHandler):
        provider = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai", "/api/chat": "ollama"}.get(h.path)
        length = int(h.headers.get("content-length", 0))
        body = json.loads(h.rfile.read(length) or b"{}")
        if provider is None:
            return self.reply(h, 404, {"error": f"no route {h.path}"})
        prompt = json.dumps(body)
        kind = "classify" if "rich or minimal" in prompt else "generate"
        record = {"kind": kind, "provider": provider, "headers": dict(h.headers), "body": body, "start": time.monotonic(), "end": None, "client_closed": False}
        with self.lock:
            self.requests.append(record)
            self.open += 1
            self.max_open = max(self.max_open, self.open)
            answer = {"html": self.classification} if kind == "classify" else (self.script.pop(0) if self.script else self.default)
        try:
            if answer.get("delay"):
                time.sleep(answer["delay"])
            if answer.get("hang"):
                # Wait until the client hangs up: the socket turns readable with no data.
                while True:
                    r, _, _ = select.select([h.connection], [], [], 0.05)
                    if r and not h.connection.recv(1, 2):  # MSG_PEEK
                        record["client_closed"] = True
                        return
            model = body.get("model", "fake-model")
            if "status" in answer:
                err = error_body(provider, answer["status"], answer.get("type", "error"), answer.get("message", "scripted error"))
                return self.reply(h, answer["status"], err, answer.get("headers"))
            if "raw" in answer:
                return self.reply(h, 200, None, raw=answer["raw"])
            return self.reply(h, 200, ok_body(provider, answer["html"], model))
        finally:
            record["end"] = time.monotonic()
            with self.lock:
                self.open -= 1

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
