"""An encoder-decoder (Whisper, T5, BART, Marian as optimum exports them) as JavaScript that
generates in the browser with no Python at run time.

    write_seq2seq_js("t5/decoder_model_merged.onnx", "web/t5.js", steps=16)
    write_seq2seq_js("t5/decoder_model_merged_q4.onnx", "web/t5.js", steps=16,
                     target="chromium-litert")   # every graph fitted to the browser's limits

writes, atomically:
  * `t5.encoder.js` (+ `.weights`, `.manifest.json`): the encoder; a text encoder takes the
    prompt at its own length, 1..`encoder_length` tokens (the dim `encoder_sequence_length`),
    and its output is padded with zero rows to `encoder_length`, which the decoder reads with
    its encoder_attention_mask 0 there (padding the prompt instead would change a q8 encoder's
    numbers: DynamicQuantizeLinear scales each tensor over all its rows, padding included;
    zero rows are inside every range it takes, and masked rows weigh nothing);
  * `t5.decoder.js` (+ `.weights`, `.manifest.json`): the decoder's concat form at each past
    length 0..steps-1, one token a step, as one module with the dim `past_...`: converted at
    every length, written as one builder for the first step (no past) and one for every later
    length, its shapes expressions of the length (converter.dynamic.module_groups); a constant
    that differs per length (a folded position row, T5's relative-position bias) is stored
    once per length and read by the length built. Where the lengths do not fit so, one builder
    per length, the module's header and the CLI's note saying why. Every equal constant is
    stored once, so the weights file is about one decoder's;
  * `t5.js`: `loadWeights()` and `generate(context, weights, encoderInputs, startTokens,
    maxNewTokens)`: the encoder once, then greedy decoder steps, each step's self-attention
    presents (the grown caches) fed back as the next step's past, and the first step's
    cross-attention presents fed back unchanged (seq2seq_generate.js);
  * `t5.html`: a page that generates (`?prompt=5,9,14` the encoder's token ids; Whisper's
    input_features seeded, `?tokens=N` new tokens).

Why one graph per length: these decoders take no mask over their own rows and no position
ids, so a cache of fixed capacity cannot hide its empty rows (state/seq2seq.py); each length
is its own static graph, converted here once.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ConverterError
from .kv_cache import HIDDEN_STATES
from .seq2seq import ENCODER_MASK, ENCODER_OUTPUT, Seq2SeqLoop

__all__ = ["write_seq2seq_js", "MAX_STEPS", "DEFAULT_ENCODER_LENGTH", "seeded_features"]

MAX_STEPS = 256  # graphs converted: one per step
DEFAULT_ENCODER_LENGTH = 32
_DRIVER = Path(__file__).with_name("seq2seq_generate.js")
_PAGE = Path(__file__).with_name("seq2seq_page.html")


def seeded_features(shape) -> np.ndarray:
    """The input_features the page feeds Whisper's encoder: sin(0.37 i) over the flat index,
    float32 (what the page's JavaScript computes)."""
    count = int(np.prod(shape))
    return np.sin(0.37 * np.arange(count, dtype=np.float64)).astype(np.float32).reshape(shape)


def write_seq2seq_js(decoder: str | Path, path: str | Path, steps: int, *,
                     encoder_length: int | None = None,
                     target=None) -> tuple[list[Path], list[str]]:
    """Write NAME.js, NAME.html and the encoder's and decoder's modules (module docstring);
    return the paths written and a line on each module's form (one builder for every length,
    or one per length, and why). `steps`: the decoder positions the module can take (start
    tokens + new tokens - 1 at most); `encoder_length`: a text encoder's input length
    (default 32; Whisper's is fixed by its features); `target` (a Target, a built-in
    target's name or a target file): every graph of both modules is rewritten by its passes
    as `convert --target` rewrites one, e.g. 'chromium-litert' for a q4 model's uint4
    weights, which Chromium refuses. A note says when the graphs written (with no target, or
    another's) break the limits of the browser the page runs in: its build fails there."""
    from ..dynamic.module_js import variants_source
    from ..dynamic.variants import Variants
    from ..emit.escape import html_text, js_string
    from ..formats._files import AtomicSave
    from ..formats.weights import manifest_text, write_weights

    path = Path(path)
    if path.suffix != ".js":
        raise ConverterError("a JavaScript module's name must end in .js", where=str(path))
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise ConverterError(f"--steps {steps} is out of range for an encoder-decoder's module",
                             where=str(decoder),
                             fix=f"give 1..{MAX_STEPS}: each step is converted on its own")
    if target is not None:
        from ..targets import load_target

        target = load_target(target)  # once: a file is read and checked before any conversion
    loop = Seq2SeqLoop(decoder, max_graphs=steps, target=target)
    s = loop.seq2seq
    if s.start_tokens is None:
        loop.start_tokens  # raises, naming the missing config.json member
    if s.text:
        length = DEFAULT_ENCODER_LENGTH if encoder_length is None else encoder_length
        if not 1 <= length <= 4096:
            raise ConverterError(f"encoder length {length} is out of range", where=str(decoder),
                                 fix="give --dim encoder_sequence_length=N, N in 1..4096")
    elif encoder_length is not None:
        raise ConverterError("this encoder reads features, whose length its export fixes",
                             where=str(s.encoder), fix="leave out encoder_sequence_length")
    else:
        length = None
    stem = path.name[:-3]
    encoder = _encoder_module(s.encoder, length, f"{stem}.encoder.weights", target)
    hidden = encoder.hidden
    # the decoder's graphs read the encoder's output at its shape: the loop sizes them by it
    loop.encoded = {HIDDEN_STATES: np.zeros(hidden, np.float32),
                    ENCODER_MASK: np.ones(hidden[:2], np.int64)}
    loop.reset()
    dim = loop.spec.past_dim
    entries = [({dim: past}, loop.graph(past, 1)) for past in range(steps)]
    names = {part: path.with_name(f"{stem}.{part}.js") for part in ("encoder", "decoder")}
    decoder_source, decoder_weights, decoder_note = variants_source(
        Variants((dim,), entries), f"{stem}.decoder.weights")
    config = {
        "encoder": f"./{stem}.encoder.js", "decoder": f"./{stem}.decoder.js",
        "pastDim": dim, "maxSteps": steps, "text": s.text,
        "encoderInputs": encoder.shapes, "encoderDim": encoder.dim, "encoderLength": hidden[1],
        "decoderMasked": ENCODER_MASK in entries[-1][1].inputs,
        "inputIds": loop.spec.input_ids, "startTokens": s.start_tokens,
        "encoderOutput": ENCODER_OUTPUT, "hiddenStates": HIDDEN_STATES, "encoderMask": ENCODER_MASK,
        "logits": loop.logits, "vocabulary": s.vocabulary,
        "selfPairs": [list(p) for p in loop.spec.pairs], "crossPairs": [list(p) for p in s.cross],
    }
    driver = _DRIVER.read_text()
    imports = (f"import * as encoder from {js_string(config['encoder'])};\n"
               f"import * as decoder from {js_string(config['decoder'])};\n"
               f"export const CONFIG = {json.dumps(config, indent=2)};\n")
    page = (_PAGE.read_text().replace("__MODULE_URL__", js_string("./" + path.name))
            .replace("__TITLE__", html_text(stem)))
    with AtomicSave() as files:
        for part, source, weights in (("encoder", encoder.source, encoder.weights),
                                      ("decoder", decoder_source, decoder_weights)):
            weights_path = path.with_name(f"{stem}.{part}.weights")
            with files.open(weights_path) as stream:
                manifest = write_weights(stream, weights, where=str(weights_path))
            files.write_text(path.with_name(f"{stem}.{part}.manifest.json"),
                             manifest_text(manifest))
            files.write_text(names[part], source)
        files.write_text(path, imports + driver)
        files.write_text(path.with_name(stem + ".html"), page)
        written = files.commit()
    notes = [f"encoder: {encoder.note}", f"decoder: {decoder_note}"]
    notes += _browser_limits_note([g for _, g in encoder.entries] + [g for _, g in entries])
    return written, notes


def _browser_limits_note(graphs) -> list[str]:
    """A note when the graphs break the limits of the browser the page runs in (those of the
    chromium-litert target: Chromium's WebNN refuses, e.g., a q4 model's uint4 weights), so
    the page's build would fail there; none when they fit (as after that target's passes)."""
    from ..runtimes.chromium import BROWSER_TARGET
    from ..targets.check import check

    for graph in graphs:
        found = check(graph, BROWSER_TARGET)
        if found:
            v = found[0]
            return [f"the page's graphs break the limits of Chromium's WebNN ({v.where()}: "
                    f"{v.found}; {v.rule}), so the browser refuses to build them: convert "
                    f"with --target {BROWSER_TARGET} (Python: target='{BROWSER_TARGET}'), "
                    f"whose passes fit them to those limits"]
    return []


# One builder per length where the encoder is not one graph for every prompt length: past this
# many lengths, refuse (each is a conversion and a builder).
MAX_ENCODER_BUILDERS = 256


@dataclass
class _EncoderModule:
    source: str
    weights: list
    hidden: list[int]  # the shape of its output at the longest prompt: the decoder's side
    shapes: dict[str, list]  # each input's shape, the prompt's length as the dim's name
    dim: str | None  # the dim the page gives the prompt's length as (None: fixed features)
    note: str
    entries: list  # (the dims' values, the graph converted there), each graph converted


def _encoder_module(encoder: Path, length: int | None, weights_file: str,
                    target=None) -> _EncoderModule:
    """The encoder's module. Features (Whisper): one graph, its export's shape. Token ids: a
    module taking the prompt's length (1..length) as a dim, so that the prompt runs unpadded:
    a quantized encoder's DynamicQuantizeLinear scales each tensor over every row, and padded
    rows would change the real rows' numbers (the page pads the encoder's output instead,
    where the decoder masks it). One builder for every length when the graphs at several
    lengths fit as one (converter.dynamic.symbolic), else one builder per length. Each graph
    converted (those checked on too) is rewritten for `target` when one is given."""
    from ..conversion.by_suffix import load_any
    from ..dynamic.module_js import variants_source
    from ..dynamic.symbolic import HeldOutMismatch, StructureDiffers, polymorphic
    from ..dynamic.variants import Variants, range_values
    from ..emit.javascript import module_source
    from .kv_cache import read_signature

    signature = read_signature(encoder)
    dims: dict[str, list] = {}
    names = set()
    for value in signature.graph.input:
        row = []
        for d in value.type.tensor_type.shape.dim:
            if d.HasField("dim_value"):
                row.append(d.dim_value)
            elif d.dim_param == "batch_size":
                row.append(1)
            elif length is not None and d.dim_param == "encoder_sequence_length":
                row.append(d.dim_param)
                names.add(d.dim_param)
            else:
                raise ConverterError(f"the encoder's input '{value.name}' has the dim "
                                     f"'{d.dim_param}', which this module cannot fix",
                                     where=str(encoder), fix="export the encoder with it fixed")
        dims[value.name] = row

    def convert(at: dict[str, int]):
        graph = load_any(encoder, input_shapes={
            n: [at.get(d, 0) if isinstance(d, str) else d for d in row] for n, row in dims.items()})
        if target is not None:
            from ..targets.pipeline import convert_for_target

            convert_for_target(graph, target)
        return graph

    if not names:
        graph = convert({})
        source, weights = module_source(graph, weights_file)
        return _EncoderModule(source, weights, list(graph.outputs[ENCODER_OUTPUT].shape), dims,
                              None, "one graph: its inputs' shapes are fixed", [({}, graph)])
    dim = names.pop()
    points = range_values(1, length) if length > 1 else [1]
    variants = Variants((dim,), [({dim: n}, convert({dim: n})) for n in points],
                        {dim: (1, length)} if length > 1 else {}, {}, convert)
    if length > 1:
        try:
            polymorphic(variants, convert)
        except (StructureDiffers, HeldOutMismatch) as e:
            if length > MAX_ENCODER_BUILDERS:
                raise ConverterError(
                    f"the encoder is not one graph for every prompt length ({e.line()}), and "
                    f"one builder per length takes at most {MAX_ENCODER_BUILDERS} lengths",
                    where=str(encoder),
                    fix=f"give --dim encoder_sequence_length=N, N <= {MAX_ENCODER_BUILDERS}"
                ) from None
            variants = Variants((dim,), [({dim: n}, convert({dim: n}))
                                         for n in range(1, length + 1)], {}, {}, convert)
    source, weights, note = variants_source(variants, weights_file, convert)
    hidden = list(variants.entries[-1][1].outputs[ENCODER_OUTPUT].shape)
    return _EncoderModule(source, weights, hidden, dims, dim, note, variants.entries)
