"""Hostile ONNX files (issue 10): nothing read outside the model's folder, allocations bounded
before they are made, invalid models rejected with the rule they break, one clear line each.

Every model is built here with onnx.helper; the CLI is driven through click's runner. Files that
must never be read hold a canary; every test that could leak it asserts its bytes are in no
output.
"""
from __future__ import annotations

import os
import re
import signal
import tracemalloc
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as T
from onnx import helper, numpy_helper

import converter
from cli.main import main
from converter.budget import MemoryBudget, parse_size
from converter.errors import ConverterError, FormatError, UnsupportedError

CANARY = b"CANARY-7f3a9c1e-do-not-copy-" * 4  # 112 bytes: 28 float32 values


# -- building models ----------------------------------------------------------------------------
def _model(nodes, inputs, outputs, inits=(), opset=17, sparse=()):
    g = helper.make_graph(nodes, "hostile", inputs, outputs, list(inits),
                          sparse_initializer=list(sparse))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def _vi(name, elem=T.FLOAT, shape=None):
    return helper.make_tensor_value_info(name, elem, shape)


def _external(tensor: onnx.TensorProto, location: str, offset="0", length=None):
    """Point `tensor` at external data (its own bytes dropped)."""
    tensor.ClearField("raw_data")
    tensor.data_location = T.EXTERNAL
    fields = [("location", location), ("offset", offset)]
    if length is not None:
        fields.append(("length", length))
    for key, value in fields:
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _canary_setup(tmp_path: Path) -> tuple[Path, Path]:
    """(the canary file outside the model folder, the model folder)."""
    canary = tmp_path / "secret" / "canary.bin"
    canary.parent.mkdir()
    canary.write_bytes(CANARY)
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    return canary, model_dir


def _constant_from(location: str, count: int = 28, offset="0", length=None) -> onnx.ModelProto:
    """y = x + Constant, the Constant's value kept in external data at `location`."""
    value = _external(numpy_helper.from_array(np.zeros(count, np.float32), "c"), location,
                      offset, length)
    return _model([helper.make_node("Constant", [], ["c"], value=value),
                   helper.make_node("Add", ["x", "c"], ["y"])],
                  [_vi("x", shape=[count])], [_vi("y", shape=[count])])


def _if_branch_from(location: str) -> onnx.ModelProto:
    """An If whose then-branch initializer is kept in external data at `location`."""
    w = _external(numpy_helper.from_array(np.zeros(28, np.float32), "w"), location)
    then = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t"])], "then", [],
                             [_vi("t", shape=[28])], [w])
    other = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                              [_vi("e", shape=[28])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    return _model([helper.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=other)],
                  [_vi("x", shape=[28])], [_vi("y", shape=[28])], [cond])


def _nested_if_from(location: str) -> onnx.ModelProto:
    """An If inside an If: the inner then-branch holds a Constant kept in external data."""
    value = _external(numpy_helper.from_array(np.zeros(28, np.float32), "c"), location)
    inner_then = helper.make_graph([helper.make_node("Constant", [], ["it"], value=value)],
                                   "inner_then", [], [_vi("it", shape=[28])])
    inner_else = helper.make_graph([helper.make_node("Neg", ["x"], ["ie"])], "inner_else", [],
                                   [_vi("ie", shape=[28])])
    outer_then = helper.make_graph(
        [helper.make_node("If", ["cond"], ["ot"], then_branch=inner_then,
                          else_branch=inner_else)], "outer_then", [], [_vi("ot", shape=[28])])
    outer_else = helper.make_graph([helper.make_node("Relu", ["x"], ["oe"])], "outer_else", [],
                                   [_vi("oe", shape=[28])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    return _model([helper.make_node("If", ["cond"], ["y"], then_branch=outer_then,
                                    else_branch=outer_else)],
                  [_vi("x", shape=[28])], [_vi("y", shape=[28])], [cond])


def _loop_body_from(location: str) -> onnx.ModelProto:
    """A Loop whose body holds a Constant kept in external data (no rule imports Loop: the
    file is refused when it is read, before any rule runs)."""
    value = _external(numpy_helper.from_array(np.zeros(28, np.float32), "c"), location)
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Constant", [], ["c"], value=value),
         helper.make_node("Add", ["acc_in", "c"], ["acc_out"])], "body",
        [_vi("i", T.INT64, []), _vi("cond_in", T.BOOL, []), _vi("acc_in", shape=[28])],
        [_vi("cond_out", T.BOOL, []), _vi("acc_out", shape=[28])])
    trips = numpy_helper.from_array(np.array(2, np.int64), "trips")
    return _model([helper.make_node("Loop", ["trips", "", "x"], ["y"], body=body)],
                  [_vi("x", shape=[28])], [_vi("y", shape=[28])], [trips])


def _sparse_from(location: str) -> onnx.ModelProto:
    """y = x + s, s a sparse initializer whose values are kept in external data."""
    values = _external(numpy_helper.from_array(np.zeros(28, np.float32), "s"), location)
    indices = numpy_helper.from_array(np.arange(28, dtype=np.int64), "s_indices")
    sparse = helper.make_sparse_tensor(values, indices, [28])
    return _model([helper.make_node("Add", ["x", "s"], ["y"])], [_vi("x", shape=[28])],
                  [_vi("y", shape=[28])], sparse=[sparse])


def _tensors_attribute_from(location: str) -> onnx.ModelProto:
    """A node attribute of type TENSORS holding an external tensor."""
    t = _external(numpy_helper.from_array(np.zeros(28, np.float32), "t"), location)
    node = helper.make_node("Relu", ["x"], ["y"])
    node.attribute.append(helper.make_attribute("extra", [t]))
    return _model([node], [_vi("x", shape=[28])], [_vi("y", shape=[28])])


def _write(model: onnx.ModelProto, folder: Path, name="m.onnx") -> Path:
    path = folder / name
    path.write_bytes(model.SerializeToString())
    return path


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _one_error_line(result) -> str:
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    return lines[0]


def _convert_refused(src: Path, out_dir: Path, *flags) -> str:
    out_dir.mkdir(exist_ok=True)
    line = _one_error_line(_cli("convert", src, "-o", out_dir / "out.webnn", *flags))
    assert list(out_dir.iterdir()) == []
    return line


def _no_canary_in(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert CANARY[:16] not in path.read_bytes(), f"canary bytes in {path}"


# -- 1. one resolver: every tensor, relative to the model's folder only ----------------------
BUILDERS = {"constant": _constant_from, "if_branch": _if_branch_from,
            "nested_if": _nested_if_from, "sparse_initializer": _sparse_from,
            "tensors_attribute": _tensors_attribute_from, "loop_body": _loop_body_from}
IMPORTABLE = sorted(set(BUILDERS) - {"loop_body"})


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_external_data_never_resolves_against_the_working_directory(tmp_path, monkeypatch,
                                                                    kind):
    # Issue 10 finding 1: from cwd=/, a path relative to / reached the canary.
    canary, model_dir = _canary_setup(tmp_path)
    src = _write(BUILDERS[kind](str(canary).lstrip("/")), model_dir)
    monkeypatch.chdir("/")
    out_dir = tmp_path / "out"
    line = _convert_refused(src, out_dir)
    assert str(src) in line and "external data file" in line and "is missing" in line
    with pytest.raises(FormatError, match="is missing"):
        converter.load(src)
    _no_canary_in(out_dir)


@pytest.mark.parametrize("kind", sorted(BUILDERS))
@pytest.mark.parametrize("location", ["../secret/canary.bin", "ABSOLUTE", "sub/../../secret/canary.bin"])
def test_external_data_outside_the_folder_is_refused_everywhere(tmp_path, kind, location):
    canary, model_dir = _canary_setup(tmp_path)
    (model_dir / "sub").mkdir()
    location = str(canary) if location == "ABSOLUTE" else location
    src = _write(BUILDERS[kind](location), model_dir)
    line = _convert_refused(src, tmp_path / "out")
    assert f"external data path {location!r} leaves the model's folder" in line
    _no_canary_in(tmp_path / "out")


@pytest.mark.parametrize("kind", sorted(BUILDERS))
def test_a_symlink_leaving_the_folder_is_refused(tmp_path, kind):
    canary, model_dir = _canary_setup(tmp_path)
    (model_dir / "data.bin").symlink_to(canary)
    src = _write(BUILDERS[kind]("data.bin"), model_dir)
    line = _convert_refused(src, tmp_path / "out")
    assert "'data.bin' leaves the model's folder (through a symbolic link)" in line
    _no_canary_in(tmp_path / "out")


def test_a_symlink_to_dev_zero_is_refused(tmp_path):
    _, model_dir = _canary_setup(tmp_path)
    (model_dir / "zero.bin").symlink_to("/dev/zero")
    src = _write(_constant_from("zero.bin"), model_dir)
    assert "leaves the model's folder" in _convert_refused(src, tmp_path / "out")


@pytest.fixture
def no_hang():
    """Fail (rather than block the suite) if the code under test blocks for 20 s."""
    def alarm(*_):
        raise AssertionError("blocked: a read did not return")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("kind", ["constant", "if_branch", "sparse_initializer"])
def test_a_fifo_is_refused_without_blocking(tmp_path, no_hang, kind):
    _, model_dir = _canary_setup(tmp_path)
    os.mkfifo(model_dir / "w.bin")
    src = _write(BUILDERS[kind]("w.bin"), model_dir)
    line = _convert_refused(src, tmp_path / "out")
    assert "external data file 'w.bin' is not a regular file" in line


def test_a_directory_is_refused(tmp_path):
    _, model_dir = _canary_setup(tmp_path)
    (model_dir / "d").mkdir()
    src = _write(_constant_from("d"), model_dir)
    line = _convert_refused(src, tmp_path / "out")
    assert "'d'" in line and ("not a regular file" in line or "cannot open" in line)


@pytest.mark.parametrize("kind", IMPORTABLE)
def test_external_data_inside_the_folder_is_read_from_the_folder(tmp_path, monkeypatch, kind):
    """The legitimate case, from an unrelated working directory: the values come from the
    file beside the model (checked against numpy, by hand)."""
    _, model_dir = _canary_setup(tmp_path)
    values = np.arange(1, 29, dtype=np.float32) / 4
    (model_dir / "weights").mkdir()
    (model_dir / "weights" / "w.bin").write_bytes(b"\0" * 8 + values.tobytes())
    model = BUILDERS[kind]("weights/w.bin")
    for t in _all_external(model):
        t.external_data[1].value = "8"  # offset
    src = _write(model, model_dir)
    monkeypatch.chdir(tmp_path / "secret")
    graph = converter.load(src)
    x = np.linspace(-1, 1, 28, dtype=np.float32)
    y = converter.run(graph, {"x": x})["y"]
    want = {"tensors_attribute": np.maximum(x, 0), "nested_if": values}.get(kind, x + values)
    np.testing.assert_array_equal(y, want)


def _all_external(model):
    found = []
    todo = [model.graph]
    while todo:
        g = todo.pop()
        found += [t for t in g.initializer if t.data_location == T.EXTERNAL]
        found += [s.values for s in g.sparse_initializer if s.values.data_location == T.EXTERNAL]
        for n in g.node:
            for a in n.attribute:
                found += [t for t in ([a.t] if a.HasField("t") else []) + list(a.tensors)
                          if t.data_location == T.EXTERNAL]
                todo += ([a.g] if a.HasField("g") else []) + list(a.graphs)
    return found


@pytest.mark.parametrize("offset,length,message", [
    ("abc", None, "external data offset 'abc' is not a non-negative integer"),
    ("-4", None, "external data offset '-4' is not a non-negative integer"),
    ("0", "1e3", "external data length '1e3' is not a non-negative integer"),
    ("4", "112", "external data [4, 116) lies outside 'w.bin' (112 bytes)"),
    ("999999999999", None, "external data [999999999999, "),
])
def test_offsets_and_lengths_are_integers_inside_the_file(tmp_path, offset, length, message):
    _, model_dir = _canary_setup(tmp_path)
    (model_dir / "w.bin").write_bytes(CANARY)
    src = _write(_constant_from("w.bin", offset=offset, length=length), model_dir)
    assert message in _convert_refused(src, tmp_path / "out")


def test_a_graph_initializer_external_offset_that_is_not_a_number(tmp_path):
    # Issue 10 finding 6: a non-numeric offset crashed ("internal error").
    _, model_dir = _canary_setup(tmp_path)
    (model_dir / "w.bin").write_bytes(CANARY)
    w = _external(numpy_helper.from_array(np.zeros(28, np.float32), "w"), "w.bin", "0x10")
    src = _write(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", shape=[28])],
                        [_vi("y", shape=[28])], [w]), model_dir)
    line = _convert_refused(src, tmp_path / "out")
    assert "initializer 'w': external data offset '0x10' is not a non-negative integer" in line


def test_a_proto_without_a_file_cannot_read_external_data(tmp_path, monkeypatch):
    from converter.importers.onnx import import_model

    canary, _ = _canary_setup(tmp_path)
    monkeypatch.chdir(canary.parent)
    with pytest.raises(FormatError, match="was not read from a file"):
        import_model(_constant_from("canary.bin"))


# -- 2. memory budget ---------------------------------------------------------------------------
def test_sizes_parse_with_units():
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("512MiB") == 512 << 20
    assert parse_size("1.5GB") == 1_500_000_000
    assert parse_size("1000") == 1000
    for bad in ("", "12 parsecs", "-1", "GiB"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_budget_defaults():
    b = MemoryBudget()
    assert b.max_tensor == 1 << 30 and b.max_total == 256 << 20
    assert MemoryBudget(weights_bytes=548 << 20).max_total == 2 * (548 << 20)  # vgg19-sized
    with pytest.raises(ConverterError, match=r"--max-tensor-bytes 2GiB"):
        b.claim((1 << 30) + 1, "a value")


def _constant_of_shape(shape, fill=1.5) -> onnx.ModelProto:
    s = numpy_helper.from_array(np.array(shape, np.int64), "shape")
    value = numpy_helper.from_array(np.array([fill], np.float32), "value")
    return _model([helper.make_node("ConstantOfShape", ["shape"], ["c"], value=value),
                   helper.make_node("Add", ["x", "c"], ["y"])],
                  [_vi("x", shape=[1] * len(shape))], [_vi("y", shape=list(shape))], [s])


def test_constant_of_shape_past_the_limit_stays_an_expand(tmp_path):
    # Issue 10 finding 3: folding ConstantOfShape allocated without limit. 2048 x 2048 float32
    # is 16 MiB; with a 1 MiB per-tensor limit it must stay a graph op, allocating nothing big.
    src = _write(_constant_of_shape([2048, 2048]), tmp_path)
    tracemalloc.start()
    try:
        graph = converter.load(src, max_tensor_bytes="1MiB")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, peak
    expands = [op for op in graph.operations if op.op_type == "expand"]
    assert len(expands) == 1 and expands[0].attrs["newShape"] == [2048, 2048]
    assert expands[0].inputs[0].shape == ()
    y = converter.run(graph, {"x": np.array([[2.0]], np.float32)})["y"]
    assert y.shape == (2048, 2048) and np.all(y == 3.5)


def test_constant_of_shape_within_the_limit_is_folded(tmp_path):
    src = _write(_constant_of_shape([4, 8]), tmp_path)
    graph = converter.load(src)
    assert [op.op_type for op in graph.operations] == ["add"]
    y = converter.run(graph, {"x": np.array([[2.0]], np.float32)})["y"]
    np.testing.assert_array_equal(y, np.full((4, 8), 3.5, np.float32))


def test_a_huge_constant_of_shape_is_refused_without_allocating(tmp_path):
    # The issue's own example: [30000, 30000, 4] floats would be 13.4 GiB. It stays an expand,
    # which WebNN then refuses (more elements than the spec allows): one line, nothing big held.
    src = _write(_constant_of_shape([30000, 30000, 4]), tmp_path)
    tracemalloc.start()
    try:
        line = _convert_refused(src, tmp_path / "out")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak
    assert "shape [30000, 30000, 4] has 3600000000 elements, more than the spec's limit" in line


def _range_model(count: int) -> onnx.ModelProto:
    start, limit, delta = (numpy_helper.from_array(np.array(v, np.int64), n)
                           for v, n in ((0, "start"), (count, "limit"), (1, "delta")))
    return _model([helper.make_node("Range", ["start", "limit", "delta"], ["r"]),
                   helper.make_node("Cast", ["r"], ["c"], to=T.FLOAT),
                   helper.make_node("Add", ["x", "c"], ["y"])],
                  [_vi("x", shape=[1])], [_vi("y", shape=[count])], [start, limit, delta])


def test_a_range_of_empty_inputs_is_a_clear_error(tmp_path):
    empty = numpy_helper.from_array(np.zeros(0, np.int64), "start")
    one = [numpy_helper.from_array(np.array(v, np.int64), n) for v, n in ((4, "limit"),
                                                                          (1, "delta"))]
    m = _model([helper.make_node("Range", ["start", "limit", "delta"], ["y"])], [],
               [_vi("y", T.INT64)], [empty, *one])
    src = _write(m, tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "Range" in line


def test_the_flag_names_what_would_be_allocated(tmp_path):
    # Range has no WebNN form: past the limit the conversion fails, naming size and flag.
    src = _write(_range_model(1 << 28), tmp_path)
    line = _convert_refused(src, tmp_path / "out", "--max-tensor-bytes", "64MiB")
    assert "Range" in line and "would allocate 2.0 GiB" in line
    assert "over the per-tensor limit of 64.0 MiB" in line and "--max-tensor-bytes 2GiB" in line
    with pytest.raises(ConverterError, match="max_tensor_bytes="):
        converter.load(src, max_tensor_bytes=64 << 20)


def test_tile_past_the_limit_stays_a_tile(tmp_path):
    base = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    m = _model([helper.make_node("Tile", ["w", "reps"], ["t"]),
                helper.make_node("Add", ["x", "t"], ["y"])],
               [_vi("x", shape=[1, 1])], [_vi("y", shape=[640, 640])],
               [numpy_helper.from_array(base, "w"),
                numpy_helper.from_array(np.array([10, 10], np.int64), "reps")])
    src = _write(m, tmp_path)
    graph = converter.load(src, max_tensor_bytes="256KiB")
    assert sorted(op.op_type for op in graph.operations) == ["add", "tile"]
    y = converter.run(graph, {"x": np.ones((1, 1), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.tile(base, (10, 10)) + 1)
    folded = converter.load(src)  # within the default limit it folds
    assert [op.op_type for op in folded.operations] == ["add"]


def test_the_total_limit_counts_every_computed_value(tmp_path):
    nodes, inits = [], []
    for i in range(4):  # four 1 MiB folded values: 4 MiB in all
        inits.append(numpy_helper.from_array(np.array([512, 512], np.int64), f"s{i}"))
        nodes.append(helper.make_node("ConstantOfShape", [f"s{i}"], [f"c{i}"],
                                      value=numpy_helper.from_array(np.array([i + 1.0],
                                                                             np.float32))))
    nodes += [helper.make_node("Sum", ["x"] + [f"c{i}" for i in range(4)], ["y"])]
    src = _write(_model(nodes, [_vi("x", shape=[512, 512])], [_vi("y", shape=[512, 512])],
                        inits), tmp_path)
    line = _convert_refused(src, tmp_path / "out", "--max-total-bytes", "3MiB")
    assert "taking the conversion past its limit of 3.0 MiB" in line
    assert "--max-total-bytes 4MiB" in line
    graph = converter.load(src, max_total_bytes="5MiB")
    y = converter.run(graph, {"x": np.zeros((512, 512), np.float32)})["y"]
    assert np.all(y == 10)


def test_a_bad_size_flag_is_a_usage_error(tmp_path):
    src = _write(_constant_of_shape([4, 8]), tmp_path)
    result = _cli("convert", src, "-o", tmp_path / "o.webnn", "--max-tensor-bytes", "lots")
    assert result.exit_code == 2 and "is not a size" in result.output


def test_the_flags_reach_check_and_verify(tmp_path):
    src = _write(_constant_of_shape([2048, 2048]), tmp_path)
    folded = _cli("check", src, "--target", "spec", "--json")
    kept = _cli("check", src, "--target", "spec", "--json", "--max-tensor-bytes", "1MiB")
    assert '"operations": 1' in folded.output and '"operations": 2' in kept.output
    verified = _cli("verify", src, "--max-total-bytes", "1MiB")
    assert verified.exit_code == 0 and "pass" in verified.output, verified.output
    line = _one_error_line(_cli("verify", _write(_range_model(1 << 28), tmp_path, "r.onnx"),
                                "--max-tensor-bytes", "64MiB"))
    assert "--max-tensor-bytes 2GiB" in line


@pytest.mark.parametrize("dims", [[100000, 100000, 100000], [3, 4]])
def test_an_initializer_with_dims_but_no_data(tmp_path, dims):
    # Issue 10 findings 3 and 6: this ended in an internal error.
    w = T(name="w", data_type=T.FLOAT, dims=dims)
    src = _write(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", shape=[1])],
                        [_vi("y")], [w]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert f"initializer 'w' declares shape {dims}" in line and "but holds no data" in line


def test_a_constant_attribute_with_dims_but_no_data(tmp_path):
    value = T(name="v", data_type=T.FLOAT, dims=[100000, 100000, 100000])
    src = _write(_model([helper.make_node("Constant", [], ["c"], value=value, name="k"),
                         helper.make_node("Add", ["x", "c"], ["y"])], [_vi("x", shape=[1])],
                        [_vi("y")]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "Constant 'k' attribute 'value' declares shape [100000, 100000, 100000] " \
           "(4000000000000000 bytes) but holds no data" in line


def test_typed_field_data_is_claimed_before_decoding(tmp_path):
    w = helper.make_tensor("w", T.FLOAT, [2048], np.ones(2048, np.float32))
    src = _write(_model([helper.make_node("Add", ["x", "w"], ["y"])], [_vi("x", shape=[2048])],
                        [_vi("y", shape=[2048])], [w]), tmp_path)
    line = _convert_refused(src, tmp_path / "out", "--max-tensor-bytes", "4KiB")
    assert "initializer 'w' would allocate 8.0 KiB" in line


def test_a_sparse_tensor_with_a_huge_dense_shape(tmp_path):
    values = numpy_helper.from_array(np.ones(2, np.float32), "s")
    indices = numpy_helper.from_array(np.array([0, 5], np.int64), "s_i")
    sparse = helper.make_sparse_tensor(values, indices, [1 << 20, 1 << 20])
    src = _write(_model([helper.make_node("Add", ["x", "s"], ["y"])], [_vi("x", shape=[1])],
                        [_vi("y")], sparse=[sparse]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "sparse initializer 's' (dense) would allocate 4.0 TiB" in line


def test_a_sparse_index_outside_its_shape(tmp_path):
    values = numpy_helper.from_array(np.ones(2, np.float32), "s")
    indices = numpy_helper.from_array(np.array([0, 99], np.int64), "s_i")
    sparse = helper.make_sparse_tensor(values, indices, [4])
    src = _write(_model([helper.make_node("Add", ["x", "s"], ["y"])], [_vi("x", shape=[4])],
                        [_vi("y", shape=[4])], sparse=[sparse]), tmp_path)
    assert "an index lies outside its 4 elements" in _convert_refused(src, tmp_path / "out")


def test_a_sparse_initializer_imports_with_its_values(tmp_path):
    values = numpy_helper.from_array(np.array([2.0, -3.0], np.float32), "s")
    indices = numpy_helper.from_array(np.array([[0, 1], [2, 0]], np.int64), "s_i")
    sparse = helper.make_sparse_tensor(values, indices, [3, 2])
    src = _write(_model([helper.make_node("Add", ["x", "s"], ["y"])], [_vi("x", shape=[3, 2])],
                        [_vi("y", shape=[3, 2])], sparse=[sparse]), tmp_path)
    y = converter.run(converter.load(src), {"x": np.zeros((3, 2), np.float32)})["y"]
    np.testing.assert_array_equal(y, [[0, 2], [0, 0], [-3, 0]])


# -- 3. crashes become clear errors ------------------------------------------------------------
def test_eyelike_double_is_a_clear_error(tmp_path):
    # Issue 10 finding 6: KeyError: 11.
    src = _write(_model([helper.make_node("EyeLike", ["x"], ["y"], dtype=T.DOUBLE)],
                        [_vi("x", shape=[3, 3])], [_vi("y", T.DOUBLE, [3, 3])]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "graph output 'y': 'y' has data type DOUBLE, which WebNN does not have" in line
    with pytest.raises(UnsupportedError):
        converter.load(src)


def test_eyelike_double_cast_to_float_converts(tmp_path):
    src = _write(_model([helper.make_node("EyeLike", ["x"], ["e"], dtype=T.DOUBLE, k=1),
                         helper.make_node("Cast", ["e"], ["c"], to=T.FLOAT),
                         helper.make_node("Add", ["x", "c"], ["y"])],
                        [_vi("x", shape=[3, 3])], [_vi("y", shape=[3, 3])]), tmp_path)
    y = converter.run(converter.load(src), {"x": np.zeros((3, 3), np.float32)})["y"]
    np.testing.assert_array_equal(y, np.eye(3, k=1))


@pytest.mark.parametrize("outputs,attrs,message", [
    ([], {}, "Split 'Split_0': it has no outputs"),
    (["a", "b"], {"num_outputs": 0}, "num_outputs is 0 but the node has 2 outputs"),
    (["a", "b"], {"num_outputs": 2 ** 31}, "num_outputs is 2147483648 but the node has 2"),
])
def test_split_without_parts_is_a_clear_error(tmp_path, outputs, attrs, message):
    # Issue 10 finding 6: ZeroDivisionError.
    src = _write(_model([helper.make_node("Split", ["x"], outputs, axis=0, **attrs),
                         helper.make_node("Relu", ["x"], ["y"])],
                        [_vi("x", shape=[4, 3])], [_vi("y", shape=[4, 3])], opset=18), tmp_path)
    assert message in _convert_refused(src, tmp_path / "out")


def test_an_unused_zero_sized_split_part_is_dropped(tmp_path):
    sizes = numpy_helper.from_array(np.array([0, 4], np.int64), "s")
    src = _write(_model([helper.make_node("Split", ["x", "s"], ["empty", "y"], axis=0)],
                        [_vi("x", shape=[4, 3])], [_vi("y", shape=[4, 3])], [sizes]), tmp_path)
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.testing.assert_array_equal(converter.run(converter.load(src), {"x": x})["y"], x)


def test_a_zero_sized_split_part_as_graph_output_is_a_clear_error(tmp_path):
    sizes = numpy_helper.from_array(np.array([0, 4], np.int64), "s")
    src = _write(_model([helper.make_node("Split", ["x", "s"], ["empty", "y"], axis=0)],
                        [_vi("x", shape=[4, 3])], [_vi("empty"), _vi("y", shape=[4, 3])],
                        [sizes]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "graph output 'empty'" in line and "WebNN has no empty tensors" in line


# -- 4. invalid models are rejected with the rule they break -----------------------------------
def _relu(opset):
    return _model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", shape=[2])],
                  [_vi("y", shape=[2])], opset=opset)


@pytest.mark.parametrize("opset", [99, 1, 0])
def test_an_opset_outside_the_supported_range(tmp_path, opset):
    src = _write(_relu(opset), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert f"the model imports default-domain opset {opset}; this converter reads opsets 7 to " \
           f"{onnx.defs.onnx_opset_version()}" in line


def test_default_domain_ops_without_a_default_opset(tmp_path):
    m = _relu(17)
    del m.opset_import[:]
    m.opset_import.append(helper.make_opsetid("com.example", 1))
    src = _write(m, tmp_path)
    assert "uses default-domain ops but imports no default-domain opset" in \
        _convert_refused(src, tmp_path / "out")


def test_an_old_opset_whose_ops_never_changed_reads_as_opset_7(tmp_path):
    # The ONNX backend's own Not cases declare opset 1: Not-1 is Not at every opset.
    src = _write(_model([helper.make_node("Not", ["x"], ["y"])], [_vi("x", T.BOOL, [3])],
                        [_vi("y", T.BOOL, [3])], opset=1), tmp_path)
    y = converter.run(converter.load(src), {"x": np.array([1, 0, 1], np.uint8)})["y"]
    np.testing.assert_array_equal(y, [0, 1, 0])


def test_two_nodes_writing_one_output(tmp_path):
    src = _write(_model([helper.make_node("Relu", ["x"], ["y"], name="first"),
                         helper.make_node("Neg", ["x"], ["y"], name="second")],
                        [_vi("x", shape=[2])], [_vi("y", shape=[2])]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "value 'y' is written by node Relu 'first' and again by node Neg 'second'" in line


def test_a_node_writing_over_an_initializer(tmp_path):
    w = numpy_helper.from_array(np.ones(2, np.float32), "w")
    src = _write(_model([helper.make_node("Relu", ["x"], ["w"]),
                         helper.make_node("Add", ["x", "w"], ["y"])],
                        [_vi("x", shape=[2])], [_vi("y", shape=[2])], [w]), tmp_path)
    assert "written by a graph input or initializer" in _convert_refused(src, tmp_path / "out")


def test_a_node_reading_its_own_output(tmp_path):
    # Issue 10 finding 8: reported as "not produced by any node ... no WebNN form".
    src = _write(_model([helper.make_node("Add", ["x", "y"], ["y"], name="loop")],
                        [_vi("x", shape=[2])], [_vi("y", shape=[2])]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "node Add 'loop' reads its own output 'y': the graph has a cycle" in line
    assert "no WebNN form" not in line


def test_a_cycle_through_two_nodes(tmp_path):
    src = _write(_model([helper.make_node("Add", ["x", "b"], ["a"], name="A"),
                         helper.make_node("Relu", ["a"], ["b"], name="B"),
                         helper.make_node("Neg", ["b"], ["y"], name="C")],
                        [_vi("x", shape=[2])], [_vi("y", shape=[2])]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "the graph has a cycle: Relu 'B' -> Add 'A' -> Relu 'B'" in line


def test_nodes_out_of_order(tmp_path):
    src = _write(_model([helper.make_node("Neg", ["a"], ["y"], name="late"),
                         helper.make_node("Relu", ["x"], ["a"], name="early")],
                        [_vi("x", shape=[2])], [_vi("y", shape=[2])]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "node Neg 'late' reads 'a' before node Relu 'early' produces it" in line
    assert "topologically sorted" in line


@pytest.mark.parametrize("data_known", [False, True])
@pytest.mark.parametrize("index", [7, -6])
def test_a_constant_gather_index_out_of_range(tmp_path, data_known, index):
    idx = numpy_helper.from_array(np.array([0, index], np.int64), "i")
    inits = [idx]
    if data_known:
        inits.append(numpy_helper.from_array(np.ones((5, 3), np.float32), "d"))
    nodes = [helper.make_node("Gather", ["d", "i"], ["g"], axis=0, name="gather"),
             helper.make_node("Add", ["x", "g"], ["y"])]
    inputs = [_vi("x", shape=[2, 3])] + ([] if data_known else [_vi("d", shape=[5, 3])])
    src = _write(_model(nodes, inputs, [_vi("y", shape=[2, 3])], inits), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert f"Gather 'gather': index {index} is out of range for axis 0 of size 5" in line


def test_constant_gather_indices_in_range_still_import(tmp_path):
    idx = numpy_helper.from_array(np.array([4, -5], np.int64), "i")
    src = _write(_model([helper.make_node("Gather", ["d", "i"], ["y"], axis=0)],
                        [_vi("d", shape=[5, 3])], [_vi("y", shape=[2, 3])], [idx]), tmp_path)
    d = np.arange(15, dtype=np.float32).reshape(5, 3)
    np.testing.assert_array_equal(converter.run(converter.load(src), {"d": d})["y"], d[[4, 0]])


# -- 5. messages that say what is wrong --------------------------------------------------------
def test_a_required_input_with_an_empty_name(tmp_path):
    src = _write(_model([helper.make_node("Add", ["x", ""], ["y"], name="add")],
                        [_vi("x", shape=[2])], [_vi("y", shape=[2])]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert "Add 'add': a required input is missing: the node gives it an empty name" in line
    assert "None" not in line


def test_a_graph_output_nothing_produces(tmp_path):
    src = _write(_model([helper.make_node("Relu", ["x"], ["y"])], [_vi("x", shape=[2])],
                        [_vi("y", shape=[2]), _vi("ghost", shape=[2])]), tmp_path)
    line = _convert_refused(src, tmp_path / "out")
    assert str(src) in line
    assert "graph output 'ghost' is not produced by any node, initializer or input" in line


def test_a_model_path_that_is_a_fifo_is_refused_without_blocking(tmp_path, no_hang):
    os.mkfifo(tmp_path / "m.onnx")
    line = _convert_refused(tmp_path / "m.onnx", tmp_path / "out")
    assert "m.onnx: not a regular file" in line


def test_a_model_path_that_does_not_exist(tmp_path):
    assert "m.onnx: no such file" in _convert_refused(tmp_path / "m.onnx", tmp_path / "out")


# Attribute values a hostile file can set, found by mutating the ONNX backend's own node cases
# (each crashed the importer with a Python exception before).
@pytest.mark.parametrize("case,attr,value,message", [
    ("test_averagepool_2d_ceil", "strides", [0, 0], "strides [0, 0] must hold 2 positive values"),
    ("test_averagepool_2d_ceil", "strides", [], "strides [] must hold 2 positive values"),
    ("test_averagepool_2d_dilations", "dilations", [], "dilations [] must hold 2 positive"),
    ("test_averagepool_2d_precomputed_same_upper", "strides", [0, 0], "strides [0, 0] must"),
    ("test_conv_with_autopad_same", "strides", [], "strides [] must hold 2 positive values"),
    ("test_convtranspose_kernel_shape", "output_padding", [],
     "output_padding [] must hold 2 non-negative values"),
    # onnx 1.23's own LayerNormalization shape inference dies of SIGSEGV on this axis; it runs
    # in a child process, so the converter refuses the model instead of dying with it (an onnx
    # without that bug gets our rule's own range check).
    ("test_layer_normalization_2d_axis0", "axis", 2 ** 31,
     r"crashed on this model \(SIGSEGV\): it is malformed|out of range"),
    ("test_attention_24_qk_matmul_output_mode3_softmax_precision", "softmax_precision", -1,
     "softmax_precision unknown data type -1 is not a WebNN type"),
])
def test_hostile_attribute_values_give_clear_errors(tmp_path, case, attr, value, message):
    from onnx.backend.test.case.node import collect_testcases

    [found] = [c for c in collect_testcases(None) if c.name == case]
    model = onnx.ModelProto()
    model.CopyFrom(found.model)
    [a] = [a for a in model.graph.node[0].attribute if a.name == attr]
    if isinstance(value, list):
        del a.ints[:]
        a.ints.extend(value)
    else:
        a.i = value
    src = _write(model, tmp_path)
    with pytest.raises(ConverterError, match=message if "|" in message else re.escape(message)):
        converter.load(src)
    line = _convert_refused(src, tmp_path / "out")
    assert re.search(message if "|" in message else re.escape(message), line)
