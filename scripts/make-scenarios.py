#!/usr/bin/env python3
"""Writes the scenario files under scenarios/ (one story each, with the outcome
it must produce). Edit the stories here and rerun; the JSON is committed."""
import json, os
out = os.path.join(os.path.dirname(__file__), "..", "scenarios")
PAID, REF, CAN = "payment_intent.succeeded", "charge.refunded", "payment_intent.canceled"
ARROW = " \u2192 "
def stripe(at, evt, typ, pi, order, amount, expect_l, expect_c, **kw):
    st = {"at": at, "route": "/webhooks/stripe",
          "body": {"id": evt, "type": typ, "data": {"object": {"id": pi, "amount": amount,
                   "currency": "eur", "metadata": {"order_id": order}}}},
          "expect": {"legacy": expect_l, "candidate": expect_c}}
    st.update(kw); return st
def standard(at, msg, pay, status, order, amount, l, c, **kw):
    st = {"at": at, "route": "/webhooks/standard", "webhook_id": msg,
          "body": {"type": "payment." + status, "data": {"payment_id": pay, "status": status,
                   "amount": amount, "currency": "usd", "order_id": order}},
          "expect": {"legacy": l, "candidate": c}}
    st.update(kw); return st
def api(at, key, tenant, order, amount, l, c, **kw):
    h = {"X-Tenant-Id": tenant}
    if key is not None: h["Idempotency-Key"] = key
    st = {"at": at, "route": "/payments", "headers": h,
          "body": {"order_id": order, "amount": amount, "currency": "eur"},
          "expect": {"legacy": l, "candidate": c}}
    st.update(kw); return st
def div(step, cls, fields, copy=None):
    d = {"step": step, "class": cls, "fields": fields}
    if copy is not None: d["copy"] = copy
    return d
API_BODY = ["body/amount", "body/currency", "body/error", "body/order_id", "body/payment_id"]
S = {}
S["01-identical-retry"] = ("Kind 1: the same Stripe event delivered twice (the first 200 was lost): one effect, 200 both times.",
  [stripe(0, "evt_s01", PAID, "pi_s01", "o_s01", 4200, "applied", "applied"),
   stripe(30, "evt_s01", PAID, "pi_s01", "o_s01", 4200, "duplicate", "duplicate")], [])
S["02-redelivery-new-signature"] = ("Kind 1: the same event redelivered an hour later with a new t and signature: dedup keys on the event, not the signature.",
  [stripe(0, "evt_s02", PAID, "pi_s02", "o_s02", 4200, "applied", "applied"),
   stripe(3600, "evt_s02", PAID, "pi_s02", "o_s02", 4200, "duplicate", "duplicate")], [])
S["03-standard-webhooks-redelivery"] = ("Kind 1: Standard Webhooks redelivery: the same webhook-id, a new timestamp and signature.",
  [standard(0, "msg_s03", "pay_s03", "paid", "o_s03", 2500, "applied", "applied"),
   standard(60, "msg_s03", "pay_s03", "paid", "o_s03", 2500, "duplicate", "duplicate")], [])
S["04-replay-after-tolerance"] = ("Kind 1: a signed request replayed after the tolerance is refused (401) before any decision; it is still recorded.",
  [stripe(0, "evt_s04", PAID, "pi_s04", "o_s04", 4200, "applied", "applied"),
   stripe(900, "evt_s04", PAID, "pi_s04", "o_s04", 4200, "not_fed", "not_fed", sign="expired")], [])
S["05-paid-after-refund-new-id"] = ("Kind 2: paid, refunded, then paid again with a new event id: the legacy moves the payment back to paid; the candidate rejects it, the state stays refunded.",
  [stripe(0, "evt_s05a", PAID, "pi_s05", "o_s05", 4200, "applied", "applied"),
   stripe(600, "evt_s05b", REF, "pi_s05", "o_s05", 4200, "applied", "applied"),
   stripe(3600, "evt_s05c", PAID, "pi_s05", "o_s05", 4200, "applied", "rejected")],
  [div(2, PAID + ":" + " applied" + ARROW + "rejected", ["verdict", "state"])])
S["06-paid-after-refund-same-id"] = ("Kind 2: the same, but the late paid keeps its original event id: both see a duplicate.",
  [stripe(0, "evt_s06a", PAID, "pi_s06", "o_s06", 4200, "applied", "applied"),
   stripe(600, "evt_s06b", REF, "pi_s06", "o_s06", 4200, "applied", "applied"),
   stripe(3600, "evt_s06a", PAID, "pi_s06", "o_s06", 4200, "duplicate", "duplicate")], [])
S["07-refund-before-paid"] = ("Kind 2: refunded arrives before paid (out of order): the candidate refuses a refund of nothing paid.",
  [stripe(0, "evt_s07a", REF, "pi_s07", "o_s07", 990, "applied", "rejected"),
   stripe(1, "evt_s07b", PAID, "pi_s07", "o_s07", 990, "applied", "applied")],
  [div(0, REF + ": applied" + ARROW + "rejected", ["verdict", "state"])])
S["08-paid-after-cancel"] = ("Kind 2: cancelled, then paid: cancelled is final for the candidate.",
  [stripe(0, "evt_s08a", CAN, "pi_s08", "o_s08", 4200, "applied", "applied"),
   stripe(60, "evt_s08b", PAID, "pi_s08", "o_s08", 4200, "applied", "rejected")],
  [div(1, PAID + ": applied" + ARROW + "rejected", ["verdict", "state"])])
S["09-double-click"] = ("Kind 3: a double click: two transactions for one order, amount and currency, 3 s apart; the candidate flags the second, it never merges them.",
  [stripe(0, "evt_s09a", PAID, "pi_s09a", "o_s09", 1500, "applied", "applied"),
   stripe(3, "evt_s09b", PAID, "pi_s09b", "o_s09", 1500, "applied", "applied")],
  [div(1, PAID + ": applied" + ARROW + "applied", ["flags"])])
S["10-double-click-outside-window"] = ("Kind 3: the same pair 20 minutes apart, outside the window: no flag.",
  [stripe(0, "evt_s10a", PAID, "pi_s10a", "o_s10", 1500, "applied", "applied"),
   stripe(1200, "evt_s10b", PAID, "pi_s10b", "o_s10", 1500, "applied", "applied", timing_sensitive=True)], [])
S["11-same-order-other-amount"] = ("Kind 3: the same order with another amount: no flag.",
  [stripe(0, "evt_s11a", PAID, "pi_s11a", "o_s11", 1500, "applied", "applied"),
   stripe(3, "evt_s11b", PAID, "pi_s11b", "o_s11", 1600, "applied", "applied")], [])
S["12-parallel-same-key"] = ("Idempotency-Key: five parallel requests with one key (the article's test): the legacy executes each (check, then act); the candidate executes once and answers the others 409 in_progress with Retry-After.",
  [api(0, "k-s12", "t1", "o_s12", 1000, "applied", ["applied"] + ["in_progress"] * 4, copies=5, timing_sensitive=True)],
  [div(0, "/payments: applied" + ARROW + "in_progress", ["verdict", "status", "header:retry-after"] + API_BODY + ["state"], copy=c) for c in range(1, 5)])
S["13-completed-retry"] = ("Idempotency-Key: a retry after completion: both return the stored response; the candidate adds Idempotent-Replayed: true.",
  [api(0, "k-s13", "t1", "o_s13", 1000, "applied", "applied"),
   api(10, "k-s13", "t1", "o_s13", 1000, "duplicate", "duplicate", timing_sensitive=True)],
  [div(1, "/payments: duplicate" + ARROW + "duplicate", ["header:idempotent-replayed"])])
S["14-same-key-other-amount"] = ("Idempotency-Key: the same key with another amount: the legacy returns the old response; the candidate answers 422.",
  [api(0, "k-s14", "t1", "o_s14", 1000, "applied", "applied"),
   api(10, "k-s14", "t1", "o_s14", 2000, "duplicate", "conflict", timing_sensitive=True)],
  [div(1, "/payments: duplicate" + ARROW + "conflict", ["verdict", "status"] + API_BODY)])
S["15-retry-after-ttl"] = ("Idempotency-Key: a retry after the key's TTL (a day): the candidate executes again, the legacy returns the old response.",
  [api(0, "k-s15", "t1", "o_s15", 1000, "applied", "applied"),
   api(86401, "k-s15", "t1", "o_s15", 1000, "duplicate", "applied", timing_sensitive=True)],
  [div(1, "/payments: duplicate" + ARROW + "applied", ["verdict", "body/payment_id"])])
S["16-same-key-two-tenants"] = ("Idempotency-Key: the same key on two tenants: independent operations in both.",
  [api(0, "k-s16", "t1", "o_s16", 1000, "applied", "applied"),
   api(1, "k-s16", "t2", "o_s16", 1000, "applied", "applied")], [])
S["17-key-forms"] = ("Idempotency-Key: the quoted (RFC 8941) and unquoted forms are the same key.",
  [api(0, "k-s17", "t1", "o_s17", 1000, "applied", "applied"),
   api(10, '"k-s17"', "t1", "o_s17", 1000, "duplicate", "duplicate", timing_sensitive=True)],
  [div(1, "/payments: duplicate" + ARROW + "duplicate", ["header:idempotent-replayed"])])
S["18-api-without-key"] = ("Idempotency-Key: a request without a key: the legacy executes it anyway; the candidate answers 400 idempotency_key_required.",
  [api(0, None, "t1", "o_s18", 500, "applied", "invalid")],
  [div(0, "/payments: applied" + ARROW + "invalid", ["verdict", "status"] + API_BODY)])
bad = [stripe(0, "evt_s19a", PAID, "pi_s19a", "o_s19a", 100, "not_fed", "not_fed", sign="invalid"),
       stripe(1, "evt_s19b", PAID, "pi_s19b", "o_s19b", 100, "not_fed", "not_fed", sign="none"),
       stripe(2, "evt_s19c", PAID, "pi_s19c", "o_s19c", 100, "applied", "applied", sign="rotated"),
       {"at": 3, "route": "/webhooks/stripe", "body_raw": "{\"id\": \"evt_s19d\", \"type\": ", "expect": {"legacy": "invalid", "candidate": "invalid"}},
       {"at": 4, "route": "/webhooks/stripe", "body_raw": "[" * 10000 + "]" * 10000, "expect": {"legacy": "invalid", "candidate": "invalid"}},
       {"at": 5, "route": "/payments", "headers": {"Idempotency-Key": "k-s19"}, "body_raw": "{\"order_id\": \"o_s19\", \"amount\": ", "expect": {"legacy": "invalid", "candidate": "invalid"}}]
S["19-bad-input"] = ("Bad input, recorded and never crashing: an invalid and a missing signature (recorded, never decided), a rotated secret (accepted), a truncated JSON body, a body nested 10,000 levels deep, an API body that is not JSON. Refusals at the HTTP level (413, 431, 408, 404, 405, 400, invalid UTF-8) are exercised by the recorder's tests.", bad, [])
for name, (shows, steps, divs) in S.items():
    doc = {"name": name, "shows": shows, "steps": steps, "divergences": divs}
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(doc, f, indent=1, ensure_ascii=False)
        f.write("\n")
print(len(S))
