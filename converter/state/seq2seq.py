"""Encoder-decoder generation (Whisper, T5, BART, Marian as optimum and transformers.js export
them): the encoder runs once, the decoder steps with its caches.

    loop = converter.load_seq2seq("t5/decoder_model_merged.onnx")   # encoder_model.onnx beside
    loop.encode({"input_ids": [5, 9, 14]})          # Whisper: {"input_features": array}
    result = converter.generate(loop, loop.start_tokens, max_new_tokens=16)

The files: `encoder_model*.onnx` (its `last_hidden_state` is the decoder's
`encoder_hidden_states`, and its attention_mask the decoder's `encoder_attention_mask`, at every
step) beside the decoder, merged (decoder_model_merged*.onnx, an If on use_cache_branch) or the
unmerged pair (decoder_model*.onnx, decoder_with_past_model*.onnx), the same suffix (_quantized,
_fp16 ...). The decoder has two kinds of cache pairs: self-attention (`*.decoder.*`), which
grows by each step's rows, and cross-attention (`*.encoder.*`), the encoder's keys and values,
which the first step (no past) computes and every later step reads back unchanged (the merged
file's cache branch gives empty placeholders for their presents; the with-past file has none).
Which pair is which is read from the shapes: a present as long as its past is a cross pair.

The decoder steps in its concat form (state/concat_form.py: a graph per length), on ONNX
Runtime or in Chromium (each graph then in the emitted module's session). A fixed capacity
(--cache-capacity) is refused: these decoders take neither an attention mask over their own
rows nor position ids, so a cache of fixed length cannot mask its empty rows or keep the
positions. `decoder_start_token_id` comes from the config.json optimum writes beside the files.
`generate_seq2seq_on_onnxruntime` is the reference: the same loop on the source files.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..errors import ConverterError
from .concat_form import ConcatLoop
from .generation import Generation, _check_request
from .kv_cache import (HIDDEN_STATES, DecoderSpec, _dim_names, check_tokens,
                       match_pairs, read_decoder_spec, read_signature, unmerged_pair)

__all__ = ["Seq2SeqSpec", "Seq2SeqLoop", "load_seq2seq", "read_seq2seq_spec",
           "generate_seq2seq_on_onnxruntime", "encoder_feeds"]

ENCODER_MASK = "encoder_attention_mask"
ENCODER_OUTPUT = "last_hidden_state"
MAX_CONFIG_BYTES = 1 << 20


@dataclass
class Seq2SeqSpec:
    """The files of an encoder-decoder and what its steps feed and carry."""

    encoder: Path
    encoder_inputs: list[str]  # what the encoder takes: input_ids (+ attention_mask), or
    # input_features (Whisper)
    decoder: DecoderSpec  # the self-attention pairs (the cache that grows)
    cross: list[tuple[str, str]]  # (past input, present output) of the cross-attention caches
    start_tokens: list[int] | None  # [decoder_start_token_id] from config.json
    vocabulary: int | None = None  # the logits' last dim: token ids index tables this long

    @property
    def text(self) -> bool:
        """The encoder reads token ids (T5, BART, Marian), not features (Whisper)."""
        return "input_ids" in self.encoder_inputs


def read_seq2seq_spec(path: str | Path, *, encoder: str | Path | None = None,
                      dims: Mapping[str, int] | None = None) -> Seq2SeqSpec:
    """The spec of the decoder file `path` (merged, or either file of the unmerged pair), its
    encoder `encoder` (default: encoder_model<suffix>.onnx beside it) and config.json."""
    path = Path(path)
    if "encoder_model" in path.name:
        raise ConverterError("this is the encoder: generation starts from the decoder",
                             where=str(path), fix="give decoder_model_merged.onnx (the "
                             "encoder beside it is found by its name)")
    first, later = unmerged_pair(path)
    if encoder is None:
        encoder = _encoder_beside(first or later)
    encoder = Path(encoder)
    if not encoder.is_file():
        raise ConverterError(f"no encoder {encoder.name} beside the decoder", where=str(path),
                             fix="put the export's encoder_model.onnx beside it")
    model = read_signature(later)
    inputs = [v.name for v in model.graph.input]
    values = {v.name: v for v in [*model.graph.input, *model.graph.output]}
    if first is not None:  # the pair: the cross presents are decoder_model.onnx's alone
        values = {**{v.name: v for v in read_signature(first).graph.output}, **values}
    outputs = [name for name in values if name not in inputs]
    self_pairs, cross = [], []
    for past, present in match_pairs(inputs, outputs):
        same = _dim_names(values[past]) == _dim_names(values[present])
        (cross if same else self_pairs).append((past, present))
    if not cross:
        raise ConverterError("the decoder has no cross-attention cache pairs (a present as "
                             "long as its past)", where=str(later),
                             fix="give optimum's seq2seq export (past_key_values.N.encoder.*)")
    if not self_pairs:
        raise ConverterError("the decoder has no self-attention cache pairs",
                             where=str(later), fix="give a with-past export of the decoder")
    spec = read_decoder_spec(path, patterns=self_pairs, dims=dims)
    encoder_model = read_signature(encoder)
    encoder_inputs = [v.name for v in encoder_model.graph.input]
    if ENCODER_OUTPUT not in {v.name for v in encoder_model.graph.output}:
        raise ConverterError(f"the encoder gives no '{ENCODER_OUTPUT}'", where=str(encoder),
                             fix="give optimum's encoder_model.onnx")
    if not {"input_ids", "input_features"} & set(encoder_inputs):
        raise ConverterError("the encoder takes neither input_ids nor input_features",
                             where=str(encoder), fix="inputs: " + ", ".join(encoder_inputs))
    start = _read_config(later.parent / "config.json")
    logits = _dim_names(values["logits"]) if "logits" in values else []
    vocabulary = logits[-1] if logits and isinstance(logits[-1], int) else None
    return Seq2SeqSpec(encoder, encoder_inputs, spec, cross, start, vocabulary)


def _encoder_beside(decoder: Path) -> Path:
    """encoder_model<suffix>.onnx for decoder_model<_merged><suffix>.onnx."""
    name = decoder.name
    for stem in ("decoder_model_merged", "decoder_with_past_model", "decoder_model"):
        if name.startswith(stem):
            return decoder.with_name("encoder_model" + name[len(stem):])
    return decoder.with_name("encoder_model.onnx")


def _read_config(path: Path) -> list[int] | None:
    """[decoder_start_token_id] of the transformers config.json (None where the file or the
    member is missing)."""
    from ..formats._files import open_model_file, parse_json

    if not path.exists():
        return None
    with open_model_file(path, "model config", sidecar=True) as f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise ConverterError(f"config.json is over {MAX_CONFIG_BYTES} bytes", where=str(path),
                             fix="give the transformers config of the model")
    try:
        config = parse_json(data.decode("utf-8"), str(path), "model config")
    except UnicodeDecodeError:
        raise ConverterError("config.json is not UTF-8 text", where=str(path)) from None
    if not isinstance(config, dict):
        raise ConverterError("config.json is not a JSON object", where=str(path))
    start = config.get("decoder_start_token_id")
    if start is None:
        return None
    if isinstance(start, bool) or not isinstance(start, int) or not 0 <= start < 1 << 31:
        raise ConverterError(f"config.json's decoder_start_token_id {start!r} is not a token "
                             f"id", where=str(path), fix="give the model's own config.json")
    return [start]


def encoder_feeds(spec: Seq2SeqSpec, given: Mapping[str, object]) -> dict[str, np.ndarray]:
    """The encoder's feeds from `given` (lists or arrays; a 1-D one gets the batch axis): an
    attention_mask of ones when the encoder takes one and none is given."""
    feeds = {}
    for name, value in given.items():
        if name not in spec.encoder_inputs:
            raise ConverterError(f"the encoder has no input '{name}'", where=str(spec.encoder),
                                 fix="inputs: " + ", ".join(spec.encoder_inputs))
        array = np.asarray(value)
        feeds[name] = array[None] if array.ndim == 1 else array
    if "input_ids" in feeds:
        ids = feeds["input_ids"]
        if ids.shape[-1] == 0 or ids.ndim != 2 or ids.shape[0] != 1:
            raise ConverterError(f"the encoder's input_ids are {list(ids.shape)}: one "
                                 f"sequence of at least one token", where=str(spec.encoder))
        if not np.issubdtype(ids.dtype, np.integer):
            raise ConverterError(f"the encoder's input_ids are {ids.dtype}, not token ids",
                                 where=str(spec.encoder), fix="give integer token ids")
        if spec.vocabulary:
            check_tokens([int(t) for t in ids.reshape(-1)], spec.vocabulary)
        feeds["input_ids"] = ids.astype(np.int64)
        if "attention_mask" in spec.encoder_inputs and "attention_mask" not in feeds:
            feeds["attention_mask"] = np.ones(ids.shape, np.int64)
    missing = [n for n in spec.encoder_inputs if n not in feeds]
    if missing:
        raise ConverterError(f"the encoder's input '{missing[0]}' is not given",
                             where=str(spec.encoder), fix="inputs: " +
                             ", ".join(spec.encoder_inputs))
    return feeds


class Seq2SeqLoop(ConcatLoop):
    """An encoder-decoder's decoder in its concat form, fed the encoder's output at every
    step: `encode()` once, then converter.generate() drives it like a decoder."""

    def __init__(self, path: str | Path, *, encoder: str | Path | None = None,
                 dims: Mapping[str, int] | None = None, runtime: str = "ort",
                 max_graphs: int = 8, target: str | None = None):
        self.seq2seq = read_seq2seq_spec(path, encoder=encoder, dims=dims)
        self.encoded: dict[str, np.ndarray] | None = None
        self.encoder_graph = None
        super().__init__(path, patterns=self.seq2seq.decoder.pairs, dims=dims,
                         max_graphs=max_graphs, runtime=runtime, target=target)

    @property
    def start_tokens(self) -> list[int]:
        """The decoder's first tokens: [config.json's decoder_start_token_id]."""
        if self.seq2seq.start_tokens is None:
            raise ConverterError("no decoder_start_token_id: config.json beside the decoder is "
                                 "missing or has none", where=str(self.path),
                                 fix="put the model's config.json (with "
                                     "decoder_start_token_id) beside it; in Python, pass the "
                                     "decoder's first tokens to converter.generate")
        return list(self.seq2seq.start_tokens)

    def encode(self, given: Mapping[str, object]) -> dict[str, np.ndarray]:
        """Run the encoder once on `given` (its inputs by name); every decoder step after
        this reads its output. Returns the encoder's feeds as run."""
        from ..conversion.by_suffix import load_any

        feeds = encoder_feeds(self.seq2seq, given)
        self.encoder_graph = load_any(self.seq2seq.encoder,
                                      input_shapes={n: v.shape for n, v in feeds.items()})
        self.fit(self.encoder_graph)
        for name, value in feeds.items():
            feeds[name] = value.astype(_dtype(self.encoder_graph, name))
        out = self._run(self.encoder_graph, feeds)
        hidden = np.asarray(out[ENCODER_OUTPUT])
        self.encoded = {HIDDEN_STATES: hidden}
        mask = feeds.get("attention_mask")
        self.encoded[ENCODER_MASK] = mask if mask is not None else \
            np.ones(hidden.shape[:2], np.int64)
        self._graphs.clear()  # shaped for the encoder's length
        self.reset()
        return feeds

    def reset(self) -> None:
        super().reset()
        self.cross: dict[str, np.ndarray] = {}

    def graph(self, past: int, step: int):
        """ConcatLoop's graph, without the warnings of the merged file's placeholders: its
        cache branch gives empty encoder presents, which the importer drops (the first step's
        are what the loop keeps)."""
        import re
        import warnings

        from ..importers.dropped_outputs import DroppedOutputWarning

        names = "|".join(re.escape(present) for _, present in self.seq2seq.cross)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", f".*: output '({names})' dropped: it is empty",
                                    DroppedOutputWarning)
            return super().graph(past, step)

    # ConcatLoop's hooks: the encoder's side of each step
    def side_shapes(self, past: int, model) -> dict[str, list[int]]:
        if self.encoded is None:
            raise ConverterError("the encoder has not run", where=str(self.path),
                                 fix="call encode() with its inputs before generating")
        hidden = self.encoded[HIDDEN_STATES]
        shapes = {HIDDEN_STATES: list(hidden.shape), ENCODER_MASK: list(hidden.shape[:2])}
        for name, _ in self.seq2seq.cross:
            # the encoder's rows; none at the first step, which computes them (the merged
            # file's no-cache branch does not read them: an input of no elements is a
            # constant to the importer, so the graph has none to feed)
            shape = list(self.spec.past_shape(0))
            shape[self.spec.seq_axis] = hidden.shape[1] if past else 0
            shapes[name] = shape
        takes = {v.name for v in model.graph.input}
        return {name: shape for name, shape in shapes.items() if name in takes}

    def side_feeds(self, graph) -> dict[str, np.ndarray]:
        feeds = {**self.encoded, **self.cross}
        return {n: v.astype(_dtype(graph, n)) for n, v in feeds.items() if n in graph.inputs}

    def took(self, out: Mapping[str, np.ndarray]) -> None:
        if not self.cross:  # the first step computes them; later steps read them back
            for past, present in self.seq2seq.cross:
                if present not in out:
                    raise ConverterError(f"the first step gives no '{present}' for the "
                                         f"cross-attention cache '{past}'", where=str(self.path))
                self.cross[past] = np.asarray(out[present])


def load_seq2seq(path: str | Path, *, encoder: str | Path | None = None,
                 dims: Mapping[str, int] | None = None, runtime: str = "ort",
                 target: str | None = None) -> Seq2SeqLoop:
    """The decoder file `path` of an encoder-decoder (merged, or either of the unmerged pair)
    with its encoder (default: encoder_model.onnx beside it) as a loop converter.generate
    drives after `loop.encode(inputs)`; each step's graph runs on `runtime` ('ort' or
    'chromium'), fitted to `target` if given (e.g. 'chromium-litert', whose limits a q4
    model's uint4 weights break). A fixed capacity is refused (the module docstring says
    why)."""
    return Seq2SeqLoop(path, encoder=encoder, dims=dims, runtime=runtime, target=target)


def generate_seq2seq_on_onnxruntime(path: str | Path, given: Mapping[str, object],
                                    prompt_ids: Sequence[int], max_new_tokens: int, *,
                                    encoder: str | Path | None = None,
                                    eos_token_id: int | None = None, moved: int = 0,
                                    forced: Sequence[int] | None = None) -> Generation:
    """The reference: the source files on ONNX Runtime as optimum's runtime feeds them. The
    encoder once; the decoder's first step the whole prompt through decoder_model.onnx or the
    merged file's no-cache branch (its past inputs fed empty), each later step one token with
    the self-attention presents of the step before and the first step's cross-attention
    presents. `moved` and `forced` as generation.generate_on_onnxruntime takes them (the
    encoder moved too)."""
    from ..runtimes.source_runs import run_onnx

    s = read_seq2seq_spec(path, encoder=encoder)
    spec = s.decoder
    if forced is not None:
        max_new_tokens = len(forced)
    prompt = [int(t) for t in prompt_ids]
    _check_request(prompt, max_new_tokens)
    feeds = encoder_feeds(s, given)
    hidden = run_onnx(s.encoder, feeds, moved=moved)[ENCODER_OUTPUT]
    side = {HIDDEN_STATES: hidden, ENCODER_MASK: feeds.get(
        "attention_mask", np.ones(hidden.shape[:2], np.int64))}
    empty = np.zeros(spec.past_shape(0), np.float32)
    past = {name: empty for name, _ in [*spec.pairs, *s.cross]}
    takes = {path_: {v.name for v in read_signature(path_).graph.input}
             for path_ in {spec.path, spec.first_path} - {None}}
    result = Generation([])
    fed, new = 0, prompt
    while True:
        first = fed == 0 and spec.first_path is not None
        model = Path(spec.first_path if first else spec.path)
        step = {spec.input_ids: np.array([new], np.int64), **side, **past}
        if spec.branch:
            step[spec.branch] = np.array([fed > 0])
        out = run_onnx(model, {n: v for n, v in step.items() if n in takes[model]},
                       moved=moved)
        rows = np.asarray(out["logits"]).reshape(len(new), -1)
        result.logits.extend(list(rows))
        if fed == 0:
            past.update({name: out[present] for name, present in s.cross})
        past.update({name: out[present] for name, present in spec.pairs})
        fed += len(new)
        token = int(np.argmax(rows[-1]) if forced is None else forced[len(result.tokens)])
        result.tokens.append(token)
        if len(result.tokens) == max_new_tokens or token == eos_token_id:
            return result
        new = [token]


def _dtype(graph, name: str):
    from .. import dtypes

    return dtypes.numpy_dtype(graph.inputs[name].data_type)
