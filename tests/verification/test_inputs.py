"""verify on the user's inputs (--input, --inputs, inputs=) and seeded inputs that respect what
input names say: masks all ones, position ids a range, lengths within the sequence."""
import json
import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

import converter
from cli.main import main
from converter import GraphBuilder
from converter.verification.core import make_inputs

ROWS = 8  # the position table's rows: the sum of an all-ones mask of length 8, minus one, fits


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _decoder_like(path: Path) -> Path:
    """out = (tokens[input_ids] + positions[position_ids]) * mask + positions[sum(mask) - 1]:
    the last term reads the row the mask's length names, so a mask that is not all ones (a
    random one sums past 8) makes ONNX Runtime itself fail, as a real decoder's seqlens do."""
    tokens = numpy_helper.from_array(
        np.random.default_rng(1).random((50, 4)).astype(np.float32), "tokens")
    positions = numpy_helper.from_array(
        np.random.default_rng(2).random((ROWS, 4)).astype(np.float32), "positions")
    one = numpy_helper.from_array(np.array(1, np.int64), "one")
    axes = numpy_helper.from_array(np.array([-1], np.int64), "axes")
    nodes = [
        helper.make_node("Gather", ["tokens", "input_ids"], ["tok"]),
        helper.make_node("Gather", ["positions", "position_ids"], ["pos"]),
        helper.make_node("Add", ["tok", "pos"], ["emb"]),
        helper.make_node("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["maskf", "axes"], ["mask3"]),
        helper.make_node("Mul", ["emb", "mask3"], ["masked"]),
        helper.make_node("ReduceSum", ["attention_mask"], ["length"], keepdims=0),
        helper.make_node("Sub", ["length", "one"], ["last"]),
        helper.make_node("Gather", ["positions", "last"], ["last_row"]),
        helper.make_node("Add", ["masked", "last_row"], ["out"]),
    ]
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, [1, ROWS])
            for n in ("input_ids", "attention_mask", "position_ids")]
    graph = helper.make_graph(nodes, "decoder_like", ints,
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT,
                                                             [1, ROWS, 4])],
                              [tokens, positions, one, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


def test_seeded_inputs_follow_their_names(tmp_path):
    model = _decoder_like(tmp_path / "d.onnx")
    graph = converter.load(model)
    feeds, made = make_inputs(graph, 0, {"input_ids": 50, "position_ids": ROWS})
    assert feeds["attention_mask"].tolist() == [[1] * ROWS]
    assert feeds["position_ids"].tolist() == [list(range(ROWS))]
    assert feeds["input_ids"].min() >= 0 and feeds["input_ids"].max() < 50
    assert len(set(feeds["input_ids"].ravel().tolist())) > 1  # still a random draw
    assert made["attention_mask"]["made"] == "all ones (a mask)"
    assert made["position_ids"]["made"] == "0 .. 7 along the last axis (position ids)"
    assert made["input_ids"]["made"] == "seeded within the embedding's 50 rows"


def test_verify_runs_a_model_that_random_masks_break(tmp_path):
    model = _decoder_like(tmp_path / "d.onnx")
    r = run("verify", model, "--json")
    assert r.exit_code == 0, r.output
    report = json.loads(r.stdout)
    assert report["passed"] and report["inputs"]["attention_mask"]["range"] == [1, 1]
    assert report["inputs"]["position_ids"]["made"].startswith("0 .. 7")
    table = run("verify", model)
    assert "inputs: input_ids seeded within the embedding's 50 rows; attention_mask all ones" \
        in " ".join(table.stdout.split())


def test_lengths_stay_within_the_sequence():
    b = GraphBuilder("gqa_inputs")
    mask = b.input("attention_mask", "int32", [2, 6])
    seqlens = b.input("seqlens_k", "int32", [2])
    total = b.input("total_sequence_length", "int32", [1])
    g = b.build({"m": b.relu(b.cast(mask, "float32")), "s": b.relu(b.cast(seqlens, "float32")),
                 "t": b.relu(b.cast(total, "float32"))})
    feeds, made = make_inputs(g, 3)
    assert feeds["seqlens_k"].tolist() == [5, 5]  # total length - 1, as GroupQueryAttention reads it
    assert feeds["total_sequence_length"].tolist() == [6]
    assert feeds["attention_mask"].dtype == np.int32 and feeds["attention_mask"].sum() == 12
    assert "last axis of 'attention_mask'" in made["seqlens_k"]["made"]


def test_other_inputs_keep_their_seeded_values():
    """The name rules replace values after drawing: a float input draws what it drew before."""
    b = GraphBuilder("g")
    x = b.input("x", "float32", [3])
    mask = b.input("mask", "float32", [3])
    g = b.build({"y": b.add(x, mask)})
    feeds, _ = make_inputs(g, 7)
    rng = np.random.default_rng(7)
    assert np.array_equal(feeds["x"], rng.random((3,), dtype=np.float64).astype(np.float32))
    assert feeds["mask"].tolist() == [1.0, 1.0, 1.0]


def test_verify_reads_the_users_inputs(tmp_path):
    model = _decoder_like(tmp_path / "d.onnx")
    ids = tmp_path / "ids.npy"
    np.save(ids, np.arange(ROWS, dtype=np.int64)[None] * 3)
    r = run("verify", model, "--input", f"input_ids={ids}", "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["inputs"]["input_ids"]["made"] == "given"
    # The values reach the source runtime: a token past the vocabulary fails there.
    np.save(ids, np.full((1, ROWS), 1000, np.int64))
    r = run("verify", model, "--input", f"input_ids={ids}")
    assert r.exit_code == 2 and "ONNX Runtime" in r.stderr and "Traceback" not in r.output


def test_verify_reads_a_folder_of_inputs(tmp_path):
    model = _decoder_like(tmp_path / "d.onnx")
    folder = tmp_path / "inputs"
    folder.mkdir()
    np.save(folder / "input_ids.npy", np.zeros((1, ROWS), np.int64))
    # Short masks (sum 4) are valid data: the folder's mask replaces the all-ones one.
    np.save(folder / "attention_mask.npy", np.array([[1, 1, 1, 1, 0, 0, 0, 0]], np.int64))
    np.save(tmp_path / "outside.npy", np.full((1, ROWS), 99, np.int64))
    os.symlink(tmp_path / "outside.npy", folder / "position_ids.npy")  # not read: a symlink
    r = run("verify", model, "--inputs", folder, "--json")
    assert r.exit_code == 0, r.output
    inputs = json.loads(r.stdout)["inputs"]
    assert inputs["input_ids"]["made"] == inputs["attention_mask"]["made"] == "given"
    assert inputs["position_ids"]["made"].startswith("0 .. 7")
    # A file whose name is no input is an error, naming the inputs there are.
    np.save(folder / "nope.npy", np.zeros(1))
    r = run("verify", model, "--inputs", folder)
    assert r.exit_code == 2 and "nope" in r.stderr and "input_ids" in r.stderr
    r = run("verify", model, "--inputs", tmp_path / "missing")
    assert r.exit_code == 2 and r.stderr.startswith("error: ")


def test_verify_accepts_a_bool_feed_for_a_bool_source_input(tmp_path):
    graph = helper.make_graph([helper.make_node("Not", ["b"], ["y"])], "not",
                              [helper.make_tensor_value_info("b", TensorProto.BOOL, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.BOOL, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "not.onnx")
    feed = np.array([True, False, False, True])
    report = converter.verify(tmp_path / "not.onnx", inputs={"b": feed})
    assert report.passed and report.inputs["b"]["made"] == "given"
    graph = converter.load(tmp_path / "not.onnx")
    assert graph.inputs["b"].data_type == "uint8"
    out = converter.run(graph, {"b": feed})
    assert out["y"].tolist() == [0, 1, 1, 0]
    np.save(tmp_path / "b.npy", feed)
    r = run("verify", tmp_path / "not.onnx", "--input", f"b={tmp_path / 'b.npy'}")
    assert r.exit_code == 0, r.output
