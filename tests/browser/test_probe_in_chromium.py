"""`webnn-convert probe` on Chromium, over a few ops: what its build() refuses beyond its
opSupportLimits() comes out in the target file (pad's edge mode, int32 clamp, a constant over
128 MiB), and `check` on that target agrees with build() on every probed case."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from converter.probe import probed_target, run_probe
from converter.probe.cases import make_case
from converter.probe.run import case_of
from converter.probe.sizes import constant_case
from converter.probe.target import write_target
from converter.targets import load_target
from converter.targets.check import check

OPS = ["pad", "clamp", "add", "conv2d", "constant"]
TINY = Path(__file__).resolve().parents[2] / "models" / "tiny_cnn.onnx"


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


@pytest.fixture(scope="module")
def probed(browser_limits, tmp_path_factory):
    probe = run_probe("chromium", ops=OPS)
    path = write_target(probed_target(probe), tmp_path_factory.mktemp("probe") / "probed.json")
    return probe, load_target(path)


def _verdicts(probe):
    return {(r.op, r.data_type, tuple(r.options.items())): r for r in probe.results
            if r.rank is None and r.constant_bytes is None}


def test_the_probe_runs_each_op_over_its_types_and_pad_over_its_modes(probed):
    probe, _ = probed
    verdicts = _verdicts(probe)
    for mode in ("constant", "edge", "reflection"):
        assert ("pad", "float32", (("mode", mode),)) in verdicts
    assert {dt for op, dt, _ in verdicts if op == "clamp"} >= {"float32", "float16", "int32"}
    assert {op for op, _, _ in verdicts} == set(OPS) - {"constant"}
    assert probe.skipped == []
    # the element-wise ops' rank limits, at each end of the range the browser lists
    listed = probe.limits["add"]["a"]["rankRange"]
    assert {r.rank for r in probe.results if r.op == "add" and r.rank is not None} >= \
        {listed["min"], listed["max"]}


def test_edge_pad_and_int32_clamp_come_out_refused(probed):
    probe, target = probed
    verdicts = _verdicts(probe)
    assert not verdicts[("pad", "float32", (("mode", "edge"),))].built
    assert "edge padding mode is not supported" in \
        verdicts[("pad", "float32", (("mode", "edge"),))].error
    assert verdicts[("pad", "float32", (("mode", "reflection"),))].computed is True
    assert not verdicts[("clamp", "int32", ())].built
    assert verdicts[("clamp", "float32", ())].computed is True
    assert target.refused_options == {"pad": {"mode": ["edge"]}}
    assert target.refuses("pad", "mode", "edge")
    assert not target.refuses("pad", "mode", "reflection")
    clamp = check(make_case("clamp", "int32").graph, target)
    assert [v.kind for v in clamp] == ["data-type", "data-type"]  # its input and its output
    edge = check(make_case("pad", "float32", mode="edge").graph, target)
    assert [(v.kind, v.found) for v in edge] == [("option", "mode 'edge'")]


def test_check_on_the_probed_target_agrees_with_build_on_every_case(probed):
    probe, target = probed
    disagreeing = []
    for r in probe.results:
        violations = check(case_of(r).graph, target)
        if (not violations) != r.built:
            disagreeing.append(f"{r.name}: built {r.built}, check says "
                               f"{[v.short() for v in violations] or 'fits'}")
    assert not disagreeing, disagreeing
    assert sum(r.built for r in probe.results) >= 10  # the float cases at least
    assert any(r.rank is not None for r in probe.results)
    assert any(r.constant_bytes is not None for r in probe.results)


def test_a_constant_over_128_mib_comes_out_refused_and_the_limit_is_the_probed_one(probed):
    from converter.passes import PassContext, run_passes

    probe, target = probed
    sizes = {r.constant_bytes: r for r in probe.results if r.constant_bytes is not None}
    limit = 128 * 2**20
    assert sizes[limit].built and sizes[limit].computed is True  # exactly 128 MiB builds
    assert not sizes[limit + 4].built  # one float32 more does not
    assert "Buffer size is over inline limit" in sizes[limit + 4].error
    assert sum(size > limit for size in sizes) == 2  # bounded: twice over the limit, no more
    assert target.max_constant_bytes == limit
    assert [v.kind for v in check(constant_case(limit + 4).graph, target)] == ["tensor-size"]
    assert check(constant_case(limit).graph, target) == []
    # the split_constants pass cuts at the probed limit
    graph = constant_case(limit + 4).graph
    [(_, result)] = run_passes(graph, ["split_constants"], PassContext(target=target))
    pieces = [op for op in graph.operations if op.op_type == "concat"]
    assert len(pieces) == 1 and check(graph, target) == []


def test_the_cli_writes_a_target_that_check_and_convert_take(browser_limits, tmp_path):
    out = tmp_path / "probed.json"
    r = run("probe", "--runtime", "chromium", "--op", "pad", "--op", "clamp", "-o", out)
    assert r.exit_code == 0, r.output
    assert "pad float32 mode=edge: refused by build():" in r.output
    doc = json.loads(out.read_text())
    assert doc["webnn-converter"]["refusedOptions"] == {"pad": {"mode": ["edge"]}}
    assert "only pad, clamp" in doc["webnn-converter"]["sources"][1]
    r = run("check", TINY, "--target", out)
    assert r.exit_code == 0 and "fits chromium-probed" in r.output, r.output
    r = run("convert", TINY, "--target", out, "-o", tmp_path / "tiny.webnn")
    assert r.exit_code == 0, r.output
    data = json.loads(run("probe", "--runtime", "chromium", "--op", "clamp", "--json",
                          "-o", out).output)
    assert {(c["dataType"], c["built"]) for c in data["cases"]} >= {("float32", True),
                                                                    ("int32", False)}
    assert data["notProbed"] == []  # clamp has values for every type the spec allows it


@pytest.mark.parametrize("args, line", [
    (["--runtime", "ort"], "error: probe runs on chromium or a device, not 'ort'; use "
                           "--runtime chromium, device, device:NAME or device:NAME:TYPE"),
    (["--runtime", "chromium", "--op", "padd"],
     "error: no probe case for op 'padd'; name ops of `webnn-convert ops` (MLGraphBuilder "
     "method names)"),
])
def test_the_cli_refuses_in_one_line_and_writes_nothing(args, line, tmp_path):
    r = run("probe", *args, "-o", tmp_path / "t.json")
    assert r.exit_code == 2 and r.output.strip().splitlines() == [line], r.output
    assert list(tmp_path.iterdir()) == []


def test_the_cli_writes_only_json_target_files(tmp_path):
    r = run("probe", "--runtime", "chromium", "-o", tmp_path / "t.webnn")
    assert r.exit_code == 2, r.output
    assert r.output.strip() == (f"error: {tmp_path / 't.webnn'}: a probed target is written as "
                                f"a .json target file; name the output T.json")
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_a_missing_folder_before_it_probes(tmp_path):
    r = run("probe", "--runtime", "chromium", "-o", tmp_path / "no" / "t.json")
    assert r.exit_code == 2, r.output
    assert r.output.strip() == f"error: {tmp_path / 'no'}: the folder does not exist; " \
                               f"create it first"
    assert list(tmp_path.iterdir()) == []


def test_the_cli_refuses_a_device_probe_without_a_server_and_writes_nothing(tmp_path,
                                                                            monkeypatch):
    from converter.devices import client

    monkeypatch.setenv("WEBNN_CONVERTER_CACHE", str(tmp_path / "cache"))
    client.use_server(None)
    out = tmp_path / "out"
    out.mkdir()
    r = run("probe", "--runtime", "device:phone", "-o", out / "t.json")
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        "error: no device server is running; start one with `webnn-convert serve` (or give "
        "--server URL)"]
    assert list(out.iterdir()) == []
