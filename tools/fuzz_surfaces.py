"""Hostile cases for the surfaces beside the model importers (issue 26): zoo manifests, files
near the model, the files a command writes, the terminal, reports, sizes, and what a run leaves.

Each maker writes its case into `folder` (the corpus root is `root`) and returns a `Made`: the
entry file, the commands to run on it when the seven model commands are not the point (an
argument list after the entry, `{out}` the run's folder and `{case}` the case's own folder, and
the outputs a success may leave), and whether the only safe outcome is a refusal.

What tools/fuzz.py judges besides its first seven kinds (see its docstring): a marker file that
only a hostile build backend writes (`executes`), a raw control or bidi character or a forged line
on the terminal, raw markup in a Markdown report (`escape`), a file of the corpus changed in
place (`overwrote`), and a success where only a refusal is safe (`accepted`).
"""
from __future__ import annotations

import io
import json
import os
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from onnx import TensorProto, helper, numpy_helper

MARKER = "PWNED"  # written into root/outside by the hostile sdist's build backend, if it runs
# A model string that tries every terminal trick: OSC 52 (the clipboard), OSC 0 (the window
# title), CSI 2J (clear the screen), a forged line of our own output, a bidi override, C1 CSI.
TERMINAL = ("n\x1b]52;c;Q0FOQVJZ\x07\x1b]0;pwned\x07\x1b[2J\r\nFORGED: verified 0 errors"
            "\u202egnp.exe\x9b31m[bold]x[/]")
MARKUP = "<script>alert(1)</script><img src=x onerror=alert(1)>[a](javascript:alert(1))\x1b[2J"
ZOO = "zoo"  # the zoo commands run with `--timeout 5`: a model that stalls is recorded, not waited


@dataclass
class Made:
    entry: Path
    commands: dict[str, tuple[list[str], list[str]]] | None = None
    must_refuse: bool = False
    # A check of a successful run's folder: why it is wrong, or None.
    check: Callable[[Path], str | None] | None = None
    extra: dict = field(default_factory=dict)
    outcome: Callable[[Path, int | None], str | None] | None = None  # see fuzz_corpus.Case
    entry_arg: bool = True
    timeout: float | None = None


def _save(model, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())
    return path


def _model(nodes, inits, inputs, outputs, name="g", opset=17, domains=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, inits)
    imports = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, 1) for d in domains]
    return helper.make_model(graph, opset_imports=imports)


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _add(folder: Path, name="m.onnx", weight=None, graph_name="g", node_name="add",
         out="y") -> Path:
    w = weight if weight is not None else numpy_helper.from_array(np.ones(16, np.float32), "w")
    node = helper.make_node("Add", ["x", w.name], [out], name=node_name)
    return _save(_model([node], [w], [_vi("x", [16])], [_vi(out, [16])], graph_name),
                 folder / name)


def external_tensor(name: str, dims, location: str, offset=None, length=None
                    ) -> TensorProto:
    """A float tensor whose data lives in `location` (offset, length as given, or left out)."""
    t = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=list(dims))
    t.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            entry = t.external_data.add()
            entry.key, entry.value = key, str(value)
    return t


# -- 1. zoo manifests are data ----------------------------------------------------------------
def _manifest(folder: Path, models: list[dict], name="z.json") -> Path:
    path = folder / name
    path.write_text(json.dumps({"format": "webnn-converter-zoo", "version": 1,
                                "models": models}, ensure_ascii=False), encoding="utf-8")
    return path


def _zoo_commands(*extra: str) -> dict[str, tuple[list[str], list[str]]]:
    reports = ["r.md", "r.html", "r.json", "results.jsonl"]
    return {"zoo": (["--timeout", "5", "--report", "{out}/r.md", "--report", "{out}/r.html",
                     "--report", "{out}/r.json", "--results", "{out}/results.jsonl", *extra],
                    reports)}


def _evil_sdist(root: Path) -> Path:
    """A real sdist whose in-tree build backend writes root/outside/PWNED when pip imports it:
    no build requirement, so pip needs no index to run it."""
    path = root / "outside" / "evil-1.0.tar.gz"
    if path.exists():
        return path
    marker = root / "outside" / MARKER
    files = {
        "evil-1.0/pyproject.toml": '[build-system]\nrequires = []\nbuild-backend = "evil"\n'
                                   'backend-path = ["."]\n',
        "evil-1.0/evil.py": f"open({str(marker)!r}, 'w').write('ran')\n"
                            "def get_requires_for_build_wheel(c=None): return []\n"
                            "def prepare_metadata_for_build_wheel(d, c=None): raise SystemExit(1)\n"
                            "def build_wheel(d, c=None, m=None): raise SystemExit(1)\n",
        "evil-1.0/PKG-INFO": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
    }
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _source(package: str, version: str = "1.0", inner: str = "m.onnx") -> dict:
    return {"id": "m", "source": {"package": package, "version": version, "path": inner,
                                  "sha256": "0" * 64}}


def zoo_source(kind: str):
    """A manifest whose `source` is a command in disguise, or a path out of the cache."""
    def make(folder: Path, root: Path) -> Made:
        if kind == "direct-reference":
            model = _source(f"evil @ {_evil_sdist(root).as_uri()}")
        elif kind == "https-reference":
            model = _source("evil @ https://127.0.0.1:9/evil-1.0.tar.gz")
        elif kind == "option":
            model = _source("--index-url=http://127.0.0.1:9/simple")
        elif kind == "absolute-package":
            model = _source(str(root / "outside" / "escaped"))
        elif kind == "dotdot-version":
            # cache/wheels/p-1 then up to the fuzz folder (see tools/fuzz.py's layout)
            model = _source("p", "1/" + "../" * 6 + "corpus/outside/escaped")
        elif kind == "wheel-member-dotdot":
            model = _source("p", "1.0", "../../../corpus/outside/escaped.onnx")
        else:
            raise ValueError(kind)
        return Made(_manifest(folder, [model]), _zoo_commands(), must_refuse=True)
    return make


def zoo_local(kind: str):
    """A manifest whose local `path` leaves its folder, or names a file that is not a model."""
    def make(folder: Path, root: Path) -> Made:
        if kind == "absolute":
            path = str(root / "seeds" / "tiny_cnn.onnx")
        elif kind == "dotdot":
            path = "../seeds/tiny_cnn.onnx"
        elif kind == "hidden":
            (folder / ".hidden").mkdir()
            (folder / ".hidden" / "m.onnx").write_bytes((root / "seeds" / "tiny_cnn.onnx")
                                                        .read_bytes())
            path = ".hidden/m.onnx"
        elif kind == "hardlink":
            os.link(root / "seeds" / "tiny_cnn.onnx", folder / "m.onnx")
            path = "m.onnx"
        elif kind == "symlink-out":
            os.symlink(root / "seeds" / "tiny_cnn.onnx", folder / "m.onnx")
            path = "m.onnx"
        else:
            raise ValueError(kind)
        return Made(_manifest(folder, [{"id": "m", "path": path}]), _zoo_commands(),
                    must_refuse=True)
    return make


def hub_cache(kind: str):
    """A Hugging Face cache (ROOT/snapshots/REV/m.onnx, its external data a link into
    ROOT/blobs/HASH): read as it is when the link lands on a single-link blob of the same
    cache; refused when `blobs` is itself a link, the blob is not named by a hash, the link
    goes into another cache's blobs, or the blob is a hard link to the canary."""
    def make(folder: Path, root: Path) -> Made:
        canary = (root / "canary.bin").read_bytes()
        cache = folder / "hub" / "models--o--m"
        snapshot = cache / "snapshots" / ("a" * 40)
        snapshot.mkdir(parents=True)
        blob_name = "b" * 64
        if kind == "blobs-is-link":
            (folder / "elsewhere").mkdir()
            (folder / "elsewhere" / blob_name).write_bytes(canary)
            (cache / "blobs").symlink_to(folder / "elsewhere", target_is_directory=True)
        else:
            (cache / "blobs").mkdir()
        if kind == "ok":
            (cache / "blobs" / blob_name).write_bytes(np.ones(16, np.float32).tobytes())
        elif kind == "blob-not-hash":
            blob_name = "secret"
            (cache / "blobs" / blob_name).write_bytes(canary)
        elif kind == "blob-hardlink":
            os.link(root / "canary.bin", cache / "blobs" / blob_name)
        elif kind == "other-cache":
            other = folder / "hub" / "models--o--other" / "blobs"
            other.mkdir(parents=True)
            (other / blob_name).write_bytes(canary)
        link = snapshot / "m.onnx_data"
        target = (f"../../../models--o--other/blobs/{blob_name}" if kind == "other-cache"
                  else f"../../blobs/{blob_name}")
        link.symlink_to(target)
        entry = _add(snapshot, weight=external_tensor("w", [16], "m.onnx_data", 0, 64))
        return Made(entry, must_refuse=kind != "ok")
    return make


def followed_link(folder: Path, root: Path) -> Made:
    """`--follow-symlinks` on a model that links into a folder whose external data is a hard
    link to the canary: the link is followed, the folder rules still hold there."""
    store, use = folder / "store", folder / "use"
    store.mkdir()
    use.mkdir()
    os.link(root / "canary.bin", store / "w.bin")
    _add(store, weight=external_tensor("w", [16], "w.bin", 8, 64))
    (use / "m.onnx").symlink_to(store / "m.onnx")
    follow = "--follow-symlinks"
    return Made(use / "m.onnx", {
        "convert.webnn": (["-o", "{out}/o.webnn", follow], []),
        "inspect": ([follow], []), "validate": ([follow], []),
        "run": (["--output-dir", "{out}/r", follow], []),
    }, must_refuse=True)


# -- 3. never overwrite what you read (zoo side) -------------------------------------------------
def zoo_writes_over(kind: str):
    def make(folder: Path, root: Path) -> Made:
        _add(folder)
        manifest = _manifest(folder, [{"id": "m", "path": "m.onnx"}])
        if kind == "report-is-manifest":
            args = ["--report", "{case}/z.json"]
        elif kind == "results-is-manifest":
            args = ["--results", "{case}/z.json"]
        elif kind == "report-is-results":
            args = ["--report", "{out}/r.json", "--results", "{out}/r.json"]
        elif kind == "report-is-baseline":
            (folder / "b.json").write_text("{}", encoding="utf-8")
            args = ["--baseline", "{case}/b.json", "--report", "{case}/b.json"]
        else:
            raise ValueError(kind)
        return Made(manifest, {ZOO: (["--timeout", "5", *args], [])}, must_refuse=True)
    return make


# -- 5. Markdown reports; 4. terminal ----------------------------------------------------------
def zoo_markup(folder: Path, root: Path) -> Made:
    """A local model whose op type, domain and node name are markup and terminal escapes, so
    the error the zoo reports quotes them; and an id-less path name of the same kind."""
    node = helper.make_node(MARKUP + TERMINAL, ["x"], ["y"], name=MARKUP + TERMINAL,
                            domain="evil.\x1b]0;t\x07")
    _save(_model([node], [], [_vi("x", [16])], [_vi("y", [16])], MARKUP,
                 domains=["evil.\x1b]0;t\x07"]), folder / "m.onnx")
    models = [{"id": "markup", "path": "m.onnx"},
              {"id": "missing", "path": "<script>x</script>\x1b[2J.onnx"}]
    return Made(_manifest(folder, models), _zoo_commands())


def onnx_terminal_names(unsupported: bool):
    """Every model string a command prints (graph, node, tensor names, op type, domain) as a
    terminal attack; `unsupported` also makes the op one no rule knows, so errors quote it."""
    def make(folder: Path, root: Path) -> Made:
        w = numpy_helper.from_array(np.ones(16, np.float32), "w" + TERMINAL)
        if unsupported:
            node = helper.make_node("Evil" + TERMINAL, ["x" + TERMINAL, w.name],
                                    ["y" + TERMINAL], name="n" + TERMINAL, domain="d.evil")
            domains = ["d.evil"]
        else:
            node = helper.make_node("Add", ["x" + TERMINAL, w.name], ["y" + TERMINAL],
                                    name="n" + TERMINAL)
            domains = []
        model = _model([node], [w], [_vi("x" + TERMINAL, [16])], [_vi("y" + TERMINAL, [16])],
                       "g" + TERMINAL, domains=domains)
        return Made(_save(model, folder / "m.onnx"))
    return make


def json_terminal_names(folder: Path, root: Path) -> Made:
    doc = {"format": "webnn-graph-json", "version": 2, "name": "g" + TERMINAL,
           "inputs": {"x" + TERMINAL: {"dataType": "float32", "shape": [2]}}, "consts": {},
           "nodes": [{"id": "y" + TERMINAL, "op": "relu", "inputs": ["x" + TERMINAL],
                      "options": {}}],
           "outputs": {"y" + TERMINAL: "y" + TERMINAL}}
    path = folder / "g.json"
    path.write_text(json.dumps(doc), encoding="utf-8")  # \u escapes: valid JSON, hostile text
    return Made(path)


# -- 2. files near the model are not the model -------------------------------------------------
def near_the_model(kind: str):
    """External data or weights that reach the canary through a hidden folder, a hard link,
    or a length past what the tensor declares."""
    def make(folder: Path, root: Path) -> Made:
        canary = (root / "canary.bin").read_bytes()
        if kind == "onnx-hidden":
            (folder / ".ssh").mkdir()
            (folder / ".ssh" / "id_rsa").write_bytes(canary)
            hidden = external_tensor("w", [16], ".ssh/id_rsa", 8, 64)
            return Made(_add(folder, weight=hidden))
        if kind == "onnx-hardlink":
            os.link(root / "canary.bin", folder / "w.bin")
            return Made(_add(folder, weight=external_tensor("w", [16], "w.bin", 8, 64)))
        if kind == "onnx-overlong":
            (folder / "w.bin").write_bytes(np.ones(16, np.float32).tobytes() + canary)
            return Made(_add(folder, weight=external_tensor("w", [16], "w.bin", 0,
                                                      64 + len(canary))))
        if kind == "webnn-hardlink":
            graph = ('webnn_graph "g" v1 {\n  inputs { x: u8[64]; }\n  consts { w: u8[64] '
                     '@weights("w"); }\n  nodes { y = add(x, w); }\n  outputs { y; }\n}\n')
            (folder / "g.webnn").write_text(graph, encoding="utf-8")
            (folder / "g.manifest.json").write_text(json.dumps({
                "format": "wg-weights-manifest", "version": 1, "endianness": "little",
                "tensors": {"w": {"dataType": "uint8", "shape": [64], "byteOffset": 8,
                                  "byteLength": 64, "layout": "row-major"}}}))
            os.link(root / "canary.bin", folder / "g.weights")
            return Made(folder / "g.webnn")
        raise ValueError(kind)
    return make


# -- 3. never overwrite what you read -----------------------------------------------------------
def writes_over_source(kind: str):
    """A command whose output, or one of its sidecars, is a file the command reads."""
    def make(folder: Path, root: Path) -> Made:
        (folder / "m.weights").write_bytes(np.ones(16, np.float32).tobytes())
        external = external_tensor("w", [16], "m.weights", 0, 64)
        if kind == "onnx-external-is-sidecar":
            entry = _add(folder, weight=external)
            commands = {"convert.webnn": (["-o", "{case}/m.webnn"], []),
                        "convert.json": (["-o", "{case}/m.json"], []),
                        "convert.js": (["-o", "{case}/m.js"], [])}
        elif kind == "graph-is-output":
            src = root / "seeds"
            for suffix in (".webnn", ".manifest.json", ".weights"):
                (folder / f"g{suffix}").write_bytes((src / f"tiny_cnn{suffix}").read_bytes())
            entry = folder / "g.webnn"
            commands = {"convert.webnn": (["-o", "{case}/g.webnn"], []),
                        "convert.json": (["-o", "{case}/g.json"], [])}
        elif kind == "npy-input-is-output":
            entry = _add(folder)
            np.save(folder / "y.npy", np.ones(16, np.float32))  # the input, and output y's name
            commands = {"run": (["--input", "x={case}/y.npy", "--output-dir", "{case}"], [])}
        else:
            raise ValueError(kind)
        return Made(entry, commands, must_refuse=True)
    return make


def run_outputs_alike(folder: Path, root: Path) -> Made:
    """Two outputs whose names map to one file name on a careless writer (`y/1`, `y:1`)."""
    nodes = [helper.make_node("Relu", ["x"], ["y/1"]), helper.make_node("Neg", ["x"], ["y:1"])]
    entry = _save(_model(nodes, [], [_vi("x", [16])], [_vi("y/1", [16]), _vi("y:1", [16])]),
                  folder / "m.onnx")

    def two_files(out: Path) -> str | None:
        found = [p for p in (out / "r").rglob("*.npy")] if (out / "r").is_dir() else []
        distinct = {p.read_bytes() for p in found}
        return None if len(distinct) == 2 else f"{len(found)} .npy files for 2 outputs"
    return Made(entry, {"run": (["--output-dir", "{out}/r"], ["r", "r/*"])}, check=two_files)


# -- 6. size before work ---------------------------------------------------------------------
def sparse(name: str, size: int):
    """A file of `size` zero bytes that takes no disk (a hole)."""
    def make(folder: Path, root: Path) -> Made:
        with open(folder / name, "wb") as f:
            f.truncate(size)
        return Made(folder / name)
    return make


def tiny_fields(folder: Path, root: Path) -> Made:
    """A valid protobuf of a million and more 2-byte fields (field 1, varint 0: the model's
    ir_version again and again): walked field by field it costs seconds; refused at the field
    cap (importers/onnx/wire.py) in a fraction of one."""
    path = folder / "m.onnx"
    path.write_bytes(b"\x08\x00" * ((1 << 20) + 1))
    return Made(path, must_refuse=True)


def webnn_long_token(folder: Path, root: Path) -> Made:
    path = folder / "g.webnn"
    with open(path, "w", encoding="utf-8") as f:
        f.write('webnn_graph "')
        f.write("a" * (16 << 20))
        f.write('" v1 {\n  inputs { x: f32[2]; }\n  nodes { y = relu(x); }\n  outputs { y; }\n}\n')
    return Made(path)


def onnx_loops(depth: int, trip: int):
    """Loops nested `depth` deep, each of `trip` iterations; the innermost adds one to the
    carried value (names differ per level: a subgraph may not shadow its outer scope)."""
    def make(folder: Path, root: Path) -> Made:
        def body(level: int) -> TensorProto:
            p = f"l{level}_"
            if level == depth - 1:
                nodes = [helper.make_node("Add", [p + "v", "one"], [p + "v_out"])]
            else:
                q = f"l{level + 1}_"
                nodes = [helper.make_node("Constant", [], [q + "trip"],
                                          value=numpy_helper.from_array(np.int64(trip))),
                         helper.make_node("Loop", [q + "trip", "", p + "v"], [p + "v_out"],
                                          body=body(level + 1))]
            nodes.insert(0, helper.make_node("Identity", [p + "c"], [p + "c_out"]))
            return helper.make_graph(
                nodes, f"loop{level}",
                [_vi(p + "i", [], TensorProto.INT64), _vi(p + "c", [], TensorProto.BOOL),
                 _vi(p + "v", [16])],
                [_vi(p + "c_out", [], TensorProto.BOOL), _vi(p + "v_out", [16])])
        consts = [numpy_helper.from_array(np.int64(trip), "l0_trip"),
                  numpy_helper.from_array(np.ones(16, np.float32), "one")]
        loop = helper.make_node("Loop", ["l0_trip", "", "x"], ["y"], body=body(0))
        model = _model([loop], consts, [_vi("x", [16])], [_vi("y", [16])])
        return Made(_save(model, folder / "m.onnx"))
    return make


def npy_claims(folder: Path, root: Path) -> Made:
    """An .npy whose header claims 10**12 float32 elements, followed by 64 bytes."""
    entry = _add(folder)
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    (folder / "x.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little")
                                   + header.encode() + b"\x00" * 64)
    return Made(entry, {"run": (["--input", "x={case}/x.npy", "--output-dir", "{out}/r"], []),
                        "verify": (["--input", "x={case}/x.npy"], [])}, must_refuse=True)


def zoo_deep(kind: str):
    def make(folder: Path, root: Path) -> Made:
        deep = "[" * 100_000 + "]" * 100_000
        if kind == "manifest-json":
            path = folder / "z.json"
            path.write_text('{"models": ' + deep + "}", encoding="utf-8")
            return Made(path, _zoo_commands(), must_refuse=True)
        if kind == "manifest-toml":
            path = folder / "z.toml"
            path.write_text("models = " + deep + "\n", encoding="utf-8")
            return Made(path, _zoo_commands(), must_refuse=True)
        if kind == "baseline":
            _add(folder)
            (folder / "b.json").write_text('{"models": ' + deep + "}", encoding="utf-8")
            return Made(_manifest(folder, [{"id": "m", "path": "m.onnx"}]),
                        _zoo_commands("--baseline", "{case}/b.json"), must_refuse=True)
        raise ValueError(kind)
    return make


def zoo_sparse_model(folder: Path, root: Path) -> Made:
    """A 200 GB hole as a local model with a sha256 to check: hashing it takes half an hour."""
    with open(folder / "m.onnx", "wb") as f:
        f.truncate(200 << 30)
    return Made(_manifest(folder, [{"id": "m", "path": "m.onnx", "sha256": "0" * 64}]),
                _zoo_commands())


# -- 7. nothing left behind --------------------------------------------------------------------
def verified(folder: Path, root: Path) -> Made:
    """A valid model through the commands that start ONNX Runtime and stage outputs: the run's
    TMPDIR must be empty afterwards (no `.ses`, no lowered model)."""
    entry = folder / "m.onnx"
    entry.write_bytes((root / "seeds" / "tiny_cnn.onnx").read_bytes())
    return Made(entry, {
        "verify": ([], []),
        "convert.verify": (["-o", "{out}/o.webnn", "--verify"],
                           ["o.webnn", "o.manifest.json", "o.weights"]),
        "run": (["--output-dir", "{out}/r"], ["r", "r/*"]),
    })


SURFACES: list[tuple[str, Callable[[Path, Path], Made]]] = [
    ("zoo-source-direct-reference", zoo_source("direct-reference")),
    ("zoo-source-https-reference", zoo_source("https-reference")),
    ("zoo-source-option", zoo_source("option")),
    ("zoo-source-absolute-package", zoo_source("absolute-package")),
    ("zoo-source-dotdot-version", zoo_source("dotdot-version")),
    ("zoo-source-wheel-member-dotdot", zoo_source("wheel-member-dotdot")),
    ("zoo-local-absolute", zoo_local("absolute")),
    ("zoo-local-dotdot", zoo_local("dotdot")),
    ("zoo-local-hidden", zoo_local("hidden")),
    ("zoo-local-hardlink", zoo_local("hardlink")),
    ("zoo-local-symlink-out", zoo_local("symlink-out")),
    ("zoo-report-is-manifest", zoo_writes_over("report-is-manifest")),
    ("zoo-results-is-manifest", zoo_writes_over("results-is-manifest")),
    ("zoo-report-is-results", zoo_writes_over("report-is-results")),
    ("zoo-report-is-baseline", zoo_writes_over("report-is-baseline")),
    ("zoo-markup", zoo_markup),
    ("zoo-deep-manifest-json", zoo_deep("manifest-json")),
    ("zoo-deep-manifest-toml", zoo_deep("manifest-toml")),
    ("zoo-deep-baseline", zoo_deep("baseline")),
    ("zoo-sparse-200gb-model", zoo_sparse_model),
    ("near-onnx-hidden-folder", near_the_model("onnx-hidden")),
    ("near-onnx-hardlink", near_the_model("onnx-hardlink")),
    ("near-onnx-overlong-length", near_the_model("onnx-overlong")),
    ("near-webnn-weights-hardlink", near_the_model("webnn-hardlink")),
    ("near-hub-cache-ok", hub_cache("ok")),
    ("near-hub-cache-blobs-is-link", hub_cache("blobs-is-link")),
    ("near-hub-cache-blob-not-hash", hub_cache("blob-not-hash")),
    ("near-hub-cache-blob-hardlink", hub_cache("blob-hardlink")),
    ("near-hub-cache-other-cache", hub_cache("other-cache")),
    ("near-followed-link-hardlink", followed_link),
    ("over-onnx-external-is-sidecar", writes_over_source("onnx-external-is-sidecar")),
    ("over-graph-is-output", writes_over_source("graph-is-output")),
    ("over-npy-input-is-output", writes_over_source("npy-input-is-output")),
    ("terminal-onnx-names", onnx_terminal_names(False)),
    ("terminal-onnx-unsupported-op", onnx_terminal_names(True)),
    ("terminal-json-names", json_terminal_names),
    ("size-onnx-zeros-16mb", sparse("m.onnx", 16 << 20)),
    ("size-onnx-sparse-200gb", sparse("m.onnx", 200 << 30)),
    ("size-onnx-tiny-fields", tiny_fields),
    ("size-webnn-token-16mb", webnn_long_token),
    ("size-onnx-nested-loops", onnx_loops(3, 10_000)),
    ("size-onnx-loop-1e9", onnx_loops(1, 10**9)),
    ("size-npy-claims-1e12", npy_claims),
    ("left-verify-tmpdir", verified),
    ("left-run-outputs-alike", run_outputs_alike),
]
