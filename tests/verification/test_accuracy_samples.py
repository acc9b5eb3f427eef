"""`verify --weights S --inputs DIR` where DIR holds one subfolder per sample (each of NAME.npy
files): the accuracy is measured over every sample given, and a hostile folder or file is one
error line, exit 2. On real photos (models/real_images.npz) a light classifier's choice moves
from crop to crop, and int8 keeps it (issue 29's acceptance, measured where it means something).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import cli.inputs
from cli.main import main
from converter.testing.light_models import PHOTO_CLASSES, light_classifier
from converter.testing.real_images import imagenet_inputs

TINY = Path(__file__).parents[2] / "models" / "tiny_cnn.onnx"


def _run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def _samples(folder: Path, arrays, name: str = "image") -> Path:
    for i, value in enumerate(arrays):
        (folder / f"s{i:03d}").mkdir(parents=True)
        np.save(folder / f"s{i:03d}" / f"{name}.npy", value)
    return folder


def _tiny_samples(folder: Path, count: int = 3) -> Path:
    rng = np.random.default_rng(5)
    return _samples(folder, [rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
                             for _ in range(count)])


def _one_error_line(r, *says: str) -> str:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output
    line = r.output.strip().splitlines()[-1]
    for text in says:
        assert text in line, line
    return line


def test_each_sample_subfolder_is_one_sample_of_the_accuracy_report(tmp_path):
    folder = _tiny_samples(tmp_path / "in", 3)
    r = _run("verify", TINY, "--weights", "int8", "--inputs", folder, "--json")
    assert r.exit_code in (0, 1), r.output
    acc = json.loads(r.stdout)["accuracy"]
    assert (acc["samples"], acc["inputs"]) == (3, "3 samples given")
    assert acc["outputs"][0]["rows"] == 3


def _mixed(folder: Path) -> None:
    np.save(folder / "image.npy", np.zeros((1, 3, 32, 32), np.float32))


def _unlike(folder: Path) -> None:
    np.save(folder / "s001" / "other.npy", np.zeros((1, 3, 32, 32), np.float32))


def _wrong_shape(folder: Path) -> None:
    np.save(folder / "s002" / "image.npy", np.zeros((1, 3, 16, 16), np.float32))


def _wrong_dtype(folder: Path) -> None:
    np.save(folder / "s002" / "image.npy", np.zeros((1, 3, 32, 32), np.float64))


def _empty(folder: Path) -> None:
    (folder / "s002" / "image.npy").unlink()


def _truncated(folder: Path) -> None:
    path = folder / "s001" / "image.npy"
    path.write_bytes(path.read_bytes()[:200])


def _pickled(folder: Path) -> None:
    np.save(folder / "s001" / "image.npy", np.array([{"a": 1}], dtype=object),
            allow_pickle=True)


@pytest.mark.parametrize("spoil, says", [
    (_mixed, ("both NAME.npy files and sample subfolders",)),
    (_unlike, ("sample 's001' gives the inputs image, other",)),
    (_wrong_shape, ("s002", "input 'image' is given as float32[1, 3, 16, 16]",
                    "float32[1, 3, 32, 32]")),
    (_wrong_dtype, ("s002", "float64[1, 3, 32, 32]")),
    (_empty, ("s002", "no NAME.npy files")),
    (_truncated, ("s001", "the file holds")),
    (_pickled, ("s001", "Python objects")),
])
def test_a_hostile_samples_folder_is_one_line_exit_2(tmp_path, spoil, says):
    folder = _tiny_samples(tmp_path / "in", 3)
    spoil(folder)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    r = _run("verify", TINY, "--weights", "int8", "--inputs", folder)
    _one_error_line(r, *says)
    assert sorted(p.name for p in tmp_path.rglob("*")) == before  # nothing left behind


def test_more_sample_subfolders_than_the_limit_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(cli.inputs, "MAX_SAMPLES", 2)
    r = _run("verify", TINY, "--weights", "int8", "--inputs", _tiny_samples(tmp_path / "in"))
    _one_error_line(r, "3 sample subfolders, more than 2")


def test_samples_add_up_against_the_total_memory_limit(tmp_path):
    folder = _tiny_samples(tmp_path / "in", 3)  # 12 KiB each: the third passes 30,000 bytes
    r = _run("verify", TINY, "--weights", "int8", "--inputs", folder,
             "--max-total-bytes", 30000)
    _one_error_line(r, "s002", "input 'image'")


@pytest.mark.parametrize("args, says", [
    ((), ("holds sample subfolders", "--weights")),  # a float verify runs one sample
    (("--weights", "int8", "--samples", 4), ("--samples counts seeded inputs",)),
])
def test_a_samples_folder_where_it_cannot_apply_is_refused(tmp_path, args, says):
    r = _run("verify", TINY, *args, "--inputs", _tiny_samples(tmp_path / "in"))
    _one_error_line(r, *says)


def test_convert_verify_measures_the_samples_too(tmp_path):
    out = tmp_path / "tiny.webnn"
    r = _run("convert", TINY, "-o", out, "--verify", "--weights", "int8", "--inputs",
             _tiny_samples(tmp_path / "in", 2))
    assert r.exit_code in (0, 1), r.output
    assert "2 samples given" in r.output


def test_int8_keeps_a_light_classifiers_choice_over_64_real_crops(tmp_path):
    """Issue 29's acceptance, on inputs that move the choice: the light squeezenet (its head
    fitted to tell the four photos apart) over 64 real crops, on ONNX Runtime."""
    source = light_classifier("squeezenet", tmp_path)
    folder = _samples(tmp_path / "crops", imagenet_inputs(64), name="data_0")
    r = _run("verify", source, "--weights", "int8", "--inputs", folder, "--json")
    assert r.exit_code == 0, r.output
    acc = json.loads(r.stdout)["accuracy"]
    (out,) = acc["outputs"]
    assert acc["weightsBytes"]["ratio"] <= 0.27
    assert out["rows"] == 64 and out["top1"] >= 0.99
    assert out["sourceClasses"] == len(PHOTO_CLASSES)  # the crops move the source's choice
