"""`--dim batch=N` for a TFLite model: TFLite names no dimensions, but a model exported with a
dynamic batch marks it -1 in its inputs' shape_signature (the stored shape holds 1, what LiteRT
allocates until resized). `batch` is that axis 0; any other name is refused, since nothing in
the file says which axis it would be."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from ..errors import ConverterError

__all__ = ["BATCH", "tflite_input_shapes", "dynamic_batch_shapes"]

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


def dynamic_batch_shapes(path: str | Path) -> dict[str, dict[str, list[int | str]]]:
    """The shape signatures of the main subgraph's inputs and outputs, "batch" for -1 on axis 0
    ("?" for -1 elsewhere), when an input has a dynamic batch; {} when none has."""
    from ..importers.tflite import read_tflite

    main = read_tflite(path).subgraphs[0]
    if not any(main.tensors[i].signature and main.tensors[i].signature[0] == -1
               for i in main.inputs):
        return {}

    def named(signature) -> list[int | str]:
        return [BATCH if axis == 0 and d == -1 else "?" if d == -1 else int(d)
                for axis, d in enumerate(signature)]

    return {kind: {main.tensors[i].name: named(main.tensors[i].signature)
                   for i in indices if main.tensors[i].signature}
            for kind, indices in (("inputs", main.inputs), ("outputs", main.outputs))}
