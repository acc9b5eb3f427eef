// The page the chromium runtime drives: runs emitted modules on inputs fetched from the same
// loopback server and hands the outputs back as base64. One call runs a batch of cases.

import {base64} from "./base64.js";  // converter/emit/base64.js, copied beside this file

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

async function runCase(spec) {
  let stage = "import";
  let context = null, model = null, tensors = null, m = null;
  const times = {buildMs: null, runMs: null};  // as the device page measures them
  try {
    m = await import(spec.module);
    stage = "createContext";
    context = await navigator.ml.createContext();
    stage = "weights";
    const weights = await m.loadWeights();
    stage = "build";
    // A module written for several values of its dims takes them here (others ignore it).
    let started = performance.now();
    model = await m.buildGraph(context, weights, spec.dims);
    times.buildMs = performance.now() - started;
    if (spec.buildOnly) return {built: true};
    stage = "inputs";
    const feeds = {};
    for (const [name, file] of Object.entries(spec.inputs)) feeds[name] = await fetchBytes(file);
    stage = "dispatch";
    started = performance.now();  // inputs written, the graph run, its outputs read back
    tensors = await m.createTensors(context, model);
    m.writeInputs(context, tensors, feeds);
    m.dispatch(context, model, tensors);
    stage = "read";
    const outputs = await m.readOutputs(context, tensors);
    times.runMs = performance.now() - started;
    const encoded = {};
    for (const [name, array] of Object.entries(outputs)) encoded[name] = base64(array.buffer);
    return {outputs: encoded, times};
  } catch (e) {
    return {error: {stage, name: e?.name ?? "Error", message: e?.message ?? String(e)}, times};
  } finally {
    if (tensors !== null) m.destroyTensors(tensors);
    if (model !== null) model.graph.destroy();
    if (context !== null && typeof context.destroy === "function") context.destroy();
  }
}

// A case that neither finishes nor fails in `timeoutMs` is reported as hung (it cannot be
// cancelled, but the cases after it still get their turn).
function timeout(ms) {
  return new Promise((resolve) => setTimeout(
    () => resolve({error: {stage: "timeout", name: "TimeoutError",
                           message: `no result after ${ms / 1000} s`}}), ms));
}

window.webnnRunCases = async (specs, timeoutMs) => {
  const results = [];
  for (const spec of specs) results.push(await Promise.race([runCase(spec), timeout(timeoutMs)]));
  return results;
};

// -- sessions: a module's createSession() kept open across calls (chromium_session.py) --------
function unbase64(text) {
  const raw = atob(text);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

const sessions = new Map();
let sessionCount = 0;

async function guarded(stage, fn) {
  try {
    return await fn();
  } catch (e) {
    return {error: {stage, name: e?.name ?? "Error", message: e?.message ?? String(e)}};
  }
}

window.webnnOpenSession = async (module) => {
  // The stages of runCase's, so that a build failure is located the same way.
  let stage = "import";
  try {
    const m = await import(module);
    stage = "createContext";
    const context = await navigator.ml.createContext();
    stage = "weights";
    const weights = await m.loadWeights();
    stage = "build";
    const session = await m.createSession(context, weights);
    const id = ++sessionCount;
    sessions.set(id, {context, session});
    return {id};
  } catch (e) {
    return {error: {stage, name: e?.name ?? "Error", message: e?.message ?? String(e)}};
  }
};

window.webnnStep = ([id, feeds]) => guarded("step", async () => {
  const decoded = {};
  for (const [name, text] of Object.entries(feeds)) decoded[name] = unbase64(text);
  const outputs = await sessions.get(id).session.step(decoded);
  const encoded = {};
  for (const [name, array] of Object.entries(outputs)) encoded[name] = base64(array.buffer);
  return {outputs: encoded};
});

window.webnnReadState = (id) => guarded("readState", async () => {
  const encoded = {};
  for (const [name, array] of Object.entries(await sessions.get(id).session.readState())) {
    encoded[name] = base64(array.buffer);
  }
  return {outputs: encoded};
});

window.webnnReset = (id) => guarded("reset", async () => {
  sessions.get(id).session.reset();
  return {};
});

window.webnnCloseSession = (id) => guarded("close", async () => {
  const held = sessions.get(id);
  sessions.delete(id);
  if (held !== undefined) {
    held.session.destroy();
    if (typeof held.context.destroy === "function") held.context.destroy();
  }
  return {};
});

window.webnnOpSupportLimits = async () => (await navigator.ml.createContext()).opSupportLimits();
window.webnnReady = "ml" in navigator;
