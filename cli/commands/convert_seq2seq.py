"""`convert DECODER.onnx -o NAME.js --steps N` on an encoder-decoder's decoder (optimum's
Whisper, T5, BART, Marian): a module that generates in the browser (state/seq2seq_js.py),
every graph of it rewritten for --target T when given (q4's uint4 weights: chromium-litert)."""
from __future__ import annotations

import click
from click.core import ParameterSource

from ..terminal import echo, echo_json

# The options that apply here besides the source and output: --steps, the encoder's length
# (--dim encoder_sequence_length=N), the target every graph is rewritten for, and how the
# files written are said.
_TAKEN = {"source", "output", "steps", "dims", "follow_symlinks", "target_name", "as_json",
          "verbose"}
ENCODER_DIM = "encoder_sequence_length"


def write_module(ctx: click.Context, source, output: str, dims: dict, steps: int,
                 target_name: str | None, as_json: bool) -> None:
    from converter.state.seq2seq_js import write_seq2seq_js

    flags = {p.name: max(p.opts, key=len) for p in ctx.command.params}
    given = [flags[name] for name in flags if name not in _TAKEN
             and ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
    if given:
        raise click.UsageError(f"{given[0]} does not apply to an encoder-decoder's .js module "
                               f"(--steps N, --dim {ENCODER_DIM}=N, --target T)")
    other = [name for name in dims if name != ENCODER_DIM]
    if other or not isinstance(dims.get(ENCODER_DIM, 0), int):
        raise click.UsageError(f"an encoder-decoder's module takes one --dim, "
                               f"{ENCODER_DIM}=N (the encoder's input length)")
    written, notes = write_seq2seq_js(source, output, steps, target=target_name,
                                      encoder_length=dims.get(ENCODER_DIM))
    if as_json:
        echo_json({"written": [str(p) for p in written], "notes": notes}, indent=2)
    else:
        rewritten = f", rewritten for {target_name}" if target_name else ""
        echo(f"wrote {', '.join(str(p) for p in written)} (the encoder, and the decoder at "
             f"{steps} past length(s){rewritten})")
        for note in notes:
            echo(f"note: {note}")
