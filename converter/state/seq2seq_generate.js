
// An encoder-decoder generating greedily in WebNN, written by webnn-converter
// (converter/state/seq2seq_js.py). CONFIG above says what the two modules take:
//   const weights = await loadWeights();
//   const {tokens} = await generate(context, weights, {input_ids: [5, 9, 14]});
// The encoder runs once. The decoder steps one token at a time, a graph per past length
// (these decoders take no mask over their own rows, so their cache cannot be a fixed
// buffer): each step's self-attention presents are the grown caches the next step reads,
// and the first step's cross-attention presents are read back by every later step.

/** The encoder's and the decoder's weights, fetched beside their modules. */
export async function loadWeights() {
  const [enc, dec] = await Promise.all([encoder.loadWeights(), decoder.loadWeights()]);
  return {encoder: enc, decoder: dec};
}

function int64Ids(ids) {
  return BigInt64Array.from(ids, (t) => BigInt(t));
}

/** The encoder's feeds: a text encoder's input_ids padded to CONFIG.encoderLength (its
 *  attention_mask 0 on the padding); features as given (a Float32Array of the input's size). */
function encoderFeeds(given) {
  const feeds = {};
  let mask = null;
  if (CONFIG.text) {
    const ids = Array.from(given.input_ids ?? [], Number);
    const length = CONFIG.encoderLength;
    if (ids.length < 1 || ids.length > length) {
      throw new RangeError(`the encoder takes 1..${length} token ids, got ${ids.length}`);
    }
    if (!ids.every((t) => Number.isInteger(t) && t >= 0)) {
      throw new TypeError("the encoder's input_ids must be non-negative integers");
    }
    const padded = new Array(length).fill(0);
    ids.forEach((t, i) => { padded[i] = t; });
    mask = new Array(length).fill(0).map((_, i) => (i < ids.length ? 1 : 0));
    feeds.input_ids = padded;
    if ("attention_mask" in CONFIG.encoderInputs) feeds.attention_mask = mask;
    else if (ids.length !== length) {
      throw new RangeError(`this encoder takes no attention_mask: give exactly ${length} ids`);
    }
  }
  for (const [name, value] of Object.entries(given)) {
    if (!(name in CONFIG.encoderInputs)) throw new TypeError(`the encoder has no input '${name}'`);
    if (!(name in feeds)) feeds[name] = value;
  }
  return {feeds, mask: mask ?? new Array(CONFIG.encoderLength).fill(1)};
}

/** `values` (numbers, or a typed array) as the bytes of an input of `desc`. */
function asInput(desc, values) {
  if (desc.dataType === "int64") return int64Ids(Array.from(values, Number));
  if (desc.dataType === "int32") return Int32Array.from(values, Number);
  if (desc.dataType === "float32") return Float32Array.from(values);
  if (ArrayBuffer.isView(values)) return values;
  throw new TypeError(`cannot feed ${desc.dataType} from a plain list`);
}

function argmax(row) {
  let best = 0;
  for (let i = 1; i < row.length; i++) if (row[i] > row[best]) best = i;
  return best;
}

/** Greedy generation: `maxNewTokens` tokens after `startTokens` (default: config.json's
 *  decoder_start_token_id), the encoder run once on `encoderInputs` ({input_ids: [...]} for
 *  text, {input_features: Float32Array} for Whisper). Resolves to {tokens, logits (one
 *  Float32Array a new token), stepMs}. Stops early at `eosTokenId` when given. */
export async function generate(context, weights, encoderInputs,
                               startTokens = CONFIG.startTokens, maxNewTokens = 16,
                               eosTokenId = null) {
  const start = Array.from(startTokens ?? [], Number);
  if (start.length < 1) throw new RangeError("generate needs at least one start token");
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1 ||
      start.length + maxNewTokens - 1 > CONFIG.maxSteps) {
    throw new RangeError(`this module takes ${CONFIG.maxSteps} decoder positions: ` +
                         `${start.length} start token(s) + ${maxNewTokens} new token(s) - 1 ` +
                         `do not fit (convert with a larger --steps)`);
  }
  const {feeds, mask} = encoderFeeds(encoderInputs);
  const encoderModel = await encoder.buildGraph(context, weights.encoder);
  const encoderRun = {};
  for (const [name, desc] of Object.entries(encoderModel.inputs)) {
    encoderRun[name] = asInput(desc, feeds[name]);
  }
  const hidden = (await encoder.run(context, encoderModel, encoderRun))[CONFIG.encoderOutput];
  const side = {[CONFIG.hiddenStates]: hidden, [CONFIG.encoderMask]: mask};
  const past = {};
  const tokens = [], logits = [], stepMs = [];
  let next = start[0];
  for (let position = 0; position < start.length + maxNewTokens - 1; position++) {
    const began = performance.now();
    const model = await decoder.buildGraph(context, weights.decoder,
                                           {[CONFIG.pastDim]: position});
    const values = {[CONFIG.inputIds]: [next], ...side, ...past};
    const stepFeeds = {};
    for (const [name, desc] of Object.entries(model.inputs)) {
      if (!(name in values)) throw new TypeError(`decoder input '${name}' has no value`);
      stepFeeds[name] = asInput(desc, values[name]);
    }
    const out = await decoder.run(context, model, stepFeeds);
    model.graph.destroy();  // each length is built once; its graph is not needed again
    for (const [pastName, present] of CONFIG.selfPairs) past[pastName] = out[present];
    if (position === 0) {
      for (const [pastName, present] of CONFIG.crossPairs) past[pastName] = out[present];
    }
    stepMs.push(performance.now() - began);
    if (position + 1 < start.length) { next = start[position + 1]; continue; }
    const row = Float32Array.from(out[CONFIG.logits]);
    logits.push(row);
    next = argmax(row);
    tokens.push(next);
    if (next === eosTokenId) break;
  }
  return {tokens, logits, stepMs};
}
