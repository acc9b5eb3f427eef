"""The zoo's jobs on a Ray cluster: `webnn-convert zoo MANIFEST --executor ray`.

Each model is one Ray task that calls `runner.run_isolated` on the worker (the runner hands it
over, so that this module and the runner do not import each other), so the job still
runs in its own process there with the same time and memory limits, and a segfault costs one
model, not the Ray worker. Results stream back as tasks finish (`ray.wait`) and go into the
same store and reports as a local run's.

With no `ray_address` a local cluster is started by `ray.init()` with `jobs` CPUs, and the
workers import this checkout of the converter (PYTHONPATH); with an address the converter
package is shipped to the cluster (`runtime_env` py_modules). Ray is an optional extra:
`pip install 'webnn-converter[ray]'`.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import ConverterError

__all__ = ["run_on_ray"]

_ROOT = Path(__file__).resolve().parents[2]


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ConverterError("--executor ray needs Ray, which is not installed",
                             fix="pip install 'webnn-converter[ray]'") from None
    return ray


def run_on_ray(entries, options, run_isolated):
    """(entry, result) pairs as the cluster finishes them; each task is `run_isolated` (the
    runner's) on one entry."""
    if not entries:
        return
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        if options.ray_address:
            import converter

            runtime_env = {"py_modules": [str(Path(converter.__file__).parent)]}
            ray.init(address=options.ray_address, runtime_env=runtime_env,
                     include_dashboard=False, log_to_driver=False)
        else:
            path = os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH")) if p)
            ray.init(num_cpus=options.jobs, include_dashboard=False, log_to_driver=False,
                     runtime_env={"env_vars": {"PYTHONPATH": path}})
    task = ray.remote(num_cpus=1, max_retries=0)(run_isolated)
    # The worker enforces the timeout itself; the extra minute here only guards a lost task.
    pending = {task.remote({**e.spec(), **options.job_options()}, options.targets,
                           options.runtimes, options.timeout, options.memory,
                           options.hook): e for e in entries}
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1,
                               timeout=options.timeout + 60)
            if not done:
                raise ConverterError(
                    f"no Ray task finished in {options.timeout + 60:g} s",
                    where=options.ray_address or "local Ray cluster",
                    fix="check the cluster's workers (`ray status`)")
            for ref in done:
                entry = pending.pop(ref)
                yield entry, ray.get(ref)
    finally:
        for ref in pending:
            ray.cancel(ref, force=True)
        if started_here:
            ray.shutdown()
