// The checker runs here, off the page's thread, so a 20 MB dump keeps the page responsive.
// It keeps the last analysed text so a trace does not send the input again.
import init, { analyze, diff, gateway, trace, trace_graph, rules, summary, take_panic, __panic_for_test } from './pkg/xdsck_wasm.js';

let text = '';
// A document of the Gateway API group, in YAML or JSON.
const GATEWAY_API = /["']?apiVersion["']?\s*:\s*["']?gateway\.networking\.k8s\.io\//;
let name = 'input';
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
      text = data.text;
      name = data.name || 'input';
      const options = JSON.stringify({ source: name });
      const t0 = performance.now();
      // Gateway API input: what the chosen Cilium version sets and renders, and the findings on
      // what it renders (`xdsck gateway --format json`); its listeners are the rendered ones.
      const isGateway = GATEWAY_API.test(text);
      const report = isGateway ? gateway(text, JSON.stringify({ source: name, cilium: data.cilium })) : analyze(text, options);
      const t1 = performance.now();
      const rendered = isGateway ? JSON.stringify({ apiVersion: 'v1', kind: 'List', items: JSON.parse(report).rendered }) : text;
      const listeners = summary(rendered, options);
      self.postMessage({ type: 'report', id, report, summary: listeners, ms: t1 - t0, memory: memory.buffer.byteLength });
    } else if (data.type === 'trace') {
      const query = JSON.stringify({ ...data.query, source: name });
      const answer = trace(text, query);
      // The listener's match graph with the connection's path, drawn by the same module.
      const graph = trace_graph(text, query);
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
