"""Probe a backend for the truth: what its build() takes and what it computes right.

A backend's `opSupportLimits()` lists data types and ranks; its build() may still refuse some
of them, or an option value (Chromium 153's LiteRT backend: pad's edge mode, int32 clamp), and
a graph that builds may compute outside the spec's tolerance. The probe runs a generated suite
of one-op graphs (cases.py: each op over its data types, and the option values VARIANTS lists)
on the backend, judges each output against the float64 reference interpreter
(converter/verification/reference/), and writes a target file: the browser's own
opSupportLimits() narrowed by what build() refused (`refusedDataTypes`, `refusedOptions`,
rank ranges, and `maxConstantByteLength`: the largest constant it built, sizes.py).

    probe = run_probe(ops=["pad", "clamp"])      # run.py: local Chromium, in batches
    probe = run_probe("device:phone")              # a device of `webnn-convert serve`
    doc = probed_target(probe)                    # target.py: a target file's JSON
"""
from __future__ import annotations

from .run import Probe, ProbeResult, run_probe
from .target import probed_target

__all__ = ["Probe", "ProbeResult", "run_probe", "probed_target"]
