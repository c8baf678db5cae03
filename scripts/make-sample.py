#!/usr/bin/env python3
"""Writes scenarios/sample.jsonl: a small day of signed callbacks that shows
each kind of duplicate. The secrets are the demo ones in scenarios/demo.env,
never real ones. Rerun after changing the story; the output is committed."""
import base64, hashlib, hmac, json, os, sys
from datetime import datetime, timezone

env = dict(l.strip().split("=", 1) for l in open(os.path.join(os.path.dirname(__file__), "..", "scenarios", "demo.env")) if "=" in l and not l.startswith("#"))
STRIPE = env["UNDERSTUDY_STRIPE_SECRET"]
STANDARD = env["UNDERSTUDY_STANDARD_SECRET"]
T0 = 1795946400  # 2026-11-29T10:00:00Z

lines = []

def emit(at, target, headers, body):
    when = datetime.fromtimestamp(at, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    lines.append(json.dumps({"v": 1, "received_at": when, "remote": "203.0.113.7:443",
                             "method": "POST", "target": target, "headers": headers,
                             "body": body}, separators=(",", ":")))

def stripe(at, evt, typ, pi, order, amount, secret=STRIPE, sign_at=None):
    body = json.dumps({"id": evt, "type": typ, "created": int(at), "data": {"object": {
        "id": pi, "amount": amount, "currency": "eur", "metadata": {"order_id": order}}}},
        separators=(",", ":"))
    t = int(sign_at if sign_at is not None else at)
    sig = hmac.new(secret.encode(), f"{t}.{body}".encode(), hashlib.sha256).hexdigest()
    emit(at, "/webhooks/stripe", [["Content-Type", "application/json"],
                                  ["Stripe-Signature", f"t={t},v1={sig}"]], body)

def standard(at, msg, payment, status, order, amount):
    body = json.dumps({"type": "payment." + status, "data": {"payment_id": payment,
        "status": status, "amount": amount, "currency": "usd", "order_id": order}},
        separators=(",", ":"))
    key = base64.b64decode(STANDARD.removeprefix("whsec_"))
    t = int(at)
    sig = base64.b64encode(hmac.new(key, f"{msg}.{t}.{body}".encode(), hashlib.sha256).digest()).decode()
    emit(at, "/webhooks/standard", [["Content-Type", "application/json"], ["webhook-id", msg],
         ["webhook-timestamp", str(t)], ["webhook-signature", "v1," + sig]], body)

def api(at, key, tenant, order, amount):
    headers = [["Content-Type", "application/json"], ["X-Tenant-Id", tenant]]
    if key is not None:
        headers.append(["Idempotency-Key", key])
    emit(at, "/payments", headers, json.dumps({"order_id": order, "amount": amount,
                                               "currency": "eur"}, separators=(",", ":")))

# Kind 1: an identical retry (the first 200 was lost), and a redelivery with a
# new signature time.
stripe(T0, "evt_1", "payment_intent.succeeded", "pi_1", "order_1", 4200)
stripe(T0 + 30, "evt_1", "payment_intent.succeeded", "pi_1", "order_1", 4200)
# Kind 2: refunded, then a late "paid" with a new event id.
stripe(T0 + 600, "evt_2", "charge.refunded", "pi_1", "order_1", 4200)
stripe(T0 + 3600, "evt_3", "payment_intent.succeeded", "pi_1", "order_1", 4200)
# Kind 3: a double click, two transactions for one order 3 s apart.
stripe(T0 + 7200, "evt_4", "payment_intent.succeeded", "pi_2", "order_2", 1500)
stripe(T0 + 7203, "evt_5", "payment_intent.succeeded", "pi_3", "order_2", 1500)
# Out of order: refunded before paid.
stripe(T0 + 9000, "evt_6", "charge.refunded", "pi_4", "order_4", 990)
stripe(T0 + 9001, "evt_7", "payment_intent.succeeded", "pi_4", "order_4", 990)
# A forged signature: recorded as evidence, never decided.
stripe(T0 + 9500, "evt_8", "payment_intent.succeeded", "pi_5", "order_5", 100,
       secret="whsec_not_the_secret")
# Standard Webhooks: a redelivery with the same webhook-id, new timestamp.
standard(T0 + 10000, "msg_1", "pay_9", "paid", "order_9", 2500)
standard(T0 + 10060, "msg_1", "pay_9", "paid", "order_9", 2500)
# Idempotency-Key: a retry 200 ms later, while the first is still running;
# a completed retry; the same key with another amount; no key at all.
api(T0 + 12000, "k-7d1f", "tenant-a", "order_7", 1000)
api(T0 + 12000.2, "k-7d1f", "tenant-a", "order_7", 1000)
api(T0 + 12010, '"k-7d1f"', "tenant-a", "order_7", 1000)
api(T0 + 12020, "k-7d1f", "tenant-a", "order_7", 2000)
api(T0 + 12030, None, "tenant-a", "order_8", 500)
# The same key on another tenant is another operation.
api(T0 + 12040, "k-7d1f", "tenant-b", "order_7", 1000)

out = os.path.join(os.path.dirname(__file__), "..", "scenarios", "sample.jsonl")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
print(f"wrote {len(lines)} events to {out}", file=sys.stderr)
