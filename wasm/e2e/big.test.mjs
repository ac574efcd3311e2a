// The page on a ~100 MB config_dump (tenant scale): it must finish in the tab, with the CLI's
// findings, and say what it cost. Not part of `npm test` (scripts/test-wasm.sh): it takes
// minutes and a release build of the generator; run it with `npm run test:big`.
//
// Env: as e2e.test.mjs, plus XDSCK_GEN (default: `cargo run -q --release -p xdsck-benches --bin
// xdsck-gen --`) and XDSCK_E2E_BIG_TENANTS (default 33000: ~100 MB, 132k filter chains).
// Prints: the time from opening the file to the findings shown and to the listeners shown (the
// page's own `performance` marks), beside the CLI's time on the same file on one core (XDSCK_BIN
// should then be a release build; without it one is built); the checker's wasm memory (its peak:
// it never shrinks) against the file's size; the worker's and page's peak JS heap, and the peak
// RSS of the tab's renderer process (Linux: /proc/PID/status VmHWM).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, rm } from 'node:fs/promises';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import { serve, root, artifacts, browser, cli, openPage, bySeverity } from './harness.mjs';

serve();

const MB = (n) => `${(n / 2 ** 20).toFixed(0)} MiB`;
const seconds = (ms) => `${(ms / 1e3).toFixed(2)} s`;

/** XDSCK_BIN (a release build, for the comparison to mean anything), or the release build made here. */
function releaseCli() {
  if (process.env.XDSCK_BIN) return path.resolve(root, process.env.XDSCK_BIN);
  execFileSync('cargo', ['build', '-q', '--release', '--manifest-path', path.join(root, 'Cargo.toml'), '-p', 'xdsck'], { stdio: 'inherit' });
  return path.join(execFileSync(path.join(root, 'scripts/target-dir.sh'), { encoding: 'utf8' }).trim(), 'release/xdsck');
}

/**
 * The CLI's time for `check --format json` on the file on one core (the fastest of three), what
 * the page is compared with: the page's checker runs on one thread. `taskset` where there is one
 * (the CLI also reads a big file on every core), and one rayon thread.
 */
function cliOneCore(file) {
  const bin = releaseCli();
  const pinned = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const start = process.hrtime.bigint();
    const run = spawnSync(pinned ? 'taskset' : bin, [...(pinned ? ['-c', '0', bin] : []), 'check', '--format', 'json', file],
      { env: { ...process.env, RAYON_NUM_THREADS: '1' }, stdio: ['ignore', 'ignore', 'inherit'] });
    assert.ok(run.status === 0 || run.status === 1, `xdsck exited ${run.status}`);
    best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
  }
  return best;
}

function generate(file, tenants) {
  const gen = process.env.XDSCK_GEN;
  const [cmd, args] = gen
    ? [path.resolve(root, gen), []]
    : ['cargo', ['run', '-q', '--release', '--manifest-path', path.join(root, 'Cargo.toml'), '-p', 'xdsck-benches', '--bin', 'xdsck-gen', '--']];
  // One shared 443 listener; every 1000th tenant duplicates a chain (errors: Envoy rejects the
  // listener) and every exact name under its tenant's wildcard is an info.
  execFileSync(cmd, [...args, '--tenants', String(tenants), '--duplicate-every', '1000', '--out', file], { stdio: ['ignore', 'inherit', 'inherit'] });
}

/** Peak RSS of each renderer process, from Chromium's own process list. */
async function rendererPeaks() {
  const cdp = await browser.newBrowserCDPSession();
  const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
  await cdp.detach();
  const peaks = [];
  for (const p of processInfo.filter((p) => p.type === 'renderer')) {
    try {
      const status = await readFile(`/proc/${p.id}/status`, 'utf8');
      peaks.push(Number(status.match(/^VmHWM:\s+(\d+) kB/m)[1]) * 1024);
    } catch { /* not Linux, or gone */ }
  }
  return peaks;
}

/**
 * Samples the JS heap of the page and of its worker (CDP `Runtime.getHeapUsage`, every 200 ms)
 * until `stop()`, which gives the peaks. The worker is reached as the page's auto-attached child
 * target: playwright-core has no CDP session for workers. Its wasm memory is not in this heap
 * (an external backing store): the page reads that from the worker itself.
 */
async function sampleHeaps(page) {
  const cdp = await page.context().newCDPSession(page);
  const peak = { worker: 0, page: 0, samples: 0 };
  let workerSession = null;
  let nextId = 1;
  cdp.on('Target.attachedToTarget', (e) => { if (e.targetInfo.type === 'worker') workerSession = e.sessionId; });
  cdp.on('Target.receivedMessageFromTarget', (e) => {
    const used = JSON.parse(e.message).result?.usedSize;
    if (used !== undefined) peak.worker = Math.max(peak.worker, used);
  });
  await cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  const sample = async () => {
    peak.samples++;
    const { usedSize } = await cdp.send('Runtime.getHeapUsage');
    peak.page = Math.max(peak.page, usedSize);
    if (workerSession) {
      await cdp.send('Target.sendMessageToTarget', { sessionId: workerSession, message: JSON.stringify({ id: nextId++, method: 'Runtime.getHeapUsage' }) });
    }
  };
  const timer = setInterval(() => sample().catch(() => {}), 200);
  return {
    async stop() {
      clearInterval(timer);
      await sample();
      await new Promise((resolve) => setTimeout(resolve, 500)); // the worker's last answer
      await cdp.detach();
      return peak;
    },
  };
}

test('a ~100 MB config_dump is checked in the page, with the CLI\'s findings', { timeout: 30 * 60e3 }, async () => {
  const tenants = Number(process.env.XDSCK_E2E_BIG_TENANTS ?? 33000);
  const file = path.join(artifacts, 'big-config-dump.json');
  generate(file, tenants);
  const size = statSync(file).size;

  const { context, page, requests, problems } = await openPage();
  const heaps = await sampleHeaps(page);
  await page.locator('#file').setInputFiles(file);
  await page.waitForFunction(() => document.body.dataset.analyzed, null, { timeout: 0, polling: 100 });
  // The page's own marks: the file opened, its findings shown, its listeners shown.
  const [findingsAt, listenersAt] = await page.evaluate(() => ['xdsck-findings', 'xdsck-listeners'].map(
    (m) => performance.getEntriesByName(m).at(-1).startTime - performance.getEntriesByName('xdsck-open').at(-1).startTime));
  const wasm = Number(await page.evaluate(() => document.body.dataset.wasmMemory));
  const { worker, page: pageHeap, samples } = await heaps.stop();
  const peaks = await rendererPeaks();
  const cliSeconds = cliOneCore(file);
  console.log(`${MB(size)} config_dump (${tenants} tenants): findings shown ${seconds(findingsAt)} after the file was opened `
    + `(${(findingsAt / 1e3 / cliSeconds).toFixed(2)}× the CLI's ${cliSeconds.toFixed(2)} s on one core), listeners ${seconds(listenersAt)}; `
    + `wasm memory ${MB(wasm)} (${(wasm / size).toFixed(2)}× the file); peak JS heap of the worker ${MB(worker)}, of the page ${MB(pageHeap)} (${samples} samples); `
    + `peak RSS of the renderer${peaks.length === 1 ? '' : 's'}: ${peaks.map(MB).join(', ') || 'n/a'}`);

  // Tens of megabytes of report: compared by digest rather than carried out of the page.
  const fromPage = await page.evaluate(async () => {
    const report = JSON.parse(document.querySelector('#report-json').textContent);
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(JSON.stringify(report.findings)));
    const sha256 = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
    return { summary: report.summary, inputs: report.inputs, count: report.findings.length, sha256 };
  });
  const fromCli = JSON.parse(cli(file));
  assert.ok(fromCli.findings.length > tenants, `${fromCli.findings.length} findings`);
  assert.deepEqual(fromPage.summary, fromCli.summary);
  assert.deepEqual(fromPage.inputs, fromCli.inputs);
  assert.equal(fromPage.count, fromCli.findings.length);
  assert.equal(fromPage.sha256, createHash('sha256').update(JSON.stringify(fromCli.findings)).digest('hex'), 'the page\'s findings are the CLI\'s');
  // Paged: the first hundred of each severity.
  assert.deepEqual(
    await page.locator('#findings [data-code]').evaluateAll((ns) => ns.map((n) => n.dataset.code)),
    ['error', 'warning', 'info'].flatMap((sev) => bySeverity(fromCli.findings).filter((f) => f.severity === sev).slice(0, 100).map((f) => f.code)),
  );
  // The listener's 132k chains wait for a click, and then come a page at a time.
  const listener = page.locator('#listeners details.listener').first();
  assert.equal(await listener.evaluate((d) => d.open), false);
  await listener.locator('summary').click();
  await listener.locator('tbody tr').nth(99).waitFor();
  assert.equal(await listener.locator('tbody tr').count(), 100);
  assert.equal(await listener.locator('ul.names li').count(), 100);
  assert.deepEqual(requests, []);
  assert.deepEqual(problems, []);
  await context.close();
  await rm(file);
});
