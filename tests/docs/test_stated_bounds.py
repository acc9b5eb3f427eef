"""The tolerance policy docs/reference/parity.md states is the one verify applies: the float32
whole-model bounds, and the float16 bounds that judge float16 compute (issue 31's fp16
files), read from the page and compared with converter.verification.parity.default_bounds."""
from __future__ import annotations

import re

from converter.verification.parity import default_bounds

from .blocks import ROOT

PAGE = ROOT / "docs" / "reference" / "parity.md"


def _text() -> str:
    return " ".join(PAGE.read_text("utf-8").split())  # lines joined: sentences wrap


def test_the_float32_bounds_stated_are_the_ones_applied():
    found = re.search(r"float32 outputs pass when every element has \|got − want\| ≤ "
                      r"([0-9e.-]+) \+ ([0-9e.-]+)·\|want\| and cosine ≥ ([0-9.]+)", _text())
    assert found, "parity.md no longer states the float32 bounds"
    bounds = default_bounds("float32")
    assert tuple(map(float, found.groups())) == (bounds.atol, bounds.rtol, bounds.cosine)


def test_the_float16_compute_policy_stated_is_the_one_applied():
    text = _text()
    found = re.search(r"\*\*Float16 compute\.\*\* .*? is judged by the float16 bounds, "
                      r"\|got - want\| <= ([0-9e.-]+) \+ ([0-9e.-]+) \|want\|, without the "
                      r"cosine check", text)
    assert found, "parity.md no longer states the float16-compute policy"
    bounds = default_bounds("float16")
    assert tuple(map(float, found.groups())) == (bounds.atol, bounds.rtol)
    assert bounds.cosine is None
    short = re.search(r"float16 at ([0-9e.-]+)/([0-9e.-]+);", text)
    assert short and tuple(map(float, short.groups())) == (bounds.atol, bounds.rtol)
