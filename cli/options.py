"""Options several commands share, defined once here and parsed into the library's arguments.

`source_options` (--dim, --input-shape, --const and the memory limits) go on every command that
reads a source model: convert, verify, run, check, inspect and validate; `target_option` on
those that can rewrite or check for a backend (convert, verify, run, check).
"""
from __future__ import annotations

import click


INPUT_FILES = "webnn_converter.input_files"  # ctx.meta key: files the command reads


# Commands that take several values of a dim (--dim NAME=V1,V2 or NAME=LO..HI): one conversion
# each (converter.dynamic.variants); the others take one value.
SEVERAL_DIMS = ("convert",)


def _dim(ctx, param, values) -> dict:
    """NAME=V -> int; NAME=V1,V2,... -> a list; NAME=LO..HI -> a (lo, hi) tuple."""
    dims = {}
    for item in values:
        name, sep, value = item.partition("=")
        lo, dots, hi = value.partition("..")
        parts = value.split(",")
        if not sep or not name:
            parts = []
        if dots and lo.isdigit() and hi.isdigit() and 0 < int(lo) < int(hi):
            dims[name] = (int(lo), int(hi))
        elif parts and all(p.strip().isdigit() and (int(p) > 0 or len(parts) == 1)
                           for p in parts):  # NAME=0: an empty input (a decoder's first past)
            numbers = sorted({int(p) for p in parts})
            dims[name] = numbers[0] if len(numbers) == 1 else numbers
        else:
            raise click.BadParameter(f"{item!r}: expected NAME=INTEGER (e.g. batch=1; 0 "
                                     f"empties the inputs it sizes), NAME=V1,V2,... or "
                                     f"NAME=LO..HI with 0 < LO < HI")
        if not isinstance(dims[name], int) and ctx.command.name not in SEVERAL_DIMS:
            raise click.BadParameter(f"{item!r}: {ctx.command.name} takes one value of a dim; "
                                     f"several values or a range apply to convert")
    return dims


def _shape(ctx, param, values) -> dict[str, list[int]]:
    shapes = {}
    for item in values:
        name, sep, value = item.rpartition("=")
        parts = value.split(",") if value else []
        if not sep or not name or not parts or not all(p.strip().isdigit() for p in parts):
            raise click.BadParameter(f"{item!r}: expected NAME=d0,d1,..., e.g. x=1,3,224,224")
        shapes[name] = [int(p) for p in parts]
    return shapes


def _const(ctx, param, values) -> dict:
    import numpy as np

    from .inputs import load_npy

    known = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise click.BadParameter(f"{item!r}: expected NAME=VALUE, NAME=V1,V2,... or "
                                     f"NAME=FILE.npy")
        if value.endswith(".npy"):
            ctx.meta.setdefault(INPUT_FILES, []).append(value)  # never to be overwritten
            known[name] = load_npy(value, f"--const {name}")
            continue
        try:
            numbers = [float(v) if any(c in v for c in ".eEn") else int(v)
                       for v in value.split(",")]
        except ValueError:
            raise click.BadParameter(f"{item!r}: {value!r} is not a number list") from None
        known[name] = np.array(numbers[0] if len(numbers) == 1 else numbers)
    return known


def _size_limit(ctx, param, value):
    """--max-tensor-bytes / --max-total-bytes: in force for the rest of this command."""
    if value is None:
        return
    from converter import budget

    try:
        size = budget.parse_size(value)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    token = budget.set_limits(**{param.name: size})
    ctx.call_on_close(lambda: budget.reset_limits(token))


def source_options(f):
    """--dim, --input-shape, --const, --max-tensor-bytes, --max-total-bytes: how a source model
    (.onnx, .tflite) is read. Given with a WebNN graph file they are an error: its shapes are
    static."""
    f = click.option("--max-total-bytes", callback=_size_limit, expose_value=False,
                     metavar="SIZE",
                     help="Memory the conversion may allocate for values it computes "
                          "(default: twice the model's weights, at least 256MiB).")(f)
    f = click.option("--max-tensor-bytes", callback=_size_limit, expose_value=False,
                     metavar="SIZE",
                     help="Memory one computed value may take, e.g. 2GiB (default 1GiB); "
                          "bigger ones stay graph ops or fail.")(f)
    f = click.option("--const", "known_inputs", multiple=True, callback=_const,
                     metavar="NAME=VALUE",
                     help="Fix a source input's value at conversion time: a number, a list "
                          "V1,V2,... or a .npy file (repeatable). For inputs WebNN needs as "
                          "plain values, such as a shape or an If condition.")(f)
    f = click.option("--input-shape", "input_shapes", multiple=True, callback=_shape,
                     metavar="NAME=D0,D1,...",
                     help="Set a source input's whole shape (repeatable).")(f)
    f = click.option("--dim", "dims", multiple=True, callback=_dim, metavar="NAME=VALUE",
                     help="Give a symbolic dimension a value (repeatable); 0 empties the "
                          "inputs it sizes (a decoder's first, empty past), which become "
                          "constants; a dim named by an expression of others ('past + new') "
                          "is computed from them. convert also "
                          "takes NAME=V1,V2,... or NAME=LO..HI: one conversion per value "
                          "(for a range: its ends and middle), written as one .webnn/.json "
                          "or .js with shared weights.")(f)
    return f


def _prompt(ctx, param, value) -> list[int] | None:
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",")]
    if not all(p.isdigit() for p in parts):
        raise click.BadParameter(f"{value!r}: expected token ids, e.g. 1,5,9")
    return [int(p) for p in parts]


def decoder_options(f):
    """--state, --cache-capacity, --prompt: a decoder's KV cache as graph state, and the
    tokens a step-wise run starts from (converter/state/kv_cache.py)."""
    f = click.option("--prompt", callback=_prompt, metavar="IDS",
                     help="With --steps on a decoder: the prompt's token ids, e.g. 1,5,9; "
                          "--steps N then decodes N greedy tokens.")(f)
    f = click.option("--cache-capacity", type=click.IntRange(min=1), default=None,
                     metavar="N",
                     help="Convert a decoder (.onnx) with fixed-capacity KV caches of N "
                          "tokens, one token a step: its past/present pairs become graph "
                          "state of one shape (a cache that grows by Concat, as optimum's "
                          "do, slides: N-1 past rows, the oldest dropped each step). The "
                          "attention mask is [1, N], ones on the filled rows from the "
                          "left.")(f)
    f = click.option("--state", "state_patterns", multiple=True, metavar="PAST=PRESENT",
                     help="Name the KV-cache pairs by glob patterns whose '*'s match the same "
                          "text, e.g. 'past_key_values.*=present.*' (repeatable; default: the "
                          "names genai-builder and optimum exports use).")(f)
    return f


def tolerance_options(f):
    f = click.option("--ulp", type=click.IntRange(min=0), default=None,
                     help="Judge float outputs by this ULP budget instead.")(f)
    f = click.option("--rtol", type=float, default=None, help="Relative tolerance override.")(f)
    f = click.option("--atol", type=float, default=None, help="Absolute tolerance override.")(f)
    f = click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the random inputs.")(f)
    return f


shape_options = source_options  # the name the commands used before these options were shared


def target_option(*, default: str | None = None, allow_all: bool = False, help: str = ""):
    """--target T (-t): a built-in target's name (see `webnn-convert targets`) or a target file
    (an opSupportLimits JSON); with `allow_all`, also `all`."""
    text = ("A built-in target's name (see `webnn-convert targets`) or a target file (an "
            "opSupportLimits JSON)" + (", or `all`" if allow_all else "") + ". " + help)
    return click.option("--target", "-t", "target_name", default=default, metavar="T",
                        show_default=default is not None, help=text.strip())


def verbose_option(f):
    return click.option("--verbose", "-v", is_flag=True,
                        help="Print what the conversion did (each pass's statistics) on "
                             "stderr.")(f)


def given_inputs(ctx, param, values) -> dict[str, str]:
    """--input NAME=FILE.npy (repeatable): input name -> the file's path."""
    out = {}
    for item in values:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{item!r}: expected NAME=FILE.npy")
        out[name] = path
    return out
