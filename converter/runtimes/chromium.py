"""A real browser's WebNN as an executor: headless Chromium 153 (WebNN on LiteRT/XNNPACK).

    outputs = run_chromium(graph, {"x": array})         # {output name: ndarray}
    results = run_chromium_many([(g1, f1), (g2, f2)])   # one page load for many graphs

Each graph is written as the JavaScript module `write_js` emits (the code users ship, not a
test double), served with its weights and inputs by a stdlib http.server on 127.0.0.1, and run
by headless Chromium driven through Playwright: the page imports the module, builds the graph
(`buildGraph`), writes the inputs, dispatches and reads the outputs back. Nothing leaves the
loopback interface.

One browser process (and one server) serves every call in a Python process, so a test suite
running hundreds of graphs pays the launch once. The Playwright sync API is bound to the thread
that started it: call from one thread, and not from inside a running asyncio loop.

An error the browser raises while building names the node (each call's `label` is the node
name), and is re-raised as a ConverterError located at that op.
"""
from __future__ import annotations

import atexit
import base64
import functools
import http.server
import re
import shutil
import tempfile
import threading
from urllib.parse import quote
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from ..formats.owned_paths import make_owned_folder
from .. import ops as _ops  # noqa: F401  (the op catalogue the IR adds operations through)
from ..ir import Graph, Operation
from ..ir.operand import array_from_bytes
from .browser_install import find_chromium
from .chromium_sandbox import launch

__all__ = ["run_chromium", "run_chromium_many", "run_module", "op_support_limits",
           "browser_version", "last_times",
           "browser_page", "close_browser", "LAUNCH_ARGS"]

# Sandboxed or not is chromium_sandbox.launch's choice (--no-sandbox only where it must).
LAUNCH_ARGS = ("--disable-gpu", "--enable-features=WebMachineLearningNeuralNetwork")
_RUNNER = Path(__file__).with_name("chromium_runner.js")
# The base64 encoder the runner imports, shared with the device page (a path, not an import).
_BASE64 = Path(__file__).parents[1] / "emit" / "base64.js"
# A graph that neither finishes nor fails in this time is reported as hung.
_CASE_TIMEOUT_MS = 300_000
_LABEL = re.compile(r"\[([^\[\]]+)\]")
# The page's times of the last case run_chromium_many ran (see `last_times`).
_LAST_TIMES: dict | None = None


def run_chromium(graph: Graph, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Execute `graph` in Chromium's WebNN on `feeds`; returns {output name: ndarray}."""
    result = run_chromium_many([(graph, feeds)])[0]
    if isinstance(result, ConverterError):
        raise result
    return result


def run_chromium_many(cases: Sequence[tuple[Graph, Mapping[str, np.ndarray]]]
                      ) -> list[dict[str, np.ndarray] | ConverterError]:
    """Run several graphs in one page visit. Each result is the outputs, or the ConverterError
    that graph met (the browser's verdict on it); a problem with the browser itself raises."""
    from ..emit.javascript import write_js
    from ..ir.feeds import check_feeds

    global _LAST_TIMES
    _LAST_TIMES = None
    session = _session()
    batch = session.new_folder()
    try:
        specs = []
        for i, (graph, feeds) in enumerate(cases):
            arrays = check_feeds(graph, feeds)
            folder = batch / f"g{i}"
            folder.mkdir()
            write_js(graph, folder / "model.js")
            inputs = {}
            for j, (name, array) in enumerate(arrays.items()):
                (folder / f"in{j}.bin").write_bytes(_input_bytes(graph, name, array))
                inputs[name] = f"{session.url(folder)}/in{j}.bin"
            specs.append({"module": f"{session.url(folder)}/model.js", "inputs": inputs})
        raw = session.run_specs(specs)
        given = raw[-1].get("times") if raw else None
        _LAST_TIMES = {k: round(float(v), 3) if type(v) in (int, float) else None
                       for k, v in given.items() if k in ("buildMs", "runMs")} \
            if isinstance(given, dict) else None
        return [_result(graph, r) for (graph, _), r in zip(cases, raw)]
    finally:
        shutil.rmtree(batch, ignore_errors=True)


def run_module(module: str | Path, feeds: Mapping[str, np.ndarray], like: Graph,
               dims: Mapping[str, int] | None = None) -> dict[str, np.ndarray]:
    """Run a module written earlier (`module` with its .weights and .manifest.json beside it)
    in Chromium, built at `dims` when given, on `feeds`; `like` is a graph with the module's
    inputs and outputs at those dims (names, data types, shapes), which the results are read
    as. A module that fails to load or build raises ConverterError with the browser's words."""
    from ..ir.feeds import check_feeds

    module = Path(module)
    stem = module.name[:-3] if module.name.endswith(".js") else module.name
    companions = [module.with_name(stem + ".weights"), module.with_name(stem + ".manifest.json")]
    for path in (module, *companions):
        if not path.is_file():
            raise ConverterError("the module's files are not all there", where=str(path),
                                 fix="give the .js written by `webnn-convert convert`, with its "
                                     ".weights and .manifest.json beside it")
    session = _session()
    folder = session.new_folder()
    try:
        for path in (module, *companions):
            shutil.copyfile(path, folder / path.name)
        inputs = {}
        for j, (name, array) in enumerate(check_feeds(like, feeds).items()):
            (folder / f"in{j}.bin").write_bytes(_input_bytes(like, name, array))
            inputs[name] = f"{session.url(folder)}/in{j}.bin"
        spec = {"module": f"{session.url(folder)}/{quote(module.name)}", "inputs": inputs}
        if dims:
            # As given (not rounded): the module itself refuses a value it does not accept.
            spec["dims"] = {name: value.item() if isinstance(value, np.generic) else value
                            for name, value in dims.items()}
        raw = session.run_specs([spec])[0]
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if "error" in raw:
        error = raw["error"]
        message = " ".join(f"{error['name']}: {error['message']}".split())
        raise ConverterError(f"Chromium failed at {error['stage']}: {message}",
                             where=str(module))
    return _result(like, raw)


def _builds(graph: Graph) -> bool:
    """Whether Chromium builds `graph` (nothing is run)."""
    from ..emit.javascript import write_js

    session = _session()
    folder = session.new_folder()
    try:
        write_js(graph, folder / "model.js")
        raw = session.run_specs([{"module": f"{session.url(folder)}/model.js", "inputs": {},
                                  "buildOnly": True}])[0]
        return "error" not in raw
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _first_refused(graph: Graph) -> Operation | None:
    """The operation from which on Chromium refuses to build, found by bisecting the graph's
    prefixes (for build() errors, which carry no label). log2(n) builds, only on failure."""
    built, refused = 0, len(graph.operations)
    if refused == 0:
        return None
    while refused - built > 1:
        middle = (built + refused) // 2
        if _builds(_prefix(graph, middle)):
            built = middle
        else:
            refused = middle
    return graph.operations[refused - 1] if not _builds(_prefix(graph, refused)) else None


def _prefix(graph: Graph, count: int) -> Graph:
    """The graph's first `count` operations, every result they leave unread an output. The
    constants are shared, not copied."""
    part = Graph(graph.name)
    for name, operand in graph.inputs.items():
        part.add_input(name, operand.data_type, operand.shape)
    for name, operand in graph.constants.items():
        part.add_constant(name, operand.constant)
    ops = graph.operations[:count]
    for op in ops:
        part.add_operation(op.op_type, [part.operand(o.name) if o is not None else None
                                        for o in op.inputs], dict(op.attrs), name=op.name,
                           output_names=[o.name for o in op.outputs])
    read = {o.name for op in ops for o in op.inputs if o is not None}
    for op in ops:
        for out in op.outputs:
            if out.name not in read:
                part.set_output(out.name, part.operand(out.name))
    return part


def last_times() -> dict | None:
    """{buildMs, runMs} of the last graph this process ran (run_chromium, or the last case of
    run_chromium_many), as the page measured them (None where it did not get that far), or
    None when it reached no page. For the zoo's cell of local chromium."""
    return None if _LAST_TIMES is None else dict(_LAST_TIMES)


def op_support_limits() -> dict[str, Any]:
    """`MLContext.opSupportLimits()` as this browser reports it."""
    return _session().page.evaluate("window.webnnOpSupportLimits()")


def browser_version() -> str:
    """The browser's name and version, e.g. "Chromium 153.0.8010.0"."""
    return f"Chromium {_session().browser.version}"


def browser_page(path: str | Path):
    """`(page, url)`: a new Playwright page in the shared browser, and the loopback URL where
    `path` (a file, or a folder's files) is now served. For tests and screenshots: the caller
    goes to the URL and closes the page."""
    session = _session()
    folder = session.new_folder()
    source = Path(path)
    if source.is_dir():
        shutil.copytree(source, folder, dirs_exist_ok=True)
        url = session.url(folder) + "/"
    else:
        shutil.copy2(source, folder / source.name)
        url = f"{session.url(folder)}/{source.name}"
    return session.browser.new_page(), url


def close_browser() -> None:
    """Stop the shared browser and server (at exit this happens by itself)."""
    global _SESSION
    if _SESSION is not None:
        _SESSION.close()
        _SESSION = None


# -- results ---------------------------------------------------------------------------------
def _input_bytes(graph: Graph, name: str, array: np.ndarray) -> bytes:
    data_type = graph.inputs[name].data_type
    if dtypes.info(data_type).bits == 4:
        from ..ir.operand import pack4

        return pack4(array).tobytes()
    return np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<"), copy=False).tobytes()


def _result(graph: Graph, raw: dict) -> dict[str, np.ndarray] | ConverterError:
    if "error" in raw:
        return _browser_error(graph, raw["error"])
    outputs = {}
    for name, operand in graph.outputs.items():
        outputs[name] = array_from_bytes(base64.b64decode(raw["outputs"][name]),
                                         operand.data_type, operand.shape)
    return outputs


def _browser_error(graph: Graph, error: dict) -> ConverterError:
    """The browser's exception as a ConverterError, located at the node its label names. Its
    `stage` attribute is the runner's stage that failed (import, weights, build, inputs,
    dispatch, read, timeout, page): whether the graph was built before it failed."""
    located = _located_error(graph, error)
    located.stage = error["stage"]
    return located


def _located_error(graph: Graph, error: dict) -> ConverterError:
    # One line, as every error here: backend messages carry newlines and log decorations.
    stage, message = error["stage"], " ".join(f"{error['name']}: {error['message']}".split())
    broken = _beyond_limits(graph) if stage == "build" else None
    if broken is not None:
        return broken.with_message(message)
    ops = {op.name: op for op in graph.operations}
    for label in _LABEL.findall(error["message"]):
        if label in ops:
            op = ops[label]
            return ConverterError(f"Chromium's WebNN rejected it while building: {message}",
                                  where=f"{op.op_type} '{op.name}'",
                                  fix="the browser's backend does not accept this op as given")
    if stage == "build":
        op = _first_refused(graph)
        if op is not None:
            return ConverterError(f"Chromium's WebNN builds the graph up to this op, not with "
                                  f"it: {message}", where=f"{op.op_type} '{op.name}'",
                                  fix="the browser's backend does not accept this op as given")
    return ConverterError(f"Chromium's WebNN failed at {stage}: {message}",
                          where=f"graph '{graph.name}' in chromium")


class _LimitsBroken:
    """The first of the browser's own limits (the chromium-litert target) a graph breaks."""

    def __init__(self, violation, count: int):
        self.violation, self.count = violation, count

    def with_message(self, message: str) -> ConverterError:
        v = self.violation
        more = f" (and {self.count - 1} more)" if self.count > 1 else ""
        if v.fix.startswith("no pass"):
            fix = f"{v.rule}; {v.fix}"
        else:
            fix = (f"{v.rule}: convert for the browser's limits with --target {BROWSER_TARGET} "
                   f"(Python: target='{BROWSER_TARGET}'), whose passes fit the graph to them")
        # Located at the op (as every browser error is), the operand named in the message.
        where, part = (f"{v.op} '{v.node}'", f"its {v.operand} '{v.tensor}'") if v.op else \
            (v.where(), "it")
        return ConverterError(f"Chromium's WebNN refuses the graph, which breaks its limits "
                              f"here ({part}: {v.found}{more}): {message}", where=where,
                              fix=fix)


# The target file of the browser run_chromium drives (Chromium 153 on LiteRT/XNNPACK).
BROWSER_TARGET = "chromium-litert"


def _beyond_limits(graph: Graph) -> _LimitsBroken | None:
    """The browser's limits the graph breaks (a graph converted without --target keeps
    uint4 weights, int64 scatter indices ...), so a build error names what to change rather
    than the op the build reached."""
    from ..targets.check import check

    found = check(graph, BROWSER_TARGET)
    return _LimitsBroken(found[0], len(found)) if found else None


# -- the shared browser ------------------------------------------------------------------------
class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".html": "text/html",
                      ".json": "application/json", ".weights": "application/octet-stream",
                      ".bin": "application/octet-stream", ".npy": "application/octet-stream"}

    def end_headers(self) -> None:
        # Every call writes new files under new folders, but a cached module would still be
        # a stale answer if a path were ever reused.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # requests are not news
        pass


class _Session:
    def __init__(self):
        binary = find_chromium()
        try:
            from playwright.sync_api import Error as PlaywrightError
            from playwright.sync_api import sync_playwright
        except ImportError:
            raise ConverterError("the playwright package is not installed",
                                 where="chromium runtime", fix="pip install playwright") from None
        self._error = PlaywrightError
        # Named by its owner: one a killed run left is removed by the next session.
        self.root = make_owned_folder(Path(tempfile.gettempdir()), "chromium")
        self._count = 0
        (self.root / "runner.html").write_text(
            '<!doctype html><meta charset="utf-8"><title>webnn runner</title>'
            '<script type="module" src="runner.js"></script>')
        shutil.copy2(_RUNNER, self.root / "runner.js")
        shutil.copy2(_BASE64, self.root / "base64.js")
        handler = functools.partial(_QuietHandler, directory=str(self.root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True,
                                        name="webnn-chromium-server")
        self._thread.start()
        self._playwright = sync_playwright().start()
        try:
            self.browser = launch(self._playwright.chromium, str(binary), list(LAUNCH_ARGS),
                                  PlaywrightError)
        except PlaywrightError as e:
            self._stop()
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise ConverterError(f"Chromium did not start: {first}", where=str(binary),
                                 fix="rerun `webnn-convert browser-install`") from None
        self.page = None
        try:
            self._open_runner()
        except BaseException:
            self.close()
            raise

    def _open_runner(self) -> None:
        if self.page is not None:
            self.page.close()
        self.page = self.browser.new_page()
        self.page.goto(f"http://127.0.0.1:{self.port}/runner.html")
        self.page.wait_for_function("window.webnnReady !== undefined")
        if not self.page.evaluate("window.webnnReady"):
            raise ConverterError("the browser has no navigator.ml", where="chromium runtime",
                                 fix="it must be launched with "
                                     "--enable-features=WebMachineLearningNeuralNetwork")

    def new_folder(self) -> Path:
        self._count += 1
        folder = self.root / f"b{self._count}"
        folder.mkdir()
        return folder

    def url(self, folder: Path) -> str:
        return f"http://127.0.0.1:{self.port}/{folder.relative_to(self.root).as_posix()}"

    def run_specs(self, specs: list[dict]) -> list[dict]:
        try:
            return self._evaluate(specs)
        except self._error as e:
            # The page died (a renderer crash takes every case of the batch with it): run
            # each case on its own fresh page, so each gets its own verdict.
            if len(specs) == 1:
                self._open_runner()
                return [{"error": {"stage": "page", "name": "PageError",
                                   "message": _first_line(e)}}]
            results = []
            for spec in specs:
                self._open_runner()
                try:
                    results.append(self._evaluate([spec])[0])
                except self._error as inner:
                    results.append({"error": {"stage": "page", "name": "PageError",
                                              "message": _first_line(inner)}})
            self._open_runner()
            return results

    def _evaluate(self, specs: list[dict]) -> list[dict]:
        return self.page.evaluate("([specs, ms]) => window.webnnRunCases(specs, ms)",
                                  [specs, _CASE_TIMEOUT_MS])

    def _stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        try:
            self._playwright.stop()
        except Exception:  # already stopped with the interpreter: nothing left to release
            pass
        shutil.rmtree(self.root, ignore_errors=True)

    def close(self) -> None:
        try:
            self.browser.close()
        except self._error:  # the browser is already gone
            pass
        self._stop()


def _first_line(e: Exception) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


_SESSION: _Session | None = None
_OWNER: int | None = None


def _session() -> _Session:
    global _SESSION, _OWNER
    if _SESSION is not None and _OWNER != threading.get_ident():
        raise ConverterError("the chromium runtime was started on another thread",
                             where="chromium runtime",
                             fix="call it from one thread (Playwright's sync API is bound to it)")
    if _SESSION is None:
        _SESSION = _Session()
        _OWNER = threading.get_ident()
    return _SESSION


atexit.register(close_browser)
