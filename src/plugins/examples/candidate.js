#!/usr/bin/env node
// The reference candidate's rules as an out-of-process understudy plugin.
//
// Node.js, no dependencies. It speaks the JSON-lines protocol of
// include/understudy/protocol.md on stdin/stdout: the host sends the event,
// the plugin asks the host's state store for what it needs and answers with
// its decision. State lives in the host (this plugin's namespace).
'use strict';
const readline = require('readline');

const STATES = ['pending', 'paid', 'refunded', 'cancelled'];
// A first event may open a transaction in any state but refunded (nothing
// was paid); refunded and cancelled are final.
const LEGAL = {
  null: ['pending', 'paid', 'cancelled'], pending: ['paid', 'cancelled'],
  paid: ['refunded'], refunded: [], cancelled: [],
};

// Lines from the host, handed out in order to whoever awaits the next one.
const queued = [];
const waiting = [];
readline.createInterface({ input: process.stdin })
  .on('line', (line) => {
    const msg = JSON.parse(line);
    if (waiting.length) waiting.shift()(msg); else queued.push(msg);
  })
  .on('close', () => process.exit(0));
const receive = () => (queued.length ? Promise.resolve(queued.shift())
  : new Promise((resolve) => waiting.push(resolve)));
const send = (msg) => process.stdout.write(`${JSON.stringify(msg)}\n`);

// The host's state store: reads wait for the answer, writes need none.
const store = {
  async get(key) {
    send({ type: 'get', key: JSON.stringify(key) });
    const { value } = await receive();
    return value === null || value === undefined ? null : JSON.parse(value);
  },
  put(key, value) {
    send({ type: 'put', key: JSON.stringify(key), value: JSON.stringify(value) });
  },
  async claim(key, value) {
    send({ type: 'claim', key: JSON.stringify(key), value: JSON.stringify(value) });
    return (await receive()).claimed === true;
  },
};

const absent = (s) => s === null || s === undefined || s === '';
const answer = (verdict, status, body, entity = null, before = null, after = null,
  headers = {}, flags = []) => ({
  verdict, status, body, entity, state_before: before, state_after: after, headers, flags,
});

function candidate(config) {
  const windowUs = (config.semantic_window_s ?? 600) * 1e6;
  const ttlUs = (config.key_ttl_s ?? 86400) * 1e6;
  const latencyUs = (config.op_latency_ms ?? 500) * 1e3;
  const mismatchStatus = config.mismatch_status ?? 422;

  async function webhook(ev) {
    const now = ev.received_at_us;
    const { provider, transaction_id: txn, target_status: target } = ev;
    const entity = !absent(provider) && !absent(txn) ? `${provider}:${txn}` : null;
    for (const [field, code] of [['provider', 'provider_required'],
      ['event_id', 'event_id_required'], ['transaction_id', 'transaction_id_required'],
      ['target_status', 'target_status_required']]) {
      if (absent(ev[field])) return answer('invalid', 400, { error: code }, entity);
    }
    if (!STATES.includes(target)) {
      return answer('invalid', 400, { error: 'target_status_unknown' }, entity);
    }
    const stateKey = ['state', provider, txn];
    const before = await store.get(stateKey);
    const received = { received: true };
    // Claimed first: a redelivery is a duplicate even if the state moved since.
    if (!(await store.claim(['event', provider, ev.event_id], ''))) {
      return answer('duplicate', 200, received, entity, before, before);
    }
    if (before === target) return answer('duplicate', 200, received, entity, before, before);
    if (!LEGAL[before].includes(target)) {
      return answer('rejected', 200, received, entity, before, before);
    }
    const flags = [];
    if (target === 'paid' && !absent(ev.intent) && !absent(ev.currency) && ev.amount !== null) {
      const paidKey = ['paid', provider, ev.intent, ev.amount, ev.currency];
      const last = await store.get(paidKey);
      if (last && now - last.at <= windowUs && last.txn !== txn) flags.push('semantic_duplicate');
      store.put(paidKey, { at: now, txn });
    }
    store.put(stateKey, target);
    return answer('applied', 200, received, entity, before, target, {}, flags);
  }

  async function executed(ev, body, entity, before) {
    const flags = [];
    if (!absent(ev.intent)) {
      const execKey = ['exec', ev.tenant || '', ev.intent, ev.amount, ev.currency];
      const last = await store.get(execKey);
      if (last && ev.received_at_us - last.at <= windowUs) flags.push('semantic_duplicate');
      store.put(execKey, { at: ev.received_at_us, entity: entity || '' });
    }
    return answer('applied', 201, body, entity, before, 'completed', {}, flags);
  }

  async function api(ev) {
    const now = ev.received_at_us;
    const { idempotency_key: key, tenant } = ev;
    const entity = absent(key) ? null
      : `${ev.route || ''}:${absent(tenant) ? '-' : tenant}:${key}`;
    if (ev.amount === null) return answer('invalid', 400, { error: 'amount_required' }, entity);
    if (absent(ev.currency)) {
      return answer('invalid', 400, { error: 'currency_required' }, entity);
    }
    if (absent(key)) return answer('invalid', 400, { error: 'idempotency_key_required' }, entity);
    const body = {
      amount: ev.amount, currency: ev.currency, order_id: ev.intent ?? null,
      payment_id: `pay_${ev.seq}`,
    };
    const record = {
      created: now, done: now + latencyUs, status: 201, sha: ev.request_sha256, body,
    };
    const slot = ['key', ev.route || '', tenant || '', key];
    // The claim settles the race: of two requests with one key, one executes.
    if (await store.claim(slot, record)) return executed(ev, body, entity, null);
    const stored = await store.get(slot);
    const state = now < stored.done ? 'in_progress' : 'completed';
    if (now - stored.created >= ttlUs) {
      store.put(slot, record);
      return executed(ev, body, entity, 'expired');
    }
    if (stored.sha !== ev.request_sha256) {
      return answer('conflict', mismatchStatus, { error: 'idempotency_key_reused' }, entity,
        state, state);
    }
    if (state === 'in_progress') {
      return answer('in_progress', 409, { error: 'in_progress' }, entity, state, state,
        { 'Retry-After': '1' });
    }
    return answer('duplicate', stored.status, stored.body, entity, state, state,
      { 'Idempotent-Replayed': 'true' });
  }

  return async (ev) => {
    if (ev.route_kind === 'webhook') return webhook(ev);
    if (ev.route_kind === 'api') return api(ev);
    return answer('invalid', 400, { error: 'unknown_route_kind' });
  };
}

(async () => {
  const init = await receive();
  const decide = candidate(init.config || {});
  // It decides on the canonical fields (request_sha256 stands for the body):
  // events may come without the raw body and headers.
  send({ type: 'hello', protocol: 2, name: 'candidate-node', version: '1.0.0',
    raw_request: false });
  for (;;) {
    const msg = await receive();
    const { seq } = msg.event; // every answer names the event it answers
    try {
      send({ type: 'decision', seq, decision: await decide(msg.event) });
    } catch (e) { // a bug here is an error decision, not a dead plugin
      send({ type: 'error', seq, message: String(e) });
    }
  }
})();
