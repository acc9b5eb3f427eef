"""convert_for_target runs the target's passes, then check: a report when the graph fits,
UnsupportedError with every remaining violation when it does not."""
import json
from pathlib import Path

import numpy as np
import pytest

import converter
from converter import GraphBuilder
from converter.errors import ConverterError, UnsupportedError
from converter.passes import pipeline_for
from converter.targets import load_target
from converter.targets.pipeline import convert_for_target

DATA_DIR = load_target("coreml").source.rsplit("/", 1)[0]


def _nhwc_cnn():
    """An NHWC model's shape: transposes around an nchw conv, then a gemm."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("cnn")
    x = b.input("x", "float32", [1, 6, 6, 2])
    t = b.transpose(x, permutation=[0, 3, 1, 2], name="to_nchw")
    w = b.constant(rng.standard_normal((3, 2, 3, 3)).astype(np.float32), name="w")
    y = b.relu(b.conv2d(t, w, padding=[1, 1, 1, 1], name="conv"), name="act")
    back = b.transpose(y, permutation=[0, 2, 3, 1], name="to_nhwc")
    flat = b.reshape(back, [1, 108], name="flat")
    fc = b.constant(rng.standard_normal((108, 4)).astype(np.float32), name="fc")
    return b.build({"y": b.gemm(flat, fc, name="dense")})


def test_a_graph_that_fits_returns_the_report_and_computes_the_same():
    graph = _nhwc_cnn()
    feed = {"x": np.random.default_rng(1).standard_normal((1, 6, 6, 2)).astype(np.float32)}
    before = converter.run(graph, feed)["y"]
    report = convert_for_target(graph, "coreml")
    assert report.passed and report.target == "coreml" and report.violations == []
    assert [name for name, _ in report.passes] == pipeline_for(load_target("coreml"))
    assert report.transposes_before == 2 and report.operations_before == 6
    assert report.transposes_after == sum(op.op_type == "transpose" for op in graph.operations)
    assert report.operations_after == len(graph.operations)
    # The ops left that CoreML emulates (gemm, unless a pass decomposed it), and how.
    target, used = load_target("coreml"), {op.op_type for op in graph.operations}
    assert report.emulated == {op: how for op, how in target.emulated.items() if op in used}
    lines = report.lines()
    assert f"transposes: 2 before, {report.transposes_after} after" in lines
    assert f"operations: 6 before, {len(graph.operations)} after" in lines
    assert [f"coreml emulates {op} ({how})" for op, how in report.emulated.items()] == [
        line for line in lines if line.startswith("coreml emulates")]
    data = report.to_json()
    assert data["transposes"] == {"before": 2, "after": report.transposes_after}
    assert [p["name"] for p in data["passes"]] == pipeline_for(load_target("coreml"))
    after = converter.run(graph, feed)["y"]
    np.testing.assert_allclose(after, before, rtol=1e-5, atol=1e-5)
    assert not graph.problems()


def test_what_no_pass_can_fix_raises_with_every_violation():
    b = GraphBuilder("big")
    x = b.input("x", "float32", [2**29])  # 2 GiB: over CoreML's byte limit, fine on DirectML
    graph = b.build({"y": b.relu(x, name="act")})
    with pytest.raises(UnsupportedError) as caught:
        convert_for_target(graph, "coreml")
    error = caught.value
    assert error.items == [
        "graph input 'x': 2147483648 bytes; coreml takes at most 2147483647 bytes a tensor; "
        "fix: no pass splits a tensor: give smaller dimensions (--dim, --input-shape) or split "
        "the model",
        "relu 'act' output 'act': 2147483648 bytes; coreml takes at most 2147483647 bytes a "
        "tensor; fix: no pass splits a tensor: give smaller dimensions (--dim, --input-shape) or "
        "split the model",
    ]
    assert error.line().startswith("target 'coreml': 2 unsupported: graph input 'x'")
    assert "\n" not in error.line()
    assert [v.kind for v in error.violations] == ["tensor-size", "tensor-size"]
    assert error.report.passed is False and error.report.target == "coreml"
    assert convert_for_target(graph, "directml").passed


def test_the_target_can_be_a_path_or_a_target():
    graph = _nhwc_cnn()
    assert convert_for_target(graph, f"{DATA_DIR}/onnxruntime.json").target == "onnxruntime"
    assert convert_for_target(graph, load_target("portable")).target == "portable"


def test_io_layout_is_checked_and_recorded():
    with pytest.raises(ConverterError, match="unknown io layout 'nwhc'.*nchw, nhwc"):
        convert_for_target(_nhwc_cnn(), "coreml", io_layout="nwhc")
    report = convert_for_target(_nhwc_cnn(), "coreml", io_layout="nhwc")
    assert report.io_layout == "nhwc" and report.to_json()["ioLayout"] == "nhwc"
    assert report.to_json()["target"] == "coreml"


def test_the_report_names_the_emulated_ops_left(tmp_path):
    doc = json.loads(Path(f"{DATA_DIR}/portable.json").read_text())
    doc["webnn-converter"] = {"name": "slow-conv", "emulated": {"conv2d": "as im2col and matmul"}}
    path = tmp_path / "slow-conv.json"
    path.write_text(json.dumps(doc))
    graph = _nhwc_cnn()
    report = convert_for_target(graph, path)
    assert report.emulated == {"conv2d": "as im2col and matmul"}  # no decomposition of conv2d
    assert "slow-conv emulates conv2d (as im2col and matmul)" in report.lines()
