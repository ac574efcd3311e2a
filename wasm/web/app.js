// The page: input, findings, source view, trace form, listeners, rules. Every verdict comes from
// the wasm module in the worker (the same code and renderer as the CLI); this file only shows it.
// Everything is built with DOM nodes and textContent: no HTML from the input is ever parsed.

const $ = (sel) => document.querySelector(sel);
// Input problems (the input could not be read, whatever their severity) come first and apart:
// they say nothing about what Envoy does with a listener. Which rules those are is core's word
// (`input_problem` in the rules list), read when the checker starts.
const isInputProblem = (f) => rulesByCode.get(f.code)?.input_problem === true;
const GROUPS = [
  ['input', 'Input problems', 'xdsck could not read all of the input', isInputProblem],
  ['error', 'Errors', 'Envoy rejects the listener', (f) => !isInputProblem(f) && f.severity === 'error'],
  ['warning', 'Warnings', 'Envoy accepts it, connections are lost or misrouted', (f) => !isInputProblem(f) && f.severity === 'warning'],
  ['info', 'Info', 'legal, worth knowing', (f) => !isInputProblem(f) && f.severity === 'info'],
];

/** Creates an element: el('p', {class: 'x'}, 'text', child, …). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') node.className = v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

const plural = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;

// ---- the worker ----

let worker;
let nextId = 1;
let latest = { analyze: 0, trace: 0, diff: 0 };
let rulesByCode = new Map();

function startWorker() {
  worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
  worker.onmessage = ({ data }) => handlers[data.type]?.(data);
  worker.onerror = (e) => setStatus(`The checker failed to start: ${e.message || e}`, 'error');
}

const handlers = {
  ready({ rules }) {
    renderRules(JSON.parse(rules));
    document.body.dataset.ready = '1';
    setStatus('Ready. Paste, drop or open a configuration.');
    if (input.value.trim() || fileText !== null) runAnalyze();
  },
  fatal({ message }) {
    setStatus(message, 'error');
  },
  // The findings first, then (a second message: the worker makes it meanwhile) the listeners.
  report({ id, report, ms }) {
    if (id !== latest.analyze) return;
    const parsed = JSON.parse(report);
    renderFindings(parsed);
    renderGateways(parsed.gateways, parsed.cilium);
    const s = parsed.summary;
    setStatus(`Checked in ${ms < 10 ? ms.toFixed(1) : Math.round(ms)} ms: ${plural(s.error, 'error')}, ${plural(s.warning, 'warning')}, ${plural(s.info, 'info')}.`);
    document.body.dataset.findings = String(id);
    performance.mark('xdsck-findings');
    $('#report-json').textContent = report;
  },
  summary({ id, summary, memory }) {
    if (id !== latest.analyze) return;
    renderListeners(JSON.parse(summary));
    // How big the checker's memory has grown (the peak so far): what a big input costs the tab.
    document.body.dataset.wasmMemory = String(memory);
    document.body.dataset.analyzed = String(id);
    performance.mark('xdsck-listeners');
  },
  trace({ id, answer, graph }) {
    if (id !== latest.trace) return;
    renderTrace(JSON.parse(answer), graph);
  },
  diff({ id, answer }) {
    if (id !== latest.diff) return;
    renderDiff(JSON.parse(answer));
  },
  error({ id, request, panic, message }) {
    if (panic) {
      // A panicked instance is not used again.
      worker.terminate();
      startWorker();
    }
    const text = panic ? `xdsck crashed — please report this with the input: ${message}` : message;
    if (request === 'trace' && id === latest.trace) {
      $('#trace-result').replaceChildren(el('div', { class: 'trace-error', role: 'alert' }, el('pre', {}, text)));
    } else if (request === 'diff' && id === latest.diff) {
      $('#diff-result').replaceChildren(el('div', { class: 'trace-error', role: 'alert' }, el('pre', {}, text)));
    } else {
      setStatus(text, 'error');
    }
  },
};

function setStatus(text, kind = '') {
  const status = $('#status');
  status.textContent = text;
  status.className = `status ${kind}`;
}

// ---- input ----

const input = $('#input');
let sourceName = 'input';
let debounce;

function setSourceName(name) {
  sourceName = name;
  $('#source-name').textContent = name === 'input' ? '' : name;
}

// A textarea holding many megabytes freezes the page (layout of one huge text node), so a big
// file is kept here and shown only in the virtualised source view; the textarea says so.
const BIG = 1_000_000;
let fileText = null;
// The big file being checked: the worker reads it itself (a File crosses to it as a handle, not
// a copy), while the page reads it for the source view.
let bigFile = null;

function runAnalyze() {
  if (!document.body.dataset.ready) return;
  clearTimeout(debounce);
  const text = fileText ?? input.value;
  postAnalyze(fileText !== null ? { file: bigFile } : { text }, text.length);
  setSource(text);
}

function postAnalyze(input, size) {
  const id = (latest.analyze = nextId++);
  // A trace answers a question about the previous input: it goes, and a late answer is dropped.
  latest.trace = 0;
  $('#trace-result').replaceChildren();
  setStatus(`Checking ${size > 1e6 ? `${(size / 1e6).toFixed(1)} MB` : `${size} characters`}…`);
  worker.postMessage({ type: 'analyze', id, ...input, name: sourceName, cilium: $('#cilium').value });
}

async function openFile(file) {
  if (!file) return;
  performance.mark('xdsck-open');
  setSourceName(file.name);
  if (file.size > BIG) {
    // Checked from the moment it is opened: the page reads it for its own view meanwhile.
    bigFile = file;
    fileText = null;
    input.value = '';
    input.placeholder = `${file.name} (${(file.size / 1e6).toFixed(1)} MB) is too big to edit here: it is shown in the source view below. Type or paste here to check something else.`;
    const posted = Boolean(document.body.dataset.ready);
    if (posted) postAnalyze({ file }, file.size);
    const text = await file.text();
    if (bigFile !== file) return; // another file, or typing, since
    fileText = text;
    if (posted) setSource(text);
    else runAnalyze(); // or at ready
    return;
  }
  setStatus(`Reading ${file.name}…`);
  const text = await file.text();
  bigFile = null;
  fileText = null;
  input.value = text;
  runAnalyze();
}

input.addEventListener('input', () => {
  setSourceName('input');
  fileText = null;
  bigFile = null;
  clearTimeout(debounce);
  debounce = setTimeout(runAnalyze, 400);
});
$('#check').addEventListener('click', runAnalyze);
$('#cilium').addEventListener('change', runAnalyze);
$('#file').addEventListener('change', (e) => openFile(e.target.files[0]));

const drop = $('#drop');
for (const type of ['dragenter', 'dragover']) {
  document.addEventListener(type, (e) => {
    if (![...(e.dataTransfer?.types || [])].includes('Files')) return;
    e.preventDefault();
    drop.classList.add('dragging');
  });
}
for (const type of ['dragleave', 'dragend']) document.addEventListener(type, () => drop.classList.remove('dragging'));
document.addEventListener('drop', (e) => {
  drop.classList.remove('dragging');
  if (!e.dataTransfer?.files?.length) return;
  e.preventDefault();
  openFile(e.dataTransfer.files[0]);
});

// ---- the source view: only the lines in sight are in the DOM, so a 20 MB input stays fast ----

const LINE_HEIGHT = 20;
const sourceView = $('#source');
const spacer = sourceView.querySelector('.source-spacer');
// Where each line starts, not the lines themselves: a 100 MB dump has 3.6M lines, and as
// strings they cost the page's heap over 100 MB more. Only the lines in sight are cut out.
let sourceText = '';
let lineStarts = [0];
let marks = new Map(); // line -> 'primary' | 'related'

function setSource(text) {
  sourceText = text;
  lineStarts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) lineStarts.push(i + 1);
  marks = new Map();
  spacer.style.height = `${lineStarts.length * LINE_HEIGHT}px`;
  sourceView.scrollTop = 0;
  drawSource();
}

/** Line i (from 0) as the view shows it: without its line break (\n or \r\n), cut at 2000 characters. */
function sourceLine(i) {
  const start = lineStarts[i];
  let end = i + 1 < lineStarts.length ? lineStarts[i + 1] - 1 : sourceText.length;
  if (end > start && i + 1 < lineStarts.length && sourceText[end - 1] === '\r') end--;
  if (end - start > 2000) return `${sourceText.slice(start, start + 2000)} …`;
  return sourceText.slice(start, end) || ' ';
}

function drawSource() {
  const first = Math.max(0, Math.floor(sourceView.scrollTop / LINE_HEIGHT) - 20);
  const last = Math.min(lineStarts.length, first + Math.ceil(sourceView.clientHeight / LINE_HEIGHT) + 40);
  const width = String(lineStarts.length).length;
  const rows = [];
  for (let i = first; i < last; i++) {
    const n = i + 1;
    const mark = marks.get(n);
    rows.push(
      el('div', { class: `line${mark ? ` hl hl-${mark}` : ''}`, dataset: { line: n }, style: null },
        el('span', { class: 'ln', 'aria-hidden': 'true' }, String(n).padStart(width)),
        el('span', { class: 'code' }, sourceLine(i))),
    );
  }
  const block = el('div', { class: 'source-lines' }, rows);
  block.style.transform = `translateY(${first * LINE_HEIGHT}px)`;
  spacer.replaceChildren(block);
}
sourceView.addEventListener('scroll', () => requestAnimationFrame(drawSource));
new ResizeObserver(() => drawSource()).observe(sourceView);

/** Highlights lines (primary first) and scrolls the source view to the first. */
function showLines(primary, related = []) {
  marks = new Map();
  for (const l of related) if (l) marks.set(l, 'related');
  if (primary) marks.set(primary, 'primary');
  if (!primary) return drawSource();
  sourceView.scrollTop = Math.max(0, (primary - 4) * LINE_HEIGHT);
  drawSource();
  sourceView.scrollIntoView({ behavior: 'smooth', block: 'nearest' });
}

// ---- findings ----

function where(loc) {
  if (!loc) return '';
  return loc.line ? `${loc.source}:${loc.line}:${loc.column}` : `${loc.source} ${loc.pointer}`;
}

function renderFindings(report) {
  const inputs = report.inputs.map((i) =>
    i.kind
      ? `${i.source}: ${i.kind}, ${plural(i.listeners, 'listener')}, ${plural(i.filter_chains, 'filter chain')}`
      : `${i.source}: could not be loaded`);
  $('#inputs-summary').textContent = inputs.join('; ');
  const box = $('#findings');
  if (!report.findings.length) {
    box.replaceChildren(el('p', { class: 'clean' }, 'No findings: every listener is consistent with Envoy’s rules.'));
    return;
  }
  const groups = GROUPS.map(([group, title, meaning, member]) => {
    const items = report.findings.filter(member);
    if (!items.length) return null;
    return el('section', { class: `group group-${group}`, 'aria-label': title },
      el('h3', {}, el('span', { class: `badge ${group}` }, group), ` ${title} (${items.length})`, el('span', { class: 'muted meaning' }, ` — ${meaning}`)),
      findingList(items));
  });
  box.replaceChildren(...groups.filter(Boolean));
}

// Gateway API input: each Gateway's and listener's conditions as the chosen Cilium version sets
// them, and whether the listener reaches the rendered CiliumEnvoyConfig.
function renderGateways(gateways, cilium) {
  const box = $('#gateways');
  if (!gateways) {
    box.replaceChildren();
    return;
  }
  const conditions = (cs) => el('ul', { class: 'conditions' },
    ...cs.map((c) => el('li', {}, el('code', {}, `${c.type}=${c.status}`), ` ${c.reason}: ${c.message}`)));
  box.replaceChildren(...gateways.map((g) => el('section', { class: 'gateway', 'aria-label': `Gateway ${g.namespace}/${g.name}` },
    el('h3', {}, `Gateway ${g.namespace}/${g.name} on Cilium ${cilium}`),
    conditions(g.conditions),
    ...g.listeners.map((l) => el('div', { class: 'gateway-listener' },
      el('h4', {}, `listener ${l.name}`, el('span', { class: 'muted' }, l.translated ? ' — rendered into the CiliumEnvoyConfig' : ' — not rendered: no Envoy filter chain')),
      conditions(l.conditions))))));
}

// Thousands of findings as DOM would freeze the page: they are shown a page at a time.
const PAGE = 100;

function findingList(items) {
  return paged(el('ul', { class: 'finding-list' }), items, (f) => el('li', {}, finding(f)));
}

/** `list` with the first PAGE of `items` (each made by `render`), and the button that adds the next. */
function paged(list, items, render) {
  const more = el('button', { type: 'button', class: 'button more' });
  const showMore = () => {
    const shown = list.childElementCount;
    list.append(...items.slice(shown, shown + PAGE).map(render));
    const left = items.length - list.childElementCount;
    more.textContent = `Show ${Math.min(PAGE, left)} more (${left} not shown)`;
    more.hidden = left === 0;
  };
  more.addEventListener('click', showMore);
  showMore();
  return [list, more];
}

function finding(f) {
  const rule = rulesByCode.get(f.code);
  const loc = f.location;
  const select = () => {
    document.querySelectorAll('.finding.selected').forEach((n) => n.classList.remove('selected'));
    button.classList.add('selected');
    showLines(loc?.line, f.related.map((r) => r.location.line));
    if (f.example) fillTrace(f);
  };
  const button = el('button', {
    type: 'button', class: `finding ${f.severity}`, onclick: select,
    dataset: { code: f.code, severity: f.severity, line: loc?.line ?? '' },
    title: loc?.line ? `Show line ${loc.line}` : 'This finding has no line',
  },
    el('span', { class: 'finding-head' },
      el('span', { class: `badge ${f.severity}` }, f.severity),
      el('span', { class: 'code-tag' }, f.code),
      el('span', { class: 'rule-name' }, f.rule),
      el('span', { class: 'where muted' }, where(loc))),
    el('span', { class: 'message' }, f.message),
    f.listener || f.filter_chains.length
      ? el('span', { class: 'meta' },
        f.listener ? el('span', {}, 'listener ', el('strong', {}, f.listener)) : null,
        f.filter_chains.length ? el('span', {}, f.filter_chains.length === 1 ? 'chain ' : 'chains ', el('strong', {}, f.filter_chains.join(', '))) : null)
      : null,
    f.envoy_error ? el('span', { class: 'envoy-error' }, el('span', { class: 'muted' }, 'Envoy: '), f.envoy_error) : null,
    f.related.length ? el('span', { class: 'related' }, f.related.map((r) => el('span', {}, `${r.message} — ${where(r.location)}`))) : null,
    f.example ? el('span', { class: 'example muted' }, 'example connection: ', Object.entries(f.example).map(([k, v]) => `${k} ${Array.isArray(v) ? v.join(',') : v}`).join(' · ')) : null,
    f.notes.length ? el('span', { class: 'notes' }, f.notes.map((n) => el('span', {}, `note: ${n}`))) : null,
  );
  return el('div', { class: 'finding-wrap' }, button,
    rule ? el('a', { class: 'explain', href: `#rule-${f.code}`, onclick: () => openRule(f.code) }, `About ${f.code}`) : null);
}

// ---- before / after ----

$('#diff-run').addEventListener('click', () => {
  const id = (latest.diff = nextId++);
  $('#diff-result').replaceChildren(el('p', { class: 'muted' }, 'Comparing…'));
  worker.postMessage({ type: 'diff', id, before: input.value, after: $('#after').value });
});

/** `xdsck diff`'s answer: its text as core renders it, each listener's status as data. */
function renderDiff({ text, diff }) {
  const moved = diff.listeners.filter((l) => l.status !== 'unchanged');
  $('#diff-result').replaceChildren(
    el('p', { class: 'diff-summary', dataset: { moved: String(moved.length), new: String(diff.findings.new.length), fixed: String(diff.findings.fixed.length) } },
      moved.length ? `${plural(moved.length, 'listener')} not unchanged.` : 'No connection or request lands elsewhere.'),
    el('ul', { class: 'diff-listeners' }, diff.listeners.map((l) => el('li', { dataset: { listener: l.name, status: l.status, connections: String(l.connections.length), requests: String(l.requests.length) } }, `${l.name}: ${l.status}`))),
    el('pre', { class: 'diff-text' }, text));
}

// ---- trace ----

/** Puts a finding's example connection into the trace form, ready to run. */
function fillTrace(f) {
  const x = f.example;
  const set = (id, value) => { $(id).value = value ?? ''; };
  if (x.dst_ip !== undefined && x.dst_port !== undefined) set('#trace-dst', x.dst_ip.includes(':') ? `[${x.dst_ip}]:${x.dst_port}` : `${x.dst_ip}:${x.dst_port}`);
  set('#trace-sni', x.sni);
  set('#trace-alpn', Array.isArray(x.alpn) ? x.alpn.join(',') : x.alpn);
  set('#trace-src', x.src_ip !== undefined && x.src_port !== undefined ? (x.src_ip.includes(':') ? `[${x.src_ip}]:${x.src_port}` : `${x.src_ip}:${x.src_port}`) : '');
  // The example names what the matcher sees; a TLS one is a ClientHello, anything else raw bytes.
  set('#trace-client', x.transport === 'tls' ? 'tls' : x.transport ? 'raw' : '');
  const listener = $('#trace-listener');
  listener.value = [...listener.options].some((o) => o.value === f.listener) ? f.listener : '';
  $('#trace-form').dataset.filledFrom = f.code;
}

$('#trace-form').addEventListener('submit', (e) => {
  e.preventDefault();
  if (!document.body.dataset.ready) return;
  const v = (id) => $(id).value.trim();
  const query = { dst: v('#trace-dst') };
  if (v('#trace-client')) query.client = v('#trace-client');
  if (v('#trace-sni')) query.sni = v('#trace-sni');
  if (v('#trace-alpn')) query.alpn = v('#trace-alpn').split(',').map((s) => s.trim()).filter(Boolean);
  if (v('#trace-src')) query.src = v('#trace-src');
  if (v('#trace-listener')) query.listener = v('#trace-listener');
  // A Host (even empty, once the path or headers are given) asks for the HTTP route too.
  if (v('#trace-host') || v('#trace-path') || v('#trace-headers')) {
    query.host = v('#trace-host');
    query.path = v('#trace-path');
    query.headers = v('#trace-headers').split('\n').map((s) => s.trim()).filter(Boolean);
  }
  const id = (latest.trace = nextId++);
  $('#trace-result').replaceChildren(el('p', { class: 'muted' }, 'Tracing…'));
  worker.postMessage({ type: 'trace', id, query });
});

/** The request's way through the chain's route table, as `xdsck trace --host` prints it. */
function renderHttp(h) {
  const outcome = h.route
    ? ['reached', `route ${h.route} of virtual host ${h.virtual_host}`]
    : h.undecided ? ['undecided', 'undecided'] : ['closed', 'no route: Envoy answers 404'];
  return el('section', { class: 'trace-http' },
    el('div', { class: `trace-outcome ${outcome[0]}`, dataset: { route: h.route ?? '' } },
      el('span', { class: 'arrow', 'aria-hidden': 'true' }, '⇒ '), outcome[1]),
    el('ol', { class: 'trace-steps' }, h.steps.map((s) => el('li', {}, el('span', { class: 'muted' }, `${s.stage} `), s.detail))));
}

function renderTrace(a, graph) {
  const c = a.connection;
  const outcome = {
    filter_chain: ['reached', `filter chain ${a.filter_chain}`],
    default_filter_chain: ['default', `no chain matches: default_filter_chain ${a.filter_chain}`],
    closed: ['closed', 'no chain matches and there is no default chain: Envoy closes the connection'],
    needs_input: ['undecided', 'undecided: the listener needs more about the connection'],
  }[a.outcome] || ['undecided', a.outcome];
  const conn = [
    ['dst', c.destination], ['src', c.source], ['direct src', c.direct_source],
    ['transport', c.transport_protocol], ['sni', c.server_name], ['alpn', c.application_protocols.join(',')],
  ].filter(([, x]) => x).map(([k, x]) => el('span', {}, el('span', { class: 'muted' }, `${k} `), x));
  const rows = a.levels.map((l) => el('tr', { class: l.chosen ? '' : 'nomatch' },
    el('th', { scope: 'row' }, l.level),
    el('td', {}, el('code', {}, l.value)),
    el('td', {}, l.chosen ? el('code', {}, l.chosen) : el('strong', {}, 'nothing matches'), l.ambiguous ? el('span', { class: 'badge warning' }, 'undefined choice') : null),
    el('td', { class: 'lost' },
      l.lost.map((x) => el('div', {}, 'not ', el('code', {}, x.key), `: ${x.why}`)),
      l.chosen ? [] : l.unmatched_keys.map((k) => el('div', {}, 'not ', el('code', {}, k), `: does not match ${l.value}`)),
      !l.chosen && l.unmatched > l.unmatched_keys.length ? el('div', {}, `and ${l.unmatched - l.unmatched_keys.length} more, none of which matches`) : null)));
  $('#trace-result').replaceChildren(...[
    el('div', { class: `trace-outcome ${outcome[0]}`, dataset: { outcome: a.outcome, chain: a.filter_chain ?? '' } },
      el('span', { class: 'arrow', 'aria-hidden': 'true' }, '⇒ '), outcome[1]),
    el('p', { class: 'trace-conn' }, el('span', { class: 'muted' }, 'listener '), el('strong', {}, a.listener), ' · ', conn.flatMap((n, i) => (i ? [' · ', n] : [n]))),
    rows.length
      ? el('div', { class: 'table-scroll' }, el('table', { class: 'trace-levels' },
        el('caption', { class: 'visually-hidden' }, 'Each level of Envoy’s filter-chain match, in order'),
        el('thead', {}, el('tr', {}, el('th', { scope: 'col' }, 'level'), el('th', { scope: 'col' }, 'connection'), el('th', { scope: 'col' }, 'chosen'), el('th', { scope: 'col' }, 'keys that lost'))),
        el('tbody', {}, rows)))
      : null,
    a.notes.length ? el('ul', { class: 'notes' }, a.notes.map((n) => el('li', {}, n))) : null,
    a.http ? renderHttp(a.http) : null,
    // An image, not inline markup: the SVG (which holds names from the input) is never parsed
    // into the page.
    graph
      ? el('figure', { class: 'trace-graph' },
        el('figcaption', { class: 'muted' }, `The match graph of ${a.listener}, one column per level; the connection's path in colour.`),
        el('div', { class: 'table-scroll' }, el('img', { src: `data:image/svg+xml;charset=utf-8,${encodeURIComponent(graph)}`, alt: `Match graph of listener ${a.listener} with the traced path` })))
      : null,
  ].filter(Boolean));
  const line = chainLines.get(`${a.listener}\u0000${a.filter_chain}`);
  if (line) showLines(line);
}

// ---- listeners ----

const chainLines = new Map();

/** Server names in domain order (com.example.api), each with the wildcard that covers it (core's answer). */
function wildcardMap(chains) {
  const entries = [];
  for (const c of chains) {
    c.match.server_names.forEach((n, i) => entries.push({ name: n, chain: c.name, under: c.covered_by?.[i] ?? undefined, key: n.split('.').reverse().join('.') }));
  }
  const collator = new Intl.Collator();
  entries.sort((x, y) => collator.compare(x.key, y.key) || collator.compare(x.name, y.name));
  return entries;
}

function mode(c) {
  if (c.terminates_tls) return ['terminate', 'terminates TLS'];
  if (c.tcp_proxy) return ['passthrough', c.match.transport_protocol === 'tls' || c.match.server_names.length ? 'TLS passthrough' : 'tcp_proxy'];
  return ['plain', c.filters.includes('envoy.filters.network.http_connection_manager') ? 'HTTP' : '—'];
}

function renderListeners(summary) {
  chainLines.clear();
  const listeners = summary.inputs.flatMap((i) => i.listeners);
  const select = $('#trace-listener');
  select.replaceChildren(select.options[0], ...listeners.filter((l) => ['static', 'active', 'declared'].includes(l.state)).map((l) => el('option', { value: l.name }, l.display_name)));
  if (!$('#trace-dst').value) {
    const m = listeners[0]?.address.split(',')[0].match(/^(.*):(\d+)$/);
    if (m) $('#trace-dst').value = `${m[1] === '0.0.0.0' ? '10.0.0.1' : m[1]}:${m[2]}`;
  }
  if (!listeners.length) {
    $('#listeners').replaceChildren(el('p', { class: 'muted' }, 'No listeners in this input.'));
    return;
  }
  $('#listeners').replaceChildren(...listeners.map((l) => {
    // Findings name a listener by its display name, a trace answer by its name (empty for an unnamed one).
    const names = l.name === l.display_name ? [l.name] : [l.name, l.display_name];
    for (const c of l.chains) if (c.line) for (const n of names) chainLines.set(`${n}\u0000${c.name}`, c.line);
    const counts = { terminate: 0, passthrough: 0, plain: 0 };
    for (const c of l.chains) counts[mode(c)[0]]++;
    // A big dump has thousands of chains: a listener's table is built when it is opened.
    const details = el('details', { class: 'listener' },
      el('summary', {},
        el('strong', {}, l.display_name), ' ', el('code', {}, l.address || 'no address'),
        l.state !== 'declared' ? el('span', { class: `state ${l.state}` }, l.state) : null,
        el('span', { class: 'muted' }, ` ${plural(l.chains.length, 'chain')} · ${counts.terminate} terminate · ${counts.passthrough} passthrough`)));
    details.addEventListener('toggle', () => {
      if (details.open && details.childElementCount === 1) details.append(...listenerBody(l).filter(Boolean));
    }, { once: false });
    // Opened for the reader when small; a tenant gateway's 100k chains wait for a click.
    if (listeners.length <= 3 && l.chains.length <= PAGE * 10) details.open = true;
    return details;
  }));
}

function listenerBody(l) {
  const names = wildcardMap(l.chains);
  const [chainRows, moreChains] = paged(el('tbody'), l.chains, chainRow);
  return [
    l.listener_filters.length ? el('p', { class: 'muted' }, 'listener filters: ', l.listener_filters.join(', ')) : null,
    l.filter_chain_matcher ? el('p', { class: 'muted' }, 'chains are selected by filter_chain_matcher') : null,
    el('div', { class: 'table-scroll' }, el('table', { class: 'chains' },
      el('caption', { class: 'visually-hidden' }, `Filter chains of ${l.display_name}`),
      el('thead', {}, el('tr', {}, ['chain', 'mode', 'server names', 'transport', 'ALPN', 'other match', 'routes'].map((h) => el('th', { scope: 'col' }, h)))),
      chainRows)),
    moreChains,
    names.length
      ? el('div', { class: 'wildcards' }, el('h4', {}, 'Server names'),
        paged(el('ul', { class: 'names' }), names, (n) => el('li', { class: n.under ? 'covered' : '' },
          el('code', {}, n.name), ' → ', n.chain,
          n.under ? el('span', { class: 'muted' }, ` (within ${n.under})`) : null)))
      : null,
  ];
}

function chainRow(c) {
  const m = c.match;
  const other = [
    m.destination_port != null ? `port ${m.destination_port}` : null,
    m.prefix_ranges.length ? `dst ${m.prefix_ranges.join(', ')}` : null,
    m.direct_source_prefix_ranges.length ? `direct src ${m.direct_source_prefix_ranges.join(', ')}` : null,
    m.source_type !== 'ANY' ? `source ${m.source_type}` : null,
    m.source_prefix_ranges.length ? `src ${m.source_prefix_ranges.join(', ')}` : null,
    m.source_ports.length ? `src ports ${m.source_ports.join(', ')}` : null,
  ].filter(Boolean).join(' · ');
  const [kind, label] = mode(c);
  return el('tr', {},
    el('td', {}, c.line ? el('button', { type: 'button', class: 'link', onclick: () => showLines(c.line), title: `Show line ${c.line}` }, c.name) : c.name, c.default ? el('span', { class: 'muted' }, ' (default)') : null),
    el('td', {}, el('span', { class: `mode ${kind}` }, label)),
    el('td', {}, m.server_names.join(', ') || el('span', { class: 'muted' }, 'any')),
    el('td', {}, m.transport_protocol || el('span', { class: 'muted' }, 'any')),
    el('td', {}, m.application_protocols.join(', ') || el('span', { class: 'muted' }, 'any')),
    el('td', {}, other || el('span', { class: 'muted' }, '—')),
    el('td', { class: 'routes' }, c.route_tables?.length ? c.route_tables.map(routeTable) : el('span', { class: 'muted' }, '—')));
}

/** One HCM's route table, compact: its name and origin, then each virtual host and its domains. */
function routeTable(t) {
  const origin = { inline: 'inline', rds: 'RDS', scoped: 'scoped routes, not analysed', none: 'no route table' }[t.source];
  const head = el('div', {}, t.route_config != null ? el('code', {}, t.route_config) : el('span', { class: 'muted' }, '(unnamed)'),
    el('span', { class: 'muted' }, ` ${origin}`),
    t.source === 'rds' && !t.found ? el('span', { class: 'muted' }, ' · not in the input') : null);
  return el('div', { class: 'route-table' }, head,
    t.virtual_hosts.length
      ? el('ul', { class: 'vhosts' }, ...t.virtual_hosts.map((v) => el('li', {}, el('strong', {}, v.name), ': ',
        v.domains.join(', ') || el('span', { class: 'muted' }, 'no domains'),
        el('span', { class: 'muted' }, ` (${plural(v.routes, 'route')})`))))
      : null);
}

// ---- rules ----

function renderRules(doc) {
  rulesByCode = new Map(doc.rules.map((r) => [r.code, r]));
  $('#rules').replaceChildren(...doc.rules.map((r) =>
    el('details', { class: 'rule', id: `rule-${r.code}` },
      el('summary', {}, el('span', { class: 'code-tag' }, r.code), ' ', el('strong', {}, r.name), ' ',
        el('span', { class: `badge ${r.severity}` }, r.severity), ' ', el('span', { class: 'muted' }, r.summary)),
      el('div', { class: 'markdown' }, markdown(r.explanation)))));
}

function openRule(code) {
  const node = document.getElementById(`rule-${code}`);
  if (node) node.open = true;
}

/** The small Markdown the explanations use: headings, paragraphs, lists, code blocks, `code`. */
function markdown(src) {
  const out = [];
  const textLines = src.split('\n');
  let para = [];
  let list = null;
  const flush = () => {
    if (para.length) out.push(el('p', {}, inline(para.join(' '))));
    para = [];
    if (list) out.push(list);
    list = null;
  };
  for (let i = 0; i < textLines.length; i++) {
    const line = textLines[i];
    if (line.startsWith('```')) {
      flush();
      const code = [];
      for (i++; i < textLines.length && !textLines[i].startsWith('```'); i++) code.push(textLines[i]);
      out.push(el('pre', {}, el('code', {}, code.join('\n'))));
    } else if (/^#{1,6} /.test(line)) {
      flush();
      out.push(el('h5', {}, inline(line.replace(/^#+ /, ''))));
    } else if (/^\s*[-*] /.test(line)) {
      if (para.length) { out.push(el('p', {}, inline(para.join(' ')))); para = []; }
      list ??= el('ul');
      list.append(el('li', {}, inline(line.replace(/^\s*[-*] /, ''))));
    } else if (/^\s+\S/.test(line) && list) {
      list.lastChild.append(' ', ...inline(line.trim()));
    } else if (!line.trim()) {
      flush();
    } else {
      if (list) flush();
      para.push(line);
    }
  }
  flush();
  return out;
}

function inline(text) {
  const parts = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*]+)\*|\[([^\]]+)\]\([^)]*\)/g;
  let last = 0;
  for (let m; (m = re.exec(text));) {
    if (m.index > last) parts.push(text.slice(last, m.index));
    if (m[1]) parts.push(el('code', {}, m[1]));
    else if (m[2]) parts.push(el('strong', {}, m[2]));
    else if (m[3]) parts.push(el('em', {}, m[3]));
    else parts.push(m[4]);
    last = re.lastIndex;
  }
  if (last < text.length) parts.push(text.slice(last));
  return parts;
}

// For the end-to-end test: make the module panic, to see the page report it and recover.
document.addEventListener('xdsck-test-panic', () => worker.postMessage({ type: 'panic', id: 0 }));

startWorker();
