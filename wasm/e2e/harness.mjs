// What the page's end-to-end tests share: a static server for wasm/dist (with the page's CSP as
// a header, so that it covers the worker too), Debian's Chromium through playwright-core, the CLI
// whose report the page must match, and a fresh page that records every request after it loaded.

import { before, after } from 'node:test';
import { createServer } from 'node:http';
import { readFile, mkdir } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, '../..');
const dist = path.join(root, 'wasm/dist');
export const artifacts = process.env.XDSCK_E2E_ARTIFACTS ? path.resolve(process.env.XDSCK_E2E_ARTIFACTS) : path.join(root, 'target/e2e');

// The page's own CSP, also sent as a header so that it covers the worker too.
const CSP = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'";
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm' };

let server;
let origin;
/** The Chromium the tests drive; set by the `before` hook `serve()` registers. */
export let browser;

/** Registers the hooks that start the server and Chromium before the file's tests, and stop them after. */
export function serve() {
  before(async () => {
    server = createServer(async (req, res) => {
      const url = new URL(req.url, 'http://x');
      const file = path.normalize(path.join(dist, url.pathname === '/' ? 'index.html' : url.pathname));
      if (!file.startsWith(dist + path.sep)) return res.writeHead(403).end();
      try {
        const body = await readFile(file);
        res.writeHead(200, { 'Content-Type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'Content-Security-Policy': CSP, 'Cache-Control': 'no-store' });
        res.end(body);
      } catch {
        res.writeHead(404).end();
      }
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${server.address().port}`;
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    await mkdir(artifacts, { recursive: true });
  });
  after(async () => {
    await browser?.close();
    server?.close();
  });
}

/** `xdsck --format json FILE`, run in FILE's folder so the source is named by its base name, as the page names an opened file. */
export function cli(file) {
  const abs = path.resolve(root, file);
  return xdsck(['--format', 'json', path.basename(abs)], path.dirname(abs));
}

/** `xdsck ARGS` in `cwd` (the repository by default): its standard output, also on exit status 1 (findings, or traffic that moves). */
export function xdsck(argv, cwd = root) {
  const bin = process.env.XDSCK_BIN;
  const [cmd, args] = bin ? [path.resolve(root, bin), []] : ['cargo', ['run', '-q', '--manifest-path', path.join(root, 'Cargo.toml'), '-p', 'xdsck', '--']];
  try {
    return execFileSync(cmd, [...args, ...argv], { cwd, encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'inherit'] });
  } catch (e) {
    if (e.status === 1) return e.stdout; // findings at or above --fail-on: still the report
    throw e;
  }
}

/** A fresh page, loaded and ready, recording every request (page and worker) from then on. */
export async function openPage({ width = 1400, height = 1000 } = {}) {
  const context = await browser.newContext({ viewport: { width, height } });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  const requests = [];
  let loaded = false;
  context.on('request', (r) => { if (loaded) requests.push(r.url()); });
  await page.goto(origin + '/', { waitUntil: 'load' });
  await page.waitForSelector('body[data-ready="1"]');
  loaded = true;
  return { context, page, requests, problems };
}

/** The report's order within each group, as the page groups: input problems (XDS0xx), then
 * errors, warnings, infos. */
export const bySeverity = (findings) => {
  const order = { error: 1, warning: 2, info: 3 };
  const group = (f) => (f.code.startsWith('XDS0') ? 0 : order[f.severity]);
  return findings.toSorted((a, b) => group(a) - group(b));
};

/** Waits for the page to show a new report and returns it, parsed. */
export async function analyzed(page, previous) {
  await page.waitForFunction((prev) => document.body.dataset.analyzed && document.body.dataset.analyzed !== prev, previous ?? null);
  return JSON.parse(await page.locator('#report-json').textContent());
}
