// The device page's script: registers this browser with the server that served it (user
// agent, platform, each deviceType's opSupportLimits()), then runs the jobs it is sent. A job
// names a module under this server's /TOKEN/jobs/ID/, which the server emitted itself; any
// other URL is refused here too, and the page's Content-Security-Policy allows no script but
// this server's (this one, the encoder it imports, the jobs' modules). Everything shown is set
// as text, never as HTML.

import {base64} from "./base64.js";  // converter/emit/base64.js, served at /TOKEN/base64.js

const token = location.pathname.split("/")[1];
const jobPath = new RegExp(`^/${token}/jobs/[0-9]+/(model\\.js|in[0-9]+\\.bin)$`);
const DEVICE_TYPES = ["cpu", "gpu", "npu"];

function show(id, text) { document.getElementById(id).textContent = text; }

function log(text) {
  const item = document.createElement("li");
  item.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  const list = document.getElementById("log");
  list.prepend(item);
  while (list.children.length > 50) list.lastChild.remove();
}

function described(e) { return {name: e?.name ?? "Error", message: e?.message ?? String(e)}; }

async function registration() {
  const contexts = {}, refused = {};
  if (!("ml" in navigator)) {
    for (const kind of DEVICE_TYPES) {
      refused[kind] = window.isSecureContext ? "this browser has no navigator.ml"
        : "not a secure context: WebNN needs https or localhost";
    }
  } else {
    for (const kind of DEVICE_TYPES) {
      try {
        const context = await navigator.ml.createContext({deviceType: kind});
        // Through JSON: a plain object the server can read, whatever the browser returns.
        contexts[kind] = JSON.parse(JSON.stringify(context.opSupportLimits()));
        if (typeof context.destroy === "function") context.destroy();
      } catch (e) {
        const {name, message} = described(e);
        refused[kind] = `${name}: ${message}`;
      }
    }
  }
  const platform = navigator.userAgentData?.platform || navigator.platform || "";
  return {type: "register", userAgent: navigator.userAgent, platform, contexts, refused};
}

function jobUrl(path) {
  if (typeof path !== "string" || !jobPath.test(path)) throw new Error(`refused URL ${path}`);
  return new URL(path, location.origin).href;
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} for an input`);
  return response.arrayBuffer();
}

// The median time of `job.runs` runs (inputs written, the graph run, its outputs read back)
// after `job.warmup` untimed ones, on the tensors of the first run.
async function repeated(m, context, model, tensors, feeds, job) {
  const warmup = Number.isInteger(job.warmup) ? job.warmup : 0;
  const times = [];
  for (let i = 0; i < warmup + job.runs; i++) {
    const started = performance.now();
    m.writeInputs(context, tensors, feeds);
    m.dispatch(context, model, tensors);
    await m.readOutputs(context, tensors);
    if (i >= warmup) times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const mid = times.length >> 1;
  return times.length % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
}

async function runJob(job) {
  let stage = "import";
  let context = null, model = null, tensors = null, m = null;
  const times = {buildMs: null, runMs: null, medianMs: null};
  try {
    m = await import(jobUrl(job.module));
    stage = "createContext";
    context = await navigator.ml.createContext({deviceType: job.deviceType});
    stage = "weights";
    const weights = await m.loadWeights();
    stage = "build";
    let started = performance.now();
    model = await m.buildGraph(context, weights);
    times.buildMs = performance.now() - started;
    stage = "inputs";
    const feeds = {};
    for (const [name, path] of Object.entries(job.inputs)) feeds[name] = await fetchBytes(jobUrl(path));
    stage = "dispatch";
    started = performance.now();  // inputs written, the graph run, its outputs read back
    tensors = await m.createTensors(context, model);
    m.writeInputs(context, tensors, feeds);
    m.dispatch(context, model, tensors);
    stage = "read";
    const outputs = await m.readOutputs(context, tensors);
    times.runMs = performance.now() - started;
    if (Number.isInteger(job.runs) && job.runs > 0) {  // a bench: the median of warm runs
      stage = "repeat";
      times.medianMs = await repeated(m, context, model, tensors, feeds, job);
    }
    const encoded = {};
    for (const [name, array] of Object.entries(outputs)) {
      encoded[name] = base64(array.buffer.slice(array.byteOffset, array.byteOffset + array.byteLength));
    }
    return {type: "result", id: job.id, outputs: encoded, times};
  } catch (e) {
    return {type: "result", id: job.id, error: {stage, ...described(e)}, times};
  } finally {
    if (tensors !== null) m.destroyTensors(tensors);
    if (model !== null) model.graph.destroy();
    if (context !== null && typeof context.destroy === "function") context.destroy();
  }
}

// A job that neither finishes nor fails in the server's time for it is reported as hung: it
// cannot be cancelled, but the jobs queued after it get their turn (the server has given up
// on it by then).
function withTimeout(running, job) {
  const ms = Number.isInteger(job.timeoutMs) && job.timeoutMs > 0 ? job.timeoutMs : 0;
  if (ms === 0) return running;
  let timer = null;
  const hung = new Promise((resolve) => {
    timer = setTimeout(() => resolve({type: "result", id: job.id, error: {
      stage: "timeout", name: "TimeoutError", message: `no result after ${ms / 1000} s`},
      times: {buildMs: null, runMs: null, medianMs: null}}), ms);
  });
  return Promise.race([running, hung]).finally(() => clearTimeout(timer));
}

async function connect() {
  const wanted = new URLSearchParams(location.search).get("name");
  const scheme = location.protocol === "https:" ? "wss" : "ws";
  const url = new URL(`${scheme}://${location.host}/${token}/ws`);
  if (wanted) url.searchParams.set("name", wanted);
  show("status", "finding this browser's WebNN contexts");
  const registering = await registration();
  const socket = new WebSocket(url.href);
  let queue = Promise.resolve();  // one job at a time, in the order sent
  socket.onopen = () => {
    socket.send(JSON.stringify(registering));
    show("status", "registering");
  };
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.type === "registered") {
      show("name", message.name);
      const kinds = message.deviceTypes.join(", ") || "no deviceType gave a context";
      show("status", `ready (${kinds})`);
      window.webnnDevice = message.name;  // for tests driving this page
    } else if (message.type === "refused") {
      show("status", `refused: ${message.reason}`);
      window.webnnDevice = null;
    } else if (message.type === "job") {
      queue = queue.then(async () => {
        log(`job ${message.id} on ${message.deviceType}: running`);
        const result = await withTimeout(runJob(message), message);
        log(`job ${message.id}: ${result.error ? "failed at " + result.error.stage : "done"}`);
        socket.send(JSON.stringify(result));
      });
    }
  };
  socket.onclose = () => show("status", "disconnected: reload the page to connect again");
}

connect();
