"""`webnn-convert serve` in a subprocess for the device tests, and a fake device: a websocket
client that registers like the page and answers jobs as a test tells it."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ROOT / "converter" / "targets" / "data" / "chromium-litert.json"
_WAIT = 120  # seconds a line may take to appear: generous, the machine is shared


class Served:
    """A running `serve --port 0`, its URL (the first line) and the lines after it; over
    https, the certificate's fingerprint (the second line)."""

    def __init__(self, cache: Path, *args: str):
        env = dict(os.environ, WEBNN_CONVERTER_CACHE=str(cache))
        self.cache = cache
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cli.main", "serve", "--port", "0", *args], cwd=ROOT,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.first = self.proc.stdout.readline()
        self.url = self.first.strip()
        if not self.url.startswith(("http://", "https://")):
            self.proc.kill()
            raise RuntimeError(f"serve printed {self.first!r}: {self.proc.stderr.read()}")
        self.fingerprint = None
        if self.url.startswith("https://"):
            second = self.proc.stdout.readline().strip()
            self.fingerprint = second.rsplit(" ", 1)[-1]
            self.second = second
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        self.wait_for("stop with Ctrl-C")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str) -> str:
        end = time.monotonic() + _WAIT
        while time.monotonic() < end:
            found = [line for line in self.lines if text in line]
            if found:
                return found[0]
            time.sleep(0.05)
        raise AssertionError(f"serve never printed {text!r}; it printed {self.lines}")

    @property
    def origin(self) -> str:
        return self.url.rsplit("/", 2)[0] + "/"

    def stop(self) -> int:
        self.proc.terminate()
        try:
            code = self.proc.wait(60)
        except subprocess.TimeoutExpired:  # say what it was doing, and leave nothing behind
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"serve did not stop within 60 s of SIGTERM; its last lines: "
                                 f"{self.lines[-10:]}; stderr: {self.proc.stderr.read()[-2000:]}"
                                 ) from None
        finally:
            if self.proc.returncode is not None:
                self.proc.stderr.close()
        return code


def listening(port: int) -> list[str]:
    """The local addresses (as /proc/net/tcp* writes them) with a socket listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for row in Path(table).read_text().splitlines()[1:]:
            local, state = row.split()[1], row.split()[3]
            if state == "0A" and int(local.split(":")[1], 16) == port:
                found.append(local.split(":")[0])
    return found


def registration(**changes) -> dict:
    """A register message as the page sends it, with the shipped chromium-litert limits."""
    limits = json.loads(LIMITS.read_text())
    limits.pop("webnn-converter", None)
    message = {"type": "register", "userAgent": "Mozilla/5.0 HeadlessChrome/153.0.0.0",
               "platform": "Linux", "contexts": {"cpu": limits}, "refused": {}}
    message.update(changes)
    return message


class FakeDevice:
    """A device that is a websocket client on its own thread: registers with `message`, then
    hands each job to `answer(job, session, base)` (a coroutine returning the reply) and
    records what it saw. `reply` is the registration's answer (registered or refused)."""

    def __init__(self, url: str, name: str | None, message: dict, answer=None,
                 fingerprint: str | None = None):
        self.jobs: list[dict] = []
        self.reply: dict | None = None
        self._ready = threading.Event()
        self._answer = answer
        self._url = url.replace("http", "ws", 1) + "ws" + (f"?name={name}" if name else "")
        self._base = url
        self._message = message
        self._fingerprint = fingerprint  # an https server's, pinned as our client pins it
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete,
                                        args=(self._run(),), daemon=True)
        self._thread.start()
        if not self._ready.wait(_WAIT):
            raise AssertionError("the fake device got no answer to its registration")

    async def _run(self) -> None:
        import aiohttp

        pin = True if self._fingerprint is None else \
            aiohttp.Fingerprint(bytes.fromhex(self._fingerprint.replace(":", "")))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=pin)) as session:
            async with session.ws_connect(self._url) as ws:
                self._ws = ws
                await ws.send_str(json.dumps(self._message))
                self.reply = json.loads((await ws.receive()).data)
                self._ready.set()
                async for message in ws:
                    if message.type != aiohttp.WSMsgType.TEXT:
                        break
                    job = json.loads(message.data)
                    self.jobs.append(job)
                    await ws.send_str(json.dumps(await self._answer(job, session, self._base)))
        self._ready.set()

    def close(self) -> None:
        async def shut():
            await self._ws.close()
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(30)
        self._thread.join(30)
