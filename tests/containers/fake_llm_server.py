"""tests/e2e/fake_llm.py as a server in a container of a compose network (the mcp-gen-ui-test/fake-llm
image; tests/e2e mounted at /app/e2e): the providers' wire formats on 0.0.0.0:8000, plus, for the
test, GET /_requests (what it was asked: kind, provider, path) and POST /_script (the next
answers, as FakeLLM.script takes them; {"default": ...} replaces the default answer)."""

import json
import sys

sys.path.insert(0, "/app/e2e")

import fake_llm  # noqa: E402

PORT = 8000
_Server = fake_llm.ThreadingHTTPServer
fake = None


def do_GET(h):
    if h.path != "/_requests":
        return fake.reply(h, 404, {"error": f"no route {h.path}"})
    with fake.lock:
        out = [{"kind": r["kind"], "provider": r["provider"], "model": r["body"].get("model")} for r in fake.requests]
    fake.reply(h, 200, out)


def handle(h):
    if h.path == "/_script":
        body = json.loads(h.rfile.read(int(h.headers.get("content-length", 0))) or b"{}")
        with fake.lock:
            fake.script.extend(body.get("script", []))
            if "default" in body:
                fake.default = body["default"]
        return fake.reply(h, 200, {"ok": True})
    return fake_llm.FakeLLM.handle(fake, h)


def server(_addr, handler):
    """FakeLLM binds 127.0.0.1 at a free port; in a container it must be reachable by name."""
    return _Server(("0.0.0.0", PORT), type("Handler", (handler,), {"do_GET": do_GET}))


fake_llm.ThreadingHTTPServer = server
fake = fake_llm.FakeLLM()
fake.handle = handle
print(f"fake LLM listening on 0.0.0.0:{fake.port}", flush=True)
fake.thread.join()
