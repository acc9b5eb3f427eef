"""What `--weights` takes, and which pass stores the weights so.

    float32  nothing changes (the default);
    float16  float32 constants stored as float16, each cast back to float32 (float16_weights);
    int8     conv2d, convTranspose2d, matmul and gemm weights stored as int8, one scale per
             output channel, read through dequantizeLinear (integer_weights);
    int4     matmul and gemm weights stored as int4, one scale per block of `block_size`
             values along the reduction dim, read through dequantizeLinear (integer_weights).

Both the CLI (`convert --weights`, `--block-size`) and converter.convert(weights=,
block_size=) check their values here, before anything is read, and refuse an output format
that cannot keep the weights so (.tflite for int4).
"""
from __future__ import annotations

from ..errors import ConverterError

__all__ = ["WEIGHT_TYPES", "DEFAULT_BLOCK_SIZE", "check_weights", "check_block_size",
           "refuse_output", "refuse_compute_output", "weights_pass"]

# What `--weights` takes: the type float32 weights are stored as.
WEIGHT_TYPES = ("float32", "float16", "int8", "int4")
# Values per int4 block along a weight's reduction dim, unless --block-size says otherwise.
DEFAULT_BLOCK_SIZE = 32


def check_weights(weights: str) -> str:
    """`weights` if it is a type `--weights` takes; else ConverterError naming them."""
    if weights not in WEIGHT_TYPES:
        raise ConverterError(f"unknown weights type '{weights}'",
                             fix=f"use one of {', '.join(WEIGHT_TYPES)}")
    return weights


def check_block_size(weights: str, block_size: int | None) -> int | None:
    """`block_size` when it is one `weights` takes (None: not given, the default applies).
    Refused when given with another weights type (it would do nothing) or under 2 (a block of
    one value is a scale per weight: nothing saved)."""
    if block_size is None:
        return None
    if weights != "int4":
        raise ConverterError(f"a block size applies with int4 weights, not {weights}",
                             where="--block-size", fix="give --weights int4 too, or leave it out")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 2:
        raise ConverterError(f"block size {block_size!r} is not a whole number of 2 or more",
                             where="--block-size",
                             fix=f"give a number that divides the weights' reduction dims "
                                 f"(the default is {DEFAULT_BLOCK_SIZE})")
    return block_size


def refuse_output(weights: str, output) -> None:
    """Raise when `output`'s format cannot keep the weights as asked.

    A .tflite keeps float16 weights and int8 ones in TFLite's own forms (a float16 constant,
    or an int8 constant quantized per channel, read by DEQUANTIZE) but not int4 blocks:
    TFLite's quantization parameters have one scale per tensor or per channel, so the
    exporter would compute a blockwise dequantizeLinear into float32 constants."""
    if weights != "int4" or output is None or not str(output).lower().endswith(".tflite"):
        return
    raise ConverterError("int4 weights stay int4 in .webnn, .json, .js and .onnx outputs "
                         "only: the .tflite export stores them as float32", where=str(output),
                         fix="give --weights int8 (or float16) for a .tflite, or write another "
                             "format")


def refuse_compute_output(compute: str, output) -> None:
    """Raise when `output`'s format cannot compute in `compute`: the .tflite export computes
    a float16 operation in float32 (TFLite's kernels do) and rounds its result through a CAST,
    so a float16-compute graph would export slower and no smaller than --weights float16."""
    if compute == "float32" or output is None or not str(output).lower().endswith(".tflite"):
        return
    raise ConverterError("float16 compute is kept in .webnn, .json, .js and .onnx outputs "
                         "only: the .tflite export computes each float16 op in float32",
                         where=str(output),
                         fix="give --weights float16 alone for a .tflite (its weights stored "
                             "as float16), or write another format")


def weights_pass(weights: str, compute: str = "float32") -> list[str]:
    """The passes that store weights as `weights` and compute in `compute` (run last, after
    the target's), as a list to add to a pipeline: integer_weights before float16_compute (a
    dequantizeLinear then gives its float16 scale's type), float16_weights after it (it
    stores what float32 ops still read)."""
    stored = {"float32": [], "float16": ["float16_weights"], "int8": ["integer_weights"],
              "int4": ["integer_weights"]}[check_weights(weights)]
    if compute == "float32":
        return stored
    return ([p for p in stored if p == "integer_weights"] + ["float16_compute"]
            + [p for p in stored if p == "float16_weights"])
