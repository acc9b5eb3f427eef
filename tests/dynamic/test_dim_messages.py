"""Issue 27 point 5: the dims a user gives are checked against the model, and a mistake is said
as the user's, in one line: a dim past a position table names the dim, the table and the
limit; an unknown dim name lists the model's dims; a wrong-rank --input-shape names the rank."""
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto as TP
from onnx import helper as H
from onnx import numpy_helper as nh

import converter
from cli.main import main
from converter.errors import ConverterError

FIXTURES = Path(__file__).parents[2] / "models" / "dynamic"
TABLES = {"bert_legacy": ("model.embeddings.position_embeddings.weight",
                          "/model/embeddings/position_embeddings/Gather"),
          "gpt2_dynamo": ("model.wpe.weight", "node_embedding_1")}


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


@pytest.mark.parametrize("model", sorted(TABLES))
def test_the_readmes_range_names_the_position_table_it_passes(model, tmp_path):
    """--dim sequence=8..128 converts at 8, 68 and 128; 68 passes the 64 position rows."""
    table, node = TABLES[model]
    r = run("convert", FIXTURES / f"{model}.onnx", "-o", tmp_path / "m.webnn", "--dim",
            "batch=1", "--dim", "sequence=8..128")
    assert r.exit_code == 2
    assert r.output.strip() == (
        f"error: {FIXTURES / model}.onnx: --dim sequence=68 exceeds the 64 rows of position "
        f"table '{table}' (node '{node}'), whose indices count along sequence; use a range "
        f"within 1..64 (the model converts at sequence=64)")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(ConverterError, match=r"sequence=65 exceeds the 64 rows"):
        converter.load(FIXTURES / f"{model}.onnx", dims={"batch": 1, "sequence": 65})
    graph = converter.load(FIXTURES / f"{model}.onnx", dims={"batch": 1, "sequence": 64})
    assert graph.inputs["input_ids"].shape == (1, 64)


def _positions_and_reshape(path: Path, rows: int, reshaped: int) -> Path:
    """ids [1, sequence] -> Gather(table, ids) (token values: no limit from the dims), plus
    Gather(positions table of `rows` rows, Range(0, sequence)), summed, then Reshape to
    [1, reshaped, 4] (-1: any sequence), which converts at no sequence but `reshaped`."""
    table = nh.from_array(np.ones((rows, 4), np.float32), "pos_table")
    words = nh.from_array(np.ones((10, 4), np.float32), "word_table")
    consts = [nh.from_array(np.array(v, np.int64), n) for n, v in
              [("zero", 0), ("one", 1), ("axis1", [1]), ("shape", [1, reshaped, 4])]]
    nodes = [H.make_node("Shape", ["ids"], ["s"]),
             H.make_node("Gather", ["s", "one"], ["n"]),
             H.make_node("Range", ["zero", "n", "one"], ["positions"]),
             H.make_node("Gather", ["pos_table", "positions"], ["p"], name="position_lookup"),
             H.make_node("Gather", ["word_table", "ids"], ["w"], name="word_lookup"),
             H.make_node("Add", ["w", "p"], ["e"]),
             H.make_node("Reshape", ["e", "shape"], ["y"])]
    graph = H.make_graph(nodes, "positions",
                         [H.make_tensor_value_info("ids", TP.INT64, [1, "sequence"])],
                         [H.make_tensor_value_info("y", TP.FLOAT, None)],
                         [table, words, *consts])
    model = H.make_model(graph, opset_imports=[H.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def test_a_small_built_model_names_its_table_and_the_limit(tmp_path):
    path = _positions_and_reshape(tmp_path / "m.onnx", rows=16, reshaped=-1)
    with pytest.raises(ConverterError) as info:
        converter.load(path, dims={"sequence": 20})
    assert "--dim sequence=20 exceeds the 16 rows of position table 'pos_table' (node " \
           "'position_lookup')" in info.value.line()


def test_a_failure_the_table_does_not_explain_keeps_its_own_message(tmp_path):
    """sequence=40 passes the 32 position rows, but the model fails at 32 too (its Reshape
    takes 20 positions only): no limit is claimed, the Gather's own error stays."""
    path = _positions_and_reshape(tmp_path / "m.onnx", rows=32, reshaped=20)
    with pytest.raises(ConverterError) as info:
        converter.load(path, dims={"sequence": 40})
    assert "exceeds" not in info.value.line()
    assert "Gather 'position_lookup': index 39 is out of range" in info.value.line()
    with pytest.raises(ConverterError, match="Reshape"):  # at the table's rows: the Reshape
        converter.load(path, dims={"sequence": 32})
    converter.load(path, dims={"sequence": 20})  # and the model converts where it can


DIMS = {"bert_legacy": "batch, sequence", "gpt2_dynamo": "batch, sequence",
        "llama_legacy": "batch, sequence", "cnn_legacy": "batch, height, width",
        "vit_legacy": "batch"}  # vit's outputs name dims of their own: not the user's to set


@pytest.mark.parametrize("model", sorted(DIMS))
@pytest.mark.parametrize("command", ["convert", "verify", "inspect"])
def test_an_unknown_dim_name_is_refused_naming_the_models_dims(model, command, tmp_path):
    out = ["-o", tmp_path / "m.webnn"] if command == "convert" else []
    r = run(command, FIXTURES / f"{model}.onnx", *out, "--dim", "batch=1", "--dim",
            "sequnce=8")
    assert r.exit_code == 2
    assert r.output.strip().splitlines() == [
        f"error: {FIXTURES / model}.onnx: --dim sequnce: the model has no dim named "
        f"'sequnce'; its dims are: {DIMS[model]}; give a dim the model's inputs name "
        f"(`webnn-convert inspect` lists them)"]


def test_a_dim_given_to_a_model_without_symbolic_dims_is_refused():
    tiny = FIXTURES.parent / "tiny_cnn.onnx"
    with pytest.raises(ConverterError, match="no dim named 'batch'; it has no symbolic dims"):
        converter.load(tiny, dims={"batch": 1})


RANKS = [("cnn_legacy", "image", "1,3,8", "4", "batch, 3, height, width"),
         ("bert_legacy", "input_ids", "1,8,1", "2", "batch, sequence"),
         ("vit_legacy", "pixel_values", "3,32,32", "4", "batch, 3, 32, 32")]


@pytest.mark.parametrize("model,name,given,rank,shape", RANKS)
def test_a_wrong_rank_input_shape_is_the_users_mistake(model, name, given, rank, shape):
    r = run("inspect", FIXTURES / f"{model}.onnx", "--input-shape", f"{name}={given}")
    assert r.exit_code == 2
    assert r.output.strip() == (
        f"error: {FIXTURES / model}.onnx: --input-shape {name}={given}: {name} has rank {rank}"
        f" in the model ([{shape}]); give {rank} sizes for '{name}'")
