"""The target of what every WebNN implementation must support is called `portable` and comes
first; its old name `spec` is refused in one line that says the new one; its ranks for the
spatial ops are exactly the spec's required ranks (shared/reference/spec-required-limits.json)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from converter.errors import ConverterError
from converter.targets import builtin_targets, load_target

ROOT = Path(__file__).resolve().parents[2]
TINY = ROOT / "models" / "tiny_cnn.onnx"
# shared/ lies beside the checkout (or beside the folder of worktrees).
REQUIRED = next((p / "shared" / "reference" / "spec-required-limits.json" for p in ROOT.parents
                 if (p / "shared" / "reference" / "spec-required-limits.json").is_file()),
                ROOT.parent / "shared" / "reference" / "spec-required-limits.json")


def run(*args):
    return CliRunner().invoke(main, list(map(str, args)))


def test_portable_is_listed_first():
    assert builtin_targets()[0] == "portable"
    assert load_target("portable").name == "portable"
    r = run("targets")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[1].split()[0] == "portable"
    assert [t["name"] for t in json.loads(run("targets", "--json").output)][0] == "portable"


def test_check_all_shows_portable_first():
    r = run("check", TINY, "--target", "all")
    assert r.exit_code == 0, r.output
    assert r.output.splitlines()[1].split()[:3] == ["portable", "nchw", "fits"]


def test_the_old_name_spec_is_refused_in_one_line():
    with pytest.raises(ConverterError) as refused:
        load_target("spec")
    assert refused.value.line() == "the target 'spec' is now called 'portable'; " \
                                   "use --target portable"


@pytest.mark.parametrize("command", ["check", "convert"])
def test_the_cli_refuses_target_spec_in_one_line(command, tmp_path):
    out = ["-o", tmp_path / "out.webnn"] if command == "convert" else []
    r = run(command, TINY, "--target", "spec", *out)
    assert r.exit_code == 2, r.output
    assert r.output.strip().splitlines() == [
        "error: the target 'spec' is now called 'portable'; use --target portable"]
    assert not (tmp_path / "out.webnn").exists()


# The spec's tables (ids as in index.bs) for the ops whose required ranks are 4-D only.
_SPATIAL = {"tensor-limits-conv2d": ["conv2d"],
            "tensor-limits-convTranspose2d": ["convTranspose2d"],
            "tensor-limits-pooling-averagepool2d-l2pool2d": ["averagePool2d", "l2Pool2d"],
            "tensor-limits-pooling-maxpool2d": ["maxPool2d"],
            "tensor-limits-resample2d": ["resample2d"],
            "tensor-limits-instanceNormalization": ["instanceNormalization"]}


@pytest.mark.skipif(not REQUIRED.is_file(), reason="shared/reference is not beside the checkout")
@pytest.mark.parametrize("table", sorted(_SPATIAL))
def test_spatial_ops_take_exactly_the_required_ranks(table):
    rows = json.loads(REQUIRED.read_text())["tables"][table]
    portable = load_target("portable")
    for op in _SPATIAL[table]:
        for operand, _, _, _, required_ranks in rows:
            name = "output" if operand == "*output*" else operand
            lo, _, hi = required_ranks.partition("..")  # "4", or a range "0..4"
            want = {"min": int(lo), "max": int(hi or lo)}
            assert portable.operand_limits(op, name)["rankRange"] == want, (op, name)
    assert {row[4] for row in rows if row[0] in ("input", "*output*")} == {"4"}
