"""Browser latency: our emitted WebNN module vs onnxruntime-web's WebNN EP, in the same Chromium.

    python bench/bench_browser.py [--models tiny_cnn squeezenet resnet50 paddleocr_cls]
                                  [--runs 30] [--warmup 5]
                                  [--runtime chromium|device[:NAME[:TYPE]] ...] [--server URL]

Each model is converted with `webnn-convert convert MODEL -o model.js --target chromium-litert`
(the module users ship) and run by headless Chromium 153's WebNN (`webnn-convert
browser-install`); the same ONNX file is run in the same browser by onnxruntime-web 1.30
(npm `onnxruntime-web@1.30.0`, installed once into ~/.cache/webnn-converter/bench/ort-web) with
`executionProviders: [{name: 'webnn', deviceType: 'cpu'}]` and, for a model whose inputs have
symbolic dims, `freeDimensionOverrides` giving each the value our conversion used: the WebNN EP
takes only static shapes, and without the overrides ORT-web silently runs such a model on its
WASM provider (issue 28: the PaddleOCR classifier was timed that way, and the 4x "lead" was
ORT-web on WASM). ORT-web's warnings are collected from the page's console: a model any of
whose nodes ORT-web did not assign to WebNN is marked in the table, so a fallback is never
timed unnoticed. The model is loaded by URL as a web page would.
Both are served from a stdlib HTTP server on 127.0.0.1 (no traffic leaves the machine) and
measured by the same page code (bench/bench_browser.js): session setup (ours: import, context,
weights, build, tensors; ORT: `InferenceSession.create`), then the median of --runs iterations
after --warmup, an iteration being inputs uploaded, compute, outputs read back. Each runtime
gets a fresh page per model; ORT-web's setup includes starting its wasm runtime, which a page
pays once. Timers in a page that is not cross-origin isolated tick in 0.1 ms steps, so
sub-millisecond medians are that coarse. Prints a Markdown table of ratios (ours / ORT-web: below 1 is
faster). Models: models/tiny_cnn.onnx, the light_* squeezenet and resnet50
(converter.testing.light_models, seeded weights) and one public model
(the PaddleOCR text-direction classifier from models/zoo.json).

Per device: `--runtime` (repeatable; default chromium, the local headless Chromium above)
also takes device, device:NAME and device:NAME:TYPE, the devices that have the page of
`webnn-convert serve` open (`--server URL`, default the server `serve` started last here; device:
every connected device on its first deviceType). Each gets its own table, headed by its name,
browser and platform, and deviceType. On a device our module runs as a job of the served page
(the same graph, converted with the same options, written as .webnn and emitted by the
server): its build time, and the median of --runs runs after --warmup on the built graph,
as the page measures them; its first outputs are compared with ONNX Runtime's on the source
model. ORT-web is not run there: the device page runs only modules its server emitted (issue
28's safety rule), so its column says so rather than borrowing local Chromium's time.
"""
from __future__ import annotations

import argparse
import functools
import http.server
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ORT_WEB_VERSION = "1.30.0"
LIGHT = ("squeezenet", "resnet50")  # light_* models (converter.testing.light_models)
SAMPLES = {"tiny_cnn": ROOT / "models" / "tiny_cnn.onnx"}  # the repository's own models
PUBLIC = {"paddleocr_cls": "ch_ppocr_mobile_v2.0_cls_infer"}  # label -> models/zoo.json id
_PAGE_TIMEOUT_MS = 600_000


def ort_web_dist() -> Path:
    """onnxruntime-web's dist folder, installed with npm into the cache on first use."""
    from converter.zoo.fetch import cache_dir

    prefix = cache_dir() / "bench" / "ort-web"
    dist = prefix / "node_modules" / "onnxruntime-web" / "dist"
    stamp = prefix / "node_modules" / "onnxruntime-web" / "package.json"
    if not stamp.exists() or json.loads(stamp.read_text())["version"] != ORT_WEB_VERSION:
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--ignore-scripts",
                        "--prefix", str(prefix), f"onnxruntime-web@{ORT_WEB_VERSION}"],
                       check=True, capture_output=True)
    return dist


def source_model(name: str, folder: Path) -> tuple[Path, list[str]]:
    """The ONNX file for a model label, and the CLI options its conversion needs."""
    if name in SAMPLES:
        return SAMPLES[name], []
    if name in LIGHT:
        from converter.testing.light_models import light_model

        return light_model(name, folder, seed=0), []
    from converter.zoo.fetch import fetch_model

    entry = next(m for m in json.loads((ROOT / "models" / "zoo.json").read_text())["models"]
                 if m["id"] == PUBLIC[name])
    options = [arg for inp, shape in entry.get("inputShapes", {}).items()
               for arg in ("--input-shape", f"{inp}={','.join(map(str, shape))}")]
    return fetch_model(entry["source"]), options


def prepare(name: str, root: Path) -> dict:
    """A served folder for one model: model.js (+ weights) and model.onnx; the page's spec."""
    import converter

    folder = root / name
    folder.mkdir()
    src, options = source_model(name, folder)
    shutil.copy2(src, folder / "model.onnx")
    subprocess.run([sys.executable, "-m", "cli.main", "convert", str(folder / "model.onnx"),
                    "-o", str(folder / "model.js"), "--target", "chromium-litert", *options],
                   check=True, capture_output=True, cwd=ROOT)
    graph = converter.load(folder / "model.onnx", input_shapes=_shapes(options) or None)
    inputs = [{"name": n, "dataType": d.data_type, "shape": list(d.shape)}
              for n, d in graph.input_descs().items()]
    # URLs relative to the page (and to bench.js beside it), so the root may be served anywhere
    ort_model, overrides = static_for_ort(folder / "model.onnx", inputs)
    return {"module": f"./{name}/model.js", "onnx": f"./{name}/{ort_model.name}",
            "inputs": inputs, "ortModule": "./ort/ort.all.min.mjs", "ortWasm": "./ort/",
            "freeDimensionOverrides": overrides, "ortShapes": ort_model.name != "model.onnx"}


def static_for_ort(model: Path, inputs: list[dict]) -> tuple[Path, dict[str, int]]:
    """What ORT-web is given so that its WebNN EP (static shapes only) takes `model` at the sizes
    our conversion used, in ORT's documented ways: `freeDimensionOverrides` (each symbolic dim
    by name) when every open dim has a name of its own; else (dims unnamed, or one name at two
    sizes: the PaddleOCR classifier's height and width are both '?') a copy with the input
    shapes fixed, as ORT's docs say to do (their tool, onnxruntime.tools.make_dynamic_shape_fixed,
    refuses this model: it fixes a dim name everywhere, so '?' cannot be 48 and 192)."""
    import onnx

    shapes = {i["name"]: i["shape"] for i in inputs}
    proto = onnx.load(str(model), load_external_data=False)
    found: dict[str, int] = {}
    by_name = True
    for value in proto.graph.input:
        if value.name not in shapes:
            continue  # an initializer listed as an input
        for dim, size in zip(value.type.tensor_type.shape.dim, shapes[value.name]):
            if dim.dim_param and dim.dim_param != "?":
                by_name &= found.setdefault(dim.dim_param, size) == size
            elif not dim.dim_value > 0:
                by_name = False  # open but nameless: no override can reach it
    if by_name:
        return model, found
    for value in proto.graph.input:  # each input dim set to its size (its name, if any, goes)
        for dim, size in zip(value.type.tensor_type.shape.dim, shapes.get(value.name, [])):
            dim.dim_value = size
    fixed = model.with_name("model.static.onnx")
    onnx.save(proto, str(fixed))
    return fixed, {}


def _shapes(options: list[str]) -> dict:
    pairs = [options[i + 1] for i in range(0, len(options), 2)]
    return {p.split("=")[0]: [int(v) for v in p.split("=")[1].split(",")] for p in pairs}


def write_page(root: Path, ort_dist: Path | None, script: Path | None = None) -> None:
    """The bench page and its script (default bench_browser.js) in `root`, with ORT-web's dist
    linked in as `ort/`."""
    (root / "page.html").write_text('<!doctype html><meta charset="utf-8">'
                                    '<script type="module" src="bench.js"></script>')
    shutil.copy2(script or ROOT / "bench" / "bench_browser.js", root / "bench.js")
    if ort_dist is not None:
        (root / "ort").symlink_to(ort_dist, target_is_directory=True)


class _Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".js": "text/javascript", ".mjs": "text/javascript",
                      ".wasm": "application/wasm", ".onnx": "application/octet-stream",
                      ".weights": "application/octet-stream"}

    def log_message(self, format: str, *args) -> None:  # requests are not news
        pass


class BenchBrowser:
    """The served root (page, ORT-web, models) and one headless Chromium."""

    def __init__(self, root: Path, ort_dist: Path | None, browser=None,
                 script: Path | None = None):
        """`browser`: a Playwright browser already running (the tests' shared one), or None
        to launch Chromium here; `script`: the page's code (default bench_browser.js)."""
        self.root = root
        write_page(root, ort_dist, script)
        handler = functools.partial(_Handler, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/page.html"
        self._pw = None
        self.browser = browser
        if browser is None:
            from playwright.sync_api import Error, sync_playwright

            from converter.runtimes.browser_install import find_chromium
            from converter.runtimes.chromium import LAUNCH_ARGS
            from converter.runtimes.chromium_sandbox import launch

            self._pw = sync_playwright().start()
            self.browser = launch(self._pw.chromium, str(find_chromium()), list(LAUNCH_ARGS),
                                  Error)

    def run(self, which: str, spec: dict) -> dict:
        """One runtime on one model, on a fresh page: {setupMs, medianMs, sample}."""
        page = self.browser.new_page()
        said: list[str] = []
        page.on("console", lambda message: said.append(message.text))
        try:
            page.goto(self.url)
            page.wait_for_function("window.benchReady !== undefined")
            page.set_default_timeout(_PAGE_TIMEOUT_MS)
            result = page.evaluate(f"(spec) => window.{which}(spec)", spec)
        finally:
            page.close()
        # ORT's words when a node is left to another provider than the one asked for
        result["notAllOnWebnn"] = any("not assigned to the preferred execution providers"
                                      in line or "fallback" in line.lower() for line in said)
        return result

    def close(self) -> None:
        if self._pw is not None:  # launched here
            self.browser.close()
            self._pw.stop()
        self.server.shutdown()
        self.server.server_close()


def devices_named(runtimes: list[str]) -> list[tuple[dict, str]]:
    """(the device as the server describes it, its deviceType) for each device runtime:
    device meaning every connected device (on its first deviceType)."""
    from converter.devices.client import device_limits, devices

    found = []
    for runtime in runtimes:
        names = [f"device:{d['name']}" for d in devices()] if runtime == "device" else [runtime]
        for name in names:
            device, kind, _ = device_limits(name)
            if not any(d["name"] == device["name"] and k == kind for d, k in found):
                found.append((device, kind))
    return found


def run_on_devices(name: str, root: Path, where: list[tuple[dict, str]], runs: int,
                   warmup: int) -> list[dict]:
    """Our module for model `name` (prepare()'s folder) on each device: {buildMs, medianMs,
    differs} (differs: the first outputs' largest difference from ONNX Runtime's), or
    {error}."""
    import numpy as np
    import onnxruntime

    import converter
    from converter.devices.client import last_run, run_on_device
    from converter.errors import ConverterError

    folder = root / name
    _, options = source_model(name, folder)
    subprocess.run([sys.executable, "-m", "cli.main", "convert", str(folder / "model.onnx"),
                    "-o", str(folder / "model.webnn"), "--target", "chromium-litert", *options],
                   check=True, capture_output=True, cwd=ROOT)
    graph = converter.load(folder / "model.webnn")
    feeds = {}
    for input_name, operand in graph.inputs.items():  # bench_browser.js's feedsFor
        count = int(np.prod(operand.shape))
        feeds[input_name] = ((np.arange(count) % 251) / np.float32(251)).astype(
            np.float32).reshape(operand.shape)
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"),
                                           providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)[0].reshape(-1)[:4]
    results = []
    for device, kind in where:
        try:
            outputs, _ = run_on_device(graph, feeds, f"device:{device['name']}:{kind}",
                                       runs=runs, warmup=warmup)
        except ConverterError as e:
            results.append({"error": e.line()})
            continue
        done = last_run()
        first = next(iter(outputs.values())).reshape(-1)[:4].astype(np.float64)
        results.append({"buildMs": done["buildMs"], "medianMs": done["medianMs"],
                        "differs": float(np.max(np.abs(first - want)))})
        print(f"{name} on device '{device['name']}': {results[-1]}", file=sys.stderr)
    return results


def print_device_table(device: dict, kind: str, rows: list[tuple[str, dict]]) -> None:
    print(f"\n### device '{device['name']}': {device.get('browser')} on "
          f"{device.get('platform') or 'an unknown platform'}, deviceType {kind}\n")
    print("| model | ours ms | ours build ms | first outputs differ from ONNX Runtime by | "
          "ORT-web WebNN ms |")
    print("|---|---|---|---|---|")
    for name, result in rows:
        if "error" in result:
            print(f"| {name} | failed: {result['error']} | - | - | - |")
            continue
        print(f"| {name} | {result['medianMs']:.2f} | {result['buildMs']:.0f} | "
              f"{result['differs']:.1e} | not run: the device page runs only modules its "
              f"server emitted |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="+", default=[*SAMPLES, *LIGHT, *PUBLIC])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runtime", action="append", metavar="chromium|device[:NAME[:TYPE]]",
                    help="Where to run (repeatable; default chromium): local headless "
                         "Chromium, or a device with the page of `webnn-convert serve` open "
                         "(device: every connected one).")
    ap.add_argument("--server", metavar="URL",
                    help="The device server's URL as `serve` printed it (default: the one it "
                         "started last here).")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from converter.devices.client import use_server
    from converter.devices.protocol import parse_runtime

    runtimes = args.runtime or ["chromium"]
    for runtime in runtimes:
        if runtime != "chromium":
            parse_runtime(runtime)  # device, device:NAME, device:NAME:TYPE, or it raises
    use_server(args.server)
    where = devices_named([r for r in runtimes if r != "chromium"])
    rows, by_device = [], {i: [] for i in range(len(where))}
    version = None
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp:
        root = Path(tmp)
        bench = BenchBrowser(root, ort_web_dist()) if "chromium" in runtimes else None
        try:
            for name in args.models:
                spec = {**prepare(name, root), "runs": args.runs, "warmup": args.warmup}
                if bench is not None:
                    ours = bench.run("benchOurs", spec)
                    ort = {**bench.run("benchOrt", spec), "ortShapes": spec["ortShapes"]}
                    rows.append((name, ours, ort))
                    print(f"{name}: ours {ours}, ort-web {ort}", file=sys.stderr)
                if where:
                    for i, result in enumerate(run_on_devices(name, root, where, args.runs,
                                                              args.warmup)):
                        by_device[i].append((name, result))
        finally:
            if bench is not None:
                version = bench.browser.version
                bench.close()
    if bench is not None:
        print_local_table(version, rows)
    for i, (device, kind) in enumerate(where):
        print_device_table(device, kind, by_device[i])


def print_local_table(version: str, rows: list) -> None:
    print(f"### local chromium: Chromium {version} (headless, this machine), deviceType cpu\n")
    print(f"| model | ours ms | ORT-web WebNN ms | latency ratio | ours setup ms | "
          f"ORT-web setup ms | setup ratio | first outputs differ by | ORT-web options |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, ours, ort in rows:
        overrides = ort.get("freeDimensionOverrides") or {}
        options = ("freeDimensionOverrides " + json.dumps(overrides)) if overrides else \
            ("input shapes fixed in the .onnx" if ort.get("ortShapes") else "-")
        if ort["notAllOnWebnn"]:
            options += "; some nodes NOT on WebNN (see its warnings)"
        print(f"| {name} | {ours['medianMs']:.2f} | {ort['medianMs']:.2f} | "
              f"{ours['medianMs'] / ort['medianMs']:.2f} | {ours['setupMs']:.0f} | "
              f"{ort['setupMs']:.0f} | {ours['setupMs'] / ort['setupMs']:.2f} | "
              f"{max(abs(a - b) for a, b in zip(ours['sample'], ort['sample'])):.1e} | "
              f"{options} |")


if __name__ == "__main__":
    main()
