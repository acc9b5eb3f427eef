"""Chromium in its sandbox where it can run there, and one line saying why when it cannot.

The browser runs pages built from the user's graph files (their names and values end up in
JavaScript), so its sandbox (the renderers in their own namespaces under seccomp-bpf) is worth
having. Chromium refuses it to a process running as root ("Running as root without --no-sandbox
is not supported. See https://crbug.com/638180."), and a kernel that gives an unprivileged
process no user namespaces cannot give it either (the bundled build has no setuid helper). In
those cases the browser runs with --no-sandbox, and the first launch of the process says why on
stderr; a launch that fails for any other reason is an error as before.
"""
from __future__ import annotations

import os
import re
import sys

__all__ = ["launch", "runs_as_root"]

AS_ROOT = ("Chromium runs without its sandbox: it refuses to run sandboxed as root "
           "(crbug.com/638180); run as another user to have it")
_said: list[str] = []  # the reason given already, so it is said once per process
_SANDBOX_FAILED = "Chromium sandboxing failed!"  # Playwright's words for such a launch
_LOG_PREFIX = re.compile(r"^(?:\[[^\]]*\]\s*)+")  # "[pid=12][err] [1128/...:ERROR:...] "


def runs_as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _say(reason: str) -> None:
    if not _said:
        _said.append(reason)
        print(f"note: {reason}", file=sys.stderr, flush=True)


def _sandbox_error(error: Exception) -> str | None:
    """Why the sandbox failed, when Playwright says a launch failed for that reason: the line
    of the browser's own log (its stderr, `[err]`) about the sandbox, if it has one."""
    text = str(error)
    if _SANDBOX_FAILED not in text:
        return None
    for line in text.splitlines():
        if "[err]" in line and "sandbox" in line.lower():
            return _LOG_PREFIX.sub("", line.strip().removeprefix("- "))
    return _SANDBOX_FAILED.rstrip("!")


def launch(chromium, binary: str, args: list[str], error: type[Exception]):
    """A Playwright Browser of `chromium` (a BrowserType) at `binary` with `args`: sandboxed
    unless it cannot be (see the module's doc). `error` is Playwright's Error class."""
    if runs_as_root():
        _say(AS_ROOT)
        return chromium.launch(executable_path=binary, args=[*args, "--no-sandbox"])
    try:
        return chromium.launch(executable_path=binary, args=list(args), chromium_sandbox=True)
    except error as e:
        why = _sandbox_error(e)
        if why is None:
            raise
    _say(f"Chromium runs without its sandbox: it could not start sandboxed here ({why})")
    return chromium.launch(executable_path=binary, args=[*args, "--no-sandbox"])
