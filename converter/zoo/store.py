"""The results of a zoo run, one JSON line per finished model, appended as each finishes.

    store = ResultStore(default_results_path("zoo.json"), resume=True)
    store.get(key)            # a result recorded earlier under this key, or None
    store.append(key, result) # written and flushed to disk before it returns

A key is what identifies the model's content (`ZooEntry.content_id`: a package file's sha256,
a local file's identity and change time, never read in the parent), the converter's version
and every manifest field and option that changes a result (the entry's path, source and
expected hash, format, shapes, dimensions, constant inputs, tolerances, seed; the run's targets,
runtimes, weights scheme with its accuracy bounds and samples, and compute type):
`result_key`. A device run (runner.py: one job per model and device) keys each cell apart,
the device's identity included: a result from another browser on the same name is not
reused. The run's limits (`--timeout`, `--memory`) change only the results they cut short,
so they are kept beside each record and judged when it is read back (`ResultStore.reusable`):
a model that timed out is run again under a longer timeout, one that ran out of memory under
a larger limit. So `--resume` reuses a result only when it would come out the same, and a run
killed at any point keeps every line it finished; a line cut short by the kill is ignored
when read back.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

__all__ = ["ResultStore", "result_key", "default_results_path", "DEVICE_KEYED", "DEVICE_NOT_KEYED"]

# The spec members that change a result: where the model is and the hash it must have (a wrong
# hash is an error; another file of the same package is another model), and how it is run.
# `id`, `expect` and `notes` do not (renaming a model or changing what it is expected to do
# reuses its result). tests/zoo/test_resume_key.py holds every manifest field to one side.
KEYED = ("path", "source", "sha256", "format", "inputShapes", "dims", "constInputs",
         "tolerances", "seed")
NOT_KEYED = ("id", "expect", "notes")


# What identifies a device a cell of a device run ran on (cells.device_identity): another
# browser build, platform or set of contexts behind the same name is another device.
DEVICE_KEYED = ("name", "userAgent", "platform", "deviceTypes")
# What the server lists of a device that does not change a result: the browser is read from
# the user agent (keyed), the target files' paths and the refusals' words vary from one
# `serve` to the next. tests/zoo/test_resume_key.py holds every listed field to one side.
DEVICE_NOT_KEYED = ("browser", "targets", "refused")


def result_key(content: str, version: str, spec: dict[str, Any], targets: list[str],
               runtimes: list[str], compression: dict[str, Any] | None = None, *,
               compute: str = "float32", device: dict[str, Any] | None = None) -> str:
    """The key of a model's result; with `device`, of one cell of a device run (the model
    on one runtime, `runtimes` that one), the device's identity (DEVICE_KEYED) part of it.
    `compression`: the run's --weights, --accuracy and --samples (ZooOptions.compression),
    empty without --weights; `compute`: the run's --compute. Neither is in the key of a
    float32 run, so its keys are what they were before those options."""
    options = {k: spec.get(k) for k in KEYED}
    options.update(targets=list(targets), runtimes=list(runtimes))
    if compression:
        options["compression"] = dict(compression)
    if compute != "float32":
        options["compute"] = compute
    if device is not None:
        options["device"] = {k: device.get(k) for k in DEVICE_KEYED}
    digest = hashlib.sha256(json.dumps(options, sort_keys=True).encode()).hexdigest()[:16]
    return f"{content}:{version}:{digest}"


def default_results_path(manifest: str | Path) -> Path:
    """Where a run of `manifest` keeps its results when not told: the converter's cache
    (`WEBNN_CONVERTER_CACHE`, default ~/.cache/webnn-converter), under `zoo/`, one file per
    manifest (its stem and a hash of its absolute path). Never the working directory: a run
    from a source checkout must not leave files in it, and `--resume` must find the file again
    from any directory."""
    from .fetch import cache_dir

    where = Path(manifest).resolve()
    digest = hashlib.sha256(str(where).encode()).hexdigest()[:12]
    return cache_dir() / "zoo" / f"{where.stem}-{digest}.jsonl"


class ResultStore:
    """A JSON-lines file of {"key", "result", "limits"} records; the last record of a key wins.
    `limits` are the run's {"timeout", "memory"} the result was made under."""

    def __init__(self, path: str | Path, *, resume: bool):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._results: dict[str, dict] = {}
        self._limits: dict[str, dict] = {}
        if resume and self.path.exists():
            self._read()
        else:  # a fresh run starts a fresh file: old lines would mix two runs' options
            self.path.write_text("", encoding="utf-8")

    def _read(self) -> None:
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    record = json.loads(line)
                    self._results[record["key"]] = record["result"]
                    self._limits[record["key"]] = record.get("limits") or {}
                except (json.JSONDecodeError, KeyError, TypeError):
                    continue  # the half-written last line of a run that was killed

    def __contains__(self, key: str) -> bool:
        return key in self._results

    def __len__(self) -> int:
        return len(self._results)

    def get(self, key: str) -> dict | None:
        return self._results.get(key)

    def reusable(self, key: str, timeout: float, memory: int | None) -> dict | None:
        """The result stored under `key` if a run under these limits would give it again: a
        timeout only if it happened under a timeout at least as long, an out-of-memory crash
        only under a memory limit at least as large (None: no limit). Else None."""
        result = self._results.get(key)
        if result is None:
            return None
        limits = self._limits.get(key, {})
        if result.get("status") == "timeout":
            before = limits.get("timeout")
            if not isinstance(before, (int, float)) or before < timeout:
                return None
        if (result.get("error") or {}).get("kind") == "out-of-memory":
            before = limits.get("memory", 0)
            if not (before is None or (memory is not None and isinstance(before, int)
                                       and before >= memory)):
                return None
        return result

    def append(self, key: str, result: dict, limits: dict | None = None) -> None:
        record = {"key": key, "result": result, "limits": limits or {}}
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with open(self.path, "a", encoding="utf-8") as f:
            if f.tell() and not self._ends_with_newline():
                f.write("\n")  # after a cut line: keep the new record on a line of its own
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self._results[key] = result
        self._limits[key] = limits or {}

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"
