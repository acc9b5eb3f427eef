"""The option vocabulary: every option more than one command takes, defined once.

Each entry of VOCABULARY gives an option's flags, its type, default and help; a command takes
it with `use("target", "runtime", ...)`, so `-t/--target` or `--seed` read, default and show
alike in every command (tests/cli/test_option_vocabulary.py walks the commands and fails on
a drift). Help texts are the same in every command, so they say what the option means, and
a command's docstring says what it does with it. Which commands take each option, and the
table the documentation includes, are walked from the command group (option_table.py).

Only zoo takes some options repeatedly (a run over many targets and runtimes): an entry's
`repeatable_in` names the commands that take it that way, with the same flags and help.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import click

from . import option_values as values
from .numbers import Choice, Decimal, Integer
from .device_options import Runtime, use_server

__all__ = ["VOCABULARY", "Shared", "use",
           "INPUT_FILES", "SEVERAL_DIMS", "given_inputs"]

INPUT_FILES = values.INPUT_FILES
SEVERAL_DIMS = values.SEVERAL_DIMS
given_inputs = values.given_inputs


@dataclass(frozen=True)
class Shared:
    """One option: click's declarations (flags, then the parameter's name) and settings."""

    decls: tuple[str, ...]
    help: str
    settings: dict[str, Any] = field(default_factory=dict)
    repeatable_in: tuple[str, ...] = ()  # commands taking it several times (zoo)

    @property
    def flags(self) -> tuple[str, ...]:
        return tuple(d for d in self.decls if d.startswith("-"))

    @property
    def long(self) -> str:
        return next(f for f in self.flags if f.startswith("--"))

    def option(self, repeat: bool = False) -> Callable:
        settings = dict(self.settings)
        if repeat:
            default = settings.get("default")
            settings.update(multiple=True, default=() if default is None else (default,))
        return click.option(*self.decls, help=self.help, **settings)


_RUNTIMES = ("ort", "chromium")
# converter.passes.weight_types.WEIGHT_TYPES and DEFAULT_BLOCK_SIZE, spelled here so start-up
# does not import the passes (tests/cli/test_weights_option.py checks they agree).
WEIGHT_TYPES = ("float32", "float16", "int8", "int4")
DEFAULT_BLOCK_SIZE = 32
# converter.passes.float16_compute.COMPUTE_TYPES, spelled here for the same reason.
COMPUTE_TYPES = ("float32", "float16")

VOCABULARY: dict[str, Shared] = {
    "output": Shared(
        ("-o", "--output"),
        "The file to write; its suffix picks the format (.webnn, .json, .onnx, .tflite, .js).",
        dict(required=True, type=click.Path(dir_okay=False))),
    "target": Shared(
        ("--target", "-t", "target_name"),
        "A backend: a built-in target's name (see `webnn-convert targets`) or a target file "
        "(an opSupportLimits JSON). The graph is rewritten by the target's passes before the "
        "command uses it. check also takes `all`, its default: every built-in target; zoo "
        "takes it repeatedly.",
        dict(metavar="T"), repeatable_in=("zoo",)),
    "io_layout": Shared(
        ("--io-layout",),
        "With --target: the layout of 4-D graph inputs and outputs (default: the source's). "
        "The graph file records which it transposed, so verification feeds each side in its "
        "own layout (--input files are in the source model's layout).",
        dict(type=Choice(["nchw", "nhwc"]))),
    "dequantize": Shared(
        ("--dequantize",),
        "With --target: store quantized weights as float (each dequantizeLinear's result "
        "type) even where the target takes their type; by default they stay quantized there, "
        "or are re-encoded exactly (uint4 -> int4 ...). check says what convert then does.",
        dict(is_flag=True)),
    "weights": Shared(
        ("--weights",),
        "The type float32 weights are stored as: float16 stores each float32 constant of "
        "256 bytes or more as float16, read through a cast to float32 (the weights file about "
        "halves; the graph still computes in float32). int8 stores conv2d, convTranspose2d, "
        "matmul and gemm weights as int8 with a float32 scale per output channel (symmetric), "
        "int4 matmul and gemm weights as int4 with a scale per --block-size values along the "
        "reduction dim, each read through dequantizeLinear (int4 kept where the --target takes "
        "it, else widened exactly to uint4 or int8). Smaller constants, biases and norms, values "
        "float16 cannot hold (or not finite, for int8/int4) and operands a --target wants "
        "constant stay float32 (-v lists them). A .tflite output keeps float16 and int8 "
        "weights (read by DEQUANTIZE); int4 is refused there (TFLite has no blockwise scales). "
        "verify (and convert --verify) then also measures the compressed graph against the float source: weights size "
        "before and after, errors, cosine and top-1/top-5 over --samples inputs, judged by "
        "--accuracy; zoo does so for every model of the run.",
        dict(type=Choice(WEIGHT_TYPES), default="float32", show_default=True)),
    "compute": Shared(
        ("--compute",),
        "The float type the graph computes in: float16 computes each op in float16 where the "
        "--target (without one: the portable target, the spec's op table) takes its float16 "
        "form, and stores the float32 constants those ops read as float16 (one float32 ops "
        "also read: once, as float32, cast to float16 for them); normalizations, "
        "softmax and summing reductions stay float32 (their statistics lose most in float16), "
        "as do ops the target takes no float16 for, with one cast each way (-v lists them). "
        "The graph's inputs and outputs stay float32, and verify judges outputs computed in "
        "float16 by the float16 bounds (zoo so verifies every model of the run). Refused for a "
        "target that takes no float16 and for a "
        ".tflite output (TFLite computes float16 ops in float32).",
        dict(type=Choice(COMPUTE_TYPES), default="float32", show_default=True)),
    "block_size": Shared(
        ("--block-size",),
        f"With --weights int4: the values per scale along each weight's reduction dim (default "
        f"{DEFAULT_BLOCK_SIZE}, which leaves a weight whose reduction dim it does not divide "
        f"float32); a size given must divide every matmul and gemm weight's reduction dim "
        f"that is not shorter than one block (those stay float32).",
        dict(type=Integer(), metavar="N")),  # the pass says why 0 or -32 is no size
    "accuracy": Shared(
        ("--accuracy",),
        "With --weights: the bounds the compressed graph must meet against the float source, "
        "comma-separated, e.g. 'cosine>=0.999,top1>=0.99' (cosine, top1, top5, tokens take "
        ">=; max_abs, max_rel take <=). Default per scheme, stated in the report: float16 "
        "cosine>=0.9999; int8 cosine>=0.99,top1>=0.99; int4 cosine>=0.98. A bound that "
        "fits no output (top1 without a classifier-shaped output) is an error.",
        dict(callback=values.parse_accuracy, metavar="BOUNDS")),
    "samples": Shared(
        ("--samples",),
        "With --weights: how many seeded inputs (seeds --seed, --seed+1, ...) the accuracy "
        "is measured over (default 16; one when --input/--inputs give every input; "
        "--inputs DIR of sample subfolders gives its own).",
        dict(type=Integer(min=1), metavar="N")),
    "dim": Shared(
        ("--dim", "dims"),
        "Give a symbolic dimension a value (repeatable); 0 empties the inputs it sizes (a "
        "decoder's first, empty past), which become constants; a dim named by an expression "
        "of others ('past + new') is computed from them. convert also takes NAME=V1,V2,... "
        "or NAME=LO..HI: one conversion per value (for a range: its ends and middle), "
        "written as one .webnn/.json or .js with shared weights.",
        dict(multiple=True, callback=values.parse_dims, metavar="NAME=VALUE")),
    "input_shape": Shared(
        ("--input-shape", "input_shapes"),
        "Set a source input's whole shape (repeatable).",
        dict(multiple=True, callback=values.parse_shapes, metavar="NAME=D0,D1,...")),
    "const": Shared(
        ("--const", "known_inputs"),
        "Fix a source input's value at conversion time: a number, a list V1,V2,... or a .npy "
        "file (repeatable). For inputs WebNN needs as plain values, such as a shape or an If "
        "condition.",
        dict(multiple=True, callback=values.parse_constants, metavar="NAME=VALUE")),
    "max_tensor_bytes": Shared(
        ("--max-tensor-bytes",),
        "Memory one computed value may take, e.g. 2GiB (default 1GiB); bigger ones stay "
        "graph ops or fail.",
        dict(callback=values.set_size_limit, expose_value=False, metavar="SIZE")),
    "max_total_bytes": Shared(
        ("--max-total-bytes",),
        "Memory the conversion may allocate for values it computes (default: twice the "
        "model's weights, at least 256MiB).",
        dict(callback=values.set_size_limit, expose_value=False, metavar="SIZE")),
    "follow_symlinks": Shared(
        ("--follow-symlinks",),
        "Read a model file named on the command line that is a symbolic link (pip and npm "
        "caches link them) from the file it points to, as if named there: the files read "
        "beside it (manifest, weights, external data) must then lie in that file's folder. "
        "Without it a link out of the model's folder is refused. A Hugging Face cache "
        "(snapshots/REV/NAME linking into ../../blobs/) is read without it.",
        dict(is_flag=True)),
    "state": Shared(
        ("--state", "state_patterns"),
        "Name the KV-cache pairs by glob patterns whose '*'s match the same text, e.g. "
        "'past_key_values.*=present.*' (repeatable; default: the names genai-builder and "
        "optimum exports use).",
        dict(multiple=True, metavar="PAST=PRESENT")),
    "cache_capacity": Shared(
        ("--cache-capacity",),
        "Convert a decoder (.onnx) with fixed-capacity KV caches of N tokens, one token a "
        "step: its past/present pairs become graph state of one shape (a cache that grows by "
        "Concat, as optimum's do, slides: N-1 past rows, the oldest dropped each step). The "
        "attention mask is [1, N], ones on the filled rows from the left.",
        dict(type=Integer(min=1), metavar="N")),
    "steps": Shared(
        ("--steps",),
        "Step N times, each side carrying its own state: run writes each output stacked, "
        "[N, ...] (an input file of shape [N, ...] gives one value a step); verification "
        "compares every step (LiteRT keeps its variables; an ONNX source is fed its own "
        "next-state outputs). A stateful graph steps once without it. A decoder "
        "(--cache-capacity, or a graph converted with it) decodes N greedy tokens after "
        "--prompt: run writes tokens.npy and logits.npy, one row a position fed; "
        "verification wants the same tokens and each position's logits within the bounds. "
        "--prompt on an .onnx decoder without --cache-capacity runs its concat form, "
        "converted once per length (on ort; an encoder-decoder's on ort or chromium). On "
        "--runtime chromium the state stays on the browser's context between steps (the "
        "module's createSession). `convert DECODER.onnx -o NAME.js --steps N` on an "
        "encoder-decoder's decoder writes a module that generates in the browser: the "
        "encoder, the decoder at each past length 0..N-1 (N at most 256; one weights file), "
        "generate() and NAME.html?prompt=IDS (--dim encoder_sequence_length=L: the text "
        "encoder's input length, default 32).",
        dict(type=Integer(min=1), metavar="N")),
    "prompt": Shared(
        ("--prompt",),
        "With --steps on a decoder: the prompt's token ids, e.g. 1,5,9; --steps N then "
        "decodes N greedy tokens. On an encoder-decoder's decoder (optimum's "
        "decoder_model_merged.onnx, encoder_model.onnx beside it; Whisper, T5, BART, "
        "Marian): the encoder's input_ids when it reads text, the decoder starting from "
        "config.json's decoder_start_token_id; else (Whisper) the decoder's first tokens, "
        "input_features from --input or seeded. The encoder runs once.",
        dict(callback=values.parse_token_ids, metavar="IDS")),
    "runtime": Shared(
        ("--runtime",),
        "Where the WebNN graph runs: ort (ONNX Runtime, through the graph's ONNX lowering), "
        "chromium (a real headless Chromium's WebNN; `webnn-convert browser-install` "
        "first), or device[:NAME[:TYPE]] (a phone or laptop whose browser has the page of "
        "`webnn-convert serve` open; NAME may be left out when one is connected, TYPE is its "
        "deviceType, cpu by default). zoo takes it repeatedly, device there meaning every "
        "connected device, each working through its own queue of models (with chromium "
        "too: this machine's browser as one more).",
        dict(type=Runtime(_RUNTIMES), default="ort", show_default=True,
             metavar="|".join(_RUNTIMES) + "|device[:NAME[:TYPE]]"),
        repeatable_in=("zoo",)),
    "server": Shared(
        ("--server",),
        "With --runtime device: the device server's URL, as `webnn-convert serve` printed "
        "it (default: the one it started last on this machine).",
        dict(metavar="URL", callback=use_server, expose_value=False)),
    "input": Shared(
        ("--input", "given"),
        "An input's value as a .npy file (repeatable), in the source model's layout. Inputs "
        "given neither so nor by --inputs get seeded values that suit their names (masks "
        "all ones, position ids a range; see --seed).",
        dict(multiple=True, callback=values.given_inputs, metavar="NAME=FILE.npy")),
    "inputs": Shared(
        ("--inputs", "inputs_dir"),
        "A folder of NAME.npy files, one per input to give (--input wins for a name in both). "
        "With --weights, it may instead hold one subfolder per sample, each of NAME.npy files: "
        "the accuracy is measured over every sample (at most 10000), the float graph verified "
        "on the first.",
        dict(type=click.Path(file_okay=False), metavar="DIR")),
    "seed": Shared(
        ("--seed",),
        "Seed of the random values of the inputs not given (--input, --inputs); run names "
        "each such input on stderr.",
        dict(type=Integer(min=0), default=0, show_default=True)),
    "atol": Shared(("--atol",), "Absolute tolerance override.", dict(type=Decimal(min=0))),
    "rtol": Shared(("--rtol",), "Relative tolerance override.", dict(type=Decimal(min=0))),
    "ulp": Shared(("--ulp",), "Judge float outputs by this ULP budget instead.",
                  dict(type=Integer(min=0))),
    "oracle": Shared(
        ("--oracle",),
        "When to judge against the graph evaluated in float64 and the source's own noise: "
        "auto = for outputs outside the budget of the source's run.",
        dict(type=Choice(["auto", "always", "never"]), default="auto",
             show_default=True)),
    "bisect": Shared(
        ("--bisect", "do_bisect"),
        "On a mismatch, find the first operation that leaves its budget against the float64 "
        "oracle, and the source node it came from.",
        dict(is_flag=True)),
    "dump": Shared(
        ("--dump", "dump_dir"),
        "With --bisect: write that operation as DIR/subgraph.webnn with its inputs and "
        "expected result as .npy files.",
        dict(type=click.Path(file_okay=False), metavar="DIR")),
    "json": Shared(
        ("--json", "as_json"),
        "Print the result as JSON on stdout instead of text (no tables, no progress).",
        dict(is_flag=True)),
    "verbose": Shared(
        ("--verbose", "-v"),
        "Print what the conversion did (each pass's statistics) on stderr.",
        dict(is_flag=True)),
    "debug": Shared(
        ("--debug",),
        "Show the full traceback when something fails.",
        dict(is_flag=True)),
}

# Groups several commands take together, in the order --help lists them.
SOURCE = ("dim", "input_shape", "const", "max_tensor_bytes", "max_total_bytes",
          "follow_symlinks")
STATE = ("state", "cache_capacity")
STEPS = ("steps", "prompt")
TOLERANCES = ("seed", "atol", "rtol", "ulp")
# What verification takes beyond the graph: verify, and convert --verify, take all of these.
VERIFYING = ("runtime", "server", "input", "inputs", *TOLERANCES, "oracle", "bisect", "dump", *STEPS,
             "accuracy", "samples")


def use(*names: str, repeat: bool = False) -> Callable:
    """A decorator adding the named options (VOCABULARY keys, or the groups above spread) in
    the order given; `repeat`: each as its repeatable form (only where `repeatable_in`
    allows, which the vocabulary test checks)."""
    entries = [VOCABULARY[n] for n in names]

    def add(f):
        for entry in reversed(entries):  # click lists options in decorator order, top first
            f = entry.option(repeat)(f)
        return f

    return add
