"""`zoo --weights float16`: each model's graph also compressed and measured against the float
source, per runtime: the sizes and the accuracy figures in the results JSON, the Markdown and
the HTML reports; a model whose compressed graph misses --accuracy is a mismatch (kind
`accuracy`), named with the metric."""
from __future__ import annotations

import json
import shutil

from converter.verification.accuracy import DEFAULT_SAMPLES
from converter.zoo.runner import ZooOptions

from .conftest import ROOT, run_cli

TINY = ROOT / "models" / "tiny_cnn.onnx"


def _manifest(tmp_path):
    shutil.copy(TINY, tmp_path / "tiny_cnn.onnx")
    manifest = tmp_path / "zoo.json"
    manifest.write_text(json.dumps({"format": "webnn-converter-zoo", "version": 1, "models": [
        {"id": "tiny", "path": "tiny_cnn.onnx"}]}), encoding="utf-8")
    return manifest


def _zoo(tmp_path, *args):
    reports = [tmp_path / f"r.{s}" for s in ("json", "md", "html")]
    r = run_cli(_manifest(tmp_path), "--weights", "float16", "--samples", 4, *args,
                "--results", tmp_path / "r.jsonl",
                *(x for p in reports for x in ("--report", p)))
    return r, *(p.read_text(encoding="utf-8") if p.exists() else None for p in reports)


def test_sizes_and_accuracy_in_every_report(tmp_path):
    r, doc, md, html = _zoo(tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(doc)
    assert doc["options"]["weights"] == "float16" and doc["options"]["samples"] == 4
    (variant,) = doc["models"][0]["targets"]
    assert variant["weights"] == {"scheme": "float16", "before": 3592, "after": 1848,
                                  "ratio": 1848 / 3592}
    acc = variant["accuracy"]["ort"]
    assert acc["passed"] and acc["samples"] == 4 and acc["bounds"] == {"cosine": "cosine>=0.9999"}
    (out,) = acc["outputs"]
    assert out["top1"] == 1.0 and out["cosine"] >= 0.9999
    cell = f"pass: weights 0.514x, cosine {out['cosine']:.6f}, top-1 1.0000"
    assert "| accuracy on ort |" in md and f"`{cell}`" in md
    assert "weights `float16`, accuracy over 4 samples, bounds the scheme default" in md
    assert "<th data-sort>accuracy on ort</th>" in html and f"<td>{cell}</td>" in html


def test_a_missed_bound_makes_the_model_a_mismatch_naming_the_metric(tmp_path):
    r, doc, md, html = _zoo(tmp_path, "--accuracy", "cosine>=1.0000001")
    assert r.returncode == 1, r.stderr
    model = json.loads(doc)["models"][0]
    assert model["status"] == "mismatch"
    error = model["targets"][0]["error"]
    assert error["kind"] == "accuracy"
    assert error["message"].startswith("ort accuracy of float16 weights: cosine of "
                                       "probabilities 0.99999"), error
    value = json.loads(doc)["models"][0]["targets"][0]["accuracy"]["ort"]["checks"][0]["value"]
    cell = (f"fail: cosine of probabilities {value:.10g} against cosine&gt;=1.0000001; weights "
            f"0.514x, cosine 1.000000, top-1 1.0000")
    assert f"`{cell}`" in md and cell in html  # the metric named, HTML-escaped in both
    assert "bounds `cosine&gt;=1.0000001`" in md


def test_accuracy_options_need_weights(tmp_path):
    r = run_cli(_manifest(tmp_path), "--samples", 4)
    assert r.returncode == 2 and "--weights" in r.stderr.strip().splitlines()[-1], r.stderr


def test_the_runs_default_samples_are_the_reports():
    assert ZooOptions().samples == DEFAULT_SAMPLES
