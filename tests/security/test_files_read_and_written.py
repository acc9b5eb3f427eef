"""Files near a model are not the model, and no command overwrites what it reads (issues 26.2,
26.3, 27.2, 26.7): each hostile layout is built in tmp, and the source bytes are checked to be
unchanged after the command refused it."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import converter
from converter.errors import ConverterError, FormatError
from converter.formats import load_graph

from .onnx_cases import CANARY, cli, external, model, one_error_line, vi, write

WEIGHTS = np.arange(28, dtype=np.float32) / 7  # the model's real weights


def with_external(folder: Path, location: str, *, data: bytes | None = None, length=None,
                  name: str = "model.onnx") -> Path:
    """`folder/name`: y = x + w, w float32[28] kept in external data at `location` (written
    there with `data`, default the real weights, unless data is b"")."""
    w = external(numpy_helper.from_array(np.zeros(28, np.float32), "w"), location, "0", length)
    m = model([helper.make_node("Add", ["x", "w"], ["y"])], [vi("x", shape=[28])],
              [vi("y", shape=[28])], [w])
    if data != b"":
        (folder / location).write_bytes(WEIGHTS.tobytes() if data is None else data)
    return write(m, folder, name)


def no_canary_under(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            assert CANARY not in path.read_bytes(), path


# -- 26.2: files near the model are not the model -----------------------------------------------
@pytest.mark.parametrize("how", ["named", "linked", "in-hidden-folder"])
def test_external_data_never_reads_a_hidden_file(tmp_path, how):
    """A model saved in a home folder whose external data names .ssh/id_rsa (directly, through
    a symlink inside the folder, or as a file in a hidden folder) is refused."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_bytes(CANARY)
    location = {"named": ".ssh/id_rsa", "linked": "weights.bin",
                "in-hidden-folder": ".ssh/id_rsa"}[how]
    if how == "linked":
        (home / "weights.bin").symlink_to(Path(".ssh") / "id_rsa")
    if how == "in-hidden-folder":
        location = "./.ssh/id_rsa"
    source = with_external(home, location, data=b"")
    out = tmp_path / "out"
    out.mkdir()
    line = one_error_line(cli("convert", source, "-o", out / "m.webnn"))
    assert "hidden file" in line and "initializer 'w'" in line, line
    assert not any(out.iterdir())
    with pytest.raises(FormatError, match="hidden"):
        converter.load(source)
    assert (home / ".ssh" / "id_rsa").read_bytes() == CANARY


def test_a_hard_linked_external_data_file_is_refused(tmp_path):
    secret = tmp_path / "secret" / "key"
    secret.parent.mkdir()
    secret.write_bytes(CANARY)
    folder = tmp_path / "model"
    folder.mkdir()
    os.link(secret, folder / "w.bin")  # inside the folder by every path test
    source = with_external(folder, "w.bin", data=b"")
    out = tmp_path / "out"
    out.mkdir()
    line = one_error_line(cli("convert", source, "-o", out / "m.webnn"))
    assert "external data file 'w.bin' has 2 hard links" in line, line
    assert not any(out.iterdir())


def test_a_hard_linked_weights_file_beside_a_graph_is_refused(tmp_path):
    folder = tmp_path / "g"
    folder.mkdir()
    converter.convert(with_external(tmp_path, "w.bin"), folder / "t.webnn")
    os.link(folder / "t.weights", tmp_path / "elsewhere.weights")
    with pytest.raises(FormatError, match="weights file has 2 hard links"):
        load_graph(folder / "t.webnn")


def test_external_data_reads_exactly_what_its_shape_takes(tmp_path):
    """Without a length the tensor takes its shape's bytes from the offset, never the rest of
    the file; a length other than that is refused."""
    folder = tmp_path / "m"
    folder.mkdir()
    source = with_external(folder, "w.bin", data=WEIGHTS.tobytes() + CANARY)
    graph = converter.load(source)
    (weight,) = [o.constant.numpy() for o in graph.operands() if o.constant is not None]
    np.testing.assert_array_equal(weight.reshape(-1), WEIGHTS)
    (tmp_path / "out").mkdir()
    converter.convert(source, tmp_path / "out" / "m.webnn")
    no_canary_under(tmp_path / "out")  # the trailing bytes are in no output
    (folder / "w.bin").write_bytes(WEIGHTS.tobytes() + CANARY)
    longer = with_external(folder, "w.bin", data=b"", length=str(112 + len(CANARY)),
                           name="longer.onnx")
    with pytest.raises(FormatError, match=r"external data length 224 does not match its "
                                          r"shape, which takes 112 bytes"):
        converter.load(longer)


# -- 26.3: never overwrite what you read --------------------------------------------------------
@pytest.mark.parametrize("output, location", [
    ("model.webnn", "model.weights"), ("model.webnn", "model.manifest.json"),
    ("model.json", "model.weights"), ("model.js", "model.weights"),
    ("model.js", "model.html"), ("model.js", "model.manifest.json"),
    ("data.onnx", "data.onnx")])
@pytest.mark.parametrize("verify", [False, True])
def test_no_output_replaces_the_models_external_data(tmp_path, output, location, verify):
    source = with_external(tmp_path, location)
    before = (tmp_path / location).read_bytes()
    listing = sorted(p.name for p in tmp_path.iterdir())
    args = ["convert", source, "-o", tmp_path / output] + (["--verify"] if verify else [])
    line = one_error_line(cli(*args))
    assert f"error: {tmp_path / location}: writing it would replace {tmp_path / location} " \
           f"(external data of {source})" in line, line
    assert line.endswith("write the output under another name or in another folder"), line
    assert (tmp_path / location).read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == listing  # nothing left behind
    # The API refuses the same way.
    with pytest.raises(ConverterError, match="writing it would replace"):
        converter.convert(source, tmp_path / output)
    assert (tmp_path / location).read_bytes() == before


def test_run_refuses_an_output_file_that_is_an_input(tmp_path):
    """run --input x=out/y.npy --output-dir out, whose output y would be written to out/y.npy."""
    source = with_external(tmp_path, "w.bin")
    out = tmp_path / "out"
    out.mkdir()
    x = np.linspace(-1, 1, 28, dtype=np.float32)
    np.save(out / "y.npy", x)
    before = (out / "y.npy").read_bytes()
    line = one_error_line(cli("run", source, "--input", f"x={out / 'y.npy'}",
                              "--output-dir", out))
    assert f"{out / 'y.npy'}: writing it would replace {out / 'y.npy'} (the value of input " \
           f"'x')" in line, line
    assert (out / "y.npy").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["y.npy"]
    # Another folder works and gives x + w.
    r = cli("run", source, "--input", f"x={out / 'y.npy'}", "--output-dir", tmp_path / "o2")
    assert r.exit_code == 0, r.output
    np.testing.assert_allclose(np.load(tmp_path / "o2" / "y.npy"), x + WEIGHTS, rtol=1e-6)


# -- 27.2: each output owns its sidecars ----------------------------------------------------------
@pytest.mark.parametrize("first, second", [("t.webnn", "t.json"), ("t.json", "t.webnn"),
                                           ("t.webnn", "t.js"), ("t.js", "t.webnn")])
@pytest.mark.parametrize("verify", [False, True])
def test_outputs_named_alike_do_not_share_sidecars(tmp_path, first, second, verify):
    one = with_external(tmp_path, "one.bin", name="one.onnx")
    (tmp_path / "two.bin").write_bytes((WEIGHTS + 100).tobytes())
    two = with_external(tmp_path, "two.bin", name="two.onnx", data=b"")
    out = tmp_path / "out"
    out.mkdir()
    assert cli("convert", one, "-o", out / first).exit_code == 0
    weights = (out / "t.weights").read_bytes()
    manifest = (out / "t.manifest.json").read_bytes()
    args = ["convert", two, "-o", out / second] + (["--verify"] if verify else [])
    line = one_error_line(cli(*args))
    assert f"t.manifest.json and t.weights belong to {first}, which uses the same NAME; " \
           f"writing {second}'s other weights" in line
    assert not (out / second).exists()
    assert (out / "t.weights").read_bytes() == weights
    assert (out / "t.manifest.json").read_bytes() == manifest
    if first.endswith((".webnn", ".json")):
        graph = load_graph(out / first)
        (w,) = [o.constant.numpy() for o in graph.operands() if o.constant is not None]
        np.testing.assert_array_equal(w.reshape(-1), WEIGHTS)
    # Converting again to the same output replaces one's own files.
    r = cli("convert", two, "-o", out / first)
    assert r.exit_code == 0, r.output
    assert (out / "t.weights").read_bytes() != weights


# -- 26.7: run's output files ---------------------------------------------------------------------
def test_run_gives_outputs_whose_names_clash_their_own_files(tmp_path):
    names = ["y/1", "y:1", "Y_1", "y_1_2"]
    nodes = [helper.make_node("Add", ["x", f"c{i}"], [n]) for i, n in enumerate(names)]
    inits = [numpy_helper.from_array(np.full(4, i + 1, np.float32), f"c{i}")
             for i in range(len(names))]
    source = write(model(nodes, [vi("x", shape=[4])], [vi(n, shape=[4]) for n in names],
                         inits), tmp_path)
    x = np.zeros(4, np.float32)
    np.save(tmp_path / "x.npy", x)
    r = cli("run", source, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "o")
    assert r.exit_code == 0, r.output
    files = {"y/1": "y_1.npy", "y:1": "y_1_2.npy", "Y_1": "Y_1_3.npy", "y_1_2": "y_1_2_2.npy"}
    for i, name in enumerate(names):
        assert f"{name}: float32[4] -> {tmp_path / 'o' / files[name]}" in r.output
        np.testing.assert_array_equal(np.load(tmp_path / "o" / files[name]), x + i + 1)
    assert len(list((tmp_path / "o").iterdir())) == 4


def test_output_file_names_are_plain_and_distinct(tmp_path):
    from cli.commands.run_graph import output_files

    files = output_files([".hidden", "", "..", "a b", "é", "A B"], tmp_path)
    assert [p.name for p in files.values()] == ["_hidden.npy", "output.npy", "_..npy",
                                                "a_b.npy", "_.npy", "A_B_2.npy"]


def test_outputs_named_alike_may_share_the_same_weights(tmp_path):
    """The same model as t.webnn and t.json: the sidecars the second writes are the bytes the
    first uses, so nothing changes for it, and both load the model's weights."""
    one = with_external(tmp_path, "one.bin", name="one.onnx")
    out = tmp_path / "out"
    out.mkdir()
    assert cli("convert", one, "-o", out / "t.webnn").exit_code == 0
    r = cli("convert", one, "-o", out / "t.json")
    assert r.exit_code == 0, r.output
    for name in ("t.webnn", "t.json"):
        (w,) = [o.constant.numpy() for o in load_graph(out / name).operands()
                if o.constant is not None]
        np.testing.assert_array_equal(w.reshape(-1), WEIGHTS)
