"""Constants that differ between a model's dims (a position table sliced to the length) are
stored once in a variants file, as the largest and a `slice` per variant, and read back as
constants: the graph read is the graph written, so operands that must be constants
(Chromium's gatherElements indices) still are. Numbers against ONNX Runtime on the source."""
from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest

import converter
from converter.errors import FormatError
from converter.testing.position_table import BUCKETS, position_table_model

LENGTHS = [8, 16, 32]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return position_table_model(tmp_path_factory.mktemp("table") / "table.onnx")


def _x(s: int) -> np.ndarray:
    return np.random.default_rng(s).standard_normal((1, s, s)).astype(np.float32)


@pytest.mark.parametrize("suffix", [".webnn", ".json"])
def test_a_table_sliced_per_length_reads_back_as_a_constant_in_every_variant(
        source, tmp_path, suffix):
    out = tmp_path / f"table{suffix}"
    converter.convert(source, out, dims={"s": LENGTHS})
    text = out.read_text()
    assert '"corners": ["buckets' in text or '"corners": ["indices' in text, text[:2000]
    # stored once: the [1, 32, 32] int64 table (8 KiB), not also its 16- and 8-row corners
    assert (tmp_path / "table.weights").stat().st_size < 8192 + 2048 + 512
    variants = converter.load(out)
    session = ort.InferenceSession(str(source))
    for s in LENGTHS:
        graph = variants.at({"s": s})
        [op] = [op for op in graph.operations if op.op_type == "gatherElements"]
        assert graph.op_histogram() == {"gatherElements": 1}
        indices = op.inputs[1]
        assert indices.is_constant and indices.shape == (1, s, s)
        assert int(indices.constant.numpy().max()) == BUCKETS - 1
        x = _x(s)
        want = session.run(None, {"x": x})[0]
        np.testing.assert_array_equal(converter.run(graph, {"x": x})["y"], want)


def test_a_corners_entry_that_names_no_corner_slice_is_refused_in_one_line(source, tmp_path):
    out = tmp_path / "table.json"
    converter.convert(source, out, dims={"s": LENGTHS})
    doc = json.loads(out.read_text())
    doc["variants"]["corners"] = ["y"]  # the gatherElements result, not a slice of a constant
    out.write_text(json.dumps(doc))
    with pytest.raises(FormatError) as info:
        converter.load(out)
    assert "'y' is listed as a corner but is not the leading-corner slice of a constant" \
        in info.value.line()
    assert "\n" not in info.value.line()
