"""A WebNN graph as JavaScript a web page can ship: an ES module, its weights, and a page.

`write_js(graph, "out/model.js")` writes, atomically:
  * `model.js`: an ES module exporting `buildGraph(context, weights)` (one MLGraphBuilder call
    per operation; resolves to `{graph, inputs, outputs, unusedInputs}`, the descriptors by the
    source model's input and output names; inputs no output depends on are listed apart, as
    MLGraph has no place for them), `loadWeights(url)`, and
    the helpers to run it (`createTensors`, `writeInputs`, `dispatch`, `readOutputs`, `run`),
    `state` (the graph's state pairs) and `createSession(context, weights)`, whose
    `step(feeds)` carries that state on the context (webnn_session.js);
  * `model.weights` + `model.manifest.json`: the WGWT weights, written by converter.formats;
  * `model.html`: a page that builds the graph and runs it on `.npy` files or random inputs,
    showing outputs and timings (see html_page.py).

Calls are generated from the op catalogue's signatures, so every op the catalogue knows is
emitted the same way: positional operands, then the op's positional arguments, then one options
object holding its other options, its operand-valued options (bias, scale, initialHiddenState
...) as operands, and `label`: the node's name, so that a browser's error names the node.
An op that needs another form registers its own emitter with `@js_op(name)`.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Callable

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from ..formats._files import AtomicSave
from ..formats.document import unique_name
from ..formats.weights import manifest_text, safe_key, write_weights
from ..ir import ConstantData, Graph, Operand, Operation
from ..ops.registry import OpDef, Param
from .escape import js_comment as _comment
from .escape import js_string as _string
from .html_page import page_html
from .permuted_record import permuted_lines

__all__ = ["write_js", "module_source", "js_op", "JS_EMITTERS", "js_value", "ModuleWriter",
           "JsCode"]

_HELPERS = Path(__file__).with_name("webnn_helpers.js")
_SESSION = Path(__file__).with_name("webnn_session.js")
# Inline constants given as bytes (`@bytes`) stay inline up to this size; larger go to weights.
_INLINE_BYTES = 256
_SAFE_INTEGER = 2**53 - 1
_RESERVED = frozenset("""
    break case catch class const continue debugger default delete do else enum export extends
    false finally for function if import in instanceof new null return super switch this throw
    true try typeof var void while with yield let static implements interface package private
    protected public await async arguments eval undefined NaN Infinity
    builder context weights graph inputs outputs used
    filled corner byteLength MLGraphBuilder Object Uint8Array dims inputsAt outputsAt checkDims
""".split())  # keywords, and every name a builder function's body reads besides its operands

# op name -> emitter(writer, op) returning the call expression (without the assignment).
JS_EMITTERS: dict[str, Callable[["ModuleWriter", Operation], str]] = {}


def js_op(name: str):
    """Register the emitter of one op's MLGraphBuilder call, replacing the generic one."""

    def register(fn):
        if name in JS_EMITTERS:
            raise ValueError(f"JavaScript emitter for {name} registered twice")
        JS_EMITTERS[name] = fn
        return fn

    return register


def write_js(graph: Graph, path: str | Path) -> list[Path]:
    """Write NAME.js, NAME.html, NAME.weights and NAME.manifest.json; return their paths.

    Nothing is written for an invalid graph, or when NAME.weights and NAME.manifest.json
    belong to another graph file of the same NAME (NAME.webnn, NAME.json) and would change;
    a failed write leaves nothing behind.
    """
    path = Path(path)
    if path.suffix != ".js":
        raise ConverterError("a JavaScript module's name must end in .js", where=str(path))
    graph.verify()
    stem = path.name[:-3]
    weights_path = path.with_name(stem + ".weights")
    manifest_path = path.with_name(stem + ".manifest.json")
    html_path = path.with_name(stem + ".html")
    writer = ModuleWriter(graph, weights_path.name)
    source = writer.source()
    with AtomicSave() as files:
        with files.open(weights_path) as stream:
            manifest = write_weights(stream, writer.weights, where=str(weights_path))
        files.write_text(manifest_path, manifest_text(manifest))
        files.write_text(path, source)
        files.write_text(html_path, page_html(graph, path.name))
        return files.commit()


def module_source(graph: Graph, weights_file: str = "model.weights") -> tuple[str, list]:
    """The module's text and the (key, ConstantData) list its weights file must hold."""
    writer = ModuleWriter(graph, weights_file)
    return writer.source(), writer.weights


class ModuleWriter:
    """Writes one graph's module: names every operand as a JS identifier, and collects the
    constants that go to the weights file."""

    def __init__(self, graph: Graph, weights_file: str):
        self.graph = graph
        self.weights_file = weights_file
        self.weights: list[tuple[str, ConstantData]] = []
        self._keys: set[str] = set()
        self._taken: set[str] = set(_RESERVED)
        self._vars: dict[int, str] = {}

    # -- names ----------------------------------------------------------------------------------
    def var(self, operand: Operand) -> str:
        """The JS identifier holding an operand (made once, unique, from its name)."""
        found = self._vars.get(id(operand))
        if found is None:
            found = self._vars[id(operand)] = unique_name(_identifier(operand.name), self._taken)
        return found

    # -- the module -----------------------------------------------------------------------------
    def source(self) -> str:
        g = self.graph
        lines = [
            f"// WebNN graph {_comment(g.name)}, written by webnn-converter.",
            "// buildGraph(context, weights) -> {graph, inputs, outputs, unusedInputs}: inputs and",
            "// outputs are keyed by the source model's names. Only today's WebNN API is used.",
            "",
            f"export const WEIGHTS_FILE = {_string(self.weights_file)};",
            f"export const inputs = {_descs(g.input_descs())};",
            f"export const outputs = {_descs(g.output_descs())};",
            f"export const state = {self._state()};",
            *permuted_lines(g),
            "",
            "export async function buildGraph(context, weights) {",
            *self.body_lines(),
            "}",
            "",
        ]
        return "\n".join(lines) + "\n" + _HELPERS.read_text() + _SESSION.read_text()

    def body_lines(self) -> list[str]:
        """The builder function's body: builds the graph and returns {graph, inputs, outputs,
        unusedInputs}, `inputs` and `outputs` being the descriptors in scope."""
        g = self.graph
        lines = ["  const builder = new MLGraphBuilder(context);"]
        for name, operand in g.inputs.items():
            lines.append(f"  const {self.var(operand)} = builder.input({_string(name)}, "
                         f"{self._input_desc(operand)});")
        for operand in g.constants.values():
            lines.append(f"  const {self.var(operand)} = {self._constant(operand)};")
        for op in g.operations:
            lines.append(f"  {self._assign(op)} = {self._call(op)};")
        built = []
        for name, operand in g.outputs.items():
            # One operand under two output names: the second goes through an identity, so that
            # each output is its own MLOperand whatever the backend makes of aliases.
            var = self.var(operand)
            if var in built:
                # The output name comes from the model: an identifier made from it as var()
                # makes one, never the name itself (it may hold any text).
                label = unique_name(_identifier(f"{name}_identity"), self._taken)
                lines.append(f"  const {label} = builder.identity({var}, "
                             f"{{label: {_string(label)}}});")
                var = label
            built.append(var)
            lines.append(f"  // output {_comment(name)}: {operand.desc}")
        pairs = ", ".join(f"{_string(n)}: {v}" for n, v in zip(g.outputs, built))
        read = _read(g)
        unused = [name for name, operand in g.inputs.items() if id(operand) not in read]
        if unused:
            # MLGraph drops inputs no output depends on, and dispatch() then refuses tensors
            # for them; the source model still has them, so feeds for them are accepted and
            # left out.
            lines.append(f"  // unused inputs: {', '.join(_comment(n) for n in unused)}")
        used = ", ".join(_string(n) for n in g.inputs if n not in unused)
        lines += [
            f"  const graph = await builder.build({{{pairs}}});",
            f"  const used = [{used}];",
            "  return {graph, inputs: Object.fromEntries(used.map((n) => [n, inputs[n]])), outputs,",
            f"          unusedInputs: [{', '.join(_string(n) for n in unused)}]}};",
        ]
        return lines

    def _input_desc(self, operand: Operand) -> str:
        return _desc(operand.data_type, operand.shape)

    def _state(self) -> str:
        """The state pairs, `initial` the weights key of the first step's value (null: zeros)."""
        pairs = []
        for var in self.graph.state:
            initial = "null"
            if var.initial is not None:
                key = unique_name(safe_key(var.input + "/initial"), self._keys)
                self.weights.append((key, var.initial))
                initial = _string(key)
            pairs.append(f"  {{input: {_string(var.input)}, output: {_string(var.output)}, "
                         f"initial: {initial}}}")
        return "[\n" + ",\n".join(pairs) + "\n]" if pairs else "[]"

    def _constant(self, operand: Operand) -> str:
        return self.constant_call(operand.name, operand.constant)

    def constant_call(self, name: str, data: ConstantData, shape: str | None = None) -> str:
        """The builder.constant call of a value; `shape` (JS) replaces its shape where given
        (a filled constant's shape as an expression)."""
        shape_js = _shape(data.shape) if shape is None else shape
        desc = f"{{dataType: {_string(data.data_type)}, shape: {shape_js}}}"
        bits = dtypes.info(data.data_type).bits
        if data.fill is not None and bits >= 8:
            # Every value numpy holds (inf and NaN included) has exact one-element bytes.
            one = np.array(data.fill, dtype=dtypes.numpy_dtype(data.data_type)).tobytes()
            count = (str(data.nbytes) if shape is None else
                     f"byteLength({_string(data.data_type)}, {shape})")
            return f"builder.constant({desc}, filled({count}, {_bytes(one)}))"
        if shape is not None:
            raise ConverterError("only a filled constant takes its shape as an expression",
                                 where=f"constant '{name}'")
        if data.origin == "bytes" and data.nbytes <= _INLINE_BYTES:
            return f"builder.constant({desc}, {_bytes(bytes(data.raw_bytes()))})"
        key = self._weight_key(name, data)
        return (f"builder.constant({desc}, weights.bytes({_string(key)}, "
                f"{_string(data.data_type)}, {list(data.shape)}))")

    def _weight_key(self, name: str, data: ConstantData) -> str:
        """The key of a constant in the weights file (added to `weights` here)."""
        key = unique_name(safe_key(name), self._keys)
        self.weights.append((key, data))
        return key

    def _assign(self, op: Operation) -> str:
        if _returns_list(op.opdef):
            return f"const [{', '.join(self.var(o) for o in op.outputs)}]"
        return f"const {self.var(op.output)}"

    def _call(self, op: Operation) -> str:
        emitter = JS_EMITTERS.get(op.op_type, generic_call)
        return emitter(self, op)


def generic_call(w: ModuleWriter, op: Operation) -> str:
    """builder.op(operands..., arguments..., {options, operand options, label})."""
    opdef = op.opdef
    where = f"{op.op_type} '{op.name}'"
    if opdef.variadic:
        args = ["[" + ", ".join(w.var(o) for o in op.inputs) + "]"]
        extra: list[tuple[str, Operand]] = []
    else:
        slots = opdef.pad_inputs(list(op.inputs))
        args = []
        for name, operand in zip(opdef.operands, slots):
            if operand is None:
                raise ConverterError(f"operand '{name}' is missing", where=where)
            args.append(w.var(operand))
        extra = [(name, o) for name, o in zip(opdef.operand_options, slots[len(opdef.operands):])
                 if o is not None]
    params = opdef.params()
    unknown = [k for k in op.attrs if k not in params]
    if unknown:
        raise ConverterError(f"'{unknown[0]}' is not an argument or option of {op.op_type}",
                             where=where)
    for p in opdef.arguments:
        if op.attrs.get(p.name) is None:
            raise ConverterError(f"argument '{p.name}' is missing", where=where)
        args.append(js_value(op.attrs[p.name], p, where))
    members = [f"{p.name}: {js_value(op.attrs[p.name], p, where)}" for p in opdef.options
               if op.attrs.get(p.name) is not None]
    members += [f"{name}: {w.var(o)}" for name, o in extra]
    members.append(f"label: {_string(op.name)}")
    args.append("{" + ", ".join(members) + "}")
    return f"builder.{op.op_type}({', '.join(args)})"


class JsCode(str):
    """JavaScript already written (an expression of a module's dims), emitted as it is."""


def js_value(value, param: Param | None = None, where: str = "") -> str:
    """A JS literal for an argument or option value of the given kind."""
    if isinstance(value, JsCode):
        return str(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(js_value(v, None, where) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        # MLNumber is `bigint or unrestricted double`: integers a double cannot hold exactly
        # (int64/uint64 clamp bounds, pad values) are written as BigInt literals.
        return str(value) if abs(value) <= _SAFE_INTEGER else f"{value}n"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)  # the shortest text that reads back as the same double
    if isinstance(value, str):
        return _string(value)
    raise ConverterError(f"cannot write the value {value!r} ({type(value).__name__}) as "
                         f"JavaScript", where=where)


def _read(graph: Graph) -> set[int]:
    """ids of the operands the graph's outputs depend on."""
    seen: set[int] = set()
    stack = list(graph.outputs.values())
    while stack:
        operand = stack.pop()
        if id(operand) in seen:
            continue
        seen.add(id(operand))
        if operand.producer is not None:
            stack.extend(o for o in operand.producer.inputs if o is not None)
    return seen


def _identifier(name: str) -> str:
    """A JS identifier made from any text: every other character becomes `_`."""
    base = re.sub(r"[^A-Za-z0-9_$]", "_", name) or "t"
    return "_" + base if base[0].isdigit() else base


def _returns_list(opdef: OpDef) -> bool:
    # The catalogue's limits name the results: `output` for one, `outputs`/`output0`... for several.
    return "output" not in opdef.limits


def _desc(data_type: str, shape) -> str:
    return f"{{dataType: {_string(data_type)}, shape: {_shape(shape)}}}"


def _shape(shape) -> str:
    """A shape as a JS array: its numbers, or JsCode expressions."""
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _descs(descs) -> str:
    if not descs:
        return "{}"
    inner = ",\n".join(f"  {_string(n)}: {_desc(d.data_type, d.shape)}" for n, d in descs.items())
    return "{\n" + inner + "\n}"


def _bytes(raw: bytes) -> str:
    return "new Uint8Array([" + ", ".join(str(b) for b in raw) + "])"

