"""The same manifest through `--executor ray` on a local Ray cluster gives the same statuses."""
from __future__ import annotations

import os

import pytest

from converter.zoo import ZooOptions, run_zoo

from .conftest import make_synthetic
from .faults import HOOK

if os.environ.get("CI"):  # CI installs the extra: Ray missing there is a broken install
    import ray  # noqa: F401
else:
    ray = pytest.importorskip("ray", reason="Ray is not installed: pip install "
                                            "'webnn-converter[ray]'")
pytestmark = pytest.mark.ray


# The models that end by themselves (verified, crashed, refused) and the one that never does.
ENDING = ["add", "conv_relu", "crash", "corrupt", "unsupported"]
HANGING = ["hang"]


def _both(folder, ids, **options):
    """The run of `ids` by the local executor and by Ray, with the same options."""
    manifest = make_synthetic.write_manifest(folder, ids)
    local = run_zoo(manifest, ZooOptions(**options), results_path=folder / "local.jsonl")
    on_ray = run_zoo(manifest, ZooOptions(executor="ray", **options),
                     results_path=folder / "ray.jsonl")
    return local, on_ray


def test_ray_executor_gives_the_local_statuses(tmp_path):
    """The models that end by themselves run under the default timeout (600 s: a guard they
    never come near, so a loaded machine cannot turn a slow `add` into a `timeout`, which a
    4 s timeout over all of them did); `hang` never ends, so it runs on its own under a short
    timeout, which it meets however loaded the machine is."""
    ending, ending_on_ray = _both(tmp_path / "ending", ENDING, jobs=2, memory=2048, hook=HOOK)
    hanging, hanging_on_ray = _both(tmp_path / "hanging", HANGING, jobs=1, timeout=2,
                                    memory=2048, hook=HOOK)
    for ids, local, on_ray in ((ENDING, ending, ending_on_ray),
                               (HANGING, hanging, hanging_on_ray)):
        want = {i: make_synthetic.EXPECTED[i] for i in ids}
        assert {r["id"]: r["status"] for r in local.results} == want
        assert {r["id"]: r["status"] for r in on_ray.results} == want
        assert [r["key"] for r in on_ray.results] == [r["key"] for r in local.results]
    crash = next(r for r in ending_on_ray.results if r["id"] == "crash")
    assert crash["error"]["message"].startswith("killed by SIGSEGV")
    add = next(r for r in ending_on_ray.results if r["id"] == "add")
    assert add["targets"][0]["parity"]["ort"]["outputs"][0]["maxAbs"] == 0.0
    for run in (hanging, hanging_on_ray):
        assert run.results[0]["error"] == {"kind": "timeout",
                                           "message": "still running after 2 s; killed"}
