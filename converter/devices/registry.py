"""The devices connected to a server, what each registered, and the jobs each is running.

A device registers once per connection with its user agent, platform and, per deviceType that
gave it a context, that context's opSupportLimits() (`check_registration`: the page is a
program on another machine, so every field is checked and bounded). Each limits dump is saved
as a target file (`save_targets`), which `check --target FILE` and `convert --target FILE`
accept. Everything here runs on the server's event loop.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConverterError
from .protocol import DEVICE_TYPES, browser_of, check_name

__all__ = ["Device", "Registry", "check_registration"]

_MAX_TEXT = 512  # user agent, platform, a context's error


@dataclass
class Device:
    name: str
    user_agent: str
    platform: str
    limits: dict[str, dict]  # deviceType -> opSupportLimits()
    refused: dict[str, str]  # deviceType -> why createContext failed
    send: Any  # async callable sending one JSON message to the page
    targets: dict[str, str] = field(default_factory=dict)  # deviceType -> saved target file
    jobs: dict[int, asyncio.Future] = field(default_factory=dict)

    @property
    def browser(self) -> str:
        return browser_of(self.user_agent)

    def to_json(self) -> dict:
        return {"name": self.name, "browser": self.browser, "userAgent": self.user_agent,
                "platform": self.platform, "deviceTypes": list(self.limits),
                "refused": self.refused, "targets": self.targets}

    def line(self) -> str:
        types = ", ".join(self.limits) or "no deviceType gave a context"
        if not self.limits and self.refused:  # say why: "not a secure context" has a fix
            kind, why = next(iter(self.refused.items()))
            types += f" ({kind}: {why})"
        return f"device '{self.name}': {self.browser} on {self.platform or 'an unknown platform'}" \
               f"; deviceTypes {types}"


def check_registration(message: Any) -> tuple[str, str, dict[str, dict], dict[str, str]]:
    """(user agent, platform, limits by deviceType, refusals by deviceType) of a register
    message; ConverterError for anything else."""
    from ..schemas import validate

    if not isinstance(message, dict) or message.get("type") != "register":
        raise ConverterError("the first message is not a registration")
    texts = [message.get("userAgent"), message.get("platform")]
    if not all(isinstance(t, str) and len(t) <= _MAX_TEXT for t in texts):
        raise ConverterError(f"userAgent and platform must be strings of at most {_MAX_TEXT} "
                             f"characters")
    contexts, refused = message.get("contexts"), message.get("refused", {})
    if not isinstance(contexts, dict) or not isinstance(refused, dict):
        raise ConverterError("contexts and refused must be objects keyed by deviceType")
    for kind in (*contexts, *refused):
        if kind not in DEVICE_TYPES:
            raise ConverterError(f"{kind[:40]!r} is not a WebNN deviceType")
    for kind, limits in contexts.items():
        validate(limits, "target", f"the {kind} context's opSupportLimits()")
    if not all(isinstance(why, str) for why in refused.values()):
        raise ConverterError("a refusal must be a string")
    return (texts[0], texts[1], contexts,
            {kind: why[:_MAX_TEXT] for kind, why in refused.items()})


class Registry:
    """The connected devices by name, and the numbering of jobs."""

    def __init__(self, targets_dir: Path):
        self.devices: dict[str, Device] = {}
        self.targets_dir = targets_dir
        self._jobs = itertools.count(1)
        self._unnamed = itertools.count(1)

    def free_name(self, wanted: str | None) -> str:
        """`wanted` if no connected device has it (else it with -2, -3 ...), or device-N."""
        if wanted is None:
            wanted = next(n for n in (f"device-{i}" for i in self._unnamed)
                          if n not in self.devices)
        check_name(wanted)
        name, count = wanted, 1
        while name in self.devices:
            count += 1
            name = f"{wanted[:34]}-{count}"
        return name

    def add(self, device: Device) -> None:
        self.devices[device.name] = device
        device.targets = self.save_targets(device)

    def remove(self, device: Device) -> None:
        if self.devices.get(device.name) is device:
            del self.devices[device.name]
        for job in device.jobs.values():
            if not job.done():
                job.set_exception(ConverterError(f"device '{device.name}' disconnected while "
                                                 f"running the job",
                                                 fix="open the page on it again and rerun"))

    def find(self, name: str | None) -> Device:
        """The device called `name`, or with no name the only one connected."""
        listed = ", ".join(sorted(self.devices)) or "none"
        if name is None:
            if len(self.devices) == 1:
                return next(iter(self.devices.values()))
            raise ConverterError(f"{len(self.devices)} devices are connected, name one",
                                 fix=f"use --runtime device:NAME; connected: {listed}")
        if name not in self.devices:
            raise ConverterError(f"no device named '{name}' is connected",
                                 fix=f"connected: {listed}")
        return self.devices[name]

    def next_job(self) -> int:
        return next(self._jobs)

    def save_targets(self, device: Device) -> dict[str, str]:
        """Each deviceType's limits as TARGETS_DIR/NAME-TYPE.opSupportLimits.json, written
        whole or not at all; {deviceType: path}."""
        self.targets_dir.mkdir(parents=True, exist_ok=True)
        saved = {}
        for kind, limits in device.limits.items():
            path = self.targets_dir / f"{device.name}-{kind}.opSupportLimits.json"
            data = dict(limits, **{"webnn-converter": {
                "name": f"{device.name}-{kind}",
                "description": f"{device.browser} on {device.platform}, deviceType {kind}, "
                               f"as its page reported",
                "sources": [f"opSupportLimits() of user agent {device.user_agent}"]}})
            write_atomically(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
            saved[kind] = str(path)
        return saved


def write_atomically(path: Path, text: str) -> None:
    """`text` as `path`, readable by its owner only, whole or not at all: written to a
    temporary file beside it (mkstemp: mode 0600, so a token in it is never readable by
    others, even for a moment), then renamed into place."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
