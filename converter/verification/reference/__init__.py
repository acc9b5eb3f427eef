"""A float64 reference interpreter of WebNN graphs: the spec's op definitions in numpy.

`evaluate(graph, feeds)` runs every operation with its kernel from `KERNELS` (one module per op
family, registered with `@kernel`), with float inputs and constants widened to float64 and
integers kept exact. It shares no code with the ONNX lowering, so it is an independent oracle for
both the lowering and the source runtimes.
"""
from .core import KERNELS, Env, evaluate, kernel
from . import (  # noqa: F401,E402  (importing a family registers its kernels)
    activation,
    conv,
    elementwise,
    indexing,
    matmul,
    normalization,
    pool,
    quantization,
    recurrent,
    reduction,
    resample,
    shape,
)

__all__ = ["KERNELS", "Env", "evaluate", "kernel"]
