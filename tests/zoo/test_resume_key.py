"""--resume reuses a stored result only when the run would give it again: every manifest field
and run option changed in turn, each either changing the key, or named as one that does not
change a result; the run's limits judged against the limits a timeout or out-of-memory result
was made under."""
from __future__ import annotations

import dataclasses
import json

import pytest

from converter.zoo.store import KEYED, NOT_KEYED, ResultStore, result_key

from .conftest import ROOT, run_cli

SPEC = {"id": "a", "path": "/m/a.onnx", "sha256": "a" * 64, "format": "onnx",
        "source": None, "inputShapes": {"x": [1, 3]}, "dims": {"batch": 1},
        "constInputs": {"flag": 1}, "tolerances": {"ulp": 4}, "seed": 0,
        "expect": "verified", "notes": "first"}
# One changed value per manifest field.
CHANGED = {
    "path": "/m/b.onnx", "sha256": "b" * 64, "format": "tflite",
    "source": {"package": "p", "version": "1.0", "path": "m.onnx", "sha256": "c" * 64},
    "inputShapes": {"x": [2, 3]}, "dims": {"batch": 2}, "constInputs": {"flag": 0},
    "tolerances": {"ulp": 8}, "seed": 1,
    "id": "b", "expect": "error", "notes": "second",
}


def _key(spec=SPEC, targets=(), runtimes=("ort",), content="f" * 64, version="1.0.0",
         compression=None, compute="float32"):
    return result_key(content, version, dict(spec), list(targets), list(runtimes), compression,
                      compute=compute)


# zoo --weights: the scheme, the accuracy bounds and the samples each change a result.
FLOAT16 = {"weights": "float16", "accuracy": None, "samples": 16}


def test_every_manifest_field_is_either_keyed_or_named_as_not_changing_a_result():
    schema = json.loads((ROOT / "schemas" / "zoo-manifest.schema.json").read_text())
    fields = set(schema["$defs"]["model"]["properties"])
    assert set(KEYED) | set(NOT_KEYED) == fields and not set(KEYED) & set(NOT_KEYED)
    assert set(CHANGED) == fields  # the sweep below covers every one


@pytest.mark.parametrize("field", sorted(CHANGED))
def test_changing_one_field_changes_the_key_exactly_when_it_changes_a_result(field):
    changed = _key({**SPEC, field: CHANGED[field]})
    if field in KEYED:
        assert changed != _key(), f"{field} changes a result but not the key"
    else:
        assert changed == _key(), f"{field} does not change a result but changes the key"


@pytest.mark.parametrize("what, key", [
    ("targets", lambda: _key(targets=["coreml"])),
    ("target order", lambda: _key(targets=["coreml", "portable"])
     != _key(targets=["portable", "coreml"]) and _key(targets=["coreml", "portable"])),
    ("runtimes", lambda: _key(runtimes=["ort", "chromium"])),
    ("content", lambda: _key(content="e" * 64)),
    ("converter version", lambda: _key(version="1.0.1")),
    ("weights", lambda: _key(compression=FLOAT16)),
    ("weights scheme", lambda: _key(compression={**FLOAT16, "weights": "int8"})
     != _key(compression=FLOAT16) and _key(compression={**FLOAT16, "weights": "int8"})),
    ("accuracy bounds", lambda: _key(compression={**FLOAT16, "accuracy": "cosine>=0.99"})
     != _key(compression=FLOAT16) and _key(compression={**FLOAT16, "accuracy": "top1>=1"})),
    ("samples", lambda: _key(compression={**FLOAT16, "samples": 64})
     != _key(compression=FLOAT16) and _key(compression={**FLOAT16, "samples": 64})),
    ("compute", lambda: _key(compute="float16")),
    ("compute with weights", lambda: _key(compression=FLOAT16, compute="float16")
     != _key(compression=FLOAT16) and _key(compression=FLOAT16, compute="float16")),
])
def test_run_options_and_content_change_the_key(what, key):
    assert key() and key() != _key(), what


def test_every_option_a_weights_run_adds_is_in_the_key():
    """ZooOptions.compression is what the jobs are given; every field of it is keyed."""
    from converter.zoo.runner import ZooOptions

    options = ZooOptions(weights="float16", accuracy="cosine>=0.99", samples=8)
    assert set(options.compression()) == set(FLOAT16)
    assert ZooOptions().compression() == {}  # a float run: the keys it had before


# One changed value per option of a run (ZooOptions), from a --weights float16 run's.
CHANGED_OPTIONS = {
    "jobs": 4, "timeout": 30.0, "memory": 1024, "targets": ["coreml"],
    "runtimes": ["ort", "chromium"], "executor": "ray", "ray_address": "10.0.0.1:6379",
    "weights": "int8", "accuracy": "cosine>=0.9", "samples": 4, "compute": "float16",
    "hook": "tests.zoo.faults:inject",
}


def test_every_run_option_is_either_keyed_or_named_as_not_changing_a_result():
    from converter.zoo.runner import NOT_KEYED_OPTIONS, ZooOptions

    assert set(CHANGED_OPTIONS) == {f.name for f in dataclasses.fields(ZooOptions)}
    assert set(NOT_KEYED_OPTIONS) < set(CHANGED_OPTIONS)


@pytest.mark.parametrize("field", sorted(CHANGED_OPTIONS))
def test_changing_one_run_option_changes_the_key_exactly_when_it_changes_a_result(field):
    from converter.zoo.runner import NOT_KEYED_OPTIONS, ZooOptions

    base = ZooOptions(weights="float16")
    changed = dataclasses.replace(base, **{field: CHANGED_OPTIONS[field]})
    assert getattr(changed, field) != getattr(base, field)
    same = changed.key("f" * 64, SPEC) == base.key("f" * 64, SPEC)
    assert same is (field in NOT_KEYED_OPTIONS), field
    # and a job is given what is keyed: the compute type reaches the job as it reaches the key
    if field == "compute":
        assert changed.job_options()["compute"] == "float16" and "compute" not in \
            base.job_options()


def _store(tmp_path, result, limits):
    store = ResultStore(tmp_path / "r.jsonl", resume=False)
    store.append("k", result, limits)
    return ResultStore(tmp_path / "r.jsonl", resume=True)  # as a --resume run reads it back


@pytest.mark.parametrize("timeout, reused", [(30, True), (60, True), (61, False), (600, False)])
def test_a_timeout_is_run_again_only_under_a_longer_timeout(tmp_path, timeout, reused):
    store = _store(tmp_path, {"status": "timeout"}, {"timeout": 60, "memory": 4096})
    assert (store.reusable("k", timeout, 4096) is not None) is reused


@pytest.mark.parametrize("memory, reused", [(2048, True), (4096, True), (8192, False),
                                            (None, False)])
def test_out_of_memory_is_run_again_only_under_a_larger_limit(tmp_path, memory, reused):
    oom = {"status": "crash", "error": {"kind": "out-of-memory"}}
    store = _store(tmp_path, oom, {"timeout": 60, "memory": 4096})
    assert (store.reusable("k", 60, memory) is not None) is reused


def test_out_of_memory_without_a_limit_is_reused_under_any_limit(tmp_path):
    oom = {"status": "crash", "error": {"kind": "out-of-memory"}}
    store = _store(tmp_path, oom, {"timeout": 60, "memory": None})
    assert all(store.reusable("k", 60, m) is not None for m in (1024, 8192, None))


@pytest.mark.parametrize("status", ["verified", "mismatch", "unsupported", "error"])
def test_results_the_limits_did_not_cut_short_are_reused_under_any_limits(tmp_path, status):
    store = _store(tmp_path, {"status": status}, {"timeout": 5, "memory": 256})
    assert store.reusable("k", 600, None) == {"status": status}


def test_a_record_without_limits_does_not_reuse_a_timeout(tmp_path):
    """Lines written before limits were recorded: a timeout then proves nothing."""
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps({"key": "k", "result": {"status": "timeout"}}) + "\n")
    assert ResultStore(path, resume=True).reusable("k", 1, 4096) is None


def test_resume_checks_a_changed_hash_instead_of_reusing_the_pass(synthetic):
    """End to end: the manifest's sha256 of a local model corrected to a wrong value after a
    passing run; --resume must run it again and report the mismatch, not reuse the pass."""
    manifest = synthetic(["add"])
    results = manifest.parent / "results.jsonl"
    first = run_cli(manifest, "--results", results, "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(manifest.read_text())
    doc["models"][0]["sha256"] = "0" * 64
    manifest.write_text(json.dumps(doc))
    second = run_cli(manifest, "--resume", "--results", results, "--json")
    report = json.loads(second.stdout)
    assert report["summary"]["resumed"] == []
    [model] = report["models"]
    assert model["status"] == "error" and second.returncode == 1, model


# -- a run on devices: each cell (model x device) keyed by its device ---------------------------

DEVICE = {"name": "alpha", "userAgent": "Mozilla/5.0 Chrome/153.0", "platform": "Linux",
          "deviceTypes": ["cpu"]}
CHANGED_DEVICE = {"name": "beta", "userAgent": "Mozilla/5.0 Chrome/154.0",
                  "platform": "Android", "deviceTypes": ["cpu", "gpu"]}


def _listed() -> dict:
    """A device as the server lists it (registry.Device.to_json), every field there."""
    from converter.devices.registry import Device

    return Device("alpha", DEVICE["userAgent"], "Linux", {"cpu": {}}, {"npu": "no NPU"},
                  None, targets={"cpu": "/cache/alpha-cpu.json"}).to_json()


def test_every_field_the_server_lists_of_a_device_is_either_keyed_or_named():
    from converter.zoo.store import DEVICE_KEYED, DEVICE_NOT_KEYED

    assert set(DEVICE_KEYED) | set(DEVICE_NOT_KEYED) == set(_listed())
    assert not set(DEVICE_KEYED) & set(DEVICE_NOT_KEYED)
    assert set(CHANGED_DEVICE) == set(DEVICE_KEYED)  # the sweep below covers every one


def _cell_key(device=DEVICE, runtime="device:alpha"):
    from converter.zoo.cells import device_identity

    return _key(runtimes=[runtime], spec=SPEC) if device is None else result_key(
        "f" * 64, "1.0.0", dict(SPEC), [], [runtime], device=device_identity(device))


@pytest.mark.parametrize("field", sorted(CHANGED_DEVICE))
def test_each_device_field_changes_a_cells_key(field):
    assert _cell_key({**DEVICE, field: CHANGED_DEVICE[field]}) != _cell_key()


@pytest.mark.parametrize("field, value", [("browser", "Chrome 999"),
                                          ("targets", {"cpu": "/elsewhere.json"}),
                                          ("refused", {"gpu": "other words"})])
def test_what_the_server_lists_beside_the_identity_keeps_a_cells_key(field, value):
    from converter.zoo.cells import device_identity

    listed = _listed()
    key = result_key("f" * 64, "1.0.0", dict(SPEC), [], ["device:alpha"],
                     device=device_identity(listed))
    assert key == result_key("f" * 64, "1.0.0", dict(SPEC), [], ["device:alpha"],
                             device=device_identity({**listed, field: value}))


def test_a_cells_key_is_its_runtimes_and_devices_not_the_runs():
    """The same model on alpha in a run over alpha and beta, or over alpha alone: one key;
    on beta, or on alpha without a device identity (a plain model key): another."""
    assert _cell_key() == _cell_key()
    assert _cell_key() != _cell_key(runtime="device:beta")
    assert _cell_key() != _cell_key(device=None)
    assert _cell_key() != _key(runtimes=["device:alpha", "device:beta"])
