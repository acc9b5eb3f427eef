"""KV caches of decoder exports as graph state: which inputs pair with which outputs, and the
dimensions a decoder is imported with.

A decoder export reads its past keys and values as inputs and returns them, with this step's
rows, as outputs: `past_key_values.N.key` -> `present.N.key` (onnxruntime-genai's builder and
optimum both name them so). `--state 'PAST=PRESENT'` names other schemes: glob patterns whose
`*`s match the same text on both sides (`'cache_in_*=cache_out_*'`).

Two forms (`DecoderSpec.dims`):
- fixed capacity: one graph serves every step, each pair a state of one shape, the attention
  mask [1, C] with ones on the filled rows from the left. GroupQueryAttention takes it itself
  when total_sequence_length is the buffer's length (ONNX Runtime's shared buffer; the
  importer's attention_cache.py: the past is a buffer of C rows the new rows are written
  into); a cache that grows by a Concat slides instead (state/window_form.py: C-1 past rows,
  the oldest dropped each step), which needs position_ids as an input.
- concat: the outputs are the inputs with S rows appended, so the state grows by S each step;
  a static graph holds one past length, and state/concat_form.py's ConcatLoop converts the
  model once per length it meets.

Optimum writes three files of one decoder (`read_decoder_spec` reads each): the merged
decoder_model_merged.onnx, whose If on `use_cache_branch` takes the no-cache branch at the
first step (`DecoderSpec.known` fixes it per step); the unmerged decoder_model.onnx (no past
inputs: the first step) beside decoder_with_past_model.onnx (`unmerged_pair`); and optimum
2.x's single model.onnx, fed an empty past at the first step.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from ..errors import ConverterError

__all__ = ["DEFAULT_PATTERNS", "parse_state_patterns", "match_pairs", "DecoderSpec",
           "read_decoder_spec", "unmerged_pair", "is_seq2seq", "declare_kv_state",
           "check_tokens"]

# past -> present names of the exporters we know; the user adds others with --state.
DEFAULT_PATTERNS: tuple[tuple[str, str], ...] = (("past_key_values.*", "present.*"),
                                                  ("past_key_values_*", "present_*"))
MAX_CAPACITY = 1 << 20  # rows; a larger cache is a typo, not a model
HIDDEN_STATES = "encoder_hidden_states"  # an encoder-decoder's decoder reads the encoder so


def parse_state_patterns(texts: Iterable[str]) -> list[tuple[str, str]]:
    """'PAST=PRESENT' texts as (past glob, present glob) pairs with as many `*`s each."""
    patterns = []
    for text in texts:
        past, sep, present = text.partition("=")
        past, present = past.strip(), present.strip()
        if not sep or not past or not present:
            raise ConverterError(f"--state '{text}' is not PAST=PRESENT",
                                 fix="e.g. --state 'past_key_values.*=present.*'")
        if past.count("*") != present.count("*") or "?" in past + present or \
                "[" in past + present:
            raise ConverterError(f"--state '{text}': both sides need the same number of '*' "
                                 f"(the only wildcard)",
                                 fix="e.g. --state 'cache_in_*=cache_out_*'")
        patterns.append((past, present))
    return patterns


def _glob_regex(pattern: str) -> re.Pattern:
    return re.compile("".join("(.*?)" if part == "*" else re.escape(part)
                              for part in re.split(r"(\*)", pattern)) + r"\Z")


def match_pairs(inputs: Sequence[str], outputs: Sequence[str],
                patterns: Sequence[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """(past input, present output) pairs: each input a past pattern matches, with the output
    its present pattern names after the same `*` texts. Given patterns must each match; an
    input whose output is missing is an error (the cache would not be carried)."""
    given = patterns is not None
    pairs: list[tuple[str, str]] = []
    taken: set[str] = set()
    for past, present in (patterns if given else DEFAULT_PATTERNS):
        regex = _glob_regex(past)
        found = 0
        for name in inputs:
            match = regex.match(name)
            if match is None or name in taken:
                continue
            parts = iter(match.groups())
            output = re.sub(r"\*", lambda _: next(parts), present)
            if output not in outputs:
                raise ConverterError(f"state input '{name}' has no output '{output}' "
                                     f"('{past}={present}')",
                                     fix="name the pairs with --state 'PAST=PRESENT'")
            pairs.append((name, output))
            taken.add(name)
            found += 1
        if given and not found:
            raise ConverterError(f"--state '{past}={present}' matches no input",
                                 fix="inputs: " + ", ".join(inputs))
    return pairs


@dataclass
class DecoderSpec:
    """What a decoder's step loop feeds and carries, read from its ONNX signature."""

    input_ids: str
    attention_mask: str | None
    position_ids: str | None
    pairs: list[tuple[str, str]]
    batch_dim: str | None  # symbolic dimension names, as the export writes them
    new_dim: str | None  # tokens this step
    past_dim: str  # rows in the past inputs
    total_dim: str | None  # rows in the present outputs (and the mask)
    fixed: dict[str, int] = field(default_factory=dict)  # other symbolic dims' values
    readers: dict[str, list[str]] = field(default_factory=dict)  # past input -> node op types
    path: Path | None = None  # the file of the steps with a past
    first_path: Path | None = None  # an unmerged pair's file without past inputs (first step)
    branch: str | None = None  # a merged decoder's If condition input (use_cache_branch)
    seq_axis: int = 2  # the cache's length axis
    past_dims: list = field(default_factory=list)  # the past inputs' dims as written

    def capacity_form(self) -> str:
        """'buffer' when every past input is read by an attention op that writes into it
        (GroupQueryAttention); else 'window' (the cache grows by a Concat: a fixed past of
        N-1 rows slides, state/window_form.py), which needs the positions as an input."""
        if all(ops and set(ops) == {"GroupQueryAttention"} for ops in self.readers.values()):
            return "buffer"
        if self.position_ids is None:
            name = next(iter(self.readers))
            raise ConverterError(
                f"'{name}' grows by each step's rows and the model has no position_ids input, "
                f"so a cache of fixed length would shift its positions",
                where=str(self.path), fix="step its concat form on ort: run/verify --prompt "
                                          "IDS --steps N without --cache-capacity (the "
                                          "browser steps fixed-capacity graphs only)")
        return "window"

    def known(self, past: int) -> dict:
        """The inputs fixed at conversion: a merged decoder's branch (the cache branch once
        there is a past)."""
        import numpy as np

        return {self.branch: np.array([past > 0])} if self.branch else {}

    def input_shapes(self, total: int) -> dict[str, list[int]]:
        """The attention mask's shape: past and new rows (a merged export names its axis
        after the new tokens alone, so its dims cannot size it)."""
        return {self.attention_mask: [1, total]} if self.attention_mask else {}

    def past_shape(self, rows: int) -> tuple[int, ...]:
        """A past input's shape at batch 1 and `rows` rows."""
        shape = []
        for d in self.past_dims:
            if isinstance(d, int):
                shape.append(d)
            elif d == self.past_dim:
                shape.append(rows)
            elif d == self.batch_dim:
                shape.append(1)
            elif d in self.fixed:
                shape.append(self.fixed[d])
            else:
                raise ConverterError(f"the cache's dimension '{d}' is open", where=str(self.path),
                                     fix=f"set it with --dim {d}=VALUE")
        return tuple(shape)

    def dims(self, *, past: int, step: int = 1, capacity: int | None = None,
             extra: Mapping[str, int] | None = None) -> dict[str, int]:
        """The --dim values of one step: `step` new tokens after `past` rows (concat form),
        or into a buffer of `capacity` rows (fixed capacity: past = total = capacity)."""
        dims = {**self.fixed, **(extra or {})}
        if self.batch_dim:
            dims[self.batch_dim] = 1
        if self.new_dim:
            dims[self.new_dim] = step
        if capacity is not None:
            if not 0 < capacity <= MAX_CAPACITY:
                raise ConverterError(f"--cache-capacity {capacity} is not 1..{MAX_CAPACITY}")
            dims[self.past_dim] = capacity
            if self.total_dim:
                dims[self.total_dim] = capacity
        else:
            dims[self.past_dim] = past
            if self.total_dim:
                dims[self.total_dim] = past + step
        return dims


def read_decoder_spec(path: str | Path, patterns: Sequence[tuple[str, str]] | None = None,
                      dims: Mapping[str, int] | None = None) -> DecoderSpec:
    """The decoder bookkeeping of an ONNX file: the pairs (`patterns`, else the known names),
    the token, mask and position inputs, and which symbolic dimension is the cache's length.
    A dimension the signature leaves open but the loop does not set (the builder's
    kv_cache_dim) comes from `dims`, else from genai_config.json beside the model."""
    path = Path(path)
    if path.suffix.lower() != ".onnx" or not path.is_file():
        raise ConverterError("a KV cache is read from an .onnx decoder", where=str(path),
                             fix="give the exporter's model.onnx")
    first, path = unmerged_pair(path)
    model = read_signature(path)
    inputs = {v.name: v for v in model.graph.input}
    inputs = {n: v for n, v in inputs.items()
              if n not in {t.name for t in model.graph.initializer}}
    outputs = {v.name: v for v in model.graph.output}
    pairs = match_pairs(list(inputs), list(outputs), patterns)
    where = str(path)
    later = _with_past_name(path)
    if not pairs and later is not None:  # the first file of a pair, its second missing
        raise ConverterError(f"{path.name} has no past inputs: its later steps are "
                             f"{later.name}, which is not beside it", where=where,
                             fix=f"put {later.name} beside it, or give the merged "
                                 f"decoder_model_merged.onnx")
    if not pairs:
        raise ConverterError("no past/present cache pairs found", where=where,
                             fix="name them with --state 'PAST=PRESENT' (globs, e.g. "
                                 "'past_key_values.*=present.*')")
    past_dims, present_dims = _dim_names(inputs[pairs[0][0]]), _dim_names(outputs[pairs[0][1]])
    seq_axes = [i for i, (a, b) in enumerate(zip(past_dims, present_dims))
                if a != b and isinstance(a, str)]
    if len(past_dims) != len(present_dims) or len(seq_axes) != 1:
        raise ConverterError(f"cannot tell the sequence axis of '{pairs[0][0]}' "
                             f"{past_dims} -> '{pairs[0][1]}' {present_dims}", where=where,
                             fix="the past and present shapes differ in one named dimension")
    axis = seq_axes[0]
    past_dim, total = past_dims[axis], present_dims[axis]
    ids = _pick(inputs, ("input_ids",), where, "the token ids input")
    mask = _pick(inputs, ("attention_mask",), where, None)
    positions = _pick(inputs, ("position_ids",), where, None)
    id_dims = _dim_names(inputs[ids])
    batch = id_dims[0] if len(id_dims) == 2 and isinstance(id_dims[0], str) else None
    new = id_dims[-1] if isinstance(id_dims[-1], str) else None
    known = {batch, new, past_dim, total if isinstance(total, str) else None}
    open_dims = {d for name, _ in pairs for d in _dim_names(inputs[name])
                 if isinstance(d, str) and d not in known}
    fixed = {d: int(dims[d]) for d in open_dims if dims and d in dims}
    missing = sorted(open_dims - set(fixed))
    if missing:
        fixed.update(_from_genai_config(path, missing, past_dims))
    readers: dict[str, list[str]] = {name: [] for name, _ in pairs}
    for node in model.graph.node:
        for name in node.input:
            if name in readers:
                readers[name].append(node.op_type)
    branch = _pick(inputs, ("use_cache_branch",), where, None)
    return DecoderSpec(ids, mask, positions, pairs, batch, new, past_dim,
                       total if isinstance(total, str) else None, fixed, readers, path, first,
                       branch, axis, past_dims)


def unmerged_pair(path: Path) -> tuple[Path | None, Path]:
    """(the file of the first step, the file of the steps with a past): optimum's unmerged
    pair is decoder_model*.onnx (no past inputs) beside decoder_with_past_model*.onnx (the
    same suffix: _quantized, _fp16 ...); any other file is both (None, path)."""
    name = path.name
    if "decoder_with_past_model" in name:
        first = path.with_name(name.replace("decoder_with_past_model", "decoder_model"))
        return (first if first.is_file() else None), path
    later = _with_past_name(path)
    if later is not None and later.is_file():
        return path, later
    return None, path


def is_seq2seq(path: str | Path) -> bool:
    """A decoder of an encoder-decoder (state/seq2seq.py): its (first) file reads the
    encoder's output, encoder_hidden_states."""
    path = Path(path)
    if path.suffix.lower() != ".onnx" or not path.is_file():
        return False
    first, later = unmerged_pair(path)
    return HIDDEN_STATES in {v.name for v in read_signature(first or later).graph.input}


def _with_past_name(path: Path) -> Path | None:
    """decoder_with_past_model*.onnx beside decoder_model*.onnx (None for other names)."""
    name = path.name
    if not name.startswith("decoder_model") or "merged" in name:
        return None
    return path.with_name(name.replace("decoder_model", "decoder_with_past_model", 1))


def read_signature(path: Path):
    """The model's proto, read the way the importer reads untrusted files (weights mapped,
    not copied), for its inputs and outputs."""
    from ..importers.onnx.model_file import read_model

    model, _, _ = read_model(path)
    return model


def declare_kv_state(graph, pairs: Sequence[tuple[str, str]]) -> None:
    """Declare each (past, present) pair as zero-initialised state of `graph`, which must give
    them one shape (the fixed-capacity form); the concat form is refused with what to do."""
    for past, present in pairs:
        source, target = graph.inputs.get(past), graph.outputs.get(present)
        if source is None or target is None:
            raise ConverterError(f"the graph has no {'input' if source is None else 'output'} "
                                 f"'{past if source is None else present}' of cache pair "
                                 f"'{past}={present}'")
        if source.shape != target.shape:
            raise ConverterError(
                f"'{present}' is {list(target.shape)} where '{past}' is "
                f"{list(source.shape)}: the model appends to its cache (concat form), so a "
                f"graph's state would grow each step",
                fix="convert with --cache-capacity N instead of --state (converter."
                    "load_decoder: one graph, its cache a buffer or a sliding window), or "
                    "step the concat form with run/verify --prompt IDS --steps N alone")
        graph.declare_state(past, present)


def _dim_names(value) -> list[str | int | None]:
    return [d.dim_param if d.HasField("dim_param") else
            (d.dim_value if d.HasField("dim_value") else None)
            for d in value.type.tensor_type.shape.dim]


def _pick(inputs: Mapping, names: Sequence[str], where: str, required: str | None) -> str | None:
    for name in names:
        if name in inputs:
            return name
    if required:
        raise ConverterError(f"no {required} ({' or '.join(names)})", where=where)
    return None


def _from_genai_config(path: Path, missing: list[str], past_dims: list) -> dict[str, int]:
    """The head size of onnxruntime-genai's genai_config.json for the cache's last axis."""
    config = path.parent / "genai_config.json"
    fix = "set it with --dim " + missing[0] + "=VALUE"
    if missing != [past_dims[-1]] or not config.is_file() or config.is_symlink() \
            or config.stat().st_size > 1 << 20:
        raise ConverterError(f"the cache's dimension '{missing[0]}' is open", where=str(path),
                             fix=fix)
    try:
        head = json.loads(config.read_text("utf-8"))["model"]["decoder"]["head_size"]
    except (ValueError, KeyError, TypeError) as e:
        raise ConverterError(f"genai_config.json has no model.decoder.head_size ({e})",
                             where=str(config), fix=fix) from None
    if not isinstance(head, int) or not 0 < head <= 1 << 16:
        raise ConverterError(f"genai_config.json's head_size {head!r} is not a size",
                             where=str(config), fix=fix)
    return {missing[0]: head}


def check_tokens(tokens: Sequence[int], vocabulary: int) -> None:
    """Token ids index the embedding table: outside it a gather has no value to take."""
    for token in tokens:
        if not 0 <= token < vocabulary:
            raise ConverterError(f"token id {token} is outside the vocabulary 0..{vocabulary - 1}",
                                 fix="give token ids the model's tokenizer makes")
