"""What the shared options' values parse into (the callbacks of cli/options.py's vocabulary):
dims, shapes, constants, memory limits, token ids and input files."""
from __future__ import annotations

import click


INPUT_FILES = "webnn_converter.input_files"  # ctx.meta key: files the command reads


# Commands that take several values of a dim (--dim NAME=V1,V2 or NAME=LO..HI): one conversion
# each (converter.dynamic.variants); the others take one value.
SEVERAL_DIMS = ("convert",)


def parse_dims(ctx, param, values) -> dict:
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


def parse_shapes(ctx, param, values) -> dict[str, list[int]]:
    shapes = {}
    for item in values:
        name, sep, value = item.rpartition("=")
        parts = value.split(",") if value else []
        if not sep or not name or not parts or not all(p.strip().isdigit() for p in parts):
            raise click.BadParameter(f"{item!r}: expected NAME=d0,d1,..., e.g. x=1,3,224,224")
        shapes[name] = [int(p) for p in parts]
    return shapes


def parse_constants(ctx, param, values) -> dict:
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


def set_size_limit(ctx, param, value):
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


def parse_token_ids(ctx, param, value) -> list[int] | None:
    if value is None:
        return None
    parts = [p.strip() for p in value.split(",")]
    if not all(p.isdigit() for p in parts):
        raise click.BadParameter(f"{value!r}: expected token ids, e.g. 1,5,9")
    return [int(p) for p in parts]


def given_inputs(ctx, param, values) -> dict[str, str]:
    """--input NAME=FILE.npy (repeatable): input name -> the file's path."""
    out = {}
    for item in values:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{item!r}: expected NAME=FILE.npy")
        out[name] = path
    return out


def parse_accuracy(ctx, param, value) -> dict | None:
    """--accuracy 'cosine>=0.999,top1>=0.99' -> {metric: (direction, bound)}; strict."""
    if value is None:
        return None
    from converter.errors import ConverterError
    from converter.verification.accuracy_bounds import parse_accuracy as parse

    try:
        return parse(value)
    except ConverterError as e:
        raise click.BadParameter(f"{e.what}; {e.fix}") from None
