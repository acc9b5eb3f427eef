// The page bench_decode.py drives: greedy decoding of the tiny Llama, by our emitted module
// (one graph, the KV caches as state kept on the context by createSession) or by
// onnxruntime-web's WebNN execution provider on the same ONNX model. Both feed the prompt and
// then each chosen token one a step, the attention mask covering the positions so far, and
// take the argmax of the step's logits in JavaScript, as a web page would.

function maskFor(position, capacity) {
  const mask = new BigInt64Array(capacity);
  for (let i = 0; i <= position; i++) mask[i] = 1n;
  return mask;
}

function argmaxLast(logits, vocab) {
  // the last position's row of [1, S, vocab] logits
  const start = logits.length - vocab;
  let best = 0;
  for (let i = 1; i < vocab; i++) if (logits[start + i] > logits[start + best]) best = i;
  return best;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// One greedy run: `step(position, token)` resolves to the step's logits. The prompt's steps
// are the prefill (its last step chooses the first new token); every later step chooses one
// more. Returns the tokens and the time of each step.
async function greedy(spec, step) {
  const tokens = [], stepMs = [];
  const count = spec.prompt.length + spec.newTokens - 1;
  for (let position = 0; position < count; position++) {
    const token = position < spec.prompt.length ? spec.prompt[position] : tokens.at(-1);
    const t = performance.now();
    const logits = await step(position, token);
    if (position >= spec.prompt.length - 1) tokens.push(argmaxLast(logits, spec.vocab));
    stepMs.push(performance.now() - t);
  }
  return {tokens, stepMs};
}

// Runs `once` warmup + runs times and summarises the timed runs: the prefill (the prompt's
// steps, which choose the first token) and the decode steps (one new token each).
async function measure(spec, setupMs, reset, step) {
  const runs = [];
  for (let i = 0; i < spec.warmup + spec.runs; i++) {
    await reset();
    const run = await greedy(spec, step);
    if (i >= spec.warmup) runs.push(run);
  }
  const prompt = spec.prompt.length;
  const prefill = runs.map((r) => r.stepMs.slice(0, prompt).reduce((a, b) => a + b, 0));
  const decode = runs.map((r) => r.stepMs.slice(prompt).reduce((a, b) => a + b, 0));
  const decodeMs = median(decode);
  return {setupMs, prefillMs: median(prefill), decodeMs,
          decodeTokens: spec.newTokens - 1,
          tokensPerSecond: (spec.newTokens - 1) / (decodeMs / 1000),
          stepMedianMs: median(runs.flatMap((r) => r.stepMs.slice(prompt))),
          tokens: runs[0].tokens};
}

// Ours: the module `webnn-convert convert -o model.js` emits for the fixed-cache graph.
window.decodeOurs = async (spec) => {
  const t0 = performance.now();
  const m = await import(new URL(spec.module, location.href).href);
  const context = await navigator.ml.createContext({deviceType: "cpu"});
  const session = await m.createSession(context, await m.loadWeights());
  const setupMs = performance.now() - t0;
  try {
    return await measure(spec, setupMs, () => session.reset(), async (position, token) => {
      const out = await session.step({input_ids: BigInt64Array.of(BigInt(token)),
                                      attention_mask: maskFor(position, spec.capacity)});
      return out.logits;
    });
  } finally {
    session.destroy();
  }
};

// onnxruntime-web 1.30's WebNN execution provider on the CPU device, loading the ONNX model
// and its external data by URL. The caches have the same fixed capacity as ours (the model's
// dimensions fixed with freeDimensionOverrides, so that WebNN, which needs static shapes, can
// take the whole graph); each step's present.* outputs are fed back as past_key_values.*.
// With spec.keepCaches the present.* outputs stay on the WebNN context (ORT-web's
// preferredOutputLocation 'ml-tensor', its documented way to keep outputs on the device);
// without, they come back to JavaScript and go up again, ORT-web's default.
window.decodeOrt = async (spec) => {
  const ort = await import(new URL(spec.ortModule, location.href).href);
  ort.env.wasm.wasmPaths = new URL(spec.ortWasm, location.href).href;
  ort.env.wasm.numThreads = 1;  // no cross-origin isolation on this page: one wasm thread
  ort.env.logLevel = "error";
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(new URL(spec.onnx, location.href).href, {
    executionProviders: [{name: "webnn", deviceType: "cpu"}],
    freeDimensionOverrides: spec.dims,
    ...(spec.keepCaches
      ? {preferredOutputLocation: Object.fromEntries(spec.presents.map((n) => [n, "ml-tensor"]))}
      : {}),
    externalData: [{path: spec.onnxDataName,
                    data: new URL(spec.onnxData, location.href).href}]});
  const setupMs = performance.now() - t0;
  const cacheShape = [1, spec.kvHeads, spec.capacity, spec.head];
  const size = cacheShape.reduce((a, b) => a * b, 1);
  let past = {};
  const reset = () => {
    for (const tensor of Object.values(past)) tensor.dispose();
    past = {};
    for (const name of spec.pasts) past[name] = new ort.Tensor("float32", new Float32Array(size),
                                                               cacheShape);
  };
  try {
    return await measure(spec, setupMs, reset, async (position, token) => {
      const out = await session.run({
        input_ids: new ort.Tensor("int64", BigInt64Array.of(BigInt(token)), [1, 1]),
        attention_mask: new ort.Tensor("int64", maskFor(position, spec.capacity),
                                       [1, spec.capacity]),
        ...past});
      spec.pasts.forEach((name, i) => {
        past[name].dispose();  // the step before's cache (on the context with keepCaches)
        past[name] = out[spec.presents[i]];
      });
      return out.logits.data;
    });
  } finally {
    for (const tensor of Object.values(past)) tensor.dispose();
    await session.release();
  }
};

window.benchReady = "ml" in navigator;
