"""Issue 27: symlinked models. pip and npm caches link model files, and the Hugging Face cache
keeps every revision as links (snapshots/REV/NAME -> ../../blobs/HASH). The hostile-file rules
(a model's files are regular files inside its folder) refused both with no way out. Now:
--follow-symlinks reads the model file named on the command line where its link leads (the
folder rules then hold in that folder), and links from a Hugging Face snapshot into the same
cache's blobs/ are followed as the hub's readers do. Every other link stays refused."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx import TensorProto, helper, numpy_helper

from cli.main import main
from converter.testing.tflite_fixtures import Const, Input, Output, one_op

W = np.arange(6, dtype=np.float32).reshape(2, 3)
HASH_A, HASH_B = "a" * 40, "b" * 64  # a git blob's sha1, an LFS object's sha256


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _tflite(path: Path) -> Path:
    """y = a + 1, a float32[2, 3]."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(one_op("ADD", [Input("a", [2, 3]), Const(np.ones(3, np.float32))],
                            [Output("y", [2, 3])]))
    return path


def _onnx_with_external_data(folder: Path) -> tuple[Path, Path]:
    """y = x + W, W in the external file model.onnx_data: (model, data) in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [numpy_helper.from_array(W, "w")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, folder / "model.onnx", save_as_external_data=True,
              all_tensors_to_one_file=True, location="model.onnx_data", size_threshold=0)
    return folder / "model.onnx", folder / "model.onnx_data"


def _hub_cache(root: Path, rev_folder: str = "rev1") -> Path:
    """The layout huggingface_hub writes: blobs/HASH files, snapshots/REV/NAME links to
    them. Returns the snapshot's model.onnx."""
    model, data = _onnx_with_external_data(root / "download")
    (root / "blobs").mkdir(parents=True)
    os.replace(model, root / "blobs" / HASH_A)
    os.replace(data, root / "blobs" / HASH_B)
    (root / "download").rmdir()
    snapshot = root / "snapshots" / rev_folder
    snapshot.mkdir(parents=True)
    up = "../" * len(Path("snapshots", rev_folder).parts)
    (snapshot / "model.onnx").symlink_to(f"{up}blobs/{HASH_A}")
    (snapshot / "model.onnx_data").symlink_to(f"{up}blobs/{HASH_B}")
    return snapshot / "model.onnx"


def _ran(r, out: Path) -> np.ndarray:
    assert r.exit_code == 0, r.output
    return np.load(out / "y.npy")


def _refused(r, *words) -> str:
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.output
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _given(tmp_path, shape=(2, 3)) -> tuple[list, np.ndarray]:
    x = np.full(shape, 0.5, np.float32)
    np.save(tmp_path / "x.npy", x)
    return ["--input", f"a={tmp_path / 'x.npy'}"], x


# -- a link the user names: --follow-symlinks -----------------------------------------------------
def test_a_symlinked_tflite_is_refused_saying_what_to_do(tmp_path):
    target = _tflite(tmp_path / "cache" / "pkg" / "model.tflite")
    (tmp_path / "use").mkdir()
    (tmp_path / "use" / "model.tflite").symlink_to(target)
    line = _refused(run("inspect", tmp_path / "use" / "model.tflite"),
                    "is a link to", str(target), "--follow-symlinks")
    assert "Traceback" not in line


@pytest.mark.parametrize("command", ["run", "inspect", "validate", "check", "verify"])
def test_follow_symlinks_reads_a_linked_tflite_where_it_points(tmp_path, command):
    target = _tflite(tmp_path / "cache" / "pkg" / "model.tflite")
    (tmp_path / "use").mkdir()
    link = tmp_path / "use" / "model.tflite"
    link.symlink_to(target)
    if command == "run":
        given, x = _given(tmp_path)
        r = run("run", link, "--follow-symlinks", *given, "--output-dir", tmp_path / "out")
        np.testing.assert_array_equal(_ran(r, tmp_path / "out"), x + 1)
        return
    r = run(command, link, "--follow-symlinks", *(["-t", "spec"] if command == "check" else []))
    assert r.exit_code == 0, r.output


def test_follow_symlinks_reads_a_graphs_files_beside_its_target(tmp_path):
    store, use = tmp_path / "store", tmp_path / "use"
    store.mkdir()
    use.mkdir()
    assert run("convert", _tflite(tmp_path / "m.tflite"), "-o", store / "g.webnn").exit_code == 0
    (use / "g.webnn").symlink_to(store / "g.webnn")
    _refused(run("inspect", use / "g.webnn"), "is a link to", "--follow-symlinks")
    given, x = _given(tmp_path)
    r = run("run", use / "g.webnn", "--follow-symlinks", *given, "--output-dir", tmp_path / "o")
    np.testing.assert_array_equal(_ran(r, tmp_path / "o"), x + 1)  # the weights: ones


def test_follow_symlinks_does_not_follow_the_links_a_model_names(tmp_path):
    # the named file is followed; its external data must then lie in its target's folder
    model, data = _onnx_with_external_data(tmp_path / "store")
    secret = tmp_path / "elsewhere" / "secret"
    secret.parent.mkdir()
    os.replace(data, secret)
    data.symlink_to(secret)
    (tmp_path / "use").mkdir()
    (tmp_path / "use" / "model.onnx").symlink_to(model)
    _refused(run("inspect", tmp_path / "use" / "model.onnx", "--follow-symlinks"),
             "leaves the model's folder", "Hugging Face")


# -- the Hugging Face cache: links into its blobs/ ------------------------------------------------
@pytest.mark.parametrize("rev_folder", ["rev1", "rev1/onnx"])
def test_a_hub_cache_snapshot_is_read_through_its_blob_links(tmp_path, rev_folder):
    model = _hub_cache(tmp_path / "models--org--name", rev_folder)
    x = np.full((2, 3), 0.25, np.float32)
    np.save(tmp_path / "x.npy", x)
    r = run("run", model, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "o")
    np.testing.assert_array_equal(_ran(r, tmp_path / "o"), x + W)  # W read from the blob
    r = run("verify", model)
    assert r.exit_code == 0, r.output


def test_a_tflite_in_a_hub_cache_is_read_through_its_blob_link(tmp_path):
    root = tmp_path / "models--org--name"
    _tflite(root / "blobs" / HASH_B)
    (root / "snapshots" / "rev1").mkdir(parents=True)
    (root / "snapshots" / "rev1" / "model.tflite").symlink_to(f"../../blobs/{HASH_B}")
    given, x = _given(tmp_path)
    r = run("run", root / "snapshots" / "rev1" / "model.tflite", *given, "--output-dir",
            tmp_path / "o")
    np.testing.assert_array_equal(_ran(r, tmp_path / "o"), x + 1)


def _relink(link: Path, target: Path) -> None:
    link.unlink()
    link.symlink_to(target)


def test_a_blobs_folder_that_is_a_link_is_not_the_cache(tmp_path):
    model = _hub_cache(tmp_path / "models--org--name")
    root = model.parents[2]
    os.replace(root / "blobs", tmp_path / "elsewhere")  # blobs/ now links out of the cache
    (root / "blobs").symlink_to(tmp_path / "elsewhere")
    _refused(run("inspect", model), "leaves the model's folder", "Hugging Face cache")


def test_a_blob_link_to_a_file_not_named_by_a_hash_is_refused(tmp_path):
    model = _hub_cache(tmp_path / "models--org--name")
    blobs = model.parents[2] / "blobs"
    os.replace(blobs / HASH_B, blobs / "weights")
    _relink(model.parent / "model.onnx_data", Path("../../blobs/weights"))
    _refused(run("inspect", model), "leaves the model's folder", "Hugging Face cache")


def test_a_link_into_another_caches_blobs_is_refused(tmp_path):
    model = _hub_cache(tmp_path / "models--org--name")
    other = _hub_cache(tmp_path / "models--other--name")
    _relink(model.parent / "model.onnx_data", other.parents[2] / "blobs" / HASH_B)
    _refused(run("inspect", model), "leaves the model's folder", "Hugging Face cache")


def test_a_link_to_blobs_from_outside_a_snapshot_is_refused(tmp_path):
    model = _hub_cache(tmp_path / "models--org--name", "rev1")
    moved = model.parents[2] / "not-snapshots" / "rev1"
    moved.parent.mkdir()
    os.replace(model.parent, moved)
    _refused(run("inspect", moved / "model.onnx"), "leaves the model's folder",
             "Hugging Face cache")
