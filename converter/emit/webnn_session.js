
// ---------------------------------------------------------------------------------------------
// Sessions: a graph run step after step, its declared state carried on the context.
// Each state pair (`state` above: a graph input fed what a graph output gave the step before)
// has two MLTensors kept on the context. A step binds one as the state input and the other as
// the next-state output, then swaps them: the state never comes back to JavaScript between
// steps, only the model's other outputs are read.
// ---------------------------------------------------------------------------------------------

/** Build the graph and open a session on it: `await session.step(feeds)` runs one step. */
export async function createSession(context, weights) {
  const model = await buildGraph(context, weights);
  const initial = {};
  for (const pair of state) {
    const desc = inputs[pair.input];
    initial[pair.input] = pair.initial === null
      ? new Uint8Array(byteLength(desc.dataType, desc.shape))  // zeros
      : weights.bytes(pair.initial, desc.dataType, desc.shape).slice();
  }
  const session = new Session(context, model, initial);
  await session.open();
  return session;
}

class Session {
  constructor(context, model, initial) {
    this.context = context;
    this.model = model;
    this.initial = initial;
    this.steps = 0;
    this.feeds = {};    // non-state input name -> writable MLTensor
    this.results = {};  // non-state output name -> readable MLTensor
    this.pairs = [];    // {input, output, current, next}: MLTensors swapped after each step
  }

  /** The inputs a caller feeds at each step: every graph input that is not state. */
  get feedNames() {
    const held = new Set(state.map((p) => p.input));
    return Object.keys(inputs).filter((n) => !held.has(n));
  }

  /** The outputs each step returns: every graph output that is not a next state. */
  get outputNames() {
    const held = new Set(state.map((p) => p.output));
    return Object.keys(outputs).filter((n) => !held.has(n));
  }

  async open() {
    const c = this.context;
    for (const name of this.feedNames) {
      if (name in this.model.inputs) {
        this.feeds[name] = await c.createTensor({...this.model.inputs[name], writable: true});
      }
    }
    for (const name of this.outputNames) {
      this.results[name] = await c.createTensor({...this.model.outputs[name], readable: true});
    }
    for (const pair of state) {
      // Both writable (either may hold the current state when reset() rewrites it) and
      // readable (readState(), for inspection only).
      const desc = {...outputs[pair.output], readable: true, writable: true};
      this.pairs.push({input: pair.input, output: pair.output,
                       current: await c.createTensor(desc), next: await c.createTensor(desc)});
    }
    this.reset();
  }

  /** Back to the initial state, as before the first step. */
  reset() {
    for (const pair of this.pairs) this.context.writeTensor(pair.current, this.initial[pair.input]);
    this.steps = 0;
  }

  /** Queue one step on `feeds` ({input name: ArrayBuffer or view}, every non-state input)
   *  without reading anything back. */
  dispatchStep(feeds) {
    const bound = {inputs: {}, outputs: {...this.results}};
    for (const name of this.feedNames) {
      if (!(name in feeds)) throw new TypeError(`input '${name}' is not fed`);
    }
    for (const [name, data] of Object.entries(feeds)) {
      if (!this.feedNames.includes(name)) {
        throw new TypeError(`'${name}' is ${this.pairs.some((p) => p.input === name)
          ? "state; the session feeds it" : "not an input"} (feed: ${this.feedNames})`);
      }
      const tensor = this.feeds[name];
      if (tensor === undefined) continue;  // no output depends on it
      const want = byteLength(tensor.dataType, tensor.shape);
      if (data.byteLength !== want) {
        throw new TypeError(`input '${name}' takes ${want} bytes (${tensor.dataType}` +
                            `[${tensor.shape}]), got ${data.byteLength}`);
      }
      this.context.writeTensor(tensor, data);
      bound.inputs[name] = tensor;
    }
    for (const pair of this.pairs) {
      if (pair.input in this.model.inputs) bound.inputs[pair.input] = pair.current;
      bound.outputs[pair.output] = pair.next;
    }
    this.context.dispatch(this.model.graph, bound.inputs, bound.outputs);
    for (const pair of this.pairs) [pair.current, pair.next] = [pair.next, pair.current];
    this.steps += 1;
  }

  /** One step: {output name: typed array} for every output that is not a next state. */
  async step(feeds) {
    this.dispatchStep(feeds);
    return this.read();
  }

  /** The model's outputs of the last step (state stays on the context). */
  async read() {
    const names = Object.keys(this.results);
    const buffers = await Promise.all(names.map((n) => this.context.readTensor(this.results[n])));
    const out = {};
    names.forEach((n, i) => { out[n] = typedArray(this.results[n].dataType, buffers[i]); });
    return out;
  }

  /** The current state, read back: {state input name: typed array}. For inspection; a step
   *  never needs it. */
  async readState() {
    const out = {};
    for (const pair of this.pairs) {
      out[pair.input] = typedArray(pair.current.dataType,
                                   await this.context.readTensor(pair.current));
    }
    return out;
  }

  destroy() {
    const tensors = [...Object.values(this.feeds), ...Object.values(this.results),
                     ...this.pairs.flatMap((p) => [p.current, p.next])];
    for (const t of tensors) t.destroy();
    this.model.graph.destroy();
  }
}
