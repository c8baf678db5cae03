#!/usr/bin/env python3
"""The reference candidate's rules as an out-of-process understudy plugin.

Python 3, standard library only. It speaks the JSON-lines protocol of
include/understudy/protocol.md on stdin/stdout: the host sends the event, the
plugin asks the host's state store for what it needs and answers with its
decision. State lives in the host (this plugin's namespace), so a replay that
is stopped and resumed, or a plugin that is restarted, decides the same.
"""
import json
import sys

STATES = ("pending", "paid", "refunded", "cancelled")
# A first event may open a transaction in any state but refunded (nothing was
# paid); refunded and cancelled are final.
LEGAL = {None: {"pending", "paid", "cancelled"}, "pending": {"paid", "cancelled"},
         "paid": {"refunded"}, "refunded": set(), "cancelled": set()}


def send(msg):
    sys.stdout.write(json.dumps(msg, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def receive():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)


class Store:
    """The host's state store, one request per read (writes need no reply)."""

    def get(self, key):
        send({"type": "get", "key": json.dumps(key)})
        value = receive().get("value")
        return None if value is None else json.loads(value)

    def put(self, key, value):
        send({"type": "put", "key": json.dumps(key), "value": json.dumps(value)})

    def claim(self, key, value):
        send({"type": "claim", "key": json.dumps(key), "value": json.dumps(value)})
        return receive().get("claimed") is True


def absent(s):
    return s is None or s == ""


def answer(verdict, status, body, entity=None, before=None, after=None, headers=None,
           flags=None, reason=None):
    return {"verdict": verdict, "status": status, "body": body, "entity": entity,
            "state_before": before, "state_after": after, "headers": headers or {},
            "flags": flags or [], "reason": reason}


class Candidate:
    def __init__(self, config):
        self.window_us = int(config.get("semantic_window_s", 600)) * 1_000_000
        self.ttl_us = int(config.get("key_ttl_s", 86400)) * 1_000_000
        self.latency_us = int(config.get("op_latency_ms", 500)) * 1000
        self.mismatch_status = int(config.get("mismatch_status", 422))
        self.store = Store()

    def decide(self, ev):
        kind = ev.get("route_kind")
        if kind == "webhook":
            return self.webhook(ev)
        if kind == "api":
            return self.api(ev)
        return answer("invalid", 400, {"error": "unknown_route_kind"})

    def webhook(self, ev):
        s, now = self.store, ev["received_at_us"]
        provider, txn, target = ev.get("provider"), ev.get("transaction_id"), ev.get("target_status")
        entity = f"{provider}:{txn}" if not absent(provider) and not absent(txn) else None
        for field, code in (("provider", "provider_required"), ("event_id", "event_id_required"),
                            ("transaction_id", "transaction_id_required"),
                            ("target_status", "target_status_required")):
            if absent(ev.get(field)):
                return answer("invalid", 400, {"error": code}, entity)
        if target not in STATES:
            return answer("invalid", 400, {"error": "target_status_unknown"}, entity)
        state_key = ["state", provider, txn]
        before = s.get(state_key)
        received = {"received": True}
        # Claimed first: a redelivery is a duplicate even if the state moved since.
        if not s.claim(["event", provider, ev["event_id"]], ""):
            return answer("duplicate", 200, received, entity, before, before)
        if before == target:
            return answer("duplicate", 200, received, entity, before, before)
        if target not in LEGAL[before]:
            return answer("rejected", 200, received, entity, before, before,
                          reason=f"{before or '(new)'} -> {target} is not a legal transition")
        flags = []
        if target == "paid" and not absent(ev.get("intent")) and not absent(ev.get("currency")) \
                and ev.get("amount") is not None:
            paid_key = ["paid", provider, ev["intent"], ev["amount"], ev["currency"]]
            last = s.get(paid_key)
            if last and now - last["at"] <= self.window_us and last["txn"] != txn:
                flags.append("semantic_duplicate")
            s.put(paid_key, {"at": now, "txn": txn})
        s.put(state_key, target)
        return answer("applied", 200, received, entity, before, target, flags=flags)

    def api(self, ev):
        s, now = self.store, ev["received_at_us"]
        key, tenant = ev.get("idempotency_key"), ev.get("tenant")
        entity = f"{ev.get('route') or ''}:{tenant if not absent(tenant) else '-'}:{key}" \
            if not absent(key) else None
        if ev.get("amount") is None:
            return answer("invalid", 400, {"error": "amount_required"}, entity)
        if absent(ev.get("currency")):
            return answer("invalid", 400, {"error": "currency_required"}, entity)
        if absent(key):
            return answer("invalid", 400, {"error": "idempotency_key_required"}, entity)
        body = {"amount": ev["amount"], "currency": ev["currency"], "order_id": ev.get("intent"),
                "payment_id": f"pay_{ev['seq']}"}
        record = {"created": now, "done": now + self.latency_us, "status": 201,
                  "sha": ev["request_sha256"], "body": body}
        slot = ["key", ev.get("route") or "", tenant or "", key]
        # The claim settles the race: of two requests with one key, one executes.
        if s.claim(slot, record):
            return self.executed(ev, body, entity, None)
        stored = s.get(slot)
        state = "in_progress" if now < stored["done"] else "completed"
        if now - stored["created"] >= self.ttl_us:
            s.put(slot, record)
            return self.executed(ev, body, entity, "expired")
        if stored["sha"] != ev["request_sha256"]:
            return answer("conflict", self.mismatch_status, {"error": "idempotency_key_reused"},
                          entity, state, state)
        if state == "in_progress":
            return answer("in_progress", 409, {"error": "in_progress"}, entity, state, state,
                          headers={"Retry-After": "1"})
        return answer("duplicate", stored["status"], stored["body"], entity, state, state,
                      headers={"Idempotent-Replayed": "true"})

    def executed(self, ev, body, entity, before):
        flags = []
        if not absent(ev.get("intent")):
            exec_key = ["exec", ev.get("tenant") or "", ev["intent"], ev["amount"], ev["currency"]]
            last = self.store.get(exec_key)
            if last and ev["received_at_us"] - last["at"] <= self.window_us:
                flags.append("semantic_duplicate")
            self.store.put(exec_key, {"at": ev["received_at_us"], "entity": entity or ""})
        return answer("applied", 201, body, entity, before, "completed", flags=flags)


def main():
    init = receive()
    plugin = Candidate(init.get("config") or {})
    # It decides on the canonical fields (request_sha256 stands for the body):
    # events may come without the raw body and headers.
    send({"type": "hello", "protocol": 2, "name": "candidate-python", "version": "1.0.0",
          "raw_request": False})
    while True:
        msg = receive()
        seq = msg["event"]["seq"]  # every answer names the event it answers
        try:
            send({"type": "decision", "seq": seq, "decision": plugin.decide(msg["event"])})
        except Exception as e:  # a bug here is an error decision, not a dead plugin
            send({"type": "error", "seq": seq, "message": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
