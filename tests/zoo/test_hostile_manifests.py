"""A zoo manifest is data, never a command (issue 26 points 1 and 6): a package source that is
not a plain project name and version never reaches pip, no folder is made outside the cache,
a local model outside the manifest's folder is refused, and a manifest nested 100,000 deep or
too big is one line, not an internal error. Every refusal: exit 2, one line, before any job."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from .conftest import ROOT, cli_command, make_synthetic

SHA = "71f431c4e9321ec6fbeb158d02ed240459a7dcc98673fa79a4f439ce42efaf10"


def _evil_sdist(folder):
    """A source distribution whose build code, run by anyone, writes the file MARKER."""
    sdist = folder / "evil"
    sdist.mkdir()
    marker = folder / "MARKER"
    (sdist / "setup.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('build code ran')\n"
        "from setuptools import setup\nsetup(name='evil', version='1.0')\n")
    (sdist / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n')
    return sdist, marker


def _pip_spy(folder):
    """A `pip` package first on the path of the command's processes: `python -m pip`, run by
    the command or by any job, writes PIP-RAN (with its arguments) and fails."""
    spy = folder / "spy"
    (spy / "pip").mkdir(parents=True)
    (spy / "pip" / "__init__.py").write_text("")
    (spy / "pip" / "__main__.py").write_text(
        "import pathlib, sys\n"
        f"pathlib.Path({str(folder / 'PIP-RAN')!r}).write_text(repr(sys.argv))\n"
        "sys.exit(1)\n")
    return spy, folder / "PIP-RAN"


def _run(folder, manifest, *args, spy=None):
    cache = folder / "cache"
    path = [str(spy)] if spy else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path + [str(ROOT)]),
           "WEBNN_CONVERTER_CACHE": str(cache)}
    return subprocess.run(cli_command(manifest, "--results", folder / "r.jsonl", *args),
                          cwd=folder, env=env, capture_output=True, text=True, timeout=600)


def _manifest(folder, model, name="zoo.json"):
    path = folder / name
    path.write_text(json.dumps({"models": [model]}))
    return path


def _refused(proc, *words):
    """Exit 2 with one line on stderr that holds every word, and no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for word in words:
        assert word in lines[0], lines[0]


def _every_file_under(folder):
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_direct_reference_to_an_evil_sdist_never_reaches_pip(tmp_path):
    """`package: "evil @ file:///.../evil#"` would make pip build (run) the sdist's own code:
    it is refused when the manifest is read, before any job, with the real pip installed."""
    sdist, marker = _evil_sdist(tmp_path)
    manifest = _manifest(tmp_path, {"id": "evil", "format": "onnx", "source": {
        "package": f"evil @ file://{sdist}#", "version": "1.0", "path": "evil/m.onnx",
        "sha256": SHA}})
    proc = _run(tmp_path, manifest)
    _refused(proc, "source.package", "evil @ file://")
    assert not marker.exists(), "the sdist's build code ran"
    assert not (tmp_path / "r.jsonl").exists()  # refused before the run began
    cache = tmp_path / "cache"
    assert not (cache / "wheels").exists() and not (cache / "models").exists()


HOSTILE_SOURCES = {
    "direct reference, https": {"package": "evil @ https://example.invalid/evil-1.0.tar.gz#"},
    "a pip option as the name": {"package": "--index-url=http://127.0.0.1:9/simple"},
    "a requirements file as the name": {"package": "-r/etc/passwd"},
    "an absolute name": {"package": "/tmp/evil"},
    "a name with a marker": {"package": "evil; python_version > '0'"},
    "a version that climbs": {"version": "../../../../tmp/evil"},
    "a version with an operator": {"version": "1.0,<2"},
    "a version with a URL": {"version": "1.0 @ file:///tmp/evil"},
    "a version with a newline": {"version": "1.31.1\n"},
    "an absolute wheel path": {"path": "/etc/passwd"},
    "a wheel path that climbs": {"path": "onnxruntime/../../x.onnx"},
    "a hidden wheel path": {"path": "onnxruntime/.x.onnx"},
    "a short sha256": {"sha256": SHA[:63]},
    "a sha256 with a newline": {"sha256": SHA + "\n"},
    "an uppercase sha256": {"sha256": SHA.upper()},
}


@pytest.mark.parametrize("change", HOSTILE_SOURCES.values(), ids=HOSTILE_SOURCES.keys())
def test_a_source_that_is_not_plain_data_is_refused_before_pip(tmp_path, change):
    spy, ran = _pip_spy(tmp_path)
    source = {"package": "onnxruntime", "version": "1.31.1",
              "path": "onnxruntime/datasets/mul_1.onnx", "sha256": SHA, **change}
    manifest = _manifest(tmp_path, {"id": "m", "format": "onnx", "source": source})
    proc = _run(tmp_path, manifest, spy=spy)
    (member,) = change
    _refused(proc, f"source.{member}", "zoo.json")
    assert not ran.exists(), f"pip ran: {ran.read_text()}"
    # nothing made anywhere: no cache folder, no wheel folder, no results
    assert _every_file_under(tmp_path) == sorted(
        ["spy", "spy/pip", "spy/pip/__init__.py", "spy/pip/__main__.py", "zoo.json"])


def test_the_checks_hold_for_every_fetch_not_only_the_manifest(tmp_path, monkeypatch):
    """converter.zoo.fetch checks its entry itself: code that builds a source by hand (as the
    tests do) cannot get a direct reference to pip either."""
    from converter.errors import ConverterError
    from converter.zoo.fetch import fetch_model

    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(tmp_path / "cache"))
    sdist, marker = _evil_sdist(tmp_path)
    with pytest.raises(ConverterError, match="source.package"):
        fetch_model({"package": f"evil @ file://{sdist}#", "version": "1.0",
                     "path": "evil/m.onnx", "sha256": SHA})
    assert not marker.exists() and not (tmp_path / "cache" / "wheels").exists()


def _local(tmp_path):
    """A manifest folder with one real model in it, and a model outside it."""
    folder = tmp_path / "zoo"
    paths = make_synthetic.write_models(folder)
    outside = tmp_path / "outside.onnx"
    outside.write_bytes(paths["add"].read_bytes())
    return folder, outside


LOCAL_PATHS = {
    "absolute": lambda folder, outside: str(outside),
    "climbing": lambda folder, outside: "../outside.onnx",
    "climbing inside": lambda folder, outside: "sub/../../outside.onnx",
    "hidden": lambda folder, outside: ".add.onnx",
    "a link out of the folder": lambda folder, outside: "link.onnx",
}


@pytest.mark.parametrize("where", LOCAL_PATHS.values(), ids=LOCAL_PATHS.keys())
def test_a_local_model_outside_the_manifests_folder_is_refused(tmp_path, where):
    folder, outside = _local(tmp_path)
    (folder / "link.onnx").symlink_to(outside)
    (folder / ".add.onnx").write_bytes((folder / "add.onnx").read_bytes())
    relative = where(folder, outside)
    manifest = _manifest(folder, {"id": "m", "path": relative})
    proc = _run(folder, manifest)
    _refused(proc, "zoo.json")
    assert not (folder / "r.jsonl").exists()


def test_a_local_model_breaking_the_model_file_rules_never_passes(tmp_path):
    """Inside the folder but a hard link (a second name of a file that may live anywhere) or
    a FIFO (which would block a reader): each model fails alone, as `model-file`, and the run
    exits 1 even though its entry expects `error`; the FIFO does not hang the run."""
    folder, outside = _local(tmp_path)
    os.link(outside, folder / "hard.onnx")
    os.mkfifo(folder / "fifo.onnx")
    manifest = folder / "zoo.json"
    manifest.write_text(json.dumps({"models": [
        {"id": "add", "path": "add.onnx"},
        {"id": "hard", "path": "hard.onnx", "expect": "error"},
        {"id": "fifo", "path": "fifo.onnx", "expect": "error"},
        {"id": "gone", "path": "gone.onnx", "expect": "error"}]}))
    proc = _run(folder, manifest, "--json", "--timeout", "120")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    by_id = {m["id"]: m for m in doc["models"]}
    assert by_id["add"]["status"] == "verified" and by_id["add"]["meetsExpect"] is True
    for model_id, words in (("hard", "2 hard links"), ("fifo", "FIFO"),
                            ("gone", "does not exist")):
        model = by_id[model_id]
        assert model["error"]["kind"] == "model-file" and words in model["error"]["message"]
        assert model["meetsExpect"] is False and model["sha256"] is None
    assert doc["summary"]["missed"] == ["hard", "fifo", "gone"]
    assert proc.stderr.strip().startswith("missed: hard (")


def _deep_json(depth):
    return '{"models": ' + "[" * depth + "]" * depth + "}"


DEEP = {
    "json arrays": ("zoo.json", _deep_json(100_000)),
    "json objects": ("zoo.json", '{"models": [{"id": "a", "path": "a.onnx", "dims": '
                     + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "}]}"),
    "toml arrays": ("zoo.toml", "models = " + "[" * 100_000 + "]" * 100_000 + "\n"),
    "toml inline tables": ("zoo.toml", "x = " + "{a = " * 100_000 + "1" + "}" * 100_000),
    "toml dotted key": ("zoo.toml", ".".join(["a"] * 100_000) + " = 1\n"),
    "toml table header": ("zoo.toml", "[" + ".".join(['"a"'] * 100_000) + "]\n"),
}


@pytest.mark.parametrize("name, text", DEEP.values(), ids=DEEP.keys())
def test_a_manifest_nested_100000_deep_is_one_line(tmp_path, name, text):
    manifest = tmp_path / name
    manifest.write_text(text)
    proc = _run(tmp_path, manifest)
    _refused(proc, name)
    assert "internal error" not in proc.stderr and not (tmp_path / "r.jsonl").exists()


def test_a_manifest_too_big_is_refused_before_it_is_read(tmp_path):
    manifest = tmp_path / "zoo.json"
    with open(manifest, "wb") as f:  # sparse: 64 GiB that take no disk
        f.truncate(64 << 30)
    proc = _run(tmp_path, manifest)
    _refused(proc, "zoo.json", "68,719,476,736 bytes")


def test_a_manifest_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    manifest = tmp_path / "zoo.json"
    os.mkfifo(manifest)
    proc = _run(tmp_path, manifest)
    _refused(proc, "zoo.json", "FIFO")
