"""--baseline: a model that changed status, or whose worst error grew past the factor, is a
regression even when it still meets its manifest's `expect`; both values are shown."""
from __future__ import annotations

import json

import pytest

from converter.errors import ConverterError
from converter.zoo.baseline import compare, load_baseline, worst_error

from .conftest import run_cli


def _result(model_id, status, *max_abs):
    outputs = [{"name": f"y{i}", "passed": True, "maxAbs": v, "maxUlp": 0, "cosine": 1.0}
               for i, v in enumerate(max_abs)]
    return {"id": model_id, "status": status,
            "targets": [{"target": "webnn", "parity": {"ort": {"outputs": outputs}}}]}


def test_compare_flags_status_changes_and_error_growth_beyond_the_factor():
    before = {r["id"]: r for r in [_result("a", "verified", 1e-6), _result("b", "verified", 1e-6),
                                   _result("c", "verified", 1e-6), _result("d", "mismatch", 0.5),
                                   _result("e", "verified", 0.0)]}
    now = [_result("a", "verified", 9.9e-6),   # x9.9: within the factor
           _result("b", "verified", 2e-6, 1.1e-5),  # worst output grew x11
           _result("c", "mismatch", 1e-6),     # same error, other status
           _result("d", "verified", 1e-6),     # a change for the better is still a change
           _result("e", "verified", 5e-8),     # 0 -> 5e-8: both under the 1e-7 floor
           _result("new", "verified", 1.0)]    # not in the baseline: no change
    changes = compare(now, before, growth=10.0)
    assert [(c["id"], c["kind"]) for c in changes] == [("b", "error"), ("c", "status"),
                                                       ("d", "status")]
    error_b = changes[0]
    assert error_b["before"] == 1e-6 and error_b["after"] == 1.1e-5
    assert error_b["factor"] == pytest.approx(11.0)
    assert changes[1] == {"id": "c", "kind": "status", "before": "verified", "after": "mismatch"}
    assert changes[2] == {"id": "d", "kind": "status", "before": "mismatch", "after": "verified"}
    assert compare(now, before, growth=12.0)[0]["id"] == "c"


def test_non_finite_errors_count_as_infinite_growth():
    assert worst_error(_result("x", "mismatch", "nan")) == float("inf")
    changes = compare([_result("x", "mismatch", "inf")], {"x": _result("x", "mismatch", 1e-3)})
    assert changes == [{"id": "x", "kind": "error", "before": 1e-3, "after": "inf",
                        "factor": "inf"}]


def test_a_bad_baseline_is_one_clear_error(tmp_path):
    bad = tmp_path / "old.jsonl"
    bad.write_text('{"key": "k"}\n')
    with pytest.raises(ConverterError, match="old.jsonl:1: not a record of a zoo results file"):
        load_baseline(bad)
    with pytest.raises(ConverterError, match="must be above 1"):
        compare([], {}, growth=1.0)


@pytest.mark.parametrize("max_abs", ["\uff11e-9", "1_0", "\u0663", "0", "Infinity", "1e-9"])
def test_a_baseline_error_written_as_other_text_is_refused(tmp_path, max_abs):
    """A run writes only inf, -inf and nan as strings: float() would read '１e-9' (fullwidth)
    or '1_0' as an error the run never measured, moving every growth judged against it."""
    bad = tmp_path / "old.jsonl"
    bad.write_text(json.dumps({"result": _result("a", "verified", max_abs)}) + "\n")
    with pytest.raises(ConverterError, match="old.jsonl:1: not a zoo result: a `maxAbs` string "
                                             "other than inf, -inf, nan"):
        load_baseline(bad)
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"result": _result("a", "verified", "nan", 1e-3)}) + "\n")
    assert worst_error(load_baseline(good).results["a"]) == float("inf")


def test_cli_baseline_names_what_changed(synthetic, tmp_path):
    manifest = synthetic(["add", "conv_relu", "matmul_softmax"])
    results = tmp_path / "results.jsonl"
    first = run_cli(manifest, "--results", results, "--json")
    assert first.returncode == 0, first.stderr
    # the earlier run as it might have been: conv_relu a mismatch; and this run's stored
    # result (what --resume reports) with matmul_softmax's exact output now off by 1e-3
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    baseline = tmp_path / "baseline.jsonl"
    changed = json.loads(json.dumps(lines))
    for line in changed:
        if line["result"]["id"] == "conv_relu":
            line["result"]["status"] = "mismatch"
    baseline.write_text("".join(json.dumps(line) + "\n" for line in changed))
    for line in lines:
        if line["result"]["id"] == "matmul_softmax":
            assert worst_error(line["result"]) == 0.0
            for variant in line["result"]["targets"]:
                for entry in variant["parity"].values():
                    for out in entry["outputs"]:
                        out["maxAbs"] = 1e-3
    results.write_text("".join(json.dumps(line) + "\n" for line in lines))

    second = run_cli(manifest, "--results", results, "--resume", "--baseline", baseline,
                     "--report", tmp_path / "r.md", "--report", tmp_path / "r.json")
    assert second.returncode == 1
    message = second.stderr.strip().splitlines()[-1]
    assert message.startswith("regressed: conv_relu (was mismatch, now verified), "
                              "matmul_softmax (worst error ")
    assert message.endswith("matmul_softmax (worst error 0 -> 0.001, x1e+04)")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["summary"]["regressions"] == ["conv_relu", "matmul_softmax"]
    assert [c["kind"] for c in doc["summary"]["baseline"]["changes"]] == ["status", "error"]
    md = (tmp_path / "r.md").read_text()
    assert "- `conv_relu`: was mismatch, now verified" in md
    # the same run against a copy of its own results: nothing changed (the results file
    # itself cannot be the baseline: the run writes it)
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(results.read_bytes())
    third = run_cli(manifest, "--results", results, "--resume", "--baseline", copy)
    assert third.returncode == 0, third.stderr


def test_each_status_has_one_colour_on_the_page(synthetic, tmp_path):
    """An `unsupported` error kind is drawn in the unsupported grey of the status legend, not
    in the error red (issue 15 point 12)."""
    import re

    from converter.zoo import ZooOptions, build_report, run_zoo
    from converter.zoo.report_html import STATUS_COLOURS, render_html

    run = run_zoo(synthetic(["add", "unsupported", "corrupt"]), ZooOptions(jobs=1),
                  results_path=tmp_path / "r.jsonl")
    doc = build_report(run)
    statuses = {m["id"]: m["status"] for m in doc["models"]}
    assert statuses == {"add": "verified", "unsupported": "unsupported", "corrupt": "error"}
    page = render_html(doc)
    chart = page[page.index('aria-label="error kinds"'):]
    chart = chart[:chart.index("</svg>")]
    fills = dict(re.findall(r'fill="(#[0-9a-f]{6})"><title>([^:]+):', chart)[i][::-1]
                 for i in range(len(re.findall(r'fill="(#[0-9a-f]{6})"><title>', chart))))
    kinds = {m["error"]["kind"]: m["status"] for m in doc["models"] if m.get("error")}
    assert fills and {k: fills[k] for k in kinds} == {k: STATUS_COLOURS[s]
                                                       for k, s in kinds.items()}


@pytest.mark.parametrize("digits, why", [
    (310, "a `maxAbs` beyond a float64's range"), (4000, "a `maxAbs` beyond a float64's range"),
    (5000, "an integer of 5000 digits")])
def test_a_baseline_error_too_long_for_a_float_is_refused_before_any_model_runs(tmp_path,
                                                                                digits, why):
    """A maxAbs written as a long digit run is valid JSON: before, one past float64's range
    ran every model and then stopped compare() with an OverflowError, and one past int()'s
    4300 digits was an internal error (both found by tools/fuzz_numbers.py)."""
    bad = tmp_path / "old.jsonl"
    record = json.dumps({"result": _result("a", "verified", 0.5)})
    bad.write_text(record.replace("0.5", "9" * digits) + "\n")
    with pytest.raises(ConverterError, match=f"old.jsonl:1: (not a zoo result: )?{why}"):
        load_baseline(bad)
    fits = tmp_path / "fits.jsonl"
    fits.write_text(record.replace("0.5", "9" * 308) + "\n")
    assert worst_error(load_baseline(fits).results["a"]) == float("9" * 308)
