"""`zoo --compute float16`: every model of the committed sample zoo converted to compute in
float16 and verified on ONNX Runtime as `verify --compute float16` verifies it (the same
figures, judged by the float16 bounds), the compute type in each result of every report and in
the resume key, so a float32 result is never taken for a float16 run."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from converter.schemas import validate

from .conftest import ROOT, run_cli

SAMPLE = ROOT / "models" / "sample-zoo.json"


def _zoo(folder, *args):
    """One run of the sample zoo, its results file in `folder`, the three reports read."""
    reports = [folder / f"r.{suffix}" for suffix in ("json", "md", "html")]
    proc = run_cli(SAMPLE, "--results", folder / "results.jsonl", *args,
                   *(x for p in reports for x in ("--report", p)))
    assert proc.returncode == 0, proc.stderr
    doc, md, html = (p.read_text(encoding="utf-8") for p in reports)
    return json.loads(doc), md, html


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The sample zoo in float32, then with --compute float16 and --resume on the same results
    file, then that again: {name: (report, markdown, html)}."""
    folder = tmp_path_factory.mktemp("compute")
    return {"float32": _zoo(folder),
            "float16": _zoo(folder, "--compute", "float16", "--resume"),
            "float16 again": _zoo(folder, "--compute", "float16", "--resume")}


def _verify(entry: dict) -> dict:
    """`webnn-convert verify MODEL --compute float16 --json` on one manifest entry."""
    dims = [x for name, value in (entry.get("dims") or {}).items()
            for x in ("--dim", f"{name}={value}")]
    proc = subprocess.run([sys.executable, "-m", "cli.main", "verify",
                           str(SAMPLE.parent / entry["path"]), *dims, "--compute", "float16",
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_each_model_gets_the_verdict_verify_compute_float16_gives(runs):
    doc = runs["float16"][0]
    validate(doc, "zoo-report", "float16 run")
    entries = {e["id"]: e for e in json.loads(SAMPLE.read_text())["models"]}
    assert [m["id"] for m in doc["models"]] == list(entries)
    for model in doc["models"]:
        (variant,) = model["targets"]
        zoo = variant["parity"]["ort"]["outputs"]
        verify = _verify(entries[model["id"]])
        assert model["status"] == "verified" and verify["verdict"] == "pass"
        assert [(o["name"], o["passed"], o["maxAbs"], o["maxUlp"]) for o in zoo] == \
            [(o["name"], o["passed"], o["maxAbs"], o["maxUlp"]) for o in verify["outputs"]]


def test_float16_compute_is_what_was_verified(runs):
    """The float16 run's outputs differ from the float32 run's by float16's rounding: far
    past what float32 math gives, so the graph verified did compute in float16."""
    worst = {name: {m["id"]: max(o["maxUlp"]
                                 for o in m["targets"][0]["parity"]["ort"]["outputs"])
                    for m in runs[name][0]["models"]} for name in ("float32", "float16")}
    for model_id, ulp in worst["float16"].items():
        assert ulp > 100 * max(worst["float32"][model_id], 1), (model_id, worst)


def test_a_float32_result_is_not_reused_for_a_float16_run(runs):
    float32, float16, again = (runs[name][0] for name in ("float32", "float16", "float16 again"))
    assert float16["summary"]["resumed"] == []  # the float32 results were in the file
    keys = {name: {m["id"]: m["key"] for m in doc["models"]}
            for name, doc in (("float32", float32), ("float16", float16))}
    assert all(keys["float32"][i] != keys["float16"][i] for i in keys["float32"])
    # ...and the float16 results are reused by a float16 run: the key is stable
    assert again["summary"]["resumed"] == [m["id"] for m in again["models"]]
    assert {m["id"]: m["key"] for m in again["models"]} == keys["float16"]


def test_every_report_shows_each_results_compute_type(runs):
    for name, compute in (("float32", "float32"), ("float16", "float16")):
        doc, md, html = runs[name]
        assert doc["options"]["compute"] == compute
        assert [m["compute"] for m in doc["models"]] == [compute] * len(doc["models"])
        assert f"; compute `{compute}`." in md and f"&middot; compute\n{compute}" in html
    _, md, html = runs["float16"]
    for model_id in ("tiny_cnn", "bert"):
        assert f"| `{model_id}` | verified | verified (met) | `webnn`: verified; compute " \
               f"`float16` |" in md
    assert html.count("webnn: <span") == 2 and html.count("<br>compute float16</td>") == 2
    _, md, html = runs["float32"]
    assert "; compute `float32`" not in md.split("| model |")[1]  # rows say nothing extra
    assert "<br>compute" not in html


def test_a_target_without_float16_is_refused_before_any_model_runs(tmp_path):
    doc = json.loads((ROOT / "converter" / "targets" / "data" / "chromium-litert.json")
                     .read_text())
    for op, limits in doc.items():
        if op != "webnn-converter" and isinstance(limits, dict):
            for entry in [limits, *limits.values()]:
                if isinstance(entry, dict) and "dataTypes" in entry:
                    entry["dataTypes"] = [t for t in entry["dataTypes"] if t != "float16"]
    doc["webnn-converter"]["name"] = "no-half"
    target = tmp_path / "no-half.json"
    target.write_text(json.dumps(doc))
    results = tmp_path / "results.jsonl"
    proc = run_cli(SAMPLE, "--compute", "float16", "--target", target, "--results", results)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode == 2 and "target 'no-half' takes no float16 operand" in last, \
        proc.stderr
    assert "Traceback" not in proc.stderr and not results.exists()


def test_with_weights_the_compressed_graph_computes_in_float16_as_verify_measures_it(tmp_path):
    """zoo --weights float16 --compute float16 measures what `verify --weights float16
    --compute float16` measures: the compressed graph computing in float16 (its weights
    after, the same figures and the note that they include float16 compute's cost), while
    the float graph's parity is the float32 one."""
    shutil.copy(ROOT / "models" / "tiny_cnn.onnx", tmp_path / "tiny_cnn.onnx")
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"models": [{"id": "tiny", "path": "tiny_cnn.onnx"}]}))
    args = ("--weights", "float16", "--compute", "float16", "--samples", "4")
    proc = run_cli(manifest, *args, "--results", tmp_path / "r.jsonl", "--json")
    assert proc.returncode == 0, proc.stderr
    (model,) = json.loads(proc.stdout)["models"]
    (variant,) = model["targets"]
    zoo = variant["accuracy"]["ort"]
    verify = subprocess.run([sys.executable, "-m", "cli.main", "verify",
                             str(tmp_path / "tiny_cnn.onnx"), *args, "--json"], cwd=ROOT,
                            capture_output=True, text=True, timeout=600)
    assert verify.returncode == 0, verify.stderr
    expected = json.loads(verify.stdout)["accuracy"]
    assert model["compute"] == "float16"
    assert zoo["weightsBytes"] == expected["weightsBytes"] == {"before": 3592, "after": 1796,
                                                               "ratio": 0.5}
    assert zoo["outputs"] == expected["outputs"] and zoo["notes"] == expected["notes"]
    assert any("float16 compute's cost" in note for note in zoo["notes"])
    # the float graph is verified in float32: its worst ULP is float32's, not float16's
    assert max(o["maxUlp"] for o in variant["parity"]["ort"]["outputs"]) < 100
