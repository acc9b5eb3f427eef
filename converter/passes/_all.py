"""Imports every pass module, which registers its passes. Adding a pass adds a line here."""
from . import (  # noqa: F401
    cleanup,
    constant_operands,
    data_types,
    decompose,
    fills,
    float16_compute,
    float16_weights,
    fold_constants,
    int8_in_float,
    int_clamp,
    integer_weights,
    layout,
    pad_modes,
    quantized_weights,
    rank,
    split_constants,
)
