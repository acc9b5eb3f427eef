"""Step-wise parity of an encoder-decoder: greedy generation through the converted graphs
(state/seq2seq.py's loop: the encoder once, the decoder in its concat form, on ONNX Runtime or
in Chromium) against the source files on ONNX Runtime run the same way.

    loop = converter.load_seq2seq("whisper/decoder_model_merged.onnx")
    report = verify_seq2seq(loop, {"input_features": features}, prompt=[1], steps=16)
    report.passed   # the same greedy tokens, and every position's logits within the bounds

The report is decode.py's DecodeReport: `prompt` is the decoder's (its start tokens), and a note
says what the encoder ran on. q8 files (DynamicQuantizeLinear) have the positions outside the
bounds judged against the source's own spread, as decoders are (quantized_spread.py).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from ..runtimes.source_runs import dynamic_quantize_nodes
from .decode import DecodeReport, compare_positions, judge_quantized_positions

__all__ = ["verify_seq2seq"]


def verify_seq2seq(loop, given: Mapping[str, object], *, prompt: Sequence[int], steps: int,
                   atol: float | None = None, rtol: float | None = None,
                   ulp: int | None = None, described: str | None = None) -> DecodeReport:
    """`steps` greedy tokens after the decoder `prompt`, the encoder run on `given`, on both
    sides; every shared position's logits compared under the logits output's bounds.
    `described` says in the report how the encoder's inputs were made (default: their
    shapes)."""
    from ..state.generation import generate
    from ..state.seq2seq import generate_seq2seq_on_onnxruntime

    feeds = loop.encode(given)
    ours = generate(loop, prompt, steps)
    spec = loop.seq2seq
    source = spec.decoder.first_path or spec.decoder.path

    def on_ort(**how):
        return generate_seq2seq_on_onnxruntime(source, given, prompt, steps,
                                               encoder=spec.encoder, **how)

    theirs = on_ort()
    report = DecodeReport(str(source), None, [int(t) for t in prompt], theirs.tokens,
                          ours.tokens,
                          graph_runtime="webnn-onnx" if loop.runtime == "ort" else loop.runtime)
    if described is None:
        described = ", ".join(f"{name} {list(np.shape(value))}"
                              for name, value in feeds.items())
    report.notes.append(f"the encoder {spec.encoder.name} ran once on {described}; the "
                        f"decoder steps its concat form, {loop.conversions} graphs")
    compare_positions(report, loop.last_graph, loop.logits, ours, theirs, len(prompt), atol,
                      rtol, ulp)
    quantizers = sum(dynamic_quantize_nodes(Path(path)) for path in {
        spec.encoder, spec.decoder.path, spec.decoder.first_path} - {None})
    if quantizers:
        judge_quantized_positions(report, theirs, quantizers, lambda direction: on_ort(
            moved=direction, forced=theirs.tokens), explicit=dict(atol=atol, rtol=rtol, ulp=ulp))
    return report
