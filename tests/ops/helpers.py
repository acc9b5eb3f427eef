"""Helpers the op-family tests share."""
from __future__ import annotations

import numpy as np
import pytest

from converter.ops.builder import GraphBuilder
from converter.errors import OpValidationError


def fails(call, op: str, argument: str, *words: str) -> OpValidationError:
    """`call` raises OpValidationError for `op`, naming `argument`, with each of `words` in
    its rule."""
    with pytest.raises(OpValidationError) as info:
        call()
    err = info.value
    assert (err.op, err.argument) == (op, argument), err.line()
    for word in words:
        assert word in err.rule, err.rule
    return err


def const(b: GraphBuilder, *shape: int, dtype=np.float32):
    """A zero constant of `shape`."""
    return b.constant(np.zeros(shape, dtype))
