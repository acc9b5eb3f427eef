"""`--dim batch=N` for a TFLite model: TFLite names no dimensions, but a model exported with a
dynamic batch marks it -1 in its inputs' shape_signature (the stored shape holds 1, what LiteRT
allocates until resized). `batch` is that axis 0; any other name is refused, since nothing in
the file says which axis it would be."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..errors import ConverterError

__all__ = ["BATCH", "tflite_input_shapes"]

BATCH = "batch"


def tflite_input_shapes(path: str | Path, dims: Mapping[str, int],
                        input_shapes: Mapping[str, Sequence[int]] | None
                        ) -> dict[str, list[int]]:
    """`input_shapes` plus, for `dims["batch"]`, the shape of every input whose
    shape_signature starts with -1, with that batch (an input given a whole shape keeps it)."""
    from ..importers.tflite import read_tflite

    others = sorted(set(dims) - {BATCH})
    if others:
        raise ConverterError(f"a TFLite model has no dimension named {', '.join(others)}",
                             where=str(path), fix="a dynamic batch (-1 on axis 0 of an input's "
                                                  "shape signature) is --dim batch=N; other "
                                                  "axes: --input-shape INPUT=d0,d1,...")
    shapes = {name: list(shape) for name, shape in (input_shapes or {}).items()}
    if BATCH not in dims:
        return shapes
    main = read_tflite(path).subgraphs[0]
    dynamic = [main.tensors[i] for i in main.inputs
               if main.tensors[i].signature and main.tensors[i].signature[0] == -1]
    if not dynamic:
        raise ConverterError("no input of this TFLite model has a dynamic batch (-1 on axis 0 "
                             "of its shape signature)", where=str(path),
                             fix="set the inputs' shapes with --input-shape")
    for tensor in dynamic:
        if tensor.name not in shapes:
            shapes[tensor.name] = [int(dims[BATCH]), *tensor.shape[1:]]
    return shapes
