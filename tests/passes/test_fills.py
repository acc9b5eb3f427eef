"""fills: a constant whose elements are all one value is stored once, in every format written.

Before: only a broadcast view became a fill; a folded ConstantOfShape was a full array, and the
onnx package's light_resnet50 (an 80 KB file of ConstantOfShape weights) wrote a 102 MB weights
file (.webnn, .json, .js), a 102 MB .onnx and a 94 MB .tflite."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import converter
from converter.ops.builder import GraphBuilder
from converter.passes import PassContext, run_passes
from converter.passes.fills import compact_fills


def _graph():
    rng = np.random.default_rng(0)
    b = GraphBuilder("fills")
    x = b.input("x", "float32", [4, 64])
    consts = {
        "half": np.full((4, 64), 0.5, np.float32),
        "zeros": np.zeros(64, np.float32),
        "weights": rng.standard_normal((4, 64)).astype(np.float32),
        "neg_zero": np.full(64, -0.0, np.float32),  # kept: the text form would write 0
        "nan": np.full(64, np.nan, np.float32),  # kept: no literal for it
        "last_differs": np.concatenate([np.ones(63, np.float32), [2.0]]).astype(np.float32),
        "middle_differs": np.concatenate([np.ones(30), [3.0], np.ones(33)]).astype(np.float32),
        "one": np.ones(1, np.float32),  # one element: nothing to save
    }
    c = {k: b.constant(v, name=k) for k, v in consts.items()}
    y = x
    for name in consts:
        y = b.add(y, c[name])
    sevens = b.constant(np.full((8,), 7, np.int64), name="sevens")
    return b.build({"y": b.mul(y, c["half"]), "i": b.add(sevens, sevens)})


FILLED = {"half": 0.5, "zeros": 0.0, "sevens": 7}


def test_constants_of_one_value_become_fills_and_compute_the_same():
    g = _graph()
    feeds = {"x": np.random.default_rng(1).standard_normal((4, 64)).astype(np.float32)}
    before = converter.run(g, feeds)
    assert compact_fills(g)
    fills = {name: o.constant.fill for name, o in g.constants.items()
             if o.constant.fill is not None}
    assert fills == FILLED and type(fills["sevens"]) is int
    after = converter.run(g, feeds)
    for key in before:
        assert after[key].dtype == before[key].dtype
        np.testing.assert_array_equal(after[key], before[key])
    assert not compact_fills(g)  # nothing left to do


def test_the_pass_reports_what_it_saved():
    g = _graph()
    [(_, result)] = run_passes(g, ["fills"], PassContext())
    assert result.changed and result.counts == {"constants": 3,
                                                "bytes_saved": 4 * 64 * 4 + 64 * 4 + 8 * 8}


LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / "light_resnet50.onnx"


@pytest.fixture(scope="module")
def light_resnet50():
    return converter.load(LIGHT)


def _ort(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


# The largest file each format writes for light_resnet50 (its 28 non-uniform constants hold
# 7 KB; the graph's text and manifest the rest).
WRITTEN = {".webnn": 64 << 10, ".json": 96 << 10, ".js": 128 << 10, ".onnx": 96 << 10,
           ".tflite": 512 << 10}


@pytest.mark.parametrize("suffix", WRITTEN)
def test_light_resnet50_is_written_compactly_and_computes_the_same(light_resnet50, tmp_path,
                                                                    suffix):
    files = converter.save(light_resnet50, tmp_path / f"r{suffix}")
    assert max(p.stat().st_size for p in files) <= WRITTEN[suffix]
    x = np.random.default_rng(0).random((1, 3, 224, 224), dtype=np.float32)
    want = _ort(LIGHT, x)
    if suffix == ".onnx":
        got = _ort(tmp_path / "r.onnx", x)
    elif suffix == ".tflite":
        from converter.runtimes.litert import run_litert

        (got,) = run_litert(str(tmp_path / "r.tflite"),
                            {next(iter(light_resnet50.inputs)): x}).values()
    elif suffix == ".js":
        return  # the module runs in a browser (tests/browser); its weights are what counts
    else:
        graph = converter.load(tmp_path / f"r{suffix}")
        (got,) = converter.run(graph, {next(iter(graph.inputs)): x}).values()
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=1e-5, atol=1e-6)
