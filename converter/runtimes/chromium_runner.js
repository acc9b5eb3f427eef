// The page the chromium runtime drives: runs emitted modules on inputs fetched from the same
// loopback server and hands the outputs back as base64. One call runs a batch of cases.

function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  const CHUNK = 0x8000;  // String.fromCharCode takes its arguments on the stack
  for (let i = 0; i < bytes.length; i += CHUNK) {
    text += String.fromCharCode(...bytes.subarray(i, i + CHUNK));
  }
  return btoa(text);
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

async function runCase(spec) {
  let stage = "import";
  let context = null, model = null, tensors = null, m = null;
  try {
    m = await import(spec.module);
    stage = "createContext";
    context = await navigator.ml.createContext();
    stage = "weights";
    const weights = await m.loadWeights();
    stage = "build";
    // A module written for several values of its dims takes them here (others ignore it).
    model = await m.buildGraph(context, weights, spec.dims);
    if (spec.buildOnly) return {built: true};
    stage = "inputs";
    const feeds = {};
    for (const [name, file] of Object.entries(spec.inputs)) feeds[name] = await fetchBytes(file);
    stage = "dispatch";
    tensors = await m.createTensors(context, model);
    m.writeInputs(context, tensors, feeds);
    m.dispatch(context, model, tensors);
    stage = "read";
    const outputs = await m.readOutputs(context, tensors);
    const encoded = {};
    for (const [name, array] of Object.entries(outputs)) encoded[name] = base64(array.buffer);
    return {outputs: encoded};
  } catch (e) {
    return {error: {stage, name: e?.name ?? "Error", message: e?.message ?? String(e)}};
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

window.webnnOpSupportLimits = async () => (await navigator.ml.createContext()).opSupportLimits();
window.webnnReady = "ml" in navigator;
