"""The ONNX backend node test cases (from the installed `onnx` package) run through our
importer and executor, and judged against the expected outputs the cases carry.

`run_case` returns one of: ("pass", detail), ("fail", detail), ("unsupported", reason),
("error", detail). A float output outside the case's tolerance of its stored expected value
still passes when that stored value is itself outside the tolerance of the exact result (the
onnx reference evaluator run on the inputs widened to float64) and ours is within it; the
detail says so (two DFT cases store float32 FFT rounding against an atol of 1e-7). A case is *claimed* when every op in its graph has an import rule and every graph input and
output is a tensor of a data type WebNN has (no op rule can make a uint16 or string input
WebNN-expressible, so such cases are reported unsupported but not claimed).
"""
from __future__ import annotations

import functools
import warnings

import numpy as np
import onnx

from converter.errors import ConverterError, UnsupportedError
from converter.importers.onnx import import_model
from converter.importers.onnx.registry import DEFAULT_DOMAINS, rule_for


@functools.cache
def all_cases() -> dict:
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {c.name: c for c in collect_testcases(None)}


def _webnn_typed(vi) -> bool:
    from converter.importers.onnx.model_file import ONNX_TO_WEBNN

    return vi.type.HasField("tensor_type") and vi.type.tensor_type.elem_type in ONNX_TO_WEBNN


def _has_empty_output(case) -> bool:
    """WebNN dimensions are > 0, so an empty graph output cannot exist; an empty input can, as
    a value given at conversion time (`--const NAME=FILE.npy`), as an empty axes list is."""
    _, expected = case.data_sets[0]
    return any(0 in np.shape(_array(x)) for x in expected)


def claimed(case) -> bool:
    if not all(_webnn_typed(vi) for vi in (*case.model.graph.input, *case.model.graph.output)):
        return False
    if _has_empty_output(case):  # WebNN dimensions are > 0: no op rule can change that
        return False
    opsets = {("" if o.domain in DEFAULT_DOMAINS else o.domain): o.version
              for o in case.model.opset_import}
    for node in case.model.graph.node:
        domain = "" if node.domain in DEFAULT_DOMAINS else node.domain
        if rule_for(domain, node.op_type, opsets.get(domain, 0)) is None:
            return False
    return True


def _feeds(case, inputs):
    names = [vi.name for vi in case.model.graph.input
             if vi.name not in {t.name for t in case.model.graph.initializer}]
    return dict(zip(names, inputs))


def _array(value):
    if isinstance(value, onnx.TensorProto):
        return onnx.numpy_helper.to_array(value)
    return np.asarray(value)


def _as_webnn_array(value):
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        return arr.view(np.uint8)
    if arr.dtype.name in ("int4", "uint4"):  # ml_dtypes' 4-bit types: one value a byte
        return arr.astype(np.int8 if arr.dtype.name == "int4" else np.uint8)
    return arr


def run_case(case) -> tuple[str, str]:
    from converter.runtimes.execute import run

    inputs, expected = case.data_sets[0]
    for vi in (*case.model.graph.input, *case.model.graph.output):
        if not vi.type.HasField("tensor_type"):
            return "unsupported", f"'{vi.name}' is a sequence, map or optional; WebNN has tensors only"
        if not _webnn_typed(vi):
            name = onnx.TensorProto.DataType.Name(vi.type.tensor_type.elem_type)
            return "unsupported", f"'{vi.name}' has data type {name}, which WebNN does not have"
    inputs, expected = [_array(x) for x in inputs], [_array(x) for x in expected]
    feeds = _feeds(case, inputs)
    if _has_empty_output(case):
        return "unsupported", "an output has a 0 dimension; WebNN has no empty tensors"
    # An empty input cannot be fed to a WebNN graph: a user gives it at conversion time.
    known: dict = {k: v for k, v in feeds.items() if v.size == 0}
    while True:
        # Inputs WebNN takes as plain values (a Reshape's shape ...) are given at conversion
        # time, as a user does with --const; the importer names exactly which ones it needs.
        rest = {k: v for k, v in feeds.items() if k not in known}
        try:
            graph = import_model(case.model, input_shapes={k: v.shape for k, v in rest.items()},
                                 known_inputs=known)
            break
        except UnsupportedError as e:
            wanted = [n for n in getattr(e, "needs_known", []) if n in feeds and n not in known]
            if not wanted:
                return "unsupported", "; ".join(e.items)
            known.update({n: feeds[n] for n in wanted})
        except ConverterError as e:
            return "unsupported", e.line()
    feeds = {k: v for k, v in feeds.items() if k not in known}
    try:
        got = run(graph, {k: _as_webnn_array(v) for k, v in feeds.items()})
    except ConverterError as e:
        return "error", f"run: {e.line()}"
    except Exception as e:  # a failure of ours or of the runtime: the test must show it
        return "error", f"run: {type(e).__name__}: {str(e)[:300]}"
    notes = []
    for index, (vi, want) in enumerate(zip(case.model.graph.output, expected)):
        have = got.get(vi.name)
        if have is None:
            return "fail", f"output '{vi.name}' missing"
        want = _as_webnn_array(want)
        if have.shape != want.shape:
            return "fail", f"output '{vi.name}': shape {have.shape}, expected {want.shape}"
        if want.dtype.kind in "fc":
            ok = _close(have, want, case)
            if not ok:
                exact = _float64_reference(case, inputs, index)
                if exact is not None and not _close(want, exact, case) \
                        and _close(have, exact, case):
                    # The stored output is itself outside the case's tolerance of the exact
                    # value (float32 rounding in the generator, against a tight atol): the
                    # case cannot judge a float32 result, the float64 evaluation can.
                    ok = True
                    notes.append(f"output '{vi.name}' judged against the onnx reference "
                                 f"evaluator in float64: the stored output is "
                                 f"{np.nanmax(np.abs(want - exact)):.2g} from it")
        else:
            ok = np.array_equal(have, want)
        if not ok:
            diff = np.abs(have.astype(np.float64) - want.astype(np.float64))
            return "fail", f"output '{vi.name}': max abs error {np.nanmax(diff):.3g}"
    return "pass", "; ".join(notes)


def _close(a, b, case) -> bool:
    return bool(np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64),
                            rtol=case.rtol, atol=case.atol, equal_nan=True))


def _float64_reference(case, inputs, index: int):
    """Output `index` of the case's model evaluated by the onnx package's reference evaluator
    on its inputs widened to float64 (None when that evaluation is not possible)."""
    from onnx.reference import ReferenceEvaluator

    wide = {vi.name: (x.astype(np.float64) if np.asarray(x).dtype == np.float32 else x)
            for vi, x in zip(case.model.graph.input, inputs)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = ReferenceEvaluator(case.model).run(None, wide)[index]
    except Exception:  # an op the evaluator cannot run in float64: no second opinion
        return None
    out = np.asarray(out)
    return out if out.dtype == np.float64 else None
