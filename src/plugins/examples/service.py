#!/usr/bin/env python3
"""The reference candidate's rules as a payment service over HTTP.

This is the example to copy when the service you want to shadow is a real
HTTP service, not a plugin written for understudy: a `url` plugin sends it
each event's original request, `serve --respond upstream` puts it in line.
It keeps its own state in its own SQLite database and answers each request
as a service answers its callers (a status, a JSON body, Retry-After and
Idempotent-Replayed where they belong), plus the Understudy-* headers that
tell understudy what it decided (docs/plugins.md, "The example service").

Python 3, standard library only:

    python3 service.py --listen 127.0.0.1:9000 --db /var/tmp/service.db

Its clock is the Understudy-Received-At header understudy sends with every
event, never the wall clock, so a replay next month decides as production
did; its payment ids come from Understudy-Seq, and it dedups on it: a seq it
already decided is answered byte for byte as the first time, without
deciding again (what a `url` plugin's "resend_unknown" needs: an event
whose answer a killed run never recorded is sent again). It derives the canonical
fields from the request itself, as scenarios/demo.config.json's routes say
(ROUTES below); it does not check signatures: understudy checked them when
the request arrived and sends it only events whose signature verified.
POST /reset empties its database (a `url` plugin's "reset", called before a
run that starts from seq 0, whose seqs are new again).

The rules are src/plugins/candidate/candidate.c's, decision for decision and
reason for reason (docs/semantics.md); tests/integration/test_example_service.c
replays every scenario against it and compares it with the C candidate.
"""
import argparse
import calendar
import hashlib
import json
import re
import signal
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def webhook(provider, event_id, obj, payment, order, status_from, status_map=None):
    """A webhook route of demo.config.json: the event's id at event_id, the
    payment's id, amount and currency in the object at obj, its order at
    order (both within obj), its status from status_from, mapped through
    status_map where the provider names statuses its own way."""
    route = {"kind": "webhook", "provider": provider,
             "fields": {"event_id": event_id, "transaction_id": obj + payment,
                        "amount": obj + "/amount", "currency": obj + "/currency",
                        "intent": obj + order},
             "status_from": status_from}
    if status_map:
        route["status_map"] = status_map
    return route


# What scenarios/demo.config.json's routes derive from a request: a JSON
# Pointer into the body, or "header:NAME".
ROUTES = {
    "/webhooks/stripe": webhook(
        "stripe", "/id", "/data/object", "/id", "/metadata/order_id", "/type",
        {"payment_intent.created": "pending", "payment_intent.succeeded": "paid",
         "payment_intent.canceled": "cancelled", "charge.refunded": "refunded"}),
    "/webhooks/standard": webhook(
        "acme", "header:webhook-id", "/data", "/payment_id", "/order_id", "/data/status"),
    "/payments": {
        "kind": "api", "provider": "api",
        "fields": {"amount": "/amount", "currency": "/currency", "intent": "/order_id"},
        "idempotency_header": "Idempotency-Key", "tenant_header": "X-Tenant-Id",
    },
}

STATES = ("pending", "paid", "refunded", "cancelled")
# A first event may open a payment in any state but refunded (nothing was
# paid); refunded and cancelled are final.
LEGAL = {None: {"pending", "paid", "cancelled"}, "pending": {"paid", "cancelled"},
         "paid": {"refunded"}, "refunded": set(), "cancelled": set()}

SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries(provider TEXT, event_id TEXT,
    PRIMARY KEY(provider, event_id));
CREATE TABLE IF NOT EXISTS payments(provider TEXT, transaction_id TEXT,
    state TEXT NOT NULL, PRIMARY KEY(provider, transaction_id));
CREATE TABLE IF NOT EXISTS paid_intents(provider TEXT, intent TEXT, amount INTEGER,
    currency TEXT, at_us INTEGER NOT NULL, transaction_id TEXT NOT NULL,
    PRIMARY KEY(provider, intent, amount, currency));
CREATE TABLE IF NOT EXISTS idempotency_keys(route TEXT, tenant TEXT, key TEXT,
    created_us INTEGER NOT NULL, done_us INTEGER NOT NULL, status INTEGER NOT NULL,
    request_sha256 TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY(route, tenant, key));
CREATE TABLE IF NOT EXISTS executions(tenant TEXT, intent TEXT, amount INTEGER,
    currency TEXT, at_us INTEGER NOT NULL, entity TEXT NOT NULL,
    PRIMARY KEY(tenant, intent, amount, currency));
CREATE TABLE IF NOT EXISTS answers(seq INTEGER PRIMARY KEY, request_sha256 TEXT NOT NULL,
    status INTEGER NOT NULL, headers TEXT NOT NULL, body BLOB NOT NULL);
"""
TABLES = ("deliveries", "payments", "paid_intents", "idempotency_keys", "executions",
          "answers")


# ---- the request, as understudy derives its canonical event --------------

JSON_MAX_DEPTH = 2048  # jansson's: a body nested deeper is not JSON to understudy
INT64 = (-(1 << 63), (1 << 63) - 1)


def reject(_):
    raise ValueError("not JSON to understudy")


def parse_float(text):
    v = float(text)
    if v in (float("inf"), float("-inf")):
        raise ValueError("real number overflow")
    return v


def parse_int(text):
    v = int(text)
    if not INT64[0] <= v <= INT64[1]:
        raise ValueError("too big integer")
    return v


def too_deep(raw):
    """Nested past JSON_MAX_DEPTH, brackets inside strings not counted."""
    if raw.count(b"[") + raw.count(b"{") <= JSON_MAX_DEPTH:
        return False
    depth, in_string, escaped = 0, False, False
    for c in raw:
        if in_string:
            if escaped:
                escaped = False
            elif c == 0x5C:
                escaped = True
            elif c == 0x22:
                in_string = False
        elif c == 0x22:
            in_string = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > JSON_MAX_DEPTH:
                return True
        elif c in (0x5D, 0x7D):
            depth -= 1
    return False


def text_ok(s):
    """No NUL and no lone surrogate: jansson refuses both."""
    return "\0" not in s and not any(0xD800 <= ord(ch) <= 0xDFFF for ch in s)


def parse_body(raw):
    """The body as understudy reads it: a JSON object or array, or None."""
    if not raw or too_deep(raw):
        return None
    try:
        v = json.loads(raw.decode("utf-8"), parse_constant=reject, parse_float=parse_float,
                       parse_int=parse_int)
    except (ValueError, RecursionError):
        return None
    if not isinstance(v, (dict, list)):
        return None
    stack = [v]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if not all(text_ok(k) for k in x):
                return None
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str) and not text_ok(x):
            return None
    return v


def request_sha256(raw, body):
    """Two requests with the same payload have the same hash: the body's
    canonical JSON (keys sorted, compact), or its bytes when not JSON."""
    if body is None:
        return hashlib.sha256(raw).hexdigest()
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# Where a request was sent and how it was framed, not what it asks: a resend
# may come on another connection (and libcurl frames the body again).
NOT_THE_REQUEST = {"host", "content-length", "transfer-encoding", "connection",
                   "keep-alive", "te", "trailer", "upgrade"}


def seq_sha256(method, target, headers, raw):
    """What makes two requests with one Understudy-Seq the same request: the
    method, target, end-to-end headers in order (names case aside) and the
    body's bytes, each part length-prefixed."""
    h = hashlib.sha256()
    parts = [method, target] + [f"{n.lower()}:{v}" for n, v in headers
                                if n.lower() not in NOT_THE_REQUEST]
    for part in parts:
        b = part.encode("utf-8", "surrogateescape")
        h.update(len(b).to_bytes(8, "big") + b)
    h.update(raw)
    return h.hexdigest()


def pointer(doc, ptr):
    """RFC 6901 JSON Pointer lookup; None when it leads nowhere."""
    if ptr == "":
        return doc
    for token in ptr[1:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(doc, dict):
            doc = doc.get(token)
        elif isinstance(doc, list) and re.fullmatch(r"0|[1-9][0-9]*", token) \
                and int(token) < len(doc):
            doc = doc[int(token)]
        else:
            return None
        if doc is None:
            return None
    return doc


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def field_text(src, headers, body):
    """A header's value, a JSON string, or a JSON integer in decimal."""
    if src.startswith("header:"):
        return header(headers, src[len("header:"):])
    v = pointer(body, src) if body is not None else None
    if isinstance(v, str):
        return v
    return str(v) if is_int(v) else None


def field_amount(src, headers, body):
    """Minor units as a JSON integer (or a header in decimal) only."""
    if src.startswith("header:"):
        h = header(headers, src[len("header:"):])
        if h is not None and re.fullmatch(r"-?[0-9]+", h) and INT64[0] <= int(h) <= INT64[1]:
            return int(h)
        return None
    v = pointer(body, src) if body is not None else None
    return v if is_int(v) else None


def header(headers, name):
    """The first header of that name, case aside."""
    name = name.lower()
    return next((v for n, v in headers if n.lower() == name), None)


def idempotency_key(value):
    """An RFC 8941 sf-string ("k-1") or a bare token (k-1): the same key.
    None when malformed: a malformed key is as good as none."""
    if value is None:
        return None
    s = value.strip(" \t")
    if s == "":
        return None
    if s[0] != '"':
        return s if all(0x20 <= ord(c) <= 0x7E for c in s) else None
    if len(s) < 2 or s[-1] != '"':
        return None
    key, i = [], 1
    while i < len(s) - 1:
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s) - 1 or s[i + 1] not in '"\\':
                return None
            key.append(s[i + 1])
            i += 2
            continue
        if c == '"' or not 0x20 <= ord(c) <= 0x7E:
            return None
        key.append(c)
        i += 1
    return "".join(key) or None


def derive(route, path, headers, raw, seq, now):
    """The canonical event of understudy's protocol (protocol.md)."""
    body = parse_body(raw)
    ev = {"seq": seq, "received_at_us": now, "route_kind": route["kind"], "route": path,
          "provider": route["provider"], "request_sha256": request_sha256(raw, body)}
    for name, src in route["fields"].items():
        ev[name] = (field_amount if name == "amount" else field_text)(src, headers, body)
    target = None
    if "status_from" in route:
        v = field_text(route["status_from"], headers, body)
        target = route["status_map"].get(v) if route.get("status_map") else \
            (v if v in STATES else None)
    ev["target_status"] = target
    if "idempotency_header" in route:
        ev["idempotency_key"] = idempotency_key(header(headers, route["idempotency_header"]))
        ev["tenant"] = header(headers, route["tenant_header"])
    return ev


# ---- the decisions: candidate.c's rules -------------------------------------

def absent(s):
    return s is None or s == ""


def elapsed(us):
    """pu_elapsed: whole seconds from a second on, else milliseconds."""
    def trunc(a, b):  # C's division, toward zero
        return -(-a // b) if a < 0 else a // b
    return f"{trunc(us, 1000000)} s" if abs(us) >= 1000000 else f"{trunc(us, 1000)} ms"


class Decision:
    def __init__(self, verdict, status, body, entity=None):
        self.verdict, self.status, self.body, self.entity = verdict, status, body, entity
        self.before = self.after = self.reason = None
        self.headers, self.flags = [], []

    def states(self, before, after):
        self.before, self.after = before, after
        return self

    def answer(self):
        """(status, headers, body bytes) as the caller gets them: the
        decision's own headers, then what was decided."""
        headers = self.headers + [("Understudy-Verdict", self.verdict)]
        for name, value in (("Understudy-Entity", self.entity),
                            ("Understudy-State-Before", self.before),
                            ("Understudy-State", self.after),
                            ("Understudy-Flags", ",".join(self.flags) or None),
                            ("Understudy-Reason", self.reason)):
            if value is not None:
                headers.append((name, value))
        return self.status, headers, dumps(self.body).encode("utf-8")


def invalid(code, why, entity):
    d = Decision("invalid", 400, {"error": code}, entity)
    d.reason = f"{why}: {code}"
    return d


class Service:
    def __init__(self, db_path, config):
        self.window_us = config["semantic_window_s"] * 1_000_000
        self.ttl_us = config["key_ttl_s"] * 1_000_000
        self.latency_us = config["op_latency_ms"] * 1000
        self.mismatch_status = config["mismatch_status"]
        # One connection, one decision at a time: each is one transaction.
        self.db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(SCHEMA)
        self.lock = threading.Lock()

    def run(self, sql, *args):
        return self.db.execute(sql, args)

    def one(self, sql, *args):
        return self.run(sql, *args).fetchone()

    def claim(self, sql, *args):
        """INSERT OR IGNORE: 1 when this call inserted the row."""
        return self.run(sql, *args).rowcount == 1

    def reset(self):
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            for t in TABLES:
                self.db.execute(f"DELETE FROM {t}")
            self.db.execute("COMMIT")

    def decide(self, ev, sha):
        """The answer to event ev, a request whose seq_sha256 is sha. Writes
        and answer together: the decision's writes and its answer, kept under
        its seq, commit before the answer is sent, or nothing is kept. A seq
        already decided gets its kept answer and decides nothing: the same
        request sent again (understudy's resend_unknown) is not a second
        delivery; another request under that seq is refused."""
        with self.lock:
            self.db.execute("BEGIN IMMEDIATE")
            try:
                kept = self.one("SELECT request_sha256, status, headers, body FROM answers "
                                "WHERE seq = ?", ev["seq"])
                if kept is None:
                    d = self.webhook(ev) if ev["route_kind"] == "webhook" else self.api(ev)
                    status, headers, body = d.answer()
                    self.run("INSERT INTO answers VALUES(?, ?, ?, ?, ?)", ev["seq"], sha,
                             status, json.dumps(headers), body)
                    out = (status, headers, body)
                elif kept[0] == sha:
                    out = (kept[1], [tuple(h) for h in json.loads(kept[2])], kept[3])
                else:
                    out = (422, [], dumps({
                        "error": "understudy_seq_reused",
                        "detail": f"Understudy-Seq {ev['seq']} was decided for another "
                                  "request: a seq names one request (POST /reset before "
                                  "a run whose seqs start again)"}).encode("utf-8"))
                self.db.execute("COMMIT")
                return out
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def webhook(self, ev):
        provider, txn, target = ev["provider"], ev.get("transaction_id"), ev["target_status"]
        entity = f"{provider}:{txn}" if not absent(provider) and not absent(txn) else None
        for field, code in (("provider", "provider_required"), ("event_id", "event_id_required"),
                            ("transaction_id", "transaction_id_required"),
                            ("target_status", "target_status_required")):
            if absent(ev.get(field)):
                return invalid(code, "the webhook cannot be processed", entity)
        if target not in STATES:
            return invalid("target_status_unknown", "the webhook cannot be processed", entity)
        row = self.one("SELECT state FROM payments WHERE provider = ? AND transaction_id = ?",
                       provider, txn)
        before = row[0] if row else None
        received = {"received": True}
        # Claimed first: a redelivery is a duplicate even if the state moved since.
        if not self.claim("INSERT OR IGNORE INTO deliveries VALUES(?, ?)", provider,
                          ev["event_id"]):
            d = Decision("duplicate", 200, received, entity).states(before, before)
            d.reason = f"event {ev['event_id']} already delivered"
            return d
        if before == target:
            d = Decision("duplicate", 200, received, entity).states(before, before)
            d.reason = f"transaction already {before}"
            return d
        if target not in LEGAL[before]:
            # 200 all the same: the message was received, and an error would
            # only make the provider retry an event we will never accept.
            d = Decision("rejected", 200, received, entity).states(before, before)
            d.reason = f"{before or '(new)'} -> {target} is not a legal transition"
            return d
        d = Decision("applied", 200, received, entity).states(before, target)
        d.reason = f"{before or '(new)'} -> {target}"
        if target == "paid":
            self.semantic_paid(ev, d)
        self.run("INSERT OR REPLACE INTO payments VALUES(?, ?, ?)", provider, txn, target)
        return d

    def semantic_paid(self, ev, d):
        """Was the same (intent, amount, currency) paid by another payment of
        this provider within the window? Flagged, not merged."""
        intent, amount, currency = ev.get("intent"), ev.get("amount"), ev.get("currency")
        if absent(intent) or absent(currency) or amount is None:
            return
        slot = (ev["provider"], intent, amount, currency)
        last = self.one("SELECT at_us, transaction_id FROM paid_intents WHERE provider = ? AND "
                        "intent = ? AND amount = ? AND currency = ?", *slot)
        now, txn = ev["received_at_us"], ev["transaction_id"]
        if last and now - last[0] <= self.window_us and last[1] != txn:
            d.flags.append("semantic_duplicate")
            d.reason = (f"same intent, amount and currency as {ev['provider']}:{last[1]} paid "
                        f"{elapsed(now - last[0])} earlier")
        self.run("INSERT OR REPLACE INTO paid_intents VALUES(?, ?, ?, ?, ?, ?)", *slot,
                        now, txn)

    def api(self, ev):
        key, tenant, now = ev["idempotency_key"], ev["tenant"], ev["received_at_us"]
        entity = f"{ev['route']}:{'-' if absent(tenant) else tenant}:{key}" \
            if not absent(key) else None
        why = "the request cannot be executed"
        if ev["amount"] is None:
            return invalid("amount_required", why, entity)
        if absent(ev["currency"]):
            return invalid("currency_required", why, entity)
        if absent(key):
            d = invalid("idempotency_key_required", why, entity)
            d.reason = "no Idempotency-Key"
            return d
        body = {"amount": ev["amount"], "currency": ev["currency"], "order_id": ev["intent"],
                "payment_id": f"pay_{ev['seq']}"}
        slot = (ev["route"], tenant or "", key)
        record = (now, now + self.latency_us, 201, ev["request_sha256"], dumps(body))
        # The claim settles the race: of two requests with one key, one executes.
        if self.claim("INSERT OR IGNORE INTO idempotency_keys VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                      *slot, *record):
            return self.executed(ev, body, entity, None)
        created, done, status, sha, stored = self.one(
            "SELECT created_us, done_us, status, request_sha256, body FROM idempotency_keys "
            "WHERE route = ? AND tenant = ? AND key = ?", *slot)
        state = "in_progress" if now < done else "completed"
        if now - created >= self.ttl_us:
            # The key lived its TTL: a new one replaces it.
            self.run("INSERT OR REPLACE INTO idempotency_keys VALUES(?, ?, ?, ?, ?, ?, ?, ?)",
                            *slot, *record)
            return self.executed(ev, body, entity, "expired")
        if sha != ev["request_sha256"]:
            # Before in_progress: another payload is a client error either way.
            d = Decision("conflict", self.mismatch_status, {"error": "idempotency_key_reused"},
                         entity).states(state, state)
            d.reason = "key reused with a different request body"
            return d
        if state == "in_progress":
            d = Decision("in_progress", 409, {"error": "in_progress"}, entity).states(state, state)
            d.headers.append(("Retry-After", "1"))
            d.reason = "the original is still in progress"
            return d
        d = Decision("duplicate", status, json.loads(stored), entity).states(state, state)
        d.headers.append(("Idempotent-Replayed", "true"))
        d.reason = "completed repeat: stored response replayed"
        return d

    def executed(self, ev, body, entity, before):
        """This request executes; flagged when the same (tenant, intent,
        amount, currency) executed within the window."""
        d = Decision("applied", 201, body, entity).states(before, "completed")
        d.reason = "key expired: executed again" if before else "key claimed: executed"
        if not absent(ev["intent"]):
            slot = (ev["tenant"] or "", ev["intent"], ev["amount"], ev["currency"])
            last = self.one("SELECT at_us, entity FROM executions WHERE tenant = ? AND "
                            "intent = ? AND amount = ? AND currency = ?", *slot)
            now = ev["received_at_us"]
            if last and now - last[0] <= self.window_us:
                d.flags.append("semantic_duplicate")
                d.reason = (f"same tenant, intent, amount and currency as {last[1]} executed "
                            f"{elapsed(now - last[0])} earlier")
            self.run("INSERT OR REPLACE INTO executions VALUES(?, ?, ?, ?, ?, ?)", *slot,
                            now, entity or "")
        return d


# ---- HTTP -------------------------------------------------------------------

RFC3339 = re.compile(r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?[Zz]")


def event_time(value):
    """Understudy-Received-At (RFC 3339, UTC) in microseconds, or None."""
    m = RFC3339.fullmatch(value or "")
    if not m:
        return None
    y, mo, d, h, mi, s = (int(g) for g in m.groups()[:6])
    try:
        secs = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    frac = (m.group(7) or "")[:6].ljust(6, "0")
    return secs * 1_000_000 + int(frac)


def dumps(v):
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def header_value(s):
    """HTTP cannot carry CR, LF or other controls in a header: spaces."""
    return "".join(" " if ord(c) < 0x20 or ord(c) == 0x7F else c for c in s)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: every answer has its length
    service = None

    def log_message(self, *args):  # quiet: the answer says it all
        pass

    def answer(self, status, body, headers=()):
        self.send(status, dumps(body).encode("utf-8"), headers)

    def send(self, status, text, headers):
        lines = [f"HTTP/1.1 {status} {self.responses.get(status, ('',))[0]}",
                 "Content-Type: application/json", f"Content-Length: {len(text)}"]
        lines += [f"{n}: {header_value(v)}" for n, v in headers]
        if self.close_connection:
            lines.append("Connection: close")
        head = "\r\n".join(lines) + "\r\n\r\n"
        self.wfile.write(head.encode("utf-8", "surrogateescape") + text)

    def read_body(self):
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def handle_any(self):
        try:
            raw = self.read_body()
        except ValueError:
            self.close_connection = True
            return self.answer(400, {"error": "bad_framing"})
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if path == "/reset":
            if self.command != "POST":
                return self.answer(405, {"error": "method_not_allowed"}, [("Allow", "POST")])
            self.service.reset()
            return self.answer(200, {"reset": True})
        route = ROUTES.get(path)
        if route is None:
            return self.answer(404, {"error": "no_route"})
        # Header values as their bytes were sent (http.server reads Latin-1).
        headers = [(n, v.encode("latin-1").decode("utf-8", "surrogateescape"))
                   for n, v in self.headers.items()]
        now = event_time(header(headers, "Understudy-Received-At"))
        seq = header(headers, "Understudy-Seq")
        if now is None or seq is None or not re.fullmatch(r"[0-9]{1,18}", seq):
            # Never the wall clock: without event time a decision would not replay.
            return self.answer(400, {"error": "understudy_headers_required",
                                     "detail": "Understudy-Seq and Understudy-Received-At "
                                               "(RFC 3339 UTC) are required"})
        try:
            sha = seq_sha256(self.command, self.path, headers, raw)
            status, out, text = self.service.decide(
                derive(route, path, headers, raw, int(seq), now), sha)
        except Exception as e:  # a bug here is a 500 with its cause, not a closed socket
            return self.answer(500, {"error": "internal", "detail": f"{type(e).__name__}: {e}"})
        self.send(status, text, out)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET = handle_any


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", default="127.0.0.1:9000",
                   help="HOST:PORT (port 0: any free port; the line printed names it)")
    p.add_argument("--db", required=True, help="its SQLite database (created if absent)")
    p.add_argument("--semantic-window-s", type=int, default=600)
    p.add_argument("--key-ttl-s", type=int, default=86400)
    p.add_argument("--op-latency-ms", type=int, default=500)
    p.add_argument("--mismatch-status", type=int, default=422)
    a = p.parse_args()
    host, _, port = a.listen.rpartition(":")
    if not host or not port.isdigit():
        p.error(f"--listen {a.listen}: expected HOST:PORT, e.g. 127.0.0.1:9000")
    if not 400 <= a.mismatch_status <= 599:
        p.error("--mismatch-status: expected a status from 400 to 599")
    try:
        Handler.service = Service(a.db, {"semantic_window_s": a.semantic_window_s,
                                         "key_ttl_s": a.key_ttl_s,
                                         "op_latency_ms": a.op_latency_ms,
                                         "mismatch_status": a.mismatch_status})
    except sqlite3.Error as e:
        sys.exit(f"service.py: --db {a.db}: {e}")
    threading.stack_size(64 << 20)  # bodies nested up to JSON_MAX_DEPTH
    sys.setrecursionlimit(JSON_MAX_DEPTH * 4)
    server = ThreadingHTTPServer((host, int(port)), Handler)
    server.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print(f"listening on {host}:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
