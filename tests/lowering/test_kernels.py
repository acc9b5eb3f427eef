"""kernels.supports against facts of ONNX Runtime's CPU kernel registry (the installed
onnxruntime's own `get_all_opkernel_def`, which the table is read from): opset ranges, the
type constraint looked at, float16 counted through float, function ops and other domains."""
from __future__ import annotations

import sys

import pytest

from converter.lowering.onnx.kernels import ort_available, supports


def test_onnxruntime_is_there():
    assert ort_available()


@pytest.mark.parametrize("op, dtype, opset, want", [
    # Relu: float from opset 6 to 12, 13, 14+; int8 and int32 only from 14.
    ("Relu", "float", 6, True),
    ("Relu", "float", 12, True),
    ("Relu", "float", 5, False),
    ("Relu", "int8", 13, False),
    ("Relu", "int8", 14, True),
    ("Relu", "int32", 14, True),
    ("Relu", "int64", 14, False),
    ("Relu", "float16", 13, True),    # no float16 kernel: ORT runs it in float
    ("Add", "int64", 7, True),
    ("Add", "int8", 13, False),
    ("Add", "int8", 14, True),
    ("Clip", "int32", 11, False),
    ("Clip", "int32", 12, True),
    ("Neg", "uint8", 13, False),
    # Gelu has a float kernel from opset 20 in the default domain; com.microsoft's Gelu
    # (its own versions from 1) must not count.
    ("Gelu", "float", 19, False),
    ("Gelu", "float", 20, True),
    ("Gelu", "float", 1, False),
    # HardSwish has no kernel: ORT expands the function, except for float16.
    ("HardSwish", "float", 14, True),
    ("HardSwish", "float16", 14, False),
])
def test_supports_reads_the_kernel_registry(op, dtype, opset, want):
    assert supports(op, dtype, opset) is want


def test_constraint_defaults_to_t1_and_can_be_named():
    # IsNaN: T1 is the input (float, double, float16), T2 the bool output.
    assert supports("IsNaN", "float16", 13)
    assert not supports("IsNaN", "bool", 13)
    assert supports("IsNaN", "bool", 13, "T2")
    assert not supports("IsNaN", "float", 13, "T2")


def test_the_table_read_afresh_holds_default_domain_cpu_kernels_only():
    # `_kernel_table` is cached after the first call: read it again from onnxruntime here.
    from converter.lowering.onnx.kernels import _kernel_table
    table = _kernel_table.__wrapped__()
    assert table["Gelu"] == [(20, 2**31 - 1, {"T": frozenset({"float"})})]
    assert (14, 2**31 - 1, {"T": frozenset({"int8"})}) in table["Relu"]
    assert (9, 12, {"T1": frozenset({"float16"}), "T2": frozenset({"bool"})}) in table["IsNaN"]
    assert "FusedConv" not in table and "QLinearAdd" not in table  # com.microsoft ops
    assert "HardSwish" not in table  # a function op: no kernel of its own


def test_without_onnxruntime_every_kernel_is_assumed(monkeypatch):
    # the table is read from onnxruntime itself; without it models are still written
    from converter.lowering.onnx import kernels

    monkeypatch.setitem(sys.modules, "onnxruntime.capi", None)  # its import now fails
    kernels._kernel_table.cache_clear()
    kernels.supports.cache_clear()
    try:
        assert not kernels.ort_available()
        assert kernels.supports("Neg", "uint64", 21)
    finally:
        kernels._kernel_table.cache_clear()
        kernels.supports.cache_clear()
