// Records chromium.har: a real browser's HAR for the HAR import test
// (tests/integration/test_import.c). A local server on 127.0.0.1 (a free port)
// serves a page and answers POST /webhooks/stripe and POST /payments with
// JSON; Debian's Chromium, driven by Playwright with recordHar, loads the page
// and sends fetch() POSTs with JSON bodies, an Idempotency-Key on the
// payments and a Stripe-Signature made with the demo secret
// (scenarios/demo.env), so the imported events verify. Closing the context
// writes the HAR.
//
//   cd tests/data/har && npm ci && node record.js [OUT.har]
'use strict';
const crypto = require('crypto');
const http = require('http');
const path = require('path');
const { chromium } = require('playwright-core');

const SECRET = 'whsec_demo_stripe_secret_for_understudy';
const out = path.resolve(process.argv[2] || path.join(__dirname, 'chromium.har'));

const page_html = '<!doctype html><meta charset="utf-8"><title>checkout</title><p>checkout</p>';

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    const reply = (status, obj, extra) => {
      const text = JSON.stringify(obj);
      res.writeHead(status, Object.assign({ 'Content-Type': 'application/json' }, extra || {}));
      res.end(text);
    };
    if (req.method === 'GET' && req.url === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(page_html);
    } else if (req.method === 'POST' && req.url === '/webhooks/stripe') {
      reply(200, { received: true, id: JSON.parse(body).id });
    } else if (req.method === 'POST' && req.url.startsWith('/payments')) {
      const key = req.headers['idempotency-key'] || '';
      reply(201, { id: 'pay_' + key, status: 'created' }, { 'Idempotent-Replayed': 'false' });
    } else {
      reply(404, { error: 'not found' });
    }
  });
});

// Stripe's scheme: t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">.
function stripe_signature(body) {
  const t = Math.floor(Date.now() / 1000);
  const v1 = crypto.createHmac('sha256', SECRET).update(`${t}.${body}`).digest('hex');
  return `t=${t},v1=${v1}`;
}

function stripe_event(id, type, pi, amount, order) {
  return JSON.stringify({
    id, type,
    data: { object: { id: pi, amount, currency: 'eur', metadata: { order_id: order } } },
  });
}

async function main() {
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium' });
  const context = await browser.newContext({ recordHar: { path: out } });
  const page = await context.newPage();
  await page.goto(base + '/');

  const posts = [];
  const created = stripe_event('evt_har_1', 'payment_intent.created', 'pi_har_1', 4200, 'o_har_1');
  const succeeded = stripe_event('evt_har_2', 'payment_intent.succeeded', 'pi_har_1', 4200, 'o_har_1');
  posts.push({ url: '/webhooks/stripe', body: created,
               headers: { 'Content-Type': 'application/json', 'Stripe-Signature': stripe_signature(created) } });
  posts.push({ url: '/webhooks/stripe', body: succeeded,
               headers: { 'Content-Type': 'application/json', 'Stripe-Signature': stripe_signature(succeeded) } });
  const payment = JSON.stringify({ amount: 1500, currency: 'eur', order_id: 'o_har_2', note: 'caf\u00e9 \u2713' });
  posts.push({ url: '/payments?source=har', body: payment,
               headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'key-har-1', 'X-Tenant-Id': 'tenant-a' } });
  posts.push({ url: '/payments?source=har', body: payment,
               headers: { 'Content-Type': 'application/json', 'Idempotency-Key': 'key-har-1', 'X-Tenant-Id': 'tenant-a' } });
  // One the config has no route for: import skips and counts it.
  posts.push({ url: '/unrouted', body: '{}', headers: { 'Content-Type': 'application/json' } });

  for (const p of posts) {
    // One at a time, so the HAR's order is the order sent.
    await page.evaluate(async (q) => {
      const r = await fetch(q.url, { method: 'POST', headers: q.headers, body: q.body });
      await r.text();
    }, p);
  }
  await context.close(); // writes the HAR
  await browser.close();
  server.close();
  console.log(`wrote ${out}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
