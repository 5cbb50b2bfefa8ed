"""A real OTLP/HTTP trace receiver for tests: it decodes every export with the official
protobuf definitions (PyPI `opentelemetry-proto`) and keeps the spans as plain dicts.

`hang = True` makes it accept exports and never answer (a collector that stopped reading), so
tests can fill the service's export queue; `stop()` closes the port (a collector that is down).
"""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest, ExportTraceServiceResponse

KINDS = {0: "unspecified", 1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


def any_value(v):
    which = v.WhichOneof("value")
    if which == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if which == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return getattr(v, which) if which else None


class OtlpReceiver:
    def __init__(self):
        self.lock = threading.Lock()
        self.spans: list[dict] = []
        self.exports: list[dict] = []  # headers and resource of each export
        self.hang = False
        self.released = threading.Event()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                if receiver.hang:
                    receiver.released.wait(120)
                    return
                if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
                    self.send_response(404)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                receiver.take(ExportTraceServiceRequest.FromString(body), dict(self.headers))
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def take(self, req, headers: dict):
        with self.lock:
            for rs in req.resource_spans:
                resource = {kv.key: any_value(kv.value) for kv in rs.resource.attributes}
                self.exports.append({"headers": {k.lower(): v for k, v in headers.items()}, "resource": resource})
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        self.spans.append({
                            "trace_id": s.trace_id.hex(),
                            "span_id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex(),
                            "name": s.name,
                            "start_ns": s.start_time_unix_nano,
                            "end_ns": s.end_time_unix_nano,
                            "kind": KINDS.get(s.kind, str(s.kind)),
                            "attrs": {kv.key: any_value(kv.value) for kv in s.attributes},
                            "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()} for link in s.links],
                            "status": s.status.code,
                            "scope": ss.scope.name,
                            "resource": resource,
                        })

    def trace(self, trace_id: str) -> list[dict]:
        with self.lock:
            return [s for s in self.spans if s["trace_id"] == trace_id]

    def wait_for(self, pred, timeout: float = 20.0, what: str = "spans"):
        """The spans once `pred(spans)` holds for all spans received."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            with self.lock:
                spans = list(self.spans)
            if pred(spans):
                return spans
            time.sleep(0.05)
        with self.lock:
            names = [(s["name"], s["trace_id"][:8]) for s in self.spans]
        raise AssertionError(f"no {what} within {timeout} s; received {names}")

    def stop(self):
        self.released.set()
        self.server.shutdown()
        self.server.server_close()
