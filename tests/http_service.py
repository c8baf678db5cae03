#!/usr/bin/env python3
"""A real HTTP/1.1 keep-alive service on 127.0.0.1 for the http_client and url
tests: prints its port on the first line of stdout, then serves until killed.

Every request is recorded (GET /__log gives the records as JSON): method,
target, headers in order, body (base64), the connection it came on, the
Understudy-Seq it carried, and the order it started and ended in. What it
answers depends on the path's last part (a url plugin keeps the route's path
after its prefix) or, with --mode, on every request:

  ok (default)   200 {"ok": true}, echoing Understudy-* answers from
                 X-Answer-* request headers
  slow           --slow-ms first, then as ok
  status/N       status N
  garbage        bytes that are not HTTP, then close
  cut            headers promising 100 bytes, 10 of them, then close
  reset          counts a reset (GET /__log shows "resets")

--fail SEQ=MODE makes the request carrying Understudy-Seq SEQ get MODE.
--verdict-header answers Understudy-Verdict: rejected on every ok.
--forward BASE makes it a proxy in front of another service: every request
(but GET /__log) goes to BASE as it came, and its answer comes back as BASE
gave it. A request with an Understudy-Seq is recorded once BASE answered
it, and --slow-all holds the answer after that: the service decided, the
caller has no answer yet (what a kill mid-send leaves).
"""
import argparse
import base64
import http.client
import itertools
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

# What a proxy frames itself: not passed on either way.
FRAMING = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}

LOCK = threading.Lock()
RECORDS = []
RESETS = [0]
STARTED = []
CONNS = itertools.count(1)
TICKS = itertools.count(1)
ARGS = None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def setup(self):
        super().setup()
        self.conn_id = next(CONNS)

    def _body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _send(self, status, body, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _raw(self, data):
        self.wfile.write(data)
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _forward(self, body):
        """The request to --forward's service (Host its own); the answer's
        head as bytes (status line, headers, its own Content-Length), and
        its body."""
        to = urlsplit(ARGS.forward)
        conn = http.client.HTTPConnection(to.hostname, to.port, timeout=60)
        conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", to.netloc)
        for k, v in self.headers.items():
            if k.lower() not in FRAMING:
                conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        r = conn.getresponse()
        data = r.read()
        conn.close()
        lines = [f"HTTP/1.1 {r.status} {r.reason}"]
        lines += [f"{k}: {v}" for k, v in r.getheaders() if k.lower() not in FRAMING]
        lines.append(f"Content-Length: {len(data)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"), data

    def handle_any(self):
        body = self._body()
        if self.path == "/__log":
            with LOCK:
                out = json.dumps({"records": RECORDS, "resets": RESETS[0],
                                  "started": STARTED}).encode()
            self._send(200, out)
            return
        seq = self.headers.get("Understudy-Seq")
        if ARGS.forward:
            head, data = self._forward(body)
            if seq is not None:
                with LOCK:
                    STARTED.append(seq)
                if ARGS.slow_all:
                    time.sleep(ARGS.slow_ms / 1000.0)
                with LOCK:
                    RECORDS.append({"method": self.command, "target": self.path,
                                    "seq": seq})
            self.wfile.write(head + data)
            return
        with LOCK:
            start = next(TICKS)
            if seq is not None:
                STARTED.append(seq)
        mode = ARGS.mode
        last = self.path.split("?")[0].rstrip("/").split("/")[-1]
        if last in ("garbage", "cut", "slow", "reset"):
            mode = last
        if self.path.split("?")[0].rstrip("/").split("/")[-2:-1] == ["status"]:
            mode = "status/" + last
        if seq is not None and seq in ARGS.fail:
            mode = ARGS.fail[seq]
        if mode == "reset":
            with LOCK:
                RESETS[0] += 1
            self._send(204, b"")
            return
        if mode == "slow" or ARGS.slow_all:
            time.sleep(ARGS.slow_ms / 1000.0)
        rec = {
            "method": self.command,
            "target": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body": base64.b64encode(body).decode(),
            "conn": self.conn_id,
            "seq": seq,
        }
        extra = []
        for k, v in self.headers.items():
            if k.lower().startswith("x-answer-"):
                extra.append(("Understudy-" + k[len("x-answer-"):], v))
        if ARGS.verdict_header:
            extra.append(("Understudy-Verdict", "rejected"))
        with LOCK:
            rec["start"] = start
            rec["end"] = next(TICKS)
            RECORDS.append(rec)
        if mode == "garbage":
            self._raw(b"this is not HTTP at all\r\n\r\n")
        elif mode == "cut":
            self._raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
        elif mode.startswith("status/"):
            self._send(int(mode.split("/")[1]), b'{"status": true}', extra)
        else:
            echo = json.dumps({"ok": True, "seq": seq}).encode()
            self._send(200, echo, extra)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = handle_any


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--mode", default="ok")
    p.add_argument("--slow-ms", type=int, default=3000)
    p.add_argument("--slow-all", action="store_true")
    p.add_argument("--fail", action="append", default=[])
    p.add_argument("--verdict-header", action="store_true")
    p.add_argument("--forward", metavar="BASE")
    ARGS = p.parse_args()
    ARGS.fail = dict(f.split("=", 1) for f in ARGS.fail)
    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def handle_error(self, request, client_address):
            pass  # a client gone (timed out, killed) is what the tests do

    srv = Server(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
