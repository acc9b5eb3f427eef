"""Bad .tflite input: each fails with one FormatError line that says what and where."""
from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pytest

from converter.errors import ConverterError, FormatError
from converter.importers.tflite import import_tflite
from converter.testing.tflite_fixtures import SAME, TfliteBuilder

from .helpers import check, rand


def _conv_model(*, external: bool = False, stored=None) -> TfliteBuilder:
    b = TfliteBuilder()
    x = b.input("x", [1, 4, 4, 3])
    w = b.constant("weights", rand(8, 3, 3, 3), external=external, stored=stored)
    y = b.tensor("y", [1, 4, 4, 8])
    b.op("CONV_2D", [x, w, b.constant("bias", rand(8))], [y], padding=SAME, strideW=1,
         strideH=1)
    b.subgraphs[0].outputs = [y]
    return b


def _error(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(FormatError) as info:
        import_tflite(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    line = info.value.line()
    assert "\n" not in line and line.startswith(str(path))
    return line


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_truncated_flatbuffer(tmp_path, keep):
    data = _conv_model().build()
    line = _error(tmp_path, data[:int(len(data) * keep)])
    size = int(len(data) * keep)
    # Says which byte is out of range, how long the file is, and which table was being read.
    assert re.search(rf"corrupt or truncated TFLite flatbuffer: an offset points to byte "
                     rf"(\d+), past the end of the file \({size} bytes\) while reading the "
                     rf"(model table|operator code table|buffer \d+)", line), line
    assert int(re.search(r"byte (\d+)", line).group(1)) >= size


def test_a_corrupt_vector_length_names_its_table(tmp_path):
    data = bytearray(_conv_model().build())
    # The shape [8, 3, 3, 3] of tensor 1 is a vector whose length precedes its values: make
    # it run past the end of the file.
    shape = np.array([4, 8, 3, 3, 3], "<i4").tobytes()
    assert data.count(shape) == 1
    at = data.index(shape)
    data[at:at + 4] = (len(data) * 4).to_bytes(4, "little")
    line = _error(tmp_path, bytes(data))
    assert "a vector runs past the end of the file" in line and \
        "while reading subgraph 0, tensor 1" in line, line


@pytest.mark.parametrize("kind", ["fifo", "link-out", "folder"])
def test_only_a_regular_file_inside_its_folder_is_read(tmp_path, kind):
    (tmp_path / "outside.tflite").write_bytes(_conv_model().build())
    folder = tmp_path / "models"
    folder.mkdir()
    path = folder / "model.tflite"
    if kind == "fifo":
        os.mkfifo(path)  # opening it blocked forever before
    elif kind == "link-out":
        path.symlink_to(tmp_path / "outside.tflite")
    else:
        path.mkdir()
    with pytest.raises(FormatError) as info:
        import_tflite(path)
    want = {"fifo": "is a FIFO (named pipe), not a file", "folder": "is a folder, not a file",
            "link-out": "outside the model's folder"}[kind]
    assert want in info.value.line()


def test_a_few_bytes_are_not_a_model(tmp_path):
    assert "too few for a flatbuffer" in _error(tmp_path, b"\x10\x00\x00\x00TF")


def test_wrong_file_identifier(tmp_path):
    line = _error(tmp_path, _conv_model().build(identifier=b"TFL2"))
    assert "its file identifier is b'TFL2', not b'TFL3'" in line


def test_an_onnx_file_is_not_a_tflite_model(tmp_path):
    assert "file identifier" in _error(tmp_path, b"\x08\x07\x12\x04test" + b"\x00" * 32)


def test_buffer_offset_outside_the_file(tmp_path):
    data = _conv_model(external=True).build()
    # the weights live after the flatbuffer (offset/size); cut them off
    line = _error(tmp_path, data[:-64])
    assert "buffer 1 lies at bytes [" in line and "outside the file's" in line


def test_tensor_whose_buffer_disagrees_with_its_shape(tmp_path):
    # 8 x 3 x 3 x 3 float32 weights need 864 bytes; the buffer holds 860
    data = _conv_model(stored=np.zeros(215, np.float32)).build()
    line = _error(tmp_path, data)
    assert "tensor 1 'weights' has shape [8, 3, 3, 3] of FLOAT32 (864 bytes), but its buffer 1 " \
           "holds 860 bytes" in line


def test_old_schema_version(tmp_path):
    assert "schema version 2" in _error(tmp_path, _conv_model().build(version=2))


def test_operator_reading_a_missing_tensor(tmp_path):
    b = _conv_model()
    b.subgraphs[0].operators[0].inputs = [0, 1, 40]
    assert "operator 0's input names tensor 40, but there are 4 tensors" in \
        _error(tmp_path, b.build())


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(FormatError, match="does not exist"):
        import_tflite(tmp_path / "absent.tflite")
    empty = tmp_path / "empty.tflite"
    empty.write_bytes(b"")
    with pytest.raises(FormatError, match="the file is empty"):
        import_tflite(empty)


def test_external_buffers_inside_the_file_are_read(tmp_path):
    """The same model with its weights stored after the flatbuffer imports and runs the same
    (LiteRT reads it too)."""
    b = _conv_model(external=True)
    data = b.build()
    weights = b.buffers[1].data
    assert data.endswith(weights.tobytes())  # the weights really are outside the flatbuffer
    graph, _ = check(data, {"x": rand(1, 4, 4, 3)})
    const = graph.constants["weights"].constant.numpy()
    np.testing.assert_array_equal(const.reshape(-1).view(np.uint8), weights)


def test_an_input_shape_past_the_spec_limit_names_the_file_and_tensor(tmp_path):
    b = TfliteBuilder()
    x = b.input("x", [2**31 - 1] * 4)
    y = b.tensor("y", [2**31 - 1] * 4)
    b.op("RELU", [x], [y])
    path = b.save(tmp_path / "model.tflite", [y])
    with pytest.raises(ConverterError) as info:
        import_tflite(path)
    line = info.value.line()
    assert line.startswith(f"{tmp_path / 'model.tflite'}: input tensor 0 'x': shape "
                           f"[2147483647, 2147483647, 2147483647, 2147483647] has "), line
    assert "more than the spec's limit 2147483647" in line


@pytest.mark.parametrize("outputs, says", [
    ([], "TRANSPOSE writes output 0, and the operator lists 0 outputs"),
    ([-1], "TRANSPOSE writes output 0, and the operator omits it (-1)"),
])
def test_an_operator_without_the_output_its_op_writes_is_refused(tmp_path, outputs, says):
    # found by tools/fuzz.py (seed 101): an IndexError escaped as an internal error
    b = TfliteBuilder()
    x = b.input("x", [1, 2, 3])
    y = b.tensor("y", [3, 2, 1])
    b.op("TRANSPOSE", [x, b.constant("perm", np.array([2, 1, 0], np.int32))], [y])
    b.subgraphs[0].operators[0].outputs = outputs
    path = tmp_path / "m.tflite"
    path.write_bytes(b.build(outputs=[x]))
    with pytest.raises(ConverterError) as info:
        import_tflite(path)
    assert says in str(info.value)


def test_a_tensor_of_more_than_32_axes_is_refused_when_read(tmp_path):
    # found by tools/fuzz.py (seed 202): a rank-258 tensor reached numpy, which holds 64 axes
    b = _conv_model()
    b.subgraphs[0].tensors[-1].shape = [1] * 257 + [0]
    assert "tensor 3 'bias' has rank 258; the converter handles up to 32 axes" in \
        _error(tmp_path, b.build())


@pytest.mark.parametrize("rank", [33, 70])
def test_a_reshape_to_more_than_32_axes_is_refused(tmp_path, rank):
    b = TfliteBuilder()
    x = b.input("x", [1, 2])
    y = b.tensor("y", [1, 2])
    shape = b.constant("s", np.array([1] * (rank - 1) + [2], np.int32))
    b.op("RESHAPE", [x, shape], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(b.build(outputs=[y]))
    with pytest.raises(ConverterError, match=f"its new shape has {rank} axes; the converter "
                                             f"handles up to 32"):
        import_tflite(path)


def test_a_tensor_of_32_axes_still_imports(tmp_path):
    b = TfliteBuilder()
    x = b.input("x", [1] * 31 + [2])
    y = b.tensor("y", [1] * 31 + [2])
    b.op("ADD", [x, x], [y])
    path = tmp_path / "m.tflite"
    path.write_bytes(b.build(outputs=[y]))
    assert import_tflite(path).inputs["x"].shape == (1,) * 31 + (2,)


def test_a_negative_dimension_in_a_shape_is_refused_when_read(tmp_path):
    # found by tools/fuzz.py (seed 505): an empty "constant" of shape [.., -276, .., 0, ..]
    # reached np.zeros, which refused it with a ValueError
    b = _conv_model()
    b.subgraphs[0].tensors[1].shape = [8, 3, -3, 0]
    assert "tensor 1 'weights' has a negative dimension in its shape [8, 3, -3, 0]" in \
        _error(tmp_path, b.build())


def test_a_zero_dimension_is_read_as_it_is(tmp_path):
    # empty tensors exist (a RESHAPE to a scalar's shape [] reads an empty constant): only a
    # negative dimension is refused
    from converter.importers.tflite.model_file import read_tflite

    b = _conv_model()
    b.tensor("empty", [2, 0])
    path = tmp_path / "m.tflite"
    path.write_bytes(b.build())
    [tensor] = [t for t in read_tflite(path).subgraphs[0].tensors if t.name == "empty"]
    assert tensor.shape == (2, 0)
