"""The fuzz corpus: hostile and damaged model files, the same ones for the same seed.

`make_corpus(root, seed, count)` writes `root/canary.bin` (outside every model's folder), a
folder `root/outside/` of valid files that links may point at, and `count` cases, each a folder
`root/NNNN-kind/` holding one model file (the entry) and whatever lies beside it. The runs'
working directory is `root/outside/`, which holds a canary too. Half the cases
(while they last) come from a fixed list of malicious constructions; the rest are truncations,
bit flips and overwritten byte runs of real files (tiny_cnn from models/ as .onnx, .webnn,
.json and .tflite, and small generated ONNX models), each mutating one file of its model.
The constructions of tools/fuzz_surfaces.py attack what lies beside the importers (zoo manifests,
files near the model, the files a command writes, the terminal, reports, sizes, leftovers); those
of tools/fuzz_tls.py serve's --cert/--key files, and of tools/fuzz_weights.py --accuracy,
--block-size and weight values under --weights int8|int4, and of tools/fuzz_numbers.py every
numeric option, a zoo baseline's errors, zoo --compute and a TFLite LSTM's activation code.
Such a case may name its own commands (serve's take no entry file), whether only a refusal is
safe, a judge of its outcome, and a timeout of its own.

The canary holds TOKEN after a WGWT header, so a weights file or external-data reference that
reached it would copy TOKEN into an output, where tools/fuzz.py looks for it.
"""
from __future__ import annotations

import fnmatch
import json
import os
import random
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from fuzz_surfaces import SURFACES, Made
from fuzz_surfaces import external_tensor as _external
from fuzz_tls import TLS
from fuzz_numbers import NUMBERS
from fuzz_weights import WEIGHTS

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
TOKEN = b"CANARY-" + bytes(f"{0x5EC12E7:08x}", "ascii") * 7 + b"-END"  # 67 bytes
CANARY = b"WGWT\x01\x00\x00\x00" + TOKEN + b"\x00" * (1024 - 8 - len(TOKEN))


@dataclass
class Case:
    name: str
    folder: Path
    entry: Path  # the file the commands are run on
    # The commands run on this case instead of tools/fuzz.py's seven (see fuzz_surfaces.Made).
    commands: dict[str, tuple[list[str], list[str]]] | None = None
    must_refuse: bool = False  # a success is a failure: only a refusal is safe
    check: Callable[[Path], str | None] | None = None  # of a success's run folder
    # Of every run's folder and exit code (None: killed): why the outcome is wrong, or None.
    outcome: Callable[[Path, int | None], str | None] | None = None
    entry_arg: bool = True  # the entry is the commands' first argument (serve takes none)
    timeout: float | None = None  # seconds a run may take, when not tools/fuzz.py's TIMEOUT


# -- seeds: real files ---------------------------------------------------------------------------
def _seeds(root: Path) -> dict[str, list[Path]]:
    """Each seed model as its files (entry first), written once under root/seeds."""
    from converter import load
    from converter.exporters.tflite import save_tflite
    from converter.formats import save_graph

    seeds = root / "seeds"
    seeds.mkdir()
    out: dict[str, list[Path]] = {}
    for suffix in (".onnx", ".webnn", ".manifest.json", ".weights"):
        shutil.copy(ROOT / "models" / f"tiny_cnn{suffix}", seeds / f"tiny_cnn{suffix}")
    out["onnx"] = [seeds / "tiny_cnn.onnx"]
    out["webnn"] = [seeds / f"tiny_cnn{s}" for s in (".webnn", ".manifest.json", ".weights")]
    graph = load(seeds / "tiny_cnn.onnx")
    (seeds / "json").mkdir()
    out["json"] = save_graph(graph, seeds / "json" / "tiny_cnn.json")
    out["tflite"] = save_tflite(graph, seeds / "tiny_cnn.tflite")
    (seeds / "ext").mkdir()
    out["onnx-external"] = _external_model(seeds / "ext")
    return out


def _save(model: onnx.ModelProto, path: Path) -> Path:
    path.write_bytes(model.SerializeToString())  # as is: no checker, no external-data loading
    return path


def _add_model(initializer: TensorProto, shape, *, name: str = "add", nodes=None,
               opset: int = 17) -> onnx.ModelProto:
    nodes = nodes or [helper.make_node("Add", ["x", initializer.name], ["y"], name="add")]
    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", 1, shape)],
                              [helper.make_tensor_value_info("y", 1, shape)], [initializer])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])




def _external_model(folder: Path) -> list[Path]:
    """A valid model whose 16 weights live in `w.bin` beside it."""
    (folder / "w.bin").write_bytes(np.arange(16, dtype=np.float32).tobytes())
    model = _add_model(_external("w", [16], "w.bin", 0, 64), [16])
    return [_save(model, folder / "ext.onnx"), folder / "w.bin"]


# -- malicious constructions ---------------------------------------------------------------------
def _onnx_ext(location: str, offset=8, length=64, link: str | None = None):
    def make(folder: Path, root: Path) -> Path:
        (folder / "w.bin").write_bytes(np.arange(16, dtype=np.float32).tobytes())
        if link == "symlink":
            os.symlink(root / "canary.bin", folder / location)
        elif link == "fifo":
            os.mkfifo(folder / location)
        return _save(_add_model(_external("w", [16], location, offset, length), [16]),
                     folder / "m.onnx")
    return make


def _onnx_constant_attribute(location: str):
    return lambda folder, root: _constant_attribute(folder, location)


def _constant_attribute(folder: Path, location: str) -> Path:
    value = _external("value", [16], location, 8, 64)
    nodes = [helper.make_node("Constant", [], ["w"], value=value),
             helper.make_node("Add", ["x", "w"], ["y"])]
    graph = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", 1, [16])],
                              [helper.make_tensor_value_info("y", 1, [16])])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                 folder / "m.onnx")


def _onnx_if_branch(location: str):
    return lambda folder, root: _if_branch(folder, location)


def _if_branch(folder: Path, location: str) -> Path:
    branch = helper.make_graph([helper.make_node("Identity", ["w"], ["o"])], "then", [],
                               [helper.make_tensor_value_info("o", 1, [16])],
                               [_external("w", [16], location, 8, 64)])
    other = helper.make_graph([helper.make_node("Identity", ["x"], ["o2"])], "else", [],
                              [helper.make_tensor_value_info("o2", 1, [16])])
    cond = numpy_helper.from_array(np.array(True), "cond")
    nodes = [helper.make_node("If", ["cond"], ["y"], then_branch=branch, else_branch=other)]
    graph = helper.make_graph(nodes, "if", [helper.make_tensor_value_info("x", 1, [16])],
                              [helper.make_tensor_value_info("y", 1, [16])], [cond])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                 folder / "m.onnx")


def _onnx_dims_without_data(dims):
    def make(folder: Path, root: Path) -> Path:
        t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=list(dims))
        return _save(_add_model(t, [16]), folder / "m.onnx")
    return make


def _onnx_constant_of_shape(folder: Path, root: Path) -> Path:
    shape = numpy_helper.from_array(np.array([30000, 30000, 4], np.int64), "s")
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["big"]),
             helper.make_node("ReduceSum", ["big"], ["y"], keepdims=0)]
    graph = helper.make_graph(nodes, "cos", [], [helper.make_tensor_value_info("y", 1, [])],
                              [shape])
    return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                 folder / "m.onnx")


def _onnx_sized(op: str, inputs: list[str], consts: dict, **attrs):
    """One node on x [1, 1, 4, 3] whose attribute or constant input asks for billions of
    something (each took ONNX's inference or a rule seconds to hours, or gigabytes)."""
    def make(folder: Path, root: Path) -> Path:
        inits = [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()]
        outputs = ["y", "z"] if op == "Split" else ["y"]
        node = helper.make_node(op, ["x", *inputs], outputs, **attrs)
        x = helper.make_tensor_value_info("x", 1, [1, 1, 4, 3])
        graph = helper.make_graph([node], op, [x], [helper.make_tensor_value_info("y", 1, None)],
                                  inits)
        return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]),
                     folder / "m.onnx")
    return make


def _tflite_sized(code: str, shape, consts: list, out_type: str = "float32"):
    """One TFLite op whose constant inputs or input shape ask for billions of elements."""
    def make(folder: Path, root: Path) -> Path:
        from converter.testing.tflite_fixtures import Const, Input, Output, one_op

        inputs = ([Input("x", shape)] if shape else []) + [Const(np.asarray(c)) for c in consts]
        (folder / "m.tflite").write_bytes(one_op(code, inputs, [Output("y", [1], out_type)]))
        return folder / "m.tflite"
    return make


def _onnx_hostile_names(folder: Path, root: Path) -> Path:
    w = numpy_helper.from_array(np.ones(16, np.float32), "w\u2028globalThis.CANARY=1//")
    model = _add_model(w, [16], name="g\u2028globalThis.CANARY=1;//</script><!--",
                       nodes=[helper.make_node("Add", ["x", w.name], ["y"],
                                               name="*/`${globalThis.CANARY=1}`\r\n")])
    return _save(model, folder / "m.onnx")


def _onnx_nested_ifs(depth: int):
    def make(folder: Path, root: Path) -> Path:
        inner = helper.make_graph([helper.make_node("Identity", ["x"], ["o0"])], "b0", [],
                                  [helper.make_tensor_value_info("o0", 1, [16])])
        leaf = inner
        for i in range(1, depth):  # nested in the then branch only: linear in depth
            node = helper.make_node("If", ["cond"], [f"o{i}"], then_branch=inner,
                                    else_branch=leaf)
            inner = helper.make_graph([node], f"b{i}", [],
                                      [helper.make_tensor_value_info(f"o{i}", 1, [16])])
        cond = numpy_helper.from_array(np.array(True), "cond")
        graph = helper.make_graph(list(inner.node), "deep",
                                  [helper.make_tensor_value_info("x", 1, [16])],
                                  list(inner.output), [cond])
        return _save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
                     folder / "m.onnx")
    return make


_GRAPH = 'webnn_graph "g" v1 {\n  inputs { x: u8[64]; }\n  consts { w: u8[64] @weights("w"); }\n' \
         '  nodes { y = add(x, w); }\n  outputs { y; }\n}\n'


def _manifest(key: str = "w", offset=8, length=64, shape=(64,), data_type="uint8") -> str:
    return json.dumps({"format": "wg-weights-manifest", "version": 1, "endianness": "little",
                       "tensors": {key: {"dataType": data_type, "shape": list(shape),
                                         "byteOffset": offset, "byteLength": length,
                                         "layout": "row-major"}}})


def _webnn(weights: str = "file", manifest: str | None = None, graph: str = _GRAPH):
    """A .webnn graph reading 64 bytes of weights; `weights` says what NAME.weights is."""
    def make(folder: Path, root: Path) -> Path:
        (folder / "g.webnn").write_text(graph, encoding="utf-8")
        (folder / "g.manifest.json").write_text(manifest or _manifest())
        w = folder / "g.weights"
        if weights == "file":
            w.write_bytes(b"WGWT\x01\x00\x00\x00" + bytes(range(64)))
        elif weights == "canary-link":
            os.symlink(root / "canary.bin", w)
        elif weights == "proc-link":
            os.symlink("/proc/self/mem", w)
        elif weights == "fifo":
            os.mkfifo(w)
        elif weights == "folder":
            w.mkdir()
        return folder / "g.webnn"
    return make


def _link_to_outside(name: str):
    def make(folder: Path, root: Path) -> Path:
        for suffix in (".webnn", ".manifest.json", ".weights"):
            shutil.copy(root / "outside" / f"tiny_cnn{suffix}", folder / f"tiny_cnn{suffix}")
        target = folder / f"tiny_cnn{name}"
        target.unlink()
        os.symlink(root / "outside" / f"tiny_cnn{name}", target)
        return folder / "tiny_cnn.webnn"
    return make


def _text(name: str, text: str):
    def make(folder: Path, root: Path) -> Path:
        (folder / name).write_text(text, encoding="utf-8", errors="surrogatepass")
        return folder / name
    return make


def _json_graph(name: str = '"g"', option: str | None = None, consts: str = "{}") -> str:
    """A JSON graph; `name` and `option` (an option's value) are JSON text, written as is."""
    options = "{}" if option is None else '{"o": ' + option + "}"
    return ('{"format": "webnn-graph-json", "version": 2, "name": ' + name +
            ', "inputs": {"x": {"dataType": "float32", "shape": [2]}}, "consts": ' + consts +
            ', "nodes": [{"id": "y", "op": "relu", "inputs": ["x"], "options": ' + options +
            '}], "outputs": {"y": "y"}}')


def _tflite(kind: str):
    """A one-ADD .tflite whose constant, shape or names are hostile."""
    def make(folder: Path, root: Path) -> Path:
        from converter.testing.tflite_fixtures import TfliteBuilder

        b = TfliteBuilder()
        shape = [2**31 - 1] * 4 if kind == "huge-shape" else [16]
        names = "x\u2028globalThis.CANARY=1;//</script>" if kind == "names" else "x"
        x = b.input(names, shape)
        w = b.constant("w" + names[1:], np.ones(16, np.float32))
        y = b.tensor("y" + names[1:], shape)
        b.op("ADD", [x, w], [y])
        buffer = b.buffers[b.subgraphs[0].tensors[w].buffer]
        if kind == "offset-huge":
            buffer.data, buffer.offset, buffer.size = None, 2**62, 64
        elif kind == "size-huge":
            buffer.data, buffer.offset, buffer.size = None, 64, 2**62
        elif kind == "no-data":
            b.subgraphs[0].tensors[w].shape = [100000, 100000, 100000]
            buffer.data = None
        return b.save(folder / "m.tflite", [y])
    return make


def _link(name: str, target: str):
    def make(folder: Path, root: Path) -> Path:
        os.symlink(target.replace("ROOT", str(root)), folder / name)
        return folder / name
    return make


def _folder(name: str):
    def make(folder: Path, root: Path) -> Path:
        (folder / name).mkdir()
        return folder / name
    return make


def _tflite_link(folder: Path, root: Path) -> Path:
    os.symlink(root / "canary.bin", folder / "m.tflite")
    return folder / "m.tflite"


def _fifo(name: str):
    def make(folder: Path, root: Path) -> Path:
        os.mkfifo(folder / name)
        return folder / name
    return make


HOSTILE: list[tuple[str, Callable[[Path, Path], Path | Made]]] = [
    ("onnx-ext-dotdot", _onnx_ext("../canary.bin")),
    ("onnx-ext-absolute", _onnx_ext("CANARY_ABSOLUTE")),
    ("onnx-ext-symlink", _onnx_ext("data.bin", link="symlink")),
    ("onnx-ext-fifo", _onnx_ext("data.bin", link="fifo")),
    ("onnx-ext-proc", _onnx_ext("/proc/self/mem")),
    ("onnx-ext-negative-offset", _onnx_ext("../canary.bin", offset=-8)),
    ("onnx-ext-huge-offset", _onnx_ext("w.bin", offset=2**62)),
    ("onnx-ext-huge-length", _onnx_ext("w.bin", length=2**62)),
    ("onnx-ext-offset-not-a-number", _onnx_ext("w.bin", offset="abc")),
    # `canary.bin` is not in the model's folder, but it is in the working directory.
    ("onnx-ext-in-constant-attribute", _onnx_constant_attribute("canary.bin")),
    ("onnx-ext-in-if-branch", _onnx_if_branch("canary.bin")),
    ("onnx-ext-in-constant-attribute-dotdot", _onnx_constant_attribute("../canary.bin")),
    ("onnx-ext-in-if-branch-dotdot", _onnx_if_branch("../canary.bin")),
    ("onnx-huge-dims-no-data", _onnx_dims_without_data([100000, 100000, 100000])),
    ("onnx-negative-dims", _onnx_dims_without_data([-4, 4])),
    ("onnx-constant-of-shape-13gib", _onnx_constant_of_shape),
    ("onnx-hostile-names", _onnx_hostile_names),
    ("onnx-nested-ifs", _onnx_nested_ifs(30)),  # deeper cannot be built: protobuf says no
    ("onnx-split-num-outputs-2**31", _onnx_sized("Split", [], {}, axis=2, num_outputs=2**31)),
    ("onnx-resize-to-2**31", _onnx_sized("Resize", ["", "", "s"],
                                         {"s": np.array([1, 1, 2**31, 2**31])})),
    ("onnx-unsqueeze-100000-axes", _onnx_sized("Unsqueeze", ["a"], {"a": np.arange(100_000)})),
    ("tflite-range-2**31", _tflite_sized("RANGE", None, [np.int32(0), np.int32(2**31 - 1),
                                                         np.int32(1)], "int32")),
    ("tflite-broadcast-fill-2**28", _tflite_sized("BROADCAST_TO", None, [
        np.ones((1, 3), np.float32), np.array([2**28, 3], np.int32)])),
    ("tflite-matrix-diag-65536", _tflite_sized("MATRIX_DIAG", [2**16], [])),
    ("webnn-weights-link-to-canary", _webnn("canary-link")),
    ("webnn-weights-link-to-proc", _webnn("proc-link")),
    ("webnn-weights-fifo", _webnn("fifo")),
    ("webnn-weights-folder", _webnn("folder")),
    ("webnn-graph-link-outside", _link_to_outside(".webnn")),
    ("webnn-manifest-link-outside", _link_to_outside(".manifest.json")),
    ("webnn-weights-link-outside", _link_to_outside(".weights")),
    ("webnn-manifest-negative-offset", _webnn(manifest=_manifest(offset=-64))),
    ("webnn-manifest-huge-offset", _webnn(manifest=_manifest(offset=2**62))),
    ("webnn-manifest-huge-shape", _webnn(manifest=_manifest(shape=(2**31, 2**31, 2**31),
                                                            length=2**93))),
    ("webnn-manifest-key-path", _webnn(manifest=_manifest(key="../canary.bin"),
                                       graph=_GRAPH.replace('@weights("w")',
                                                            '@weights("../canary.bin")'))),
    ("webnn-graph-fifo", _fifo("g.webnn")),
    ("webnn-deep-nesting", _text("g.webnn", _GRAPH.replace(
        "add(x, w)", "add(x, w, o=" + "[" * 100_000 + "]" * 100_000 + ")"))),
    ("webnn-huge-shape", _webnn(graph=_GRAPH.replace(
        "u8[64] @weights", "f32[100000, 100000, 100000] @weights"))),
    ("webnn-negative-shape", _text("g.webnn", _GRAPH.replace("x: u8[64]", "x: u8[-64]"))),
    ("webnn-hostile-names", _webnn(graph=_GRAPH.replace(
        '"g"', '"g\u2028globalThis.CANARY=1;//</script><!--*/`${x}`"'))),
    ("webnn-lone-surrogate", _text("g.webnn", _GRAPH.replace('"g"', '"g\\ud800"'))),
    ("json-deep-nesting", _text("g.json", _json_graph(option="[" * 100_000 + "]" * 100_000))),
    ("json-nesting-500", _text("g.json", _json_graph(option="[" * 500 + "]" * 500))),
    ("json-hostile-names", _text("g.json", _json_graph(
        name=json.dumps("g\u2028globalThis.CANARY=1;//\u2029</script><!--*/`${x}`",
                        ensure_ascii=False)))),
    ("json-lone-surrogate", _text("g.json", _json_graph(name='"\\udc00"'))),
    ("json-bytes-out-of-range", _text("g.json", _json_graph(consts=(
        '{"c": {"dataType": "uint8", "shape": [2], "init": {"kind": "inlineBytes", '
        '"bytes": [1, 999]}}}')))),
    ("tflite-link-to-canary", _tflite_link),
    ("tflite-fifo", _fifo("m.tflite")),
    ("tflite-buffer-offset-huge", _tflite("offset-huge")),
    ("tflite-buffer-size-huge", _tflite("size-huge")),
    ("tflite-huge-shape", _tflite("huge-shape")),
    ("tflite-constant-without-data", _tflite("no-data")),
    ("tflite-hostile-names", _tflite("names")),
    ("onnx-fifo", _fifo("m.onnx")),
    ("onnx-link-outside", _link("m.onnx", "ROOT/seeds/tiny_cnn.onnx")),
    ("onnx-link-to-proc", _link("m.onnx", "/proc/self/mem")),
    ("webnn-manifest-fifo", _webnn(weights="file")),  # made a FIFO in make_corpus
    ("webnn-graph-folder", _folder("g.webnn")),
    ("json-link-outside", _link("g.json", "ROOT/seeds/json/tiny_cnn.json")),
    ("json-link-to-proc-environ", _link("g.json", "/proc/self/environ")),
    *SURFACES,  # issue 26: manifests, files near the model, outputs, terminal, reports, sizes
    *TLS,  # serve --cert/--key
    *WEIGHTS,  # --accuracy, --block-size, hostile weight values for --weights int8|int4
    *NUMBERS,  # numeric options, a baseline's maxAbs, zoo --compute, an LSTM's activation code
]


# -- mutations of real files ---------------------------------------------------------------------
def _mutate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    how = rng.choice(["truncate", "flip", "flip", "overwrite"])
    if not data:
        return "empty", data
    if how == "truncate":
        cut = rng.randrange(len(data))
        return f"truncate@{cut}", data[:cut]
    buf = bytearray(data)
    if how == "flip":
        for _ in range(rng.randint(1, 8)):
            at = rng.randrange(len(buf))
            buf[at] ^= 1 << rng.randrange(8)
        return "flip", bytes(buf)
    at, size = rng.randrange(len(buf)), rng.randint(1, 16)
    fill = rng.choice([0x00, 0xFF, 0x7F, 0x80])
    buf[at:at + size] = bytes([fill]) * len(buf[at:at + size])
    return f"overwrite@{at}", bytes(buf)


def make_corpus(root: Path, seed: int, count: int, only: str | None = None,
                mutations: bool = True) -> list[Case]:
    """Write `count` cases under `root` (which must not exist); the same for the same seed.
    `only` (a glob) keeps the constructions whose kind it matches; without `mutations` every
    case is a construction (at most as many as there are)."""
    root.mkdir(parents=True)
    (root / "canary.bin").write_bytes(CANARY)
    (root / "outside").mkdir()  # also the runs' working directory
    (root / "outside" / "canary.bin").write_bytes(CANARY)
    for suffix in (".webnn", ".manifest.json", ".weights"):
        shutil.copy(ROOT / "models" / f"tiny_cnn{suffix}", root / "outside" / f"tiny_cnn{suffix}")
    seeds = _seeds(root)
    rng = random.Random(seed)
    cases: list[Case] = []
    hostile = iter([(k, m) for k, m in HOSTILE if only is None or fnmatch.fnmatchcase(k, only)])
    kinds = sorted(seeds)
    for index in range(count):
        item = next(hostile, None) if index % 2 == 0 or not mutations else None
        if item is None and not mutations:
            break
        if item is not None:
            kind, make = item
            folder = root / f"{index:04d}-{kind}"
            folder.mkdir()
            made = make(folder, root)
            if not isinstance(made, Made):
                made = Made(made)
            _absolute_refs(made.entry, root)
            if kind == "webnn-manifest-fifo":
                (folder / "g.manifest.json").unlink()
                os.mkfifo(folder / "g.manifest.json")
            cases.append(Case(folder.name, folder, made.entry, made.commands,
                              made.must_refuse, made.check, made.outcome, made.entry_arg,
                              made.timeout))
            continue
        else:
            kind = rng.choice(kinds)
            files = seeds[kind]
            victim = rng.randrange(len(files))
            how, data = _mutate(files[victim].read_bytes(), rng)
            folder = root / f"{index:04d}-{kind}-{files[victim].suffix[1:]}-{how}"
            folder.mkdir()
            for i, path in enumerate(files):
                (folder / path.name).write_bytes(data if i == victim else path.read_bytes())
            entry = folder / files[0].name
        cases.append(Case(folder.name, folder, entry))
    return cases


def _absolute_refs(entry: Path, root: Path) -> None:
    """The absolute-path case names the canary where it actually is (known only now)."""
    if entry.suffix == ".onnx" and not entry.is_symlink() and entry.is_file() \
            and entry.stat().st_size < 1 << 20:  # not the sparse giants
        data = entry.read_bytes()
        if b"CANARY_ABSOLUTE" in data:
            model = onnx.load_model_from_string(data)
            for t in model.graph.initializer:
                for e in t.external_data:
                    if e.value == "CANARY_ABSOLUTE":
                        e.value = str(root / "canary.bin")
            _save(model, entry)
