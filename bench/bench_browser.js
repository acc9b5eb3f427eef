// The page bench_browser.py drives: one model, run by our emitted module on WebNN or by
// onnxruntime-web's WebNN execution provider, each measured the same way. An iteration is
// what a web page does per inference: upload the inputs, compute, read the outputs back.

function feedsFor(inputs) {
  // The same deterministic values for both runtimes: x[i] = (i % 251) / 251.
  const out = {};
  for (const {name, dataType, shape} of inputs) {
    const count = shape.reduce((a, b) => a * b, 1);
    if (dataType !== "float32") throw new TypeError(`input '${name}' is ${dataType}`);
    const data = new Float32Array(count);
    for (let i = 0; i < count; i++) data[i] = (i % 251) / 251;
    out[name] = {data, shape};
  }
  return out;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

async function timed(iterate, warmup, runs) {
  for (let i = 0; i < warmup; i++) await iterate();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await iterate();
    times.push(performance.now() - t);
  }
  return median(times);
}

// Ours: the module `webnn-convert convert -o model.js` emits, used as docs/guide/ship-image-model.md says.
window.benchOurs = async (spec) => {
  const t0 = performance.now();
  const m = await import(spec.module);
  const context = await navigator.ml.createContext({deviceType: "cpu"});
  const model = await m.buildGraph(context, await m.loadWeights());
  const tensors = await m.createTensors(context, model);
  const setup = performance.now() - t0;
  const feeds = {};
  for (const [name, {data}] of Object.entries(feedsFor(spec.inputs))) feeds[name] = data;
  let first = null;
  const ms = await timed(async () => {
    m.writeInputs(context, tensors, feeds);
    m.dispatch(context, model, tensors);
    const out = await m.readOutputs(context, tensors);
    first ??= Array.from(Object.values(out)[0].slice(0, 4));
  }, spec.warmup, spec.runs);
  m.destroyTensors(tensors);
  model.graph.destroy();
  return {setupMs: setup, medianMs: ms, sample: first};
};

// onnxruntime-web 1.30 with its WebNN execution provider on the CPU device, the ONNX model
// loaded by URL, symbolic input dims fixed by freeDimensionOverrides: its documented use (the
// WebNN EP takes static shapes only; without the overrides ORT-web runs such a model on WASM).
// Warnings are on, so that a node left to another provider is said in the console.
window.benchOrt = async (spec) => {
  const ort = await import(new URL(spec.ortModule, location.href).href);
  ort.env.wasm.wasmPaths = new URL(spec.ortWasm, location.href).href;  // not relative to ort
  ort.env.wasm.numThreads = 1;  // no cross-origin isolation on this page: one wasm thread
  ort.env.logLevel = "warning";
  const t0 = performance.now();
  const options = {executionProviders: [{name: "webnn", deviceType: "cpu"}]};
  if (Object.keys(spec.freeDimensionOverrides ?? {}).length) {
    options.freeDimensionOverrides = spec.freeDimensionOverrides;
  }
  const session = await ort.InferenceSession.create(spec.onnx, options);
  const setup = performance.now() - t0;
  const feeds = {};
  for (const [name, {data, shape}] of Object.entries(feedsFor(spec.inputs))) {
    feeds[name] = new ort.Tensor("float32", data, shape);
  }
  let first = null;
  const ms = await timed(async () => {
    const out = await session.run(feeds);
    first ??= Array.from(out[session.outputNames[0]].data.slice(0, 4));
  }, spec.warmup, spec.runs);
  await session.release();
  return {setupMs: setup, medianMs: ms, sample: first,
          freeDimensionOverrides: options.freeDimensionOverrides ?? {}};
};

window.benchReady = "ml" in navigator;
