"""TFLite import rules, one module per op family. Importing this package registers them all."""
from . import (  # noqa: F401
    activation,
    constants,
    conv,
    elementwise,
    indexing,
    normalization,
    pool,
    quantization,
    recurrent,
    reduction,
    resize,
    shape_ops,
    variables,
)
