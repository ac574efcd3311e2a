// End-to-end test of the built page (wasm/dist, from wasm/build.sh) in Debian's Chromium:
// paste a dump with a known duplicate, check the findings, click one, trace a connection, and
// check that nothing left the page after it loaded. The page's findings must be exactly those
// of `xdsck --format json` for the same file.
//
// Env: XDSCK_BIN (default: `cargo run -q -p xdsck --`), CHROMIUM (default /usr/bin/chromium),
// XDSCK_E2E_ARTIFACTS (default: target/e2e; scripts/test-wasm.sh passes cargo's target dir).
// Artifacts: page.png (and page-trace.png) there.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, writeFile, rm } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { serve, root, artifacts, cli, xdsck, openPage, bySeverity, analyzed } from './harness.mjs';

const SAME_SNI = 'testdata/checks/duplicate-filter-chain-match/bad-same-sni.yaml';
const CONFIG_DUMP = 'testdata/envoy/config_dump.json';
// The README's example of Envoy's schema: three located errors, each with Envoy's words.
const SCHEMA_EXAMPLE = 'testdata/checks/constraint-violation/bad-port-over-65535.yaml';

serve();

test('paste a dump with a duplicate: findings, highlight, trace, no request after load', async () => {
  const { context, page, requests, problems } = await openPage();
  const text = await readFile(path.join(root, SAME_SNI), 'utf8');

  await page.locator('textarea#input').fill(text);
  const report = await analyzed(page);

  // The findings shown are the report's, grouped by severity (errors first).
  const shown = await page.locator('#findings [data-code]').evaluateAll((ns) => ns.map((n) => [n.dataset.code, n.dataset.severity]));
  assert.deepEqual(shown, bySeverity(report.findings).map((f) => [f.code, f.severity]));
  assert.ok(shown.some(([code, sev]) => code === 'XDS101' && sev === 'error'), `no XDS101 error in ${JSON.stringify(shown)}`);
  assert.equal(await page.locator('#findings .more:visible').count(), 0, 'no paging for two findings');
  const dup = report.findings.find((f) => f.code === 'XDS101');
  assert.equal(dup.listener, 'gateway-443');
  assert.equal(dup.location.source, 'input');
  await assert.doesNotReject(page.locator('#findings [data-code="XDS101"]', { hasText: 'gateway-443' }).first().waitFor());

  // Clicking it shows and highlights its line in the source view.
  await page.locator('#findings [data-code="XDS101"]').first().click();
  const hl = page.locator(`#source .line.hl-primary[data-line="${dup.location.line}"]`);
  await hl.waitFor();
  assert.match(await hl.textContent(), new RegExp(text.split('\n')[dup.location.line - 1].trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  const [box, view] = [await hl.boundingBox(), await page.locator('#source').boundingBox()];
  assert.ok(box.y >= view.y && box.y + box.height <= view.y + view.height, 'the highlighted line is in view');
  for (const r of dup.related.filter((r) => r.location.line)) {
    await page.locator(`#source .line.hl-related[data-line="${r.location.line}"]`).waitFor();
  }
  await page.screenshot({ path: path.join(artifacts, 'page.png'), fullPage: true });

  // A trace: the chain reached and each level's decision.
  await page.locator('#trace-dst').fill('10.0.0.1:443');
  await page.locator('#trace-sni').fill('web.tenant1.example.com');
  await page.locator('#trace-run').click();
  const outcome = page.locator('#trace-result [data-outcome]');
  await outcome.waitFor();
  assert.equal(await outcome.getAttribute('data-chain'), 'other');
  assert.match(await outcome.textContent(), /filter chain other/);
  assert.doesNotMatch(await page.locator('#trace-result').textContent(), /null|undefined/);
  const levels = await page.locator('#trace-result tbody tr').evaluateAll((rows) => rows.map((r) => [...r.cells].map((c) => c.textContent.trim())));
  assert.ok(levels.some(([level, value, chosen]) => level === 'server_name' && value === 'web.tenant1.example.com' && chosen === 'web.tenant1.example.com'), JSON.stringify(levels));

  // A question without an answer is shown as such, not thrown away.
  await page.locator('#trace-dst').fill('10.0.0.1:80');
  await page.locator('#trace-run').click();
  await page.locator('#trace-result .trace-error', { hasText: 'no listener is bound' }).waitFor();

  // The rules and the per-listener summary are there.
  assert.ok(await page.locator('#rules details#rule-XDS101').count());
  await page.locator('#listeners .listener', { hasText: 'gateway-443' }).waitFor();
  assert.equal(await page.locator('#listeners .listener tbody tr').count(), 4);

  await page.locator('#trace-dst').fill('10.0.0.1:443');
  await page.locator('#trace-run').click();
  await page.locator('#trace-result [data-outcome]').waitFor();
  await page.screenshot({ path: path.join(artifacts, 'page-trace.png'), fullPage: true });

  assert.deepEqual(requests, [], 'no request leaves the page after it has loaded');
  assert.deepEqual(problems, []);
  await context.close();
});

for (const fixture of [SAME_SNI, CONFIG_DUMP, SCHEMA_EXAMPLE]) {
  test(`the page and \`xdsck --format json\` give identical findings: ${fixture}`, async () => {
    const { context, page, requests, problems } = await openPage();
    await page.locator('#file').setInputFiles(path.join(root, fixture));
    const fromPage = await analyzed(page);
    const fromCli = JSON.parse(cli(fixture));
    assert.ok(fromCli.findings.length > 0, 'the fixture has findings');
    assert.deepEqual(fromPage.findings, fromCli.findings);
    assert.deepEqual(fromPage.summary, fromCli.summary);
    assert.deepEqual(fromPage.inputs, fromCli.inputs);
    const shown = await page.locator('#findings [data-code]').evaluateAll((ns) => ns.map((n) => n.dataset.code));
    assert.deepEqual(shown, bySeverity(fromCli.findings).map((f) => f.code));
    if (fixture === SCHEMA_EXAMPLE) {
      const errors = fromPage.findings.filter((f) => f.severity === 'error');
      assert.deepEqual(errors.map((f) => f.code), ['XDS120', 'XDS119', 'XDS120']);
      assert.ok(errors.every((f) => f.envoy_error && f.location.line), JSON.stringify(errors));
    }
    assert.deepEqual(requests, []);
    assert.deepEqual(problems, []);
    await context.close();
  });
}

test('before / after: the page gives what `xdsck diff --format json` gives, and shows its text', async () => {
  const { context, page, requests, problems } = await openPage();
  const before = 'testdata/envoy/config_dump.json';
  const after = 'testdata/diff/config_dump-without-api.json';
  await page.locator('#file').setInputFiles(path.join(root, before));
  await analyzed(page);
  await page.locator('textarea#after').fill(await readFile(path.join(root, after), 'utf8'));
  await page.locator('#diff-run').click();
  const changed = page.locator('#diff-result li[data-status="changed"]');
  await changed.waitFor();
  assert.equal(await changed.getAttribute('data-listener'), 'gateway-https');
  assert.equal(await changed.getAttribute('data-connections'), '1');
  const text = await page.locator('#diff-result pre.diff-text').textContent();
  assert.match(text, /tls, server names api\.example\.com: 'tls-passthrough-api' -> 'https-example-com'/);
  assert.match(text, /xdsck trace after --listener gateway-https .* --sni api\.example\.com/);
  // The classes are the CLI's, the same witnesses (the paths in the commands aside).
  const fromCli = JSON.parse(xdsck(['diff', before, after, '--format', 'json']));
  const shown = await page.locator('#diff-result li').evaluateAll((ns) => ns.map((n) => [n.dataset.listener, n.dataset.status]));
  assert.deepEqual(shown, fromCli.listeners.map((l) => [l.name, l.status]));
  assert.deepEqual(requests, []);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a panic in the module is shown, and the page recovers', async () => {
  const { context, page, requests } = await openPage();
  await page.evaluate(() => document.dispatchEvent(new Event('xdsck-test-panic')));
  await page.locator('#status.error', { hasText: 'deliberate panic for the test' }).waitFor();
  // A fresh worker (loading the module again is part of recovering, not traffic from the input).
  await page.waitForSelector('body[data-ready="1"]');
  requests.length = 0;
  await page.locator('textarea#input').fill(await readFile(path.join(root, SAME_SNI), 'utf8'));
  const report = await analyzed(page);
  assert.ok(report.findings.some((f) => f.code === 'XDS101'));
  await context.close();
});

test("a listener's server names are each shown under the wildcard core says covers it", async () => {
  const { context, page, problems } = await openPage();
  const listener = (name, names) => ({ name, filter_chain_match: { server_names: names }, filters: [{ name: 'envoy.filters.network.tcp_proxy', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy', stat_prefix: name, cluster: name } }] });
  const text = JSON.stringify([{ name: 'edge', address: { socket_address: { address: '10.0.0.1', port_value: 443 } },
    filter_chains: [listener('wide', ['*.example.com']), listener('api', ['*.api.example.com', 'x.api.example.com'])] }]);
  await page.locator('textarea#input').fill(text);
  await analyzed(page);
  const names = await page.locator('#listeners ul.names li').evaluateAll((ns) => ns.map((n) => n.textContent));
  // The longest wildcard above a name takes it, as Envoy looks it up (not the first in order).
  assert.ok(names.includes('x.api.example.com → api (within *.api.example.com)'), JSON.stringify(names));
  assert.ok(names.includes('*.api.example.com → api (within *.example.com)'), JSON.stringify(names));
  assert.deepEqual(problems, []);
  await context.close();
});

test("a listener's view shows its chains' route tables and virtual hosts", async () => {
  const { context, page, problems } = await openPage();
  await page.locator('textarea#input').fill(await readFile(path.join(root, 'testdata/checks/shadowed-route/bad-catch-all-first.yaml'), 'utf8'));
  await analyzed(page);
  const routes = page.locator('#listeners .listener', { hasText: 'ingress' }).locator('tbody tr td.routes');
  await routes.first().waitFor();
  const text = await routes.first().textContent();
  assert.match(text, /ingress-routes inline/);
  assert.match(text, /api: api\.example\.com \(3 routes\)/);
  assert.match(text, /admin: \*\.admin\.example\.com \(4 routes\)/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('a 20 MB dump is checked in the worker while the page stays responsive', async () => {
  // 250 listeners of 61 TLS chains (one duplicate each), certificates and keys inline (a chain
  // without its key is an error of its own): ~20 MB of JSON.
  const listeners = [];
  for (let l = 0; l < 250; l++) {
    const chains = [];
    for (let c = 0; c < 60; c++) {
      chains.push({
        name: `t${l}-c${c}`,
        filter_chain_match: { transport_protocol: 'tls', server_names: [`svc${c}.tenant${l}.example.com`, `alt${c}.tenant${l}.example.com`] },
        filters: [{ name: 'envoy.filters.network.tcp_proxy', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy', stat_prefix: `s${c}`, cluster: `b${l}-${c}` } }],
        transport_socket: { name: 'envoy.transport_sockets.tls', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext', common_tls_context: { tls_certificates: [{ certificate_chain: { inline_string: `-----BEGIN CERTIFICATE-----\n${'A'.repeat(400)}\n-----END CERTIFICATE-----` }, private_key: { inline_string: `-----BEGIN PRIVATE KEY-----\n${'B'.repeat(40)}\n-----END PRIVATE KEY-----` } }] } } },
      });
    }
    chains.push({ ...chains[0], name: `t${l}-dup` });
    listeners.push({ name: `listener-${l}`, address: { socket_address: { address: '0.0.0.0', port_value: 10000 + l } }, filter_chains: chains });
  }
  const text = JSON.stringify(listeners, null, 1);
  assert.ok(text.length > 19e6, `${text.length} bytes`);
  const file = path.join(artifacts, 'big.json');
  await writeFile(file, text);

  const { context, page, requests } = await openPage();
  await page.evaluate(() => {
    window.gaps = [];
    let last = performance.now();
    const tick = () => { const now = performance.now(); window.gaps.push(now - last); last = now; window.raf = requestAnimationFrame(tick); };
    window.raf = requestAnimationFrame(tick);
  });
  const started = Date.now();
  await page.locator('#file').setInputFiles(file);
  const report = await analyzed(page);
  const took = Date.now() - started;
  const longest = await page.evaluate(() => { cancelAnimationFrame(window.raf); return Math.max(...window.gaps); });
  console.log(`20 MB: checked in ${took} ms; the longest the page's thread was busy: ${Math.round(longest)} ms`);
  assert.equal(report.summary.error, 250);
  assert.equal(report.summary.warning, 15000);
  // Measured here: ~0.3 s (splitting lines, handing the text over, parsing the report). Before the
  // page kept big files out of the textarea and paged its findings, it was 12–30 s.
  assert.equal(await page.locator('#findings [data-code]').count(), 200, 'a page of each severity');
  await page.locator('#findings .group-warning .more').click();
  assert.equal(await page.locator('#findings [data-code]').count(), 300);
  assert.ok(longest < 3000, `the page's thread was blocked for ${Math.round(longest)} ms`);
  assert.deepEqual(requests, []);
  await context.close();
  await rm(file);
});

const BLACKHOLE = 'testdata/checks/match-blackhole/bad-exact-sni-requires-h2.yaml';

test('every group of findings is on the page, input problems apart from Envoy errors', async () => {
  const { context, page, problems } = await openPage();
  await page.locator('#file').setInputFiles(path.join(root, CONFIG_DUMP));
  const report = await analyzed(page);
  assert.ok(report.summary.info > 0 && report.summary.error > 0);
  // No fixed height: the findings box does not scroll, so the info group is not cut off.
  const clipped = await page.locator('#results').evaluate((n) => n.scrollHeight > n.clientHeight + 1);
  assert.equal(clipped, false, 'the findings box scrolls inside itself');
  await page.locator('#findings .group-info [data-code="XDS301"]').first().waitFor();

  // An input that cannot be read is an input problem, not "Envoy rejects the listener".
  await page.locator('textarea#input').fill('{"configs": [');
  const broken = await analyzed(page, String(await page.evaluate(() => document.body.dataset.analyzed)));
  assert.equal(broken.findings[0].code, 'XDS004');
  await page.locator('#findings .group-input [data-code="XDS004"]').waitFor();
  assert.equal(await page.locator('#findings .group-error').count(), 0);
  assert.match(await page.locator('#findings .group-input h3').textContent(), /Input problems/);
  assert.deepEqual(problems, []);
  await context.close();
});

test('clicking a finding fills the trace form with its example; a new input clears the trace', async () => {
  const { context, page, problems } = await openPage();
  await page.locator('#file').setInputFiles(path.join(root, BLACKHOLE));
  const report = await analyzed(page);
  const hole = report.findings.find((f) => f.code === 'XDS201');
  await page.locator('#findings [data-code="XDS201"]').click();
  assert.equal(await page.locator('#trace-dst').inputValue(), `${hole.example.dst_ip}:${hole.example.dst_port}`);
  assert.equal(await page.locator('#trace-sni').inputValue(), hole.example.sni);
  assert.equal(await page.locator('#trace-alpn').inputValue(), hole.example.alpn.join(','));
  assert.equal(await page.locator('#trace-src').inputValue(), `${hole.example.src_ip}:${hole.example.src_port}`);
  assert.equal(await page.locator('#trace-client').inputValue(), 'tls');
  assert.equal(await page.locator('#trace-listener').inputValue(), hole.listener);
  await page.locator('#trace-run').click();
  const outcome = page.locator('#trace-result [data-outcome]');
  await outcome.waitFor();
  // The example is a black hole: Envoy closes it, and the key that lost is named.
  assert.equal(await outcome.getAttribute('data-outcome'), 'closed');
  assert.match(await page.locator('#trace-result').textContent(), /not h2: does not match http\/1\.1/);
  // The match graph is drawn with the path up to where it stopped: the listener, then api.example.com.
  const img = page.locator('#trace-result .trace-graph img');
  await img.waitFor();
  const svg = decodeURIComponent((await img.getAttribute('src')).replace(/^data:image\/svg\+xml;charset=utf-8,/, ''));
  const onPath = svg.split('\n').filter((l) => l.startsWith('<g data-path'));
  assert.ok(onPath.some((l) => l.includes('>api.example.com<')), onPath.join('\n'));
  assert.ok(!onPath.some((l) => l.includes('>chain ')), 'no chain is reached');
  assert.ok(await img.evaluate((n) => n.complete && n.naturalWidth > 0), 'the image renders');

  // Another input: the old answer is gone.
  const before = await page.evaluate(() => document.body.dataset.analyzed);
  await page.locator('textarea#input').fill(await readFile(path.join(root, SAME_SNI), 'utf8'));
  await analyzed(page, before);
  assert.equal(await page.locator('#trace-result').textContent(), '');
  assert.deepEqual(problems, []);
  await context.close();
});

for (const [width, name] of [[1400, 'desktop'], [420, 'narrow']]) {
  test(`nothing overflows the page at ${width} px (${name})`, async () => {
    const { context, page, problems } = await openPage({ width, height: 900 });
    await page.locator('#file').setInputFiles(path.join(root, CONFIG_DUMP));
    await analyzed(page);
    // The widest parts: a listener's chain table, a rule's example, a trace's level table.
    await page.locator('#listeners .listener', { hasText: 'gateway-https' }).locator('summary').click();
    await page.locator('#listeners table.chains').first().waitFor();
    await page.locator('#rule-XDS301 summary').click();
    await page.locator('#rule-XDS301 pre').first().waitFor();
    await page.locator('#trace-dst').fill('127.0.0.1:21001');
    await page.locator('#trace-sni').fill('api.tenant1.example.com');
    await page.locator('#trace-run').click();
    await page.locator('#trace-result [data-outcome]').waitFor();
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    await page.screenshot({ path: path.join(artifacts, `page-${name}.png`), fullPage: true });
    assert.ok(overflow <= 0, `the page is ${overflow} px wider than the ${width} px window`);
    assert.deepEqual(problems, []);
    await context.close();
  });
}

test('Gateway API YAML: the chosen Cilium version\'s conditions and the CLI\'s findings', async () => {
  const { context, page, problems } = await openPage();
  const file = 'testdata/gateway/tenant-dns01.yaml';
  const conflicted = (report) => report.gateways[0].listeners
    .filter((l) => l.conditions.some((c) => c.type === 'Conflicted' && c.status === 'True'))
    .map((l) => l.name);
  await page.locator('textarea#input').fill(await readFile(path.join(root, file), 'utf8'));
  let report = await analyzed(page);
  assert.equal(report.cilium, 'main', 'the newest version by default');
  // A version chosen: the same input is checked again.
  let before = String(await page.evaluate(() => document.body.dataset.analyzed));
  await page.locator('#cilium').selectOption('1.19.6');
  report = await analyzed(page, before);
  assert.deepEqual(conflicted(report), ['https', 'tls-api', 'tls-vm-exportproxy', 'tls-cdi-uploadproxy']);
  await page.locator('#gateways h3', { hasText: 'Gateway tenant1/tenant1 on Cilium 1.19.6' }).waitFor();
  assert.equal(await page.locator('#gateways .gateway-listener').count(), 5);
  // The findings are those of `xdsck gateway --cilium 1.19.6 --format json` on the same file.
  const bin = process.env.XDSCK_BIN;
  const [cmd, args] = bin ? [path.resolve(root, bin), []] : ['cargo', ['run', '-q', '--manifest-path', path.join(root, 'Cargo.toml'), '-p', 'xdsck', '--']];
  let out;
  try {
    out = execFileSync(cmd, [...args, 'gateway', '--cilium', '1.19.6', '--format', 'json', file], { cwd: root, encoding: 'utf8' });
  } catch (e) {
    out = e.stdout; // exit 1: findings
  }
  const fromCli = JSON.parse(out);
  assert.deepEqual(report.findings.map((f) => [f.code, f.message]), fromCli.findings.map((f) => [f.code, f.message]));
  before = String(await page.evaluate(() => document.body.dataset.analyzed));
  await page.locator('#cilium').selectOption('1.19.5');
  report = await analyzed(page, before);
  assert.deepEqual(conflicted(report), []);
  assert.deepEqual(problems, []);
  await context.close();
});

test("Cilium's CiliumEnvoyConfigs, which name their Gateway in ownerReferences, are checked as the CLI checks them", async () => {
  const { context, page, problems } = await openPage();
  const file = 'testdata/cilium/cec-list.yaml';
  await page.locator('textarea#input').fill(await readFile(path.join(root, file), 'utf8'));
  const report = await analyzed(page);
  const fromCli = JSON.parse(cli(file));
  assert.deepEqual(report.summary, fromCli.summary);
  assert.deepEqual(report.findings.map((f) => [f.code, f.message]), fromCli.findings.map((f) => [f.code, f.message]));
  assert.equal(report.gateways, undefined, 'not answered as Gateway API input');
  assert.ok(await page.locator('#listeners details.listener').count() > 0);
  assert.deepEqual(problems, []);
  await context.close();
});
