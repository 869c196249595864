// The reference chat page (GET /ui) in headless Chromium, through a TCP relay that cuts one
// connection on demand (a real cut: the browser's socket closes mid-body). Run by run_ui.sh:
//   node ui_chat.test.mjs HOST:PORT BROWSER ARTEFACTS KEY_UNLIMITED KEY_LIMITED
import net from 'node:net';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const [address, browserPath, artefacts, keyA, keyB] = process.argv.slice(2);
const api = `http://${address}`;
const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
const question = 'How does a volcano erupt?';

// The relay: every browser connection goes through it. When `cutAfter` is set, the connection
// that carries the next POST /v1/chat/completions gets the answer up to the end of the HTTP
// chunk holding event `cutAfter`, nothing more, and is closed 200 ms later, both ways, as a
// dropped network would (the pause lets the page read what it got before the error).
let cutAfter = 0;
let cuts = 0;
const resumedFrom = [];  // the Last-Event-ID of each GET /v1/streams/{id} the page sent
const relay = net.createServer((client) => {
  const upstream = net.connect(port, host);
  let watching = false;
  let frozen = false;
  let seen = '';  // latin1: one character per byte, so offsets are byte offsets
  client.on('data', (d) => {
    const resume = /^GET \/v1\/streams\/[^\r]*\r\n(?:[^\r]*\r\n)*?last-event-id: *(\d+)/im.exec(d.toString('latin1'));
    if (resume) resumedFrom.push(Number(resume[1]));
    if (cutAfter && d.toString('latin1').includes('POST /v1/chat/completions')) {
      watching = true;
      seen = '';
    }
    if (!frozen) upstream.write(d);
  });
  upstream.on('data', (d) => {
    if (frozen) return;
    if (!watching) return void client.write(d);
    const before = seen.length;
    seen += d.toString('latin1');
    const at = seen.indexOf(`\nid: ${cutAfter}\n`);
    const eventEnd = at < 0 ? -1 : seen.indexOf('\n\n', at + 1);
    const chunkEnd = eventEnd < 0 ? -1 : seen.indexOf('\r\n', eventEnd + 2);  // the chunk's trailing CRLF
    if (chunkEnd < 0) return void client.write(d);
    client.write(d.subarray(0, chunkEnd + 2 - before));
    frozen = true;
    watching = false;
    cutAfter = 0;
    cuts++;
    setTimeout(() => { client.destroy(); upstream.destroy(); }, 200);
  });
  for (const [a, b] of [[client, upstream], [upstream, client]]) {
    a.on('error', () => b.destroy());
    a.on('close', () => b.destroy());
  }
});
await new Promise((resolve) => relay.listen(0, '127.0.0.1', resolve));
const page_url = `http://127.0.0.1:${relay.address().port}/ui`;

async function adminFetch(path, init = {}) {
  return fetch(api + path, { ...init, headers: { Authorization: `Bearer ${keyA}`, ...(init.headers || {}) } });
}

const browser = await chromium.launch({ executablePath: browserPath, args: ['--no-sandbox'] });
const failures = [];
const page = await browser.newPage({ viewport: { width: 900, height: 700 } });
page.on('pageerror', (e) => failures.push('page error: ' + e.message));
page.on('console', (m) => { if (m.type() === 'error' && !m.text().includes('401')) console.log('console:', m.text()); });

async function ask(key, text) {
  if (!(await page.$eval('details', (d) => d.open))) await page.click('summary');  // Settings
  await page.fill('#key', key);
  await page.fill('#temperature', '0');  // greedy: the same question, the same answer
  await page.fill('#question', text);
  await page.click('#send');
}
async function finished() {
  await page.waitForFunction(() => ['done', 'error'].includes(document.body.dataset.state), null, { timeout: 60000 });
  return {
    state: await page.getAttribute('body', 'data-state'),
    resumes: Number(await page.getAttribute('body', 'data-resumes')),
    status: await page.textContent('#status'),
    answer: await page.textContent('#answer'),
    sources: await page.$$eval('#sources li a', (as) => as.map((a) => ({ text: a.textContent, href: a.getAttribute('href') }))),
    progress: await page.$$eval('#progress li', (lis) => lis.map((li) => li.textContent)),
  };
}

try {
  // Off-by-default is tested in C++; here the page is on. It is served whole, with its CSP.
  const served = await fetch(api + '/ui');
  assert.equal(served.status, 200);
  assert.match(served.headers.get('content-security-policy'), /connect-src 'self'/);
  await page.goto(page_url);
  assert.equal(await page.title(), 'Sluice chat');

  // 1. A connection cut after 3 events: the page keeps the text, resumes from event 3, and ends.
  cutAfter = 3;
  await ask(keyA, question);
  const resumed = await finished();
  assert.equal(cuts, 1, 'the relay cut the answer\'s connection');
  assert.equal(resumed.state, 'done', resumed.status);
  assert.ok(resumed.resumes >= 1, 'the page resumed');
  assert.match(resumed.status, /after 1 resume/);
  assert.deepEqual(resumedFrom, [3], 'the page resumed from the last event it had');
  assert.match(resumed.status, /resume/);
  assert.ok(resumed.answer.length > 0);
  assert.ok(resumed.progress.length > 0, 'stage progress was shown before the first token');
  assert.ok(resumed.sources.length > 0, 'the sources are shown');
  for (const s of resumed.sources) assert.ok(s.href.startsWith('https://') || s.href.startsWith('#source-'), s.href);
  await page.screenshot({ path: `${artefacts}/ui-chat-resumed.png`, fullPage: true });

  // 2. The same question uninterrupted (the caches dropped once the first answer is stored, so
  // it is generated again): the same final text.
  for (let i = 0; i < 500; i++) {
    const m = await (await adminFetch('/metrics')).text();
    if (/sluice_cache_entries\{[^}]*tier="exact"\} 1/.test(m)) break;
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal((await adminFetch('/v1/cache', { method: 'DELETE' })).status, 200);
  await ask(keyA, question);
  const whole = await finished();
  assert.equal(whole.state, 'done', whole.status);
  assert.equal(whole.resumes, 0);
  assert.equal(resumed.answer, whole.answer, 'a resumed answer reads as an uninterrupted one');

  // 3. A 429: the limited key's one request is spent, so the page's question is refused; the
  // page says so, waits the Retry-After it was given, retries and gets its answer.
  const spent = await fetch(api + '/v1/models', { headers: { Authorization: `Bearer ${keyB}` } });
  assert.equal(spent.status, 200);
  await ask(keyB, 'Why do otters hold hands?');
  await page.waitForFunction(() => document.body.dataset.state === 'retrying', null, { timeout: 10000 });
  assert.match(await page.textContent('#status'), /429.*Retry-After/);
  const retried = await finished();
  assert.equal(retried.state, 'done', retried.status);
  assert.ok(retried.answer.length > 0);
  assert.deepEqual(failures, []);
  console.log(`ui: resumed after a cut (${resumed.resumes} resume), same text as uninterrupted ` +
    `(${whole.answer.length} chars), 429 retried; sources ${JSON.stringify(resumed.sources)}`);
} finally {
  await browser.close();
  relay.close();
}
