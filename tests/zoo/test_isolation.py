"""Each model in its own process: a crash, a hang, running out of memory and a corrupt file
each get their own status while the other models finish and verify."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from converter.zoo import ZooOptions, run_zoo

from .conftest import make_synthetic
from .faults import HOOK


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("iso")
    manifest = make_synthetic.write_manifest(folder)
    options = ZooOptions(jobs=2, timeout=4, memory=2048, hook=HOOK)
    return run_zoo(manifest, options, results_path=folder / "results.jsonl")


def test_every_model_gets_its_own_status(run):
    assert {r["id"]: r["status"] for r in run.results} == make_synthetic.EXPECTED
    assert run.missed() == []


def test_segfault_is_a_crash_by_its_signal(run):
    crash = next(r for r in run.results if r["id"] == "crash")
    assert crash["error"]["kind"] == "signal"
    assert crash["error"]["message"].startswith("killed by SIGSEGV (exit code -11)")


def test_hang_is_killed_at_the_timeout(run):
    hang = next(r for r in run.results if r["id"] == "hang")
    assert hang["error"] == {"kind": "timeout", "message": "still running after 4 s; killed"}
    assert hang["times"]["wall"] >= 4.0  # given its whole time (how much later it was killed
    # depends on the machine's load: no upper bound on a wall time)
    hung = int((Path(run.manifest).parent / "hang.hanging").read_text())
    with pytest.raises(ProcessLookupError):  # killed, not left sleeping its hour
        os.kill(hung, 0)


def test_out_of_memory_and_corrupt_file(run):
    by_id = {r["id"]: r for r in run.results}
    assert by_id["oom"]["error"]["kind"] == "out-of-memory"
    assert by_id["oom"]["ops"] == 1  # imported; drawing its 4 GiB of inputs hit the limit
    assert by_id["corrupt"]["error"]["kind"] == "format"
    assert "not a readable ONNX model" in by_id["corrupt"]["error"]["message"]
    assert by_id["unsupported"]["unsupported"] == [
        "Frobnicate 'Frobnicate_0': op from unknown domain 'org.example.synthetic'"]


def test_the_others_finish_with_parity_numbers(run):
    by_id = {r["id"]: r for r in run.results}
    add = by_id["add"]["targets"][0]
    assert add["target"] == "webnn" and add["status"] == "verified"
    (out,) = add["parity"]["ort"]["outputs"]
    # a + b in float32 on both sides: bit-identical
    assert out["cosine"] == pytest.approx(1.0, abs=1e-12)
    assert {k: v for k, v in out.items() if k != "cosine"} == {
        "name": "y", "passed": True, "maxAbs": 0.0, "maxUlp": 0, "reason": ""}
    conv = by_id["conv_relu"]
    assert conv["ops"] == 2 and conv["transposes"] == 0
    assert conv["opHistogram"] == {"conv2d": 1, "relu": 1}
    assert conv["targets"][0]["parity"]["ort"]["outputs"][0]["maxAbs"] < 1e-5


def test_results_file_has_one_line_per_model(run, tmp_path):
    import json
    from pathlib import Path

    lines = Path(run.manifest).with_name("results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert sorted(r["result"]["id"] for r in records) == sorted(make_synthetic.EXPECTED)
    assert all(r["key"] == r["result"]["key"] for r in records)


def test_a_target_is_checked_per_model(tmp_path):
    manifest = make_synthetic.write_manifest(tmp_path, ["conv_relu"])
    run = run_zoo(manifest, ZooOptions(targets=["coreml", "chromium-litert"]),
                  results_path=tmp_path / "r.jsonl")
    (result,) = run.results
    assert [v["target"] for v in result["targets"]] == ["coreml", "chromium-litert"]
    for variant in result["targets"]:
        assert variant["check"] == {"passed": True, "violations": 0, "reasons": []}
        assert variant["status"] == "verified"
    # chromium-litert prefers NHWC: the layout pass wraps the NCHW conv in transposes
    litert = result["targets"][1]
    assert litert["ops"] >= 2
