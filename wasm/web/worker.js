// The checker runs here, off the page's thread, so a 20 MB dump keeps the page responsive.
// It keeps the last analysed input so a trace does not send it again.
import init, { check, diff, gateway, trace, trace_graph, rules, summary, take_panic, __panic_for_test } from './pkg/xdsck_wasm.js';

// The last analysed input: a pasted text, or an opened file's bytes and, once needed, its text.
let input = '';
let text = '';

function inputText() {
  text ??= new TextDecoder().decode(input);
  return text;
}

let name = 'input';
let latestAnalyze = 0;
let memory = null; // the module's linear memory: it only grows, so its size is the peak so far

const ready = init({ module_or_path: new URL('./pkg/xdsck_wasm_bg.wasm', import.meta.url) }).then(
  (wasm) => {
    memory = wasm.memory;
    self.postMessage({ type: 'ready', rules: rules() });
  },
  (e) => self.postMessage({ type: 'fatal', message: `could not start the checker: ${e}` }),
);

function failure(e) {
  // A panic aborts the wasm call with a RuntimeError; the hook kept the panic's message.
  let panic = null;
  if (e instanceof WebAssembly.RuntimeError) {
    try { panic = take_panic(); } catch { /* the instance may be unusable; the page restarts us */ }
  }
  return { panic: e instanceof WebAssembly.RuntimeError, message: panic || (e && e.message) || String(e) };
}

self.onmessage = async ({ data }) => {
  await ready;
  const { id } = data;
  try {
    if (data.type === 'analyze') {
      // A big opened file comes as the File: read here, off the page's thread, as bytes (the
      // checker reads bytes, as the CLI does). Its text is decoded only when needed: for a
      // Gateway API input, or for the first trace.
      latestAnalyze = id;
      const read = data.file ? new Uint8Array(await data.file.arrayBuffer()) : data.text;
      // A newer input came while this one was read: it is the one the page shows and traces.
      if (latestAnalyze !== id) return;
      input = read;
      text = data.file ? null : data.text;
      name = data.name || 'input';
      const options = JSON.stringify({ source: name });
      const t0 = performance.now();
      // Read once for both answers, which come in parts (a tenant-scale report is tens of MB
      // that would otherwise sit whole in the module's memory, which never shrinks). The
      // report is complete when the summary starts: the page shows the findings meanwhile.
      const parts = { report: [], summary: [] };
      const sendReport = () => {
        self.postMessage({ type: 'report', id, report: parts.report.join(''), ms: performance.now() - t0 });
        parts.report = null;
      };
      const bytes = typeof input === 'string' ? new TextEncoder().encode(input) : input;
      const checked = check(bytes, options, {
        report: (p) => parts.report.push(p),
        summary: (p) => {
          if (parts.report) sendReport();
          parts.summary.push(p);
        },
      });
      if (checked) {
        if (parts.report) sendReport();
        self.postMessage({ type: 'summary', id, summary: parts.summary.join(''), memory: memory.buffer.byteLength });
      } else {
        // Gateway API input: what the chosen Cilium version sets and renders, and the findings on
        // what it renders (`xdsck gateway --format json`); its listeners are the rendered ones.
        const report = gateway(inputText(), JSON.stringify({ source: name, cilium: data.cilium }));
        const rendered = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: JSON.parse(report).rendered });
        const listeners = summary(rendered, options);
        self.postMessage({ type: 'report', id, report, ms: performance.now() - t0 });
        self.postMessage({ type: 'summary', id, summary: listeners, memory: memory.buffer.byteLength });
      }
    } else if (data.type === 'trace') {
      const query = JSON.stringify({ ...data.query, source: name });
      const answer = trace(inputText(), query);
      // The listener's match graph with the connection's path, drawn by the same module.
      const graph = trace_graph(inputText(), query);
      self.postMessage({ type: 'trace', id, answer, graph });
    } else if (data.type === 'diff') {
      // Before (the input above) against after: what the change does to traffic.
      const answer = diff(data.before, data.after);
      self.postMessage({ type: 'diff', id, answer });
    } else if (data.type === 'panic') {
      __panic_for_test();
    }
  } catch (e) {
    self.postMessage({ type: 'error', id, request: data.type, ...failure(e) });
  }
};
