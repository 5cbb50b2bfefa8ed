"""Two local peers for RFC 8693 token exchange tests.

`AuthServer`: an authorization server's token endpoint (POST /token). It checks the client
(HTTP Basic), the grant type and that the subject token is a JWT signed by the key it trusts
for the edge's users, refuses subjects it was told are revoked (400 invalid_grant), and mints an
access token for the asked audience: a JWT of its own, signed with its own key, sub = the
subject's sub, short-lived. It records every request (grant, audience, resource, scope).

`RemoteServer`: an MCP server over Streamable HTTP (plain JSON answers) that accepts only
bearer JWTs signed by the authorization server for its audience; its tool `whoami` answers
the token's sub and aud. It records every Authorization it was sent.
"""

import base64
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

CLIENT_ID, CLIENT_SECRET = "mcp-gen-ui", "client-secret-7f3a9c"


def serve(handler) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def reply(h: BaseHTTPRequestHandler, status: int, body: dict) -> None:
    data = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("content-type", "application/json")
    h.send_header("content-length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


class AuthServer:
    def __init__(self, users_public_key, lifetime: int = 300):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.users_key = users_public_key
        self.revoked: set[str] = set()
        self.requests: list[dict] = []
        self.lifetime = lifetime
        auth = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                form = dict(urllib.parse.parse_qsl(self.rfile.read(int(self.headers.get("content-length", 0))).decode()))
                auth.requests.append({k: v for k, v in form.items() if k != "subject_token"} | {"subject_token_seen": "subject_token" in form})
                basic = self.headers.get("authorization", "")
                if basic != "Basic " + base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode():
                    return reply(self, 401, {"error": "invalid_client"})
                if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange":
                    return reply(self, 400, {"error": "unsupported_grant_type"})
                try:
                    claims = jwt.decode(form.get("subject_token", ""), auth.users_key, algorithms=["RS256"], options={"verify_aud": False})
                except jwt.PyJWTError:
                    return reply(self, 400, {"error": "invalid_grant", "error_description": "the subject token is not valid"})
                if claims["sub"] in auth.revoked:
                    return reply(self, 400, {"error": "invalid_grant", "error_description": f"{claims['sub']} is revoked"})
                now = int(time.time())
                minted = {"iss": "auth-server", "sub": claims["sub"], "aud": form.get("audience"), "iat": now, "exp": now + auth.lifetime,
                          "scope": form.get("scope", ""), "act": {"sub": CLIENT_ID}}
                token = jwt.encode(minted, auth.key, algorithm="RS256")
                reply(self, 200, {"access_token": token, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                                  "token_type": "Bearer", "expires_in": auth.lifetime})

        self.server, self.url = serve(Handler)

    def stop(self):
        self.server.shutdown()


class RemoteServer:
    def __init__(self, auth: AuthServer, audience: str):
        self.seen: list[str] = []
        remote = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(405)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_DELETE(self):
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                bearer = self.headers.get("authorization", "")
                remote.seen.append(bearer)
                try:
                    claims = jwt.decode(bearer.removeprefix("Bearer "), auth.key.public_key(), algorithms=["RS256"], audience=audience)
                except jwt.PyJWTError as e:
                    self.send_response(401)
                    self.send_header("www-authenticate", f'Bearer error="invalid_token", error_description="{type(e).__name__}"')
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                msg = json.loads(body)
                if "id" not in msg:
                    self.send_response(202)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                method, params = msg.get("method"), msg.get("params") or {}
                if method == "initialize":
                    result = {"protocolVersion": params.get("protocolVersion", "2025-06-18"), "capabilities": {"tools": {}},
                              "serverInfo": {"name": "remote-as-you", "version": "1.0.0"}}
                elif method == "tools/list":
                    result = {"tools": [{"name": "whoami", "description": "Says whose token this call came with", "inputSchema": {"type": "object"}}]}
                elif method == "tools/call":
                    who = {"sub": claims["sub"], "aud": claims["aud"], "act": claims.get("act", {}).get("sub")}
                    result = {"content": [{"type": "text", "text": json.dumps(who)}], "structuredContent": who}
                else:
                    result = {}
                data = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("mcp-session-id", "remote-session")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server, base = serve(Handler)
        self.url = base + "/mcp"

    def stop(self):
        self.server.shutdown()
