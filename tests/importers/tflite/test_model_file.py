"""converter.importers.tflite.model_file.read_tflite on small flatbuffers written from the TFLite
schema (ai-edge-litert's schema classes): every field of the records it returns, checked against
what was written, and the size rules of the schema (an INT4 tensor packs two values a byte; a
buffer stored after the flatbuffer lies at its offset and size)."""
from __future__ import annotations

import numpy as np
import pytest

from converter.errors import FormatError
from converter.importers.tflite.model_file import Quantization, read_tflite, type_info
from converter.testing.tflite_fixtures import Quant, TfliteBuilder


def _model() -> TfliteBuilder:
    b = TfliteBuilder(description="two ops")
    x = b.input("x", [1, 4], "int8", Quant([0.5], [3]))
    w = b.constant("w", np.arange(8, dtype=np.int8).reshape(2, 4), "int8",
                   Quant([0.25, 0.125], [1], axis=0))
    y = b.tensor("y", [1, 2], "int8", Quant([0.5], [3]))
    b.op("FULLY_CONNECTED", [x, w, -1], [y])
    z = b.tensor("", [1, 2], "int8", Quant([0.5], [3]))
    b.op("CUSTOM:MyOp", [y], [z], version=3)
    b.subgraphs[0].outputs = [z]
    return b


def test_every_record_holds_what_was_written():
    m = read_tflite(_model().build())
    assert (m.where, m.version, m.description) == ("<tflite bytes>", 3, "two ops")
    assert len(m.buffers) == 2 and m.buffers[0] is None
    sg = m.subgraphs[0]
    assert (sg.index, sg.name, sg.inputs, sg.outputs) == (0, "main", (0,), (3,))
    x, w, y, z = sg.tensors
    assert (x.index, x.name, x.type_name, x.shape, x.buffer, x.data) == (0, "x", "INT8", (1, 4),
                                                                         0, None)
    assert str(w) == "tensor 1 'w'" and w.buffer == 1 and not w.is_variable
    assert w.data.tolist() == list(range(8)) and w.info.webnn == "int8"
    assert z.name == "tensor3"  # a tensor without a name gets its index
    fc, custom = sg.operators
    assert (fc.index, fc.name, fc.inputs, fc.outputs, fc.custom_code) == (
        0, "FULLY_CONNECTED", (0, 1, -1), (2,), None)
    assert (custom.index, custom.name, custom.version, custom.inputs) == (1, "CUSTOM:MyOp", 3,
                                                                          (2,))


def test_quantization_parameters_per_tensor_and_per_channel():
    sg = read_tflite(_model().build()).subgraphs[0]
    x, w, y, _ = sg.tensors
    assert x.quant.scale.tolist() == [0.5] and x.quant.zero_point.tolist() == [3]
    assert not x.quant.per_channel and x.quant.same_as(y.quant) and not x.quant.same_as(None)
    # one zero point for two scales stands for both channels
    assert w.quant.per_channel and w.quant.zero_point.tolist() == [1, 1]
    assert w.quant.scale.tolist() == [0.25, 0.125] and w.quant.axis == 0
    assert not w.quant.same_as(x.quant)
    one = Quantization(np.array([0.5], np.float32), np.array([3]), 0)
    assert not one.same_as(Quantization(np.array([0.5], np.float32), np.array([3]), 1))
    assert not one.same_as(Quantization(np.array([0.5], np.float32), np.array([4]), 0))
    assert not one.same_as(Quantization(np.array([0.25], np.float32), np.array([3]), 0))


def test_an_unnamed_subgraph_and_types_the_table_lacks():
    b = TfliteBuilder()
    b.subgraphs[0].name = ""
    x = b.input("x", [2], "bool")
    y = b.tensor("y", [2], "bool")
    b.op("LOGICAL_NOT", [x], [y])
    sg = read_tflite(b.build([y])).subgraphs[0]
    assert sg.name == "subgraph0" and sg.tensors[0].is_bool and sg.tensors[0].info.webnn == "uint8"
    assert type_info(200).name == "type 200" and type_info(200).numpy is None


def test_a_file_that_only_fills_the_deprecated_code_byte():
    b = _model()
    b.code_list[0].builtinCode = 0  # an old file: the code lives in the deprecated byte only
    assert read_tflite(b.build()).subgraphs[0].operators[0].name == "FULLY_CONNECTED"


def test_int4_packs_two_values_a_byte():
    for count, stored in ((3, 2), (4, 2)):  # ceil(count / 2) bytes
        b = TfliteBuilder()
        b.input("x", [count])
        b.constant("w", np.zeros(stored, np.uint8), "uint8")
        b.subgraphs[0].tensors[1].shape, b.subgraphs[0].tensors[1].type = [count], 17  # INT4
        assert read_tflite(b.build()).subgraphs[0].tensors[1].data.size == stored
    b.subgraphs[0].tensors[1].shape = [5]  # needs 3 bytes, holds 2
    with pytest.raises(FormatError, match=r"\(3 bytes\), but its buffer 1 holds 2 bytes"):
        read_tflite(b.build())


def test_an_external_buffer_that_ends_at_the_end_of_the_file_is_read():
    b = TfliteBuilder()
    b.input("x", [4])
    b.constant("w", np.arange(4, dtype=np.float32), external=True)
    data = b.build()
    weights = np.arange(4, dtype=np.float32).tobytes()
    assert data.endswith(weights)
    assert read_tflite(data).subgraphs[0].tensors[1].data.tobytes() == weights
    with pytest.raises(FormatError, match=r"buffer 1 lies at bytes \[\d+, \d+\), outside the "
                                          r"file's \d+ bytes"):
        read_tflite(data[:-1])


def test_a_tensor_naming_a_buffer_the_model_lacks():
    b = _model()
    b.subgraphs[0].tensors[1].buffer = 2
    with pytest.raises(FormatError, match="tensor 1 'w' names buffer 2, but the model has 2 "
                                          "buffers"):
        read_tflite(b.build())


def test_lists_naming_missing_tensors_or_codes():
    b = _model()
    b.subgraphs[0].inputs = [4]
    with pytest.raises(FormatError, match="an input names tensor 4, but there are 4 tensors"):
        read_tflite(b.build())
    b = _model()
    b.subgraphs[0].outputs = [-1]  # -1 (omitted) is for an operator's optional inputs only
    with pytest.raises(FormatError, match="an output names tensor -1"):
        read_tflite(b.build())
    b = _model()
    b.subgraphs[0].operators[1].opcodeIndex = 2
    with pytest.raises(FormatError, match="operator 1 has opcode index 2, but the model has 2 "
                                          "operator codes"):
        read_tflite(b.build())


def test_each_kind_of_corruption_is_named_in_words():
    import struct

    from converter.importers.tflite.model_file import _what_broke

    e = struct.error("unpack_from requires a buffer of at least 12 bytes for unpacking 4 bytes "
                     "at offset 8 (actual buffer size is 10)")
    assert _what_broke(e, 10) == "an offset points to byte 8, past the end of the file (10 bytes)"
    assert _what_broke(struct.error("bad char in struct format"), 10) == \
        "an offset is out of range (bad char in struct format)"
    assert _what_broke(IndexError("index out of range"), 10) == \
        "an offset or vector length points outside the file (10 bytes)"
    assert _what_broke(ValueError("buffer is smaller than requested size"), 10) == \
        "a vector runs past the end of the file (10 bytes)"
    assert _what_broke(TypeError("bad number -4 for type uint32"), 10) == \
        "an offset resolves to -4, outside the file (10 bytes)"
    assert _what_broke(ValueError("negative count"), 10) == \
        "a field has an impossible value (ValueError: negative count)"
    assert _what_broke(TypeError("unhashable"), 10) == \
        "a field has an impossible value (TypeError: unhashable)"


def test_a_root_offset_past_the_end_and_too_few_bytes():
    data = bytearray(_model().build())
    data[0:4] = (len(data) - 3).to_bytes(4, "little")  # root + 4 > size
    with pytest.raises(FormatError, match=rf"its root table offset {len(data) - 3} points past "
                                          rf"the end of the file \({len(data)} bytes\)"):
        read_tflite(bytes(data))
    with pytest.raises(FormatError, match="the file has 7 bytes, too few for a flatbuffer"):
        read_tflite(b"\0\0\0\0TFL")
    with pytest.raises(FormatError, match="its file identifier is b'TFL2'"):
        read_tflite(b"\x08\0\0\0TFL2" + bytes(8))
    data[0:4] = (len(data) - 4).to_bytes(4, "little")  # the last 4 bytes: inside, read on
    with pytest.raises(FormatError) as e:
        read_tflite(bytes(data))
    assert "corrupt or truncated TFLite flatbuffer" in str(e.value)
    assert "root table offset" not in str(e.value)


def test_optional_fields_signature_sparsity_variables_and_custom_options():
    from converter.testing.tflite_fixtures import sparse_parameters

    b = TfliteBuilder()
    x = b.input("x", [1, 4])
    b.subgraphs[0].tensors[x].shapeSignature = [-1, 4]
    sparsity, stored = sparse_parameters(np.eye(4, dtype=np.float32))
    b.constant("s", np.eye(4, dtype=np.float32), sparsity=sparsity, stored=stored)
    b.tensor("state", [1, 4], variable=True)
    q = b.tensor("q", [2], "int8", Quant([0.5, 0.25], [0]))
    b.subgraphs[0].tensors[q].quantization.zeroPoint = None  # no zero points: all zero
    e = b.tensor("e", [2], "int8", Quant([0.5], [0]))
    b.subgraphs[0].tensors[e].quantization.scale = []  # min/max only: not quantized
    words = b.constant("words", np.zeros(5, np.uint8), "uint8")
    b.subgraphs[0].tensors[words].type = 5  # STRING: no fixed byte length
    y = b.tensor("y", [1, 4])
    b.op("CUSTOM:Thing", [x], [y], custom_options=b"\x01\x02")
    b.op("ADD", [x, x], [y], fusedActivationFunction=1)
    sg = read_tflite(b.build([y])).subgraphs[0]
    xt, st, state, qt, et, wt, _ = sg.tensors
    assert xt.signature == (-1, 4) and st.signature is None
    assert st.sparsity is not None and st.data.size == stored.nbytes
    assert state.is_variable and not xt.is_variable
    assert qt.quant.zero_point.tolist() == [0, 0] and qt.quant.scale.tolist() == [0.5, 0.25]
    assert et.quant is None
    assert wt.type_name == "STRING" and wt.data.size == 5
    custom, add = sg.operators
    assert custom.custom_options == b"\x01\x02" and custom.options is None
    assert add.custom_options is None and add.options.fusedActivationFunction == 1


# TFLite's TensorType codes (schema.fbs) with the storage of one element and the WebNN type
# that holds it (None: not a numeric array / WebNN has none), as the schema defines them.
TENSOR_TYPES = {
    0: ("FLOAT32", "<f4", "float32"), 1: ("FLOAT16", "<f2", "float16"),
    2: ("INT32", "<i4", "int32"), 3: ("UINT8", "u1", "uint8"), 4: ("INT64", "<i8", "int64"),
    5: ("STRING", None, None), 6: ("BOOL", "u1", "uint8"), 7: ("INT16", "<i2", None),
    8: ("COMPLEX64", None, None), 9: ("INT8", "i1", "int8"), 10: ("FLOAT64", "<f8", None),
    11: ("COMPLEX128", None, None), 12: ("UINT64", "<u8", "uint64"),
    13: ("RESOURCE", None, None), 14: ("VARIANT", None, None), 15: ("UINT32", "<u4", "uint32"),
    16: ("UINT16", "<u2", None), 17: ("INT4", "u1", "int4"), 18: ("BFLOAT16", None, None),
}


def test_every_tensor_type_code_reads_as_the_schema_defines_it():
    import dataclasses

    from ai_edge_litert import schema_py_generated as schema

    from converter.importers.tflite.model_file import OP_NAMES, TYPES, TypeInfo

    assert {getattr(schema.TensorType, name): code for code, (name, _, _)
            in TENSOR_TYPES.items()} == {code: code for code in TENSOR_TYPES}
    for code, (name, storage, webnn) in TENSOR_TYPES.items():
        info = TYPES[code]
        assert (info.name, info.webnn) == (name, webnn), code
        assert (None if info.numpy is None else info.numpy.str.replace("|", "")) == \
            (None if storage is None else np.dtype(storage).str.replace("|", "")), code
    assert OP_NAMES[3] == "CONV_2D" and OP_NAMES[0] == "ADD" and OP_NAMES[32] == "CUSTOM"
    assert all(isinstance(k, int) and isinstance(v, str) for k, v in OP_NAMES.items())
    with pytest.raises(dataclasses.FrozenInstanceError):  # records are values: frozen
        TypeInfo("x", None, None).name = "y"
    with pytest.raises(dataclasses.FrozenInstanceError):
        Quantization(np.ones(1), np.zeros(1), 0).axis = 1


def test_a_models_repr_leaves_out_its_weights():
    m = read_tflite(_model().build())
    assert "buffers=" not in repr(m) and "description='two ops'" in repr(m)


def test_eight_bytes_are_enough_to_be_looked_at():
    with pytest.raises(FormatError) as e:
        read_tflite(b"\x00\x00\x00\x00TFL3")  # 8 bytes, the right identifier: parsed
    assert "too few" not in str(e.value) and "TFLite schema version 0" in str(e.value)


def test_buffer_offsets_0_and_1_mean_inline_data_and_2_a_place_in_the_file():
    b = _model()
    b.buffers[1].offset, b.buffers[1].size = 1, 0  # reserved: the data is inline
    assert read_tflite(b.build()).subgraphs[0].tensors[1].data.tolist() == list(range(8))
    b = _model()
    b.buffers[1].data, b.buffers[1].offset, b.buffers[1].size = None, 2, 8
    data = b.build()
    assert read_tflite(data).subgraphs[0].tensors[1].data.tobytes() == data[2:10]


def test_empty_and_one_byte_buffers():
    b = TfliteBuilder()
    b.input("x", [1])
    b.constant("one", np.array([7], np.uint8))
    empty = b.buffer(b"")
    m = read_tflite(b.build())
    assert m.buffers[1].tolist() == [7] and m.buffers[empty] is None


def test_a_model_without_subgraphs_an_unshaped_tensor_and_an_omitted_output():
    b = TfliteBuilder()
    b.subgraphs = []
    with pytest.raises(FormatError, match="the model has no subgraph"):
        read_tflite(b.build())
    b = TfliteBuilder()
    x = b.input("x", [2])
    b.subgraphs[0].tensors[x].shape = None  # no shape: a scalar, as LiteRT allocates it
    b.op("UNPACK", [x], [-1])
    sg = read_tflite(b.build()).subgraphs[0]
    assert sg.tensors[0].shape == () and sg.operators[0].outputs == (-1,)


def test_a_tensor_naming_buffer_1_of_a_model_with_only_buffer_0():
    b = TfliteBuilder()
    x = b.input("x", [1])
    b.subgraphs[0].tensors[x].buffer = 1
    with pytest.raises(FormatError, match="tensor 0 'x' names buffer 1, but the model has 1 "
                                          "buffers"):
        read_tflite(b.build())


# Model fields (vtable slots of the TFLite schema): operator_codes 6, subgraphs 8,
# description 10, buffers 12; SubGraph: inputs 6, operators 10, name 12.
_MODEL_SLOTS = {"codes": 6, "subgraphs": 8, "description": 10, "buffers": 12}
_SUBGRAPH_SLOTS = {"inputs": 6, "operators": 10, "name": 12}


def _field_at(table, slot: int) -> int:
    """The byte position of a table's field (an offset, relative to where it is stored)."""
    relative = table._tab.Offset(slot)
    assert relative != 0, f"field {slot} is not written"
    return table._tab.Pos + relative


def _element_at(table, slot: int, i: int) -> int:
    """The byte position of element i of a table's vector of tables."""
    return table._tab.Vector(table._tab.Offset(slot)) + 4 * i


def _corrupt_at(data: bytes, position: int) -> str:
    """Point the offset stored at `position` far past the end; return the error's message."""
    broken = bytearray(data)
    broken[position:position + 4] = (0x7FFF0000).to_bytes(4, "little")
    with pytest.raises(FormatError) as raised:
        read_tflite(bytes(broken))
    return str(raised.value)


def _locations(data: bytes) -> dict[str, int]:
    from ai_edge_litert import schema_py_generated as schema

    model = schema.Model.GetRootAs(data, 0)
    sg = model.Subgraphs(0)
    return {
        "the buffer table": _field_at(model, _MODEL_SLOTS["buffers"]),
        "buffer 1": _element_at(model, _MODEL_SLOTS["buffers"], 1),
        "operator code 1": _element_at(model, _MODEL_SLOTS["codes"], 1),
        "the subgraph table": _field_at(model, _MODEL_SLOTS["subgraphs"]),
        "the model description": _field_at(model, _MODEL_SLOTS["description"]),
        "subgraph 0,": _field_at(sg, _SUBGRAPH_SLOTS["name"]),
        "subgraph 0, its input and output lists": _field_at(sg, _SUBGRAPH_SLOTS["inputs"]),
        "subgraph 0, operator 1": _element_at(sg, _SUBGRAPH_SLOTS["operators"], 1),
    }


@pytest.mark.parametrize("where", ["the buffer table", "buffer 1", "operator code 1",
                                   "the subgraph table", "the model description", "subgraph 0,",
                                   "subgraph 0, its input and output lists",
                                   "subgraph 0, operator 1"])
def test_a_corrupt_offset_names_the_record_it_was_reading(where):
    """One offset in a well-formed file pointed past its end: the error names the table or
    record whose read failed (the flatbuffer reader only knows the byte)."""
    data = _model().build()
    message = _corrupt_at(data, _locations(data)[where])
    read = message.split(" while reading ")[-1].split(";")[0]
    # "subgraph 0," stands for the subgraph's own fields: the name is read first.
    assert read == ("subgraph 0" if where == "subgraph 0," else where), message
    assert "past the end of the file" in message or "outside the file" in message, message
