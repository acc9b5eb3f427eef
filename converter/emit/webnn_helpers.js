// ---------------------------------------------------------------------------------------------
// Weights, constants and running: the same in every module webnn-converter writes.
// Only today's WebNN API: createContext, MLGraphBuilder, createTensor / writeTensor / dispatch /
// readTensor. Inputs and outputs are keyed by the source model's own names.
// ---------------------------------------------------------------------------------------------

const WGWT_MAGIC = "WGWT";
const WGWT_VERSION = 1;

// Bits per element of each data type (int4/uint4 are packed two a byte).
const BITS = {
  float32: 32, float16: 16, int32: 32, uint32: 32, int64: 64, uint64: 64,
  int8: 8, uint8: 8, int4: 4, uint4: 4,
};

/** Bytes a tensor of this data type and shape takes (4-bit types packed, rounded up). */
export function byteLength(dataType, shape) {
  const bits = BITS[dataType];
  if (bits === undefined) throw new TypeError(`unknown data type ${dataType}`);
  return Math.ceil((shape.reduce((n, d) => n * d, 1) * bits) / 8);
}

function sameShape(a, b) {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

/**
 * Fetch a WGWT weights file and its manifest (NAME.weights with NAME.manifest.json beside it).
 * Returns {manifest, buffer, bytes(key, dataType, shape)}; `bytes` hands out a Uint8Array view
 * after checking the manifest's declaration against what the graph expects.
 */
export async function loadWeights(url = new URL(WEIGHTS_FILE, import.meta.url),
                                  manifestUrl = undefined) {
  url = String(url);
  if (manifestUrl === undefined) {
    if (!url.endsWith(".weights")) {
      throw new TypeError(`${url}: give the manifest's URL too (it is found beside a .weights file)`);
    }
    manifestUrl = url.slice(0, -".weights".length) + ".manifest.json";
  }
  const [manifestResponse, weightsResponse] = await Promise.all([fetch(manifestUrl), fetch(url)]);
  for (const [response, what] of [[manifestResponse, manifestUrl], [weightsResponse, url]]) {
    if (!response.ok) throw new Error(`${what}: HTTP ${response.status} while loading the weights`);
  }
  const manifest = await manifestResponse.json();
  const buffer = await weightsResponse.arrayBuffer();
  if (manifest.format !== "wg-weights-manifest" || manifest.version !== 1) {
    throw new Error(`${manifestUrl}: not a wg-weights-manifest version 1`);
  }
  const header = new DataView(buffer, 0, Math.min(8, buffer.byteLength));
  const magic = buffer.byteLength >= 8
    ? String.fromCharCode(...new Uint8Array(buffer, 0, 4)) : "";
  if (magic !== WGWT_MAGIC || header.getUint32(4, true) !== WGWT_VERSION) {
    throw new Error(`${url}: not a WGWT version ${WGWT_VERSION} weights file`);
  }
  return {
    manifest,
    buffer,
    bytes(key, dataType, shape) {
      const entry = manifest.tensors[key];
      if (entry === undefined) throw new Error(`weights key '${key}' is not in ${manifestUrl}`);
      if (entry.dataType !== dataType || !sameShape(entry.shape, shape)) {
        throw new Error(`tensor '${key}' is ${entry.dataType}[${entry.shape}] in the manifest, ` +
                        `the graph expects ${dataType}[${shape}]`);
      }
      if (entry.byteLength !== byteLength(dataType, shape) ||
          entry.byteOffset < 8 || entry.byteOffset + entry.byteLength > buffer.byteLength) {
        throw new Error(`tensor '${key}': bytes ${entry.byteOffset}..` +
                        `${entry.byteOffset + entry.byteLength} do not fit ${url}`);
      }
      return new Uint8Array(buffer, entry.byteOffset, entry.byteLength);
    },
  };
}

// A constant whose elements all hold one value: `pattern` is that value's little-endian bytes.
function filled(byteCount, pattern) {
  const out = new Uint8Array(byteCount);
  out.set(pattern.subarray(0, Math.min(pattern.length, byteCount)));
  // Double the filled prefix each step: log2(n) copies instead of one per element.
  for (let done = pattern.length; done < byteCount; done *= 2) {
    out.copyWithin(done, 0, Math.min(done, byteCount - done));
  }
  return out;
}

/** The leading corner `shape` of a row-major tensor of `fullShape` whose bytes are `bytes`, as
 *  new bytes (`trailing`: the trailing corner, the last `shape[i]` along each dim). A constant
 *  that differs between a module's dims (a position table cut to the sequence length; T5's
 *  relative-position bias, the last past+1 keys' row) is built as this corner, not as a
 *  `slice` of the whole table: it stays a constant, which some operands require (Chromium's
 *  gatherElements takes constant indices only). Whole-byte types only: 4-bit constants are
 *  never cut to a corner. */
function corner(bytes, dataType, fullShape, shape, trailing = false) {
  const size = BITS[dataType] / 8;
  if (!Number.isInteger(size)) throw new TypeError(`no leading corner of packed ${dataType} values`);
  const rank = shape.length;
  if (rank !== fullShape.length || shape.some((d, i) => !(d >= 0 && d <= fullShape[i]))) {
    throw new RangeError(`[${shape}] is not a corner of [${fullShape}]`);
  }
  const out = new Uint8Array(byteLength(dataType, shape));
  if (out.length === 0) return out;
  const strides = new Array(rank).fill(size);  // bytes per step along each dim of the whole
  for (let d = rank - 2; d >= 0; d--) strides[d] = strides[d + 1] * fullShape[d + 1];
  const start = shape.map((d, i) => (trailing ? fullShape[i] - d : 0));  // the corner's origin
  const run = rank === 0 ? size : shape[rank - 1] * size;  // one innermost row of the corner
  let at = 0;
  const copy = (d, offset) => {
    if (d >= rank - 1) {
      const from = offset + (rank === 0 ? 0 : start[rank - 1] * size);
      out.set(bytes.subarray(from, from + run), at);
      at += run;
      return;
    }
    for (let i = 0; i < shape[d]; i++) copy(d + 1, offset + (start[d] + i) * strides[d]);
  };
  copy(0, 0);
  return out;
}

/** The typed array that views `buffer` as `dataType` (float16 as Float16Array where it exists,
 *  else as its raw bits in a Uint16Array). */
export function typedArray(dataType, buffer) {
  switch (dataType) {
    case "float32": return new Float32Array(buffer);
    case "float16":
      return typeof Float16Array === "function" ? new Float16Array(buffer) : new Uint16Array(buffer);
    case "int32": return new Int32Array(buffer);
    case "uint32": return new Uint32Array(buffer);
    case "int64": return new BigInt64Array(buffer);
    case "uint64": return new BigUint64Array(buffer);
    case "int8": return new Int8Array(buffer);
    case "uint8": case "int4": case "uint4": return new Uint8Array(buffer);
    default: throw new TypeError(`unknown data type ${dataType}`);
  }
}

/** One writable MLTensor per graph input and one readable MLTensor per output, by name. */
export async function createTensors(context, model) {
  const tensors = {inputs: {}, outputs: {}, unusedInputs: model.unusedInputs ?? []};
  for (const [name, desc] of Object.entries(model.inputs)) {
    tensors.inputs[name] = await context.createTensor({...desc, writable: true});
  }
  for (const [name, desc] of Object.entries(model.outputs)) {
    tensors.outputs[name] = await context.createTensor({...desc, readable: true});
  }
  return tensors;
}

/** Write each input's data (an ArrayBuffer or a view of exactly its byte length), by name. */
export function writeInputs(context, tensors, feeds) {
  for (const name of Object.keys(tensors.inputs)) {
    if (!(name in feeds)) throw new TypeError(`input '${name}' is not fed`);
  }
  for (const [name, data] of Object.entries(feeds)) {
    if (tensors.unusedInputs.includes(name)) continue;  // no output depends on it
    const tensor = tensors.inputs[name];
    if (tensor === undefined) {
      throw new TypeError(`'${name}' is not an input (inputs: ${Object.keys(tensors.inputs)})`);
    }
    const want = byteLength(tensor.dataType, tensor.shape);
    if (data.byteLength !== want) {
      throw new TypeError(`input '${name}' takes ${want} bytes (${tensor.dataType}` +
                          `[${tensor.shape}]), got ${data.byteLength}`);
    }
    context.writeTensor(tensor, data);
  }
}

/** Queue one execution of the graph on the tensors. */
export function dispatch(context, model, tensors) {
  context.dispatch(model.graph, tensors.inputs, tensors.outputs);
}

/** Every output as a typed array, by name. */
export async function readOutputs(context, tensors) {
  const names = Object.keys(tensors.outputs);
  const buffers = await Promise.all(names.map((n) => context.readTensor(tensors.outputs[n])));
  const out = {};
  names.forEach((name, i) => {
    out[name] = typedArray(tensors.outputs[name].dataType, buffers[i]);
  });
  return out;
}

/** Write `feeds`, dispatch, read: {output name: typed array}. Tensors are made when not given. */
export async function run(context, model, feeds, tensors = undefined) {
  const own = tensors === undefined;
  if (own) tensors = await createTensors(context, model);
  try {
    writeInputs(context, tensors, feeds);
    dispatch(context, model, tensors);
    return await readOutputs(context, tensors);
  } finally {
    if (own) destroyTensors(tensors);
  }
}

export function destroyTensors(tensors) {
  for (const t of [...Object.values(tensors.inputs), ...Object.values(tensors.outputs)]) {
    t.destroy();
  }
}
