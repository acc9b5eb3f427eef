
// An encoder-decoder generating greedily in WebNN, written by webnn-converter
// (converter/state/seq2seq_js.py). CONFIG above says what the two modules take:
//   const weights = await loadWeights();
//   const {tokens} = await generate(context, weights, {input_ids: [5, 9, 14]});
// The encoder runs once, on the prompt at its own length (its output padded with masked zero
// rows to the length the decoder reads). The decoder steps one token at a time, a graph
// built per past length (these decoders take no mask over their own rows, so their cache
// cannot be a fixed buffer): each step's self-attention presents are the grown caches the
// next step reads, and the first step's cross-attention presents are read back by every
// later step.

/** The encoder's and the decoder's weights, fetched beside their modules. */
export async function loadWeights() {
  const [enc, dec] = await Promise.all([encoder.loadWeights(), decoder.loadWeights()]);
  return {encoder: enc, decoder: dec};
}

/** Throw unless every id is an integer the model's tables have a row for (a gather past
 *  the end of a table reads what the backend makes of it, not an error). */
function checkIds(ids, what) {
  for (const t of ids) {
    if (!Number.isInteger(t) || t < 0 || (CONFIG.vocabulary !== null && t >= CONFIG.vocabulary)) {
      const range = CONFIG.vocabulary === null ? "non-negative integers" :
        `integers in 0..${CONFIG.vocabulary - 1}`;
      throw new RangeError(`${what} must be ${range}, got ${String(t)}`);
    }
  }
}

function int64Ids(ids) {
  return BigInt64Array.from(ids, (t) => BigInt(t));
}

/** The encoder's feeds and the dims it is built at: a text encoder's input_ids at the
 *  prompt's own length (its attention_mask all 1: the prompt is not padded, so a quantized
 *  encoder's run-time scales are the prompt's alone); features as given (a Float32Array of
 *  the input's size). `length`: the prompt's length (the encoder's output rows). */
function encoderFeeds(given) {
  const feeds = Object.create(null);  // keyed by the model's names, whatever they are
  let length = CONFIG.encoderLength, dims = undefined;
  if (CONFIG.text) {
    const ids = Array.from(given.input_ids ?? [], Number);
    if (ids.length < 1 || ids.length > CONFIG.encoderLength) {
      throw new RangeError(`the encoder takes 1..${CONFIG.encoderLength} token ids, ` +
                           `got ${ids.length}`);
    }
    checkIds(ids, "the encoder's input_ids");
    if (CONFIG.encoderDim === null && ids.length !== CONFIG.encoderLength) {
      throw new RangeError(`this encoder's length is fixed: give exactly ` +
                           `${CONFIG.encoderLength} ids`);
    }
    if (ids.length !== CONFIG.encoderLength && !CONFIG.decoderMasked) {
      throw new RangeError(`this decoder takes no encoder_attention_mask: give exactly ` +
                           `${CONFIG.encoderLength} ids`);
    }
    length = ids.length;
    if (CONFIG.encoderDim !== null) dims = {[CONFIG.encoderDim]: length};
    feeds.input_ids = ids;
    if (Object.hasOwn(CONFIG.encoderInputs, "attention_mask")) {
      feeds.attention_mask = ids.map(() => 1);
    }
  }
  for (const [name, value] of Object.entries(given)) {
    if (!Object.hasOwn(CONFIG.encoderInputs, name)) throw new TypeError(`the encoder has no input '${name}'`);
    if (!Object.hasOwn(feeds, name)) feeds[name] = value;
  }
  return {feeds, length, dims};
}

/** The encoder's output `hidden` ([1, rows, width], flat) as the decoder reads it: zero rows
 *  after the prompt's up to CONFIG.encoderLength (0 bits are 0 in every float type), and the
 *  mask over them: 1 on the prompt's rows, 0 on the padding, which the decoder's attention
 *  gives no weight. Zero rows leave a quantized decoder's run-time scales as they are (the
 *  range DynamicQuantizeLinear takes always holds 0). */
function padRows(hidden, rows) {
  const length = CONFIG.encoderLength;
  const mask = Array.from({length}, (_, i) => (i < rows ? 1 : 0));
  if (rows === length) return {hidden, mask};
  const padded = new hidden.constructor(hidden.length / rows * length);
  padded.set(hidden);
  return {hidden: padded, mask};
}

/** The float16 bits of the number `x`, rounded to nearest even as a float32 -> float16 cast
 *  rounds (what numpy's astype(float16) and ONNX Runtime's Cast give): the page's features
 *  for an fp16 encoder, built without Float16Array, which not every browser has. */
export function float16Bits(x) {
  const word = new Uint32Array(Float32Array.of(x).buffer)[0];  // x rounded to float32 first
  const sign = (word >>> 16) & 0x8000;
  const exponent = (word >>> 23) & 0xff;
  const mantissa = word & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa ? 0x200 : 0);  // inf, NaN
  const biased = exponent - 112;  // float16's exponent field: 127 - 15
  if (biased >= 0x1f) return sign | 0x7c00;  // past float16's largest: inf
  // the significand (implicit 1 included) and how many of its low bits float16 drops
  const significand = mantissa | (exponent ? 0x800000 : 0);
  const shift = biased >= 1 ? 13 : 14 - biased;  // subnormals keep fewer bits
  if (shift > 24) return sign;  // below half of float16's smallest subnormal: +-0
  let half = significand >>> shift;
  const rest = significand - (half << shift), midway = 1 << (shift - 1);
  if (biased >= 1) half = (biased << 10) | (half & 0x3ff);
  if (rest > midway || (rest === midway && (half & 1))) half += 1;  // may carry into the exponent
  return sign | half;
}

/** `values` (numbers, or a typed array) as the bytes of an input of `desc`. */
function asInput(desc, values) {
  if (desc.dataType === "float16") {
    if (values instanceof Uint16Array ||
        (typeof Float16Array === "function" && values instanceof Float16Array)) return values;
    return Uint16Array.from(values, float16Bits);  // numbers, or a Float32Array of features
  }
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
  checkIds(start, "the start tokens");
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1 ||
      start.length + maxNewTokens - 1 > CONFIG.maxSteps) {
    throw new RangeError(`this module takes ${CONFIG.maxSteps} decoder positions: ` +
                         `${start.length} start token(s) + ${maxNewTokens} new token(s) - 1 ` +
                         `do not fit (convert with a larger --steps)`);
  }
  const {feeds, length, dims} = encoderFeeds(encoderInputs);
  const encoderModel = await encoder.buildGraph(context, weights.encoder, dims);
  const encoderRun = Object.create(null);
  for (const [name, desc] of Object.entries(encoderModel.inputs)) {
    if (!Object.hasOwn(feeds, name)) throw new TypeError(`the encoder's input '${name}' is not given`);
    encoderRun[name] = asInput(desc, feeds[name]);
  }
  const encoded = (await encoder.run(context, encoderModel, encoderRun))[CONFIG.encoderOutput];
  encoderModel.graph.destroy();
  const {hidden, mask} = padRows(encoded, length);
  const side = {[CONFIG.hiddenStates]: hidden, [CONFIG.encoderMask]: mask};
  const past = Object.create(null);
  const tokens = [], logits = [], stepMs = [];
  let next = start[0];
  for (let position = 0; position < start.length + maxNewTokens - 1; position++) {
    const began = performance.now();
    const model = await decoder.buildGraph(context, weights.decoder,
                                           {[CONFIG.pastDim]: position});
    const values = {[CONFIG.inputIds]: [next], ...side, ...past};
    const stepFeeds = Object.create(null);
    for (const [name, desc] of Object.entries(model.inputs)) {
      if (!Object.hasOwn(values, name)) throw new TypeError(`decoder input '${name}' has no value`);
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
