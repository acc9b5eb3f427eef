"""A constant that differs between a module's dims and that the backend requires to be a
constant (DeBERTa-v2's relative-position buckets as gatherElements indices: Chromium's LiteRT
backend refuses computed indices) builds and computes in Chromium, from the JS module (cut to a
corner when the graph is built, at lengths converted and never converted) and from a variants
`.webnn` file, against ONNX Runtime on the source."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.main import main
from converter.testing.position_table import position_table_model


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    return position_table_model(tmp_path_factory.mktemp("table") / "table.onnx")


def _cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("suffix, lengths", [(".js", (8, 13, 24, 32)), (".webnn", (8, 16))])
def test_gather_elements_indices_cut_per_length_build_in_chromium(browser_limits, source,
                                                                  tmp_path, suffix, lengths):
    out = tmp_path / f"table{suffix}"
    made = _cli("convert", source, "-o", out, "--dim", "s=8,16,32", "--target",
                "chromium-litert")
    assert made.exit_code == 0, made.output
    if suffix == ".js":
        text = out.read_text()
        assert "corner(weights.bytes(" in text and "builder.slice(" not in text
    for s in lengths:
        checked = _cli("verify", source, "--graph", out, "--runtime", "chromium", "--dim",
                       f"s={s}", "--json")
        assert checked.exit_code == 0, checked.output
        report = json.loads(checked.output)
        [y] = report["outputs"]
        assert report["passed"] and y["passed"] and y["shape"] == [1, s, s]
        assert y["maxAbs"] == 0.0, y  # a gather moves values: bit-exact
