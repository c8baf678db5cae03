#!/usr/bin/env python3
"""A stand-in for production's handler behind `serve --respond upstream`.

usage: upstream_service.py LOG [PORT]

Listens on 127.0.0.1:PORT (0: a free one), prints "port N" once bound, and
appends one JSON line per request to LOG (method, path, Host, Understudy-Seq,
Understudy-Received-At, the body's SHA-256), so a test can count what
reached it. The request's X-Case header picks the answer; each answer is
written byte for byte here (no Date or Server header), so two calls get the
same bytes. Without X-Case: 200 {"ok":true} (the benchmark's trivial
service; LOG "-" keeps no log). X-Body-Bytes: N asks for a 200 whose JSON
body is N bytes long and names the request's Understudy-Seq."""
import hashlib
import json
import socketserver
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler

LOG = sys.argv[1]
PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 0
lock = threading.Lock()


def json_body(obj):
    return json.dumps(obj, separators=(",", ":")).encode()


# case -> (status line, headers, body, chunks or None)
CASES = {
    "json": ("200 OK", [("Content-Type", "application/json"), ("X-Trace", "t-1")],
             json_body({"ok": True, "n": 1})),
    "created": ("201 Created",
                [("Content-Type", "application/json"), ("Location", "/payments/42"),
                 ("Set-Cookie", "a=1; Path=/"), ("Set-Cookie", "b=2; HttpOnly")],
                json_body({"id": 42})),
    "binary": ("200 OK", [("Content-Type", "application/octet-stream")],
               bytes(range(256)) * 3),
    "chunked": ("200 OK", [("Content-Type", "application/json"),
                           ("Transfer-Encoding", "chunked")],
                json_body({"chunked": True, "parts": [1, 2, 3]})),
    "verdict": ("200 OK", [("Content-Type", "application/json"),
                           ("Understudy-Verdict", "duplicate"),
                           ("Understudy-Entity", "e-7")],
                json_body({"dup": True})),
    "conflict": ("409 Conflict", [("Content-Type", "application/json")],
                 json_body({"error": "busy"})),
    "nocontent": ("204 No Content", [("X-Empty", "yes")], b""),
    "fail": ("500 Internal Server Error", [("Content-Type", "text/plain")], b"oops\n"),
    "hop": ("200 OK", [("Connection", "X-Private, keep-alive"), ("X-Private", "secret"),
                       ("Keep-Alive", "timeout=5"), ("Content-Type", "application/json"),
                       ("X-Kept", "1")],
            json_body({"hop": True})),
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        case = self.headers.get("X-Case", "")
        if LOG != "-":
            line = {"method": self.command, "path": self.path,
                    "host": self.headers.get("Host"),
                    "seq": self.headers.get("Understudy-Seq"),
                    "received_at": self.headers.get("Understudy-Received-At"),
                    "case": case, "sha256": hashlib.sha256(body).hexdigest(),
                    "headers": [[k, v] for k, v in self.headers.items()]}
            with lock, open(LOG, "a") as f:
                f.write(json.dumps(line) + "\n")
        if case == "slow":
            time.sleep(6)
            case = "json"
        status, headers, out = CASES.get(case, ("200 OK",
                                                [("Content-Type", "application/json")],
                                                b'{"ok":true}'))
        size = int(self.headers.get("X-Body-Bytes") or 0)
        if size > 0:  # a large answer: JSON of exactly size bytes, naming its seq
            start = b'{"seq":"%s","pad":"' % (self.headers.get("Understudy-Seq") or
                                              "").encode()
            out = start + b"x" * max(0, size - len(start) - 2) + b'"}'
            status, headers = "200 OK", [("Content-Type", "application/json")]
        head = "HTTP/1.1 %s\r\n" % status
        head += "".join("%s: %s\r\n" % h for h in headers)
        chunked = any(k == "Transfer-Encoding" for k, _ in headers)
        if not chunked and not status.startswith("204"):
            head += "Content-Length: %d\r\n" % len(out)
        data = head.encode() + b"\r\n"
        if chunked:
            third = len(out) // 3
            for part in (out[:third], out[third:2 * third], out[2 * third:]):
                data += b"%x\r\n%s\r\n" % (len(part), part)
            data += b"0\r\n\r\n"
        else:
            data += out
        self.wfile.write(data)
        self.wfile.flush()


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    allow_reuse_address = True
    daemon_threads = True


with Server(("127.0.0.1", PORT), Handler) as srv:
    print("port %d" % srv.server_address[1], flush=True)
    srv.serve_forever()
