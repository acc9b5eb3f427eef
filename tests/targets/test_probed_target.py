"""How a probe's verdicts become a target file (converter/probe/target.py), on verdicts written
out here: what build() refused narrows the browser's own limits, in keys that load_target reads,
so that check refuses exactly the cases build() refused. (The probe itself, in Chromium:
tests/browser/test_probe_in_chromium.py.)"""
from __future__ import annotations

import copy

import pytest

from converter.probe.cases import make_case
from converter.probe.run import Probe, ProbeResult
from converter.probe.target import probed_target, write_target
from converter.targets import load_target
from converter.targets.check import check

BASE = load_target("chromium-litert").limits  # a real opSupportLimits() dump


def _result(op, data_type, built, operand="input", rank=None, **options):
    return ProbeResult(op, data_type, operand, options, listed=True, built=built,
                       computed=True if built else None, rank=rank)


def _target(results, tmp_path):
    probe = Probe("chromium", "Chromium 153", copy.deepcopy(BASE), results, ops=None)
    return load_target(write_target(probed_target(probe), tmp_path / "probed.json"))


def _agrees(target, results):
    for r in results:
        graph = make_case(r.op, r.data_type, rank=r.rank, **r.options).graph
        assert (not check(graph, target)) == r.built, r.name


def test_a_rank_end_build_refuses_narrows_the_range_on_each_operand(tmp_path):
    assert BASE["add"]["a"]["rankRange"] == {"min": 0, "max": 6}
    results = [_result("add", "float32", True, "a", rank=0),
               _result("add", "float32", False, "a", rank=6),
               _result("add", "float32", True, "a", rank=5)]
    target = _target(results, tmp_path)
    for operand in ("a", "b", "output"):
        assert target.operand_limits("add", operand)["rankRange"] == {"min": 0, "max": 5}
    assert any("add: build() takes ranks 0 to 5 where opSupportLimits() lists 0 to 6" in n
               for n in target.notes)
    _agrees(target, results)


def test_no_refusal_leaves_the_limits_as_listed(tmp_path):
    results = [_result("add", "float32", True, "a", rank=0),
               _result("add", "float32", True, "a", rank=6),
               _result("abs", "float32", True)]
    target = _target(results, tmp_path)
    assert target.limits == BASE and target.refused_options == {}
    _agrees(target, results)


def test_a_type_no_case_built_is_refused_and_a_mode_refused_everywhere_is_refused(tmp_path):
    results = [_result("abs", "int32", False), _result("abs", "float32", True),
               *[_result("pad", dt, mode != "edge", mode=mode)
                 for dt in ("float32", "int32") for mode in ("constant", "edge", "reflection")]]
    target = _target(results, tmp_path)
    assert "int32" not in target.operand_limits("abs", "input")["dataTypes"]
    assert target.refused_options == {"pad": {"mode": ["edge"]}}
    _agrees(target, results)


@pytest.mark.parametrize("refused_for", [["float32"], ["float32", "int32"]])
def test_a_mode_refused_for_some_types_only_is_refused_with_a_note(refused_for, tmp_path):
    results = [_result("pad", dt, not (mode == "reflection" and dt in refused_for), mode=mode)
               for dt in ("float32", "int32") for mode in ("constant", "edge", "reflection")]
    target = _target(results, tmp_path)
    assert target.refused_options == {"pad": {"mode": ["reflection"]}}
    partly = [n for n in target.notes if "builds for some data types only" in n]
    assert len(partly) == (len(refused_for) < 2)


# -- the largest constant build() takes (converter/probe/sizes.py) ----------------------------
def _sizes(limit, max_tensor=2**31 - 1):
    """The sizes the search tries against a backend whose build() takes constants of at most
    `limit` bytes (None: any)."""
    from converter.probe.sizes import constant_sizes

    tried = []

    def run(size):
        tried.append(size)
        return limit is None or size <= limit

    constant_sizes(run, max_tensor)
    return tried


def test_a_power_of_two_limit_is_found_exactly_in_a_few_builds():
    tried = _sizes(128 << 20)
    assert tried == [16 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20, (128 << 20) + 4]
    assert sum(size > 128 << 20 for size in tried) == 2  # over the limit: twice, no more


@pytest.mark.parametrize("limit", [100_000_000, 5 << 20, 1000])
def test_another_limit_is_bracketed_from_below_in_a_bounded_number_of_builds(limit):
    from converter.probe.sizes import REFINE

    tried = _sizes(limit)
    took = max(s for s in tried if s <= limit)
    assert took <= limit and min(s for s in tried if s > limit) > took
    assert len(tried) <= 25 + REFINE and max(tried) <= 2 * max(limit, 16 << 20)


def test_no_limit_up_to_the_ceiling_or_the_tensor_limit_tries_no_more():
    from converter.probe.sizes import CEILING

    assert max(_sizes(None)) == CEILING
    assert max(_sizes(None, max_tensor=100 << 20)) == 100 << 20


def _size_result(size, built):
    return ProbeResult("constant", "float32", "constant", {}, listed=True, built=built,
                       computed=True if built else None, constant_bytes=size)


def test_the_largest_constant_built_is_the_targets_limit_and_check_agrees(tmp_path):
    from converter.probe.run import case_of

    results = [_size_result(s, s <= 128 << 20) for s in _sizes(128 << 20)]
    probe = Probe("chromium", "Chromium 153", copy.deepcopy(BASE), results, ops=["constant"])
    doc = probed_target(probe)
    assert doc["webnn-converter"]["maxConstantByteLength"] == 128 << 20
    base = copy.deepcopy(BASE)
    base.pop("webnn-converter", None)
    # a limit below the shipped one: check reads the probed value, not the built-in
    results = [_size_result(s, s <= 40 << 20) for s in _sizes(40 << 20)]
    probe = Probe("chromium", "Chromium 153", base, results, ops=["constant"])
    target = load_target(write_target(probed_target(probe), tmp_path / "probed.json"))
    assert target.max_constant_bytes == max(r.constant_bytes for r in results if r.built)
    assert 40 << 20 >= target.max_constant_bytes > 32 << 20
    for r in results:
        assert (not check(case_of(r).graph, target)) == r.built, r.name


def test_no_constant_refused_records_no_limit(tmp_path):
    results = [_size_result(s, True) for s in _sizes(None)]
    doc = probed_target(Probe("chromium", "Chromium 153", copy.deepcopy(BASE), results,
                              ops=["constant"]))
    assert "maxConstantByteLength" not in doc["webnn-converter"]
    assert doc["webnn-converter"]["notes"] == [
        "every constant size probed built (up to 1073741824 bytes): no limit on one constant "
        "is recorded"]
