"""One ES module for a model converted at several values of its symbolic dims.

`write_variants_js(variants, "out/model.js", convert=...)` writes model.js, model.weights,
model.manifest.json and model.html, as `write_js` does for one graph. The module exports

  * `DIMS`: each dim's accepted values, `{min, max}` (a range, with `step` when only every
    step-th value from min keeps the shapes whole) or `{values: [...]}`;
  * `FIXED_DIMS`: dims that had one value in every variant (`--dim batch=1`), name -> value;
  * `state`: the graph's state pairs, {input, output} (no createSession: a module with dims
    is run one step at a time, its state fed and read like its other inputs and outputs);
  * `checkDims(dims)`: throws a RangeError/TypeError naming the dim and the accepted values
    unless `dims` gives every dim of DIMS an accepted integer, and nothing else but fixed
    dims at their value;
  * `inputsAt(dims)`, `outputsAt(dims)`: the descriptors at those dims;
  * `buildGraph(context, weights, dims)` -> {graph, inputs, outputs, unusedInputs};
  * `loadWeights` and the run helpers of every module (webnn_helpers.js).

When the variants are one graph whose shapes and options vary (converter.dynamic.symbolic,
checked on values not used to derive them), `buildGraph` is that graph with its shapes and
options written as expressions of `dims`: every value in the range (on its steps) works, not
only the converted ones. When one dim was converted at every value of its span and the values
fall in runs of one structure each (a decoder's first step and its later ones), the module
holds one such builder per run (converter.dynamic.module_groups). Otherwise the module
holds one builder per converted value, `buildGraph` dispatches on the dims and accepts only
those values; constants equal in content are one entry of the weights file either way. The
module's first lines say which form it took and why.
"""
from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .. import dtypes
from ..errors import ConverterError
from ..formats._files import AtomicSave
from ..formats.document import unique_name
from ..formats.weights import manifest_text, write_weights
from ..ir import ConstantData, Graph, Operand, Operation
from ..emit.escape import js_comment, js_string
from ..emit.permuted_record import permuted_lines
from ..emit.html_page import page_html
from ..emit.javascript import _HELPERS, JsCode, ModuleWriter, _desc, _descs, _shape

__all__ = ["write_variants_js", "variants_source"]


def write_variants_js(variants, path: str | Path,
                      convert: Callable[[dict[str, int]], Graph] | None = None
                      ) -> tuple[list[Path], str]:
    """Write the module, its weights and page; return the paths and one line saying which
    form the module took (one builder for a range, or one per value, and why). `convert`
    (default: the variants' own, when they have one) converts the model at another value of
    the dims, for the check of the one builder's expressions."""
    path = Path(path)
    if convert is None:
        convert = getattr(variants, "convert", None)
    if path.suffix != ".js":
        raise ConverterError("a JavaScript module's name must end in .js", where=str(path))
    for _, graph in variants.entries:
        graph.verify()
    stem = path.name[:-3]
    weights_path = path.with_name(stem + ".weights")
    source, weights, note = variants_source(variants, weights_path.name, convert)
    template = variants.entries[0][1]
    with AtomicSave() as files:
        with files.open(weights_path) as stream:
            manifest = write_weights(stream, weights, where=str(weights_path))
        files.write_text(path.with_name(stem + ".manifest.json"), manifest_text(manifest))
        files.write_text(path, source)
        files.write_text(path.with_name(stem + ".html"), page_html(template, path.name))
        return files.commit(), note


def variants_source(variants, weights_file: str,
                    convert: Callable[[dict[str, int]], Graph] | None = None
                    ) -> tuple[str, list[tuple[str, ConstantData]], str]:
    """The module's text, the (key, ConstantData) list of its weights file, and the note."""
    from .symbolic import HeldOutMismatch, StructureDiffers, polymorphic

    variants, convert = _varying_only(variants, convert)
    shared = _SharedWeights()
    try:
        poly = polymorphic(variants, convert)
    except StructureDiffers as e:
        from .module_groups import groups_of

        groups = groups_of(variants)
        if groups is not None:
            return _grouped(variants, groups, weights_file, shared, e.line())
        return _per_value(variants, weights_file, shared, e.line())
    except HeldOutMismatch as e:
        return _per_value(variants, weights_file, shared, e.line())
    listed = "; ".join(_point(p) for p, _ in variants.entries)
    checked = "; ".join(_point(p) for p in poly.checked_at) or "nowhere else: every value " \
                                                                 "in range was converted"
    accepted = {n: {"min": lo, "max": hi, **({"step": poly.steps[n]} if poly.steps.get(n, 1) > 1
                                            else {})} for n, (lo, hi) in poly.ranges.items()}
    note = (f"one builder for {_accepted_text(accepted)}: shapes fitted on {listed}, "
            f"checked at {checked}")
    writer = _PolymorphicWriter(poly, weights_file, shared)
    g = poly.template
    inputs = {n: (g.inputs[n].data_type, _exprs(s)) for n, s in poly.input_shapes.items()}
    outputs = {n: (g.outputs[n].data_type, _exprs(s)) for n, s in poly.output_shapes.items()}
    lines = _header(g, weights_file, accepted, _fixed(variants), note)
    lines += [
        "export function inputsAt(dims) {",
        "  checkDims(dims);",
        f"  return {_descs_js(inputs)};",
        "}",
        "",
        "export function outputsAt(dims) {",
        "  checkDims(dims);",
        f"  return {_descs_js(outputs)};",
        "}",
        "",
        "export async function buildGraph(context, weights, dims) {",
        "  const inputs = inputsAt(dims), outputs = outputsAt(dims);",
        *writer.body_lines(),
        "}",
        "",
    ]
    return "\n".join(lines) + "\n" + _HELPERS.read_text(), shared.entries, note


def _per_value(variants, weights_file: str, shared: "_SharedWeights", reason: str):
    names = sorted({n for p, _ in variants.entries for n in p})
    values = {n: sorted({p[n] for p, _ in variants.entries}) for n in names}
    accepted = {n: {"values": v} for n, v in values.items()}
    note = f"one builder per value ({_accepted_text(accepted)}): {reason}"
    first = variants.entries[0][1]
    lines = _header(first, weights_file, accepted, _fixed(variants), note)
    table, descs = [], []
    for k, (point, graph) in enumerate(variants.entries):
        key = js_string(_key(point, names))
        writer = _SharingWriter(graph, weights_file, shared)
        lines += [f"// {js_comment(_point(point))}",
                  f"async function build{k}(context, weights) {{",
                  f"  const inputs = {_descs(graph.input_descs())};",
                  f"  const outputs = {_descs(graph.output_descs())};",
                  *writer.body_lines(), "}", ""]
        table.append(f"  {key}: build{k},")
        descs.append(f"  {key}: [{_descs(graph.input_descs())}, {_descs(graph.output_descs())}],")
    order = ", ".join(js_string(n) for n in names)
    lines += [
        "const BUILDERS = {", *table, "};",
        "const DESCRIPTORS = {", *descs, "};",
        f"const DIM_ORDER = [{order}];",
        "",
        "function builderKey(dims) {",
        "  checkDims(dims);",
        "  const key = DIM_ORDER.map((n) => `${n}=${dims[n]}`).join(\",\");",
        "  if (!(key in BUILDERS)) {",
        "    throw new RangeError(`the dims ${key} were not converted together; converted: ` +",
        "                         Object.keys(BUILDERS).join(\"; \"));",
        "  }",
        "  return key;",
        "}",
        "",
        "export function inputsAt(dims) { return DESCRIPTORS[builderKey(dims)][0]; }",
        "export function outputsAt(dims) { return DESCRIPTORS[builderKey(dims)][1]; }",
        "",
        "export async function buildGraph(context, weights, dims) {",
        "  return BUILDERS[builderKey(dims)](context, weights);",
        "}",
        "",
    ]
    return "\n".join(lines) + "\n" + _HELPERS.read_text(), shared.entries, note


def _grouped(variants, groups, weights_file: str, shared: "_SharedWeights", reason: str):
    """One builder per group of module_groups.groups_of, and a buildGraph picking the group
    of the dims."""
    dim = variants.dims[0]
    lo, hi = groups[0][0], groups[-1][1]
    spans = "; ".join(f"{a}..{b}" if b > a else str(a) for a, b, _, _ in groups)
    note = (f"{len(groups)} builders for {dim} in {lo}..{hi}, one for each of {spans}: the "
            f"whole range is not one graph ({reason})")
    lines = _header(groups[0][3], weights_file, {dim: {"min": lo, "max": hi}}, _fixed(variants),
                    note)
    table = []
    for k, (a, b, poly, graph) in enumerate(groups):
        lines.append(f"// {js_comment(dim)} in {a}..{b}")
        if poly is None:
            writer = _SharingWriter(graph, weights_file, shared)
            lines += [f"function inputsAt{k}(dims) {{ return {_descs(graph.input_descs())}; }}",
                      f"function outputsAt{k}(dims) {{ return {_descs(graph.output_descs())}; }}"]
        else:
            writer = _PolymorphicWriter(poly, weights_file, shared)
            g = poly.template
            ins = {n: (g.inputs[n].data_type, _exprs(v)) for n, v in poly.input_shapes.items()}
            outs = {n: (g.outputs[n].data_type, _exprs(v)) for n, v in poly.output_shapes.items()}
            lines += [f"function inputsAt{k}(dims) {{", f"  return {_descs_js(ins)};", "}",
                      f"function outputsAt{k}(dims) {{", f"  return {_descs_js(outs)};", "}"]
        lines += [f"async function build{k}(context, weights, dims) {{",
                  f"  const inputs = inputsAt{k}(dims), outputs = outputsAt{k}(dims);",
                  *writer.body_lines(), "}", ""]
        table.append(f"  {{min: {a}, max: {b}, build: build{k}, inputsAt: inputsAt{k}, "
                     f"outputsAt: outputsAt{k}}},")
    lines += [
        "const GROUPS = [", *table, "];",
        "",
        "function groupOf(dims) {",
        "  checkDims(dims);",
        f"  const value = dims[{js_string(dim)}];",
        "  return GROUPS.find((g) => g.min <= value && value <= g.max);",
        "}",
        "",
        "export function inputsAt(dims) { return groupOf(dims).inputsAt(dims); }",
        "export function outputsAt(dims) { return groupOf(dims).outputsAt(dims); }",
        "",
        "export async function buildGraph(context, weights, dims) {",
        "  return groupOf(dims).build(context, weights, dims);",
        "}",
        "",
    ]
    return "\n".join(lines) + "\n" + _HELPERS.read_text(), shared.entries, note


@dataclass
class _Varying:
    """Variants seen with only the dims that vary: the others are the module's FIXED_DIMS."""

    dims: tuple[str, ...]
    entries: list
    ranges: dict
    fixed: dict[str, int]


def _varying_only(variants, convert):
    """The variants without the dims that have one value in every entry (Variants.fixed, or a
    dim listed with one value and no range), and `convert` taking the varying dims only: the
    module accepts the others optionally, at their value, so that `buildGraph(context,
    weights, {sequence: 24})` and the source's full dims both work."""
    ranges = dict(getattr(variants, "ranges", None) or {})
    fixed = {str(n): int(v) for n, v in (getattr(variants, "fixed", None) or {}).items()}
    points = [p for p, _ in variants.entries]
    for name in sorted({n for p in points for n in p}):
        values = {p.get(name) for p in points}
        if len(values) == 1 and name not in ranges and None not in values:
            fixed[name] = int(values.pop())
    entries = [({n: v for n, v in p.items() if n not in fixed}, g) for p, g in variants.entries]
    dims = tuple(n for n in (getattr(variants, "dims", ()) or ()) if n not in fixed)
    if convert is not None:
        at_all = convert
        convert = lambda at: at_all({**fixed, **at})  # noqa: E731
    return _Varying(dims, entries, ranges, fixed), convert


def _fixed(variants) -> dict[str, int]:
    return dict(variants.fixed)


def _header(graph: Graph, weights_file: str, accepted: dict, fixed: dict[str, int],
            note: str) -> list[str]:
    dims = ", ".join(f"{js_string(n)}: {_accepted_js(a)}" for n, a in accepted.items())
    pinned = ", ".join(f"{js_string(n)}: {v}" for n, v in fixed.items())
    state = ", ".join(f"{{input: {js_string(v.input)}, output: {js_string(v.output)}}}"
                      for v in graph.state)
    return [
        f"// WebNN graph {js_comment(graph.name)}, written by webnn-converter for the dims "
        f"{js_comment(', '.join(accepted))}:",
        f"// {js_comment(note)}",
        "// buildGraph(context, weights, dims) -> {graph, inputs, outputs, unusedInputs}; e.g.",
        f"// buildGraph(context, await loadWeights(), {{{_example(accepted)}}}).",
        "",
        f"export const WEIGHTS_FILE = {js_string(weights_file)};",
        f"export const DIMS = {{{dims}}};",
        "// Dims fixed at conversion: optional, and only at their value.",
        f"export const FIXED_DIMS = {{{pinned}}};",
        "// The graph's state pairs (an input fed what an output gave the step before). A module",
        "// with dims has no createSession: its state is fed and read as inputs and outputs.",
        f"export const state = [{state}];",
        *permuted_lines(graph),
        "",
        "function describeDim(accepted) {",
        "  if (\"values\" in accepted) return `one of ${accepted.values.join(\", \")}`;",
        "  const steps = \"step\" in accepted ? ` in steps of ${accepted.step}` : \"\";",
        "  return `an integer in ${accepted.min}..${accepted.max}${steps}`;",
        "}",
        "",
        "/** Throw unless `dims` gives every dim of DIMS an accepted integer, and nothing else but",
        "    dims of FIXED_DIMS at their value. */",
        "export function checkDims(dims) {",
        "  const all = Object.entries(DIMS).map(([n, a]) => `${JSON.stringify(n)}: ` +",
        "                                                   describeDim(a)).join(\"; \");",
        "  if (dims === null || typeof dims !== \"object\") {",
        "    throw new TypeError(`buildGraph takes the dims as an object: ${all}`);",
        "  }",
        "  for (const name of Object.keys(dims)) {",
        "    if (Object.hasOwn(FIXED_DIMS, name) && !Object.hasOwn(DIMS, name)) {",
        "      if (dims[name] !== FIXED_DIMS[name]) {",
        "        throw new RangeError(`dimension ${JSON.stringify(name)} was fixed at ` +",
        "                             `${FIXED_DIMS[name]} when converting, got ${String(dims[name])}`);",
        "      }",
        "      continue;",
        "    }",
        "    if (!Object.hasOwn(DIMS, name)) {",
        "      throw new TypeError(`unknown dimension ${JSON.stringify(name)}; the dims are ${all}`);",
        "    }",
        "  }",
        "  for (const [name, accepted] of Object.entries(DIMS)) {",
        "    const value = dims[name];",
        "    const ok = Number.isInteger(value) && (\"values\" in accepted",
        "      ? accepted.values.includes(value) : value >= accepted.min && value <= accepted.max",
        "        && (value - accepted.min) % (accepted.step ?? 1) === 0);",
        "    if (!ok) {",
        "      throw new RangeError(`dimension ${JSON.stringify(name)} must be ` +",
        "                           `${describeDim(accepted)}, got ${String(value)}`);",
        "    }",
        "  }",
        "}",
        "",
    ]


def _accepted_js(accepted: dict) -> str:
    if "values" in accepted:
        return f"{{values: [{', '.join(str(v) for v in accepted['values'])}]}}"
    step = f", step: {accepted['step']}" if "step" in accepted else ""
    return f"{{min: {accepted['min']}, max: {accepted['max']}{step}}}"


def _accepted_text(accepted: dict) -> str:
    return ", ".join(
        f"{n} in {', '.join(map(str, a['values']))}" if "values" in a
        else f"{n} in {a['min']}..{a['max']}" + (f" in steps of {a['step']}" if "step" in a
                                                 else "") for n, a in accepted.items())


def _example(accepted: dict) -> str:
    return ", ".join(f"{js_string(n)}: {a['values'][0] if 'values' in a else a['min']}"
                     for n, a in accepted.items())


def _point(point) -> str:
    return ",".join(f"{n}={v}" for n, v in sorted(point.items()))


def _key(point, names) -> str:
    return ",".join(f"{n}={point[n]}" for n in names)


def _exprs(shape) -> list[JsCode]:
    return [JsCode(e.js()) for e in shape]


def _descs_js(descs: dict) -> str:
    if not descs:
        return "{}"
    inner = ",\n".join(f"    {js_string(n)}: {_desc(t, s)}" for n, (t, s) in descs.items())
    return "{\n" + inner + "\n  }"


def _as_js(tree):
    """An option's value tree with its expressions as JsCode."""
    from .symbolic import Expr

    if isinstance(tree, Expr):
        return JsCode(tree.js())
    if isinstance(tree, list):
        return [_as_js(v) for v in tree]
    return tree


class _SharedWeights:
    """The weights of every builder of a module: one entry per distinct content."""

    def __init__(self):
        self.entries: list[tuple[str, ConstantData]] = []
        self._keys: set[str] = set()
        self._by_content: dict[tuple, str] = {}

    def key(self, name: str, data: ConstantData) -> str:
        digest = hashlib.sha256(bytes(data.raw_bytes())).hexdigest()
        content = (data.data_type, tuple(data.shape), digest)
        found = self._by_content.get(content)
        if found is None:
            from ..formats.weights import safe_key

            found = self._by_content[content] = unique_name(safe_key(name), self._keys)
            self.entries.append((found, data))
        return found


class _SharingWriter(ModuleWriter):
    """A builder whose weights go to the module's shared, deduplicated weights."""

    def __init__(self, graph: Graph, weights_file: str, shared: _SharedWeights):
        super().__init__(graph, weights_file)
        self.shared = shared

    def _weight_key(self, name: str, data: ConstantData) -> str:
        return self.shared.key(name, data)


class _PolymorphicWriter(_SharingWriter):
    """The template graph with its shapes and varying options written as expressions."""

    def __init__(self, poly, weights_file: str, shared: _SharedWeights):
        super().__init__(poly.template, weights_file, shared)
        self.poly = poly
        self._index = {id(op): i for i, op in enumerate(poly.template.operations)}

    def _input_desc(self, operand: Operand) -> str:
        return _desc(operand.data_type, _exprs(self.poly.input_shapes[operand.name]))

    def _constant(self, operand: Operand) -> str:
        form = self.poly.constants[operand.name]
        if form.kind == "same":
            return super()._constant(operand)
        shape = _shape(_exprs(form.shape))
        if form.kind == "fill":
            return self.constant_call(operand.name, form.data, shape=shape)
        if form.kind == "value":
            return self._value_constant(operand.name, form, shape)
        # corner (or tail): the largest variant's value, cut to the dims' size when the graph
        # is built (a constant still: a slice op would make it computed, and some operands, such as
        # Chromium's gatherElements indices, must be constants)
        data = form.data
        if dtypes.info(data.data_type).bits < 8:
            raise ConverterError("a 4-bit constant that differs between the dims' values has "
                                 "no corner form", where=f"constant '{operand.name}'",
                                 fix="convert at one value of each dim")
        key = self._weight_key(operand.name, data)
        whole = (f"weights.bytes({js_string(key)}, {js_string(data.data_type)}, "
                 f"{list(data.shape)})")
        desc = f"{{dataType: {js_string(data.data_type)}, shape: {shape}}}"
        trailing = ", true" if form.kind == "tail" else ""
        return (f"builder.constant({desc}, corner({whole}, {js_string(data.data_type)}, "
                f"{list(data.shape)}, {shape}{trailing}))")

    def _value_constant(self, name: str, form, shape: str) -> str:
        """A constant with one value per converted point (symbolic's `value` form): each is
        an entry of the weights file (equal ones once), and the builder reads the one its
        dims name."""
        first = next(iter(form.data.values()))
        if dtypes.info(first.data_type).bits < 8:
            raise ConverterError("a 4-bit constant that differs between the dims' values has "
                                 "no per-value form", where=f"constant '{name}'",
                                 fix="convert at one value of each dim")
        table = ", ".join(f"{js_string(point)}: {js_string(self._weight_key(name, data))}"
                          for point, data in form.data.items())
        point = ",".join(f"${{dims[{js_string(n)}]}}" for n in sorted(self.poly.ranges))
        dtype = js_string(first.data_type)
        desc = f"{{dataType: {dtype}, shape: {shape}}}"
        return (f"builder.constant({desc}, weights.bytes(({{{table}}})[`{point}`], {dtype}, "
                f"{shape}))")

    def _call(self, op: Operation) -> str:
        varying = self.poly.attrs.get(self._index[id(op)])
        if varying:
            op = copy.copy(op)
            op.attrs = {**op.attrs, **{k: _as_js(v) for k, v in varying.items()}}
        return super()._call(op)
