"""What the shared options' values parse into (the callbacks of cli/options.py's vocabulary):
dims, shapes, constants, memory limits, token ids and input files."""
from __future__ import annotations

import click

from .numbers import parse_int, parse_number, quoted


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
        try:
            if not sep or not name:
                raise ValueError("")
            if dots:
                bounds = (parse_int(lo, negative=False), parse_int(hi, negative=False))
                if not 0 < bounds[0] < bounds[1]:
                    raise ValueError("")
                dims[name] = bounds
            else:
                parts = value.split(",")
                numbers = sorted({parse_int(p, negative=False) for p in parts})
                if numbers[0] == 0 and len(parts) > 1:  # NAME=0 alone: an empty input
                    raise ValueError("")
                dims[name] = numbers[0] if len(numbers) == 1 else numbers
        except ValueError as e:
            raise click.BadParameter(f"{quoted(item)}: {f'{e}; ' if str(e) else ''}expected "
                                     f"NAME=INTEGER (e.g. batch=1; 0 empties the inputs it "
                                     f"sizes), NAME=V1,V2,... or NAME=LO..HI with 0 < LO < HI"
                                     ) from None
        if not isinstance(dims[name], int) and ctx.command.name not in SEVERAL_DIMS:
            raise click.BadParameter(f"{quoted(item)}: {ctx.command.name} takes one value of a "
                                     f"dim; several values or a range apply to convert")
    return dims


def parse_shapes(ctx, param, values) -> dict[str, list[int]]:
    shapes = {}
    for item in values:
        name, sep, value = item.rpartition("=")
        try:
            if not sep or not name or not value:
                raise ValueError("")
            shapes[name] = [parse_int(p, negative=False) for p in value.split(",")]
        except ValueError as e:
            raise click.BadParameter(f"{quoted(item)}: {f'{e}; ' if str(e) else ''}expected "
                                     f"NAME=d0,d1,..., e.g. x=1,3,224,224") from None
    return shapes


def parse_constants(ctx, param, values) -> dict:
    import numpy as np

    from .inputs import load_npy

    known = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name or not value:
            raise click.BadParameter(f"{quoted(item)}: expected NAME=VALUE, NAME=V1,V2,... or "
                                     f"NAME=FILE.npy")
        if value.endswith(".npy"):
            ctx.meta.setdefault(INPUT_FILES, []).append(value)  # never to be overwritten
            known[name] = load_npy(value, f"--const {name}")
            continue
        try:  # integers stay integers (a shape, an index); nan and inf are values too here
            numbers = [parse_number(v, finite=False) for v in value.split(",")]
        except ValueError as e:
            raise click.BadParameter(f"{quoted(item)}: {e}; expected a number or a list "
                                     f"V1,V2,...") from None
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
    try:
        return [parse_int(p, negative=False) for p in value.split(",")]
    except ValueError as e:
        raise click.BadParameter(f"{e}; expected token ids, e.g. 1,5,9") from None


def given_inputs(ctx, param, values) -> dict[str, str]:
    """--input NAME=FILE.npy (repeatable): input name -> the file's path."""
    out = {}
    for item in values:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise click.BadParameter(f"{quoted(item)}: expected NAME=FILE.npy")
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
