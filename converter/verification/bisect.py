"""Where a mismatch starts: the first WebNN operation whose result leaves its budget.

    found = bisect("model.onnx", graph, seed=0, dump="bug/")
    print(found.describe())

The float64 reference interpreter evaluates the graph once, keeping every intermediate value
(the oracle). Then, in topological order, two questions are asked of every operation:

  * conversion: does the operation compute what its source node computes? The source model is
    run with every node's output kept (ONNX Runtime, LiteRT), and each node's output is compared
    with the oracle's value of the WebNN operand it became. A value is off when it is outside
    the whole-model bounds and beyond 2x the source's own spread there (the same run with other
    kernels or optimisation level, and with the input moved by one ULP), as the verdict judges
    outputs. The first node that is off while the values it reads are not is where the
    conversion changed the model's meaning.
  * executor: does the executor compute the operation right? Every operation is run alone on
    the oracle's own inputs (rounded to their data type, so noise from earlier operations does
    not accumulate), and compared with the interpreter's float64 result on the same inputs
    under the op's ULP budget (shared tolerances: conv2d kh*kw*Cin/groups*2, softmax 3n+3 ...).

An operation's source node is read from its name: importers name each operation
`<ONNX node name>/<op>` or `<TFLITE_OP>_<index>/<op>`, and passes derive the names of the
operations they make from the names they replace.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from .. import ops as _ops  # noqa: F401  (the op catalogue the IR adds operations through)
from ..ir import Graph, Operation
from ..ir.io_permutations import check_given, permutations, to_graph_inputs
from .core import as_graph_feeds, make_inputs, source_int_limits
from .op_budgets import op_ulp_budget, within_ulp
from .parity import NOISE_FACTOR

__all__ = ["Finding", "bisect", "isolate", "source_node_of"]


@dataclass
class Finding:
    """The first operation that leaves its budget, and how far."""

    stage: str  # "conversion" or "executor"
    op: str
    op_type: str
    source_nodes: list[str]
    input_shapes: list[list[int] | None]
    output_shapes: list[list[int]]
    options: dict[str, Any]
    error_before: float  # max |value - oracle| over the operation's inputs
    error_after: float  # max |value - oracle| at its result
    budget: str
    detail: str
    dumped: list[str] = field(default_factory=list)
    op_output: str = ""  # the result that left its budget
    # what that result should be (the source's value for a conversion finding); for --dump
    expected: np.ndarray | None = field(default=None, repr=False)

    def describe(self) -> str:
        """What was found, in a few lines."""
        return "\n".join(self.describe_lines())

    def describe_lines(self) -> list[str]:
        """`describe`'s lines, each without its line break."""
        options = ", ".join(f"{k}={v}" for k, v in self.options.items())
        lines = [f"first operation out of budget ({self.stage}): {self.op_type} '{self.op}'",
                 f"  from source node(s): {', '.join(self.source_nodes) or 'unknown'}",
                 f"  inputs {self.input_shapes} -> outputs {self.output_shapes}",
                 f"  options: {options or '-'}",
                 f"  error against the float64 oracle: before {self.error_before:.3g}, "
                 f"after {self.error_after:.3g} ({self.budget})",
                 f"  {self.detail}"]
        if self.dumped:
            lines.append(f"  written: {', '.join(self.dumped)}")
        return lines

    def to_json(self) -> dict:
        return {"stage": self.stage, "op": self.op, "opType": self.op_type,
                "sourceNodes": self.source_nodes, "inputShapes": self.input_shapes,
                "outputShapes": self.output_shapes,
                "options": {k: _jsonable(v) for k, v in self.options.items()},
                "errorBefore": self.error_before, "errorAfter": self.error_after,
                "budget": self.budget, "detail": self.detail, "dumped": self.dumped}


def bisect(source: str | Path, graph: Graph, *, seed: int = 0,
           feeds: Mapping[str, np.ndarray] | None = None,
           known_inputs: Mapping[str, np.ndarray] | None = None,
           dump: str | Path | None = None) -> Finding | None:
    """The first operation of `graph` whose result leaves its budget against the float64
    oracle, or None when every operation keeps within it. `dump` writes its one-op graph
    (`subgraph.webnn`), its inputs (`<input>.npy`) and the expected result (`expected_*.npy`).

    `feeds` are in the source model's layout, as verify takes them: where the graph takes an
    input transposed (io_permutations.py) it is fed transposed, and a permuted output of the
    source is compared in the graph's layout.
    """
    from .reference import evaluate

    source = Path(source)
    drawn, _ = make_inputs(graph, seed, source_int_limits(source), in_source_layout=True)
    for name, value in (feeds or {}).items():
        check_given(graph, name, value)
        drawn[name] = np.asarray(value)
    graph_feeds = to_graph_inputs(graph, as_graph_feeds(graph, drawn))
    try:
        oracle = evaluate(graph, graph_feeds, keep="all", dtype=np.float64)
    except NotImplementedError as e:
        raise ConverterError(f"cannot bisect: {e}", where=f"graph '{graph.name}'") from None
    oracle.update({n: np.asarray(v, np.float64) if np.asarray(v).dtype.kind == "f"
                   else np.asarray(v) for n, v in graph_feeds.items()})
    source_feeds = dict(drawn)
    source_feeds.update({k: np.asarray(v) for k, v in (known_inputs or {}).items()})
    floats = {n for n, o in graph.inputs.items() if o.data_type in dtypes.FLOAT_TYPES}
    trace = _source_trace(source, source_feeds, floats)
    _outputs_as_graph_gives(trace, permutations(graph)["outputs"])
    found = _conversion_stage(trace, graph, oracle)
    if found is None:
        found = _executor_stage(graph, oracle, trace)
    if found is not None and dump is not None:
        found.dumped = _dump(graph, graph.producers()[found.op_output], oracle, Path(dump),
                             found)
    return found


# -- the conversion stage ----------------------------------------------------------------------
@dataclass
class _Node:
    """One node of the source model: its label, the values it reads and writes."""

    label: str
    name: str  # the name the importer gives its operations' prefix
    inputs: list[str]
    outputs: list[str]


@dataclass
class _Trace:
    """The source model run once with every node's output kept."""

    nodes: list[_Node]
    values: dict[str, np.ndarray]
    # the same run made other ways (other kernels or optimisation level, the input moved by
    # one ULP): how far they spread is the source's own noise at each value
    others: list[dict[str, np.ndarray]] = field(default_factory=list)

    def spread(self, name: str) -> float:
        mine = np.asarray(self.values[name], np.float64)
        return max((float(np.nanmax(np.abs(np.asarray(o[name], np.float64) - mine)))
                    for o in self.others if name in o and np.shape(o[name]) == mine.shape
                    and mine.size), default=0.0)

    def label_of(self, op: Operation) -> list[str]:
        for node in self.nodes:
            if any(o.name in node.outputs for o in op.outputs):
                return [node.label]
        node = source_node_of(op.name, [n.name for n in self.nodes])
        if node is not None:
            return [n.label for n in self.nodes if n.name == node][:1]
        return _labels(op.name)


def _outputs_as_graph_gives(trace: _Trace, perms: Mapping[str, list[int]]) -> None:
    """The source's values of outputs the graph gives transposed, transposed alike in every
    run, so each is compared with the graph's operand in one layout."""
    for run in (trace.values, *trace.others):
        for name, perm in perms.items():
            if name in run and np.ndim(run[name]) == len(perm):
                run[name] = np.transpose(run[name], perm)


def _source_trace(source: Path, feeds, float_inputs: set[str]) -> _Trace:
    moved = {n: np.nextafter(v, np.inf).astype(v.dtype) if n in float_inputs else v
             for n, v in ((n, np.asarray(v)) for n, v in feeds.items())}
    if source.suffix.lower() == ".tflite":
        from ..importers.tflite.model_file import read_tflite
        from ..runtimes.litert import run_litert

        sub = read_tflite(source).subgraphs[0]
        name = {t.index: t.name for t in sub.tensors}
        nodes = [_Node(f"TFLite op #{op.index} ({op.name})", f"{op.name}_{op.index}",
                       [name[i] for i in op.inputs if i >= 0],
                       [name[i] for i in op.outputs if i >= 0]) for op in sub.operators]
        kept = sorted({o for n in nodes for o in n.outputs})
        return _Trace(nodes, run_litert(source, feeds, tensors=kept),
                      [run_litert(source, feeds, tensors=kept, kernels="builtin"),
                       run_litert(source, moved, tensors=kept)])
    import onnx

    from ..runtimes.source_runs import run_onnx

    model = onnx.load(str(source))
    nodes = []
    for i, node in enumerate(model.graph.node):
        name = node.name or f"{node.op_type}_{i}"  # as the ONNX importer names it
        nodes.append(_Node(f"ONNX node '{name}' ({node.op_type})", name,
                           [x for x in node.input if x], [x for x in node.output if x]))
    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    known = {o.name for o in model.graph.output}
    for node in nodes:
        for out in node.outputs:
            if out not in known:
                exposed.graph.output.append(onnx.ValueInfoProto(name=out))
                known.add(out)
    where = f"{source} (every node output)"
    data = exposed.SerializeToString()
    return _Trace(nodes, run_onnx(data, feeds, where=where),
                  [run_onnx(data, feeds, level="all", where=where),
                   run_onnx(data, moved, where=where)])


def _conversion_stage(trace: _Trace, graph: Graph, oracle) -> Finding | None:
    """The first source node whose value is off the oracle's value of the operand it became,
    while every value it reads is not. Off: outside the whole-model bounds and beyond
    NOISE_FACTOR x the source's own spread at that value (as the verdict judges outputs)."""
    values = trace.values
    # The WebNN operand each source value became: an operand of the same name and shape (the
    # importers name results after the values they stand for, and a .webnn file keeps operand
    # names), else the last result (in graph order) of the operations named `<node>/...`.
    operand_of: dict[str, str] = {n: n for n in graph.inputs}
    for name, out in graph.outputs.items():
        if name in values:
            operand_of[name] = out.name
    by_node: dict[str, list[Operation]] = {}
    for op in graph.operations:
        node = source_node_of(op.name, [n.name for n in trace.nodes])
        if node is not None:
            by_node.setdefault(node, []).append(op)
    for node in trace.nodes:
        for out in (o for o in node.outputs if o in values and o not in operand_of):
            shape = tuple(np.shape(values[out]))
            if graph.has_operand(out) and graph.operand(out).shape == shape:
                operand_of[out] = out
            elif len(node.outputs) == 1 and by_node.get(node.name) and \
                    by_node[node.name][-1].outputs[0].shape == shape:
                operand_of[out] = by_node[node.name][-1].outputs[0].name
    checked: dict[str, tuple[_Off, bool]] = {}

    def off(name: str) -> tuple[_Off, bool]:
        if name not in checked:
            result = _error(values[name], oracle[operand_of[name]])
            checked[name] = result, not result.passed and \
                result.max_abs > NOISE_FACTOR * trace.spread(name)
        return checked[name]

    for node in trace.nodes:
        outs = [o for o in node.outputs if o in operand_of and o not in graph.inputs
                and _comparable(values[o], oracle.get(operand_of[o]))]
        if not outs:
            continue
        reads = [i for i in node.inputs if i in operand_of and i in values
                 and _comparable(values[i], oracle.get(operand_of[i]))]
        if any(off(i)[1] for i in reads):
            continue  # already off where it reads: not where the trouble starts
        before = [off(i)[0] for i in reads]
        for out in outs:
            after, is_off = off(out)
            if not is_off:
                continue
            op = graph.producers()[operand_of[out]]
            return _finding("conversion", op, [node.label],
                            max((r.max_abs for r in before), default=0.0), after.max_abs,
                            f"whole-model bounds atol 1e-4, rtol 1e-3; source's own spread "
                            f"{trace.spread(out):.3g}",
                            f"the source computes something else here: {after.reason} "
                            f"(source vs f64 at '{out}')", operand_of[out],
                            expected=np.asarray(values[out]))
    return None


def _comparable(source_value, oracle_value) -> bool:
    """Both float (a quantized source keeps integers where the graph may hold floats)."""
    return oracle_value is not None and np.asarray(source_value).dtype.kind == "f" \
        and np.asarray(oracle_value).dtype.kind == "f" \
        and np.shape(source_value) == np.shape(oracle_value)


@dataclass
class _Off:
    """One value against the oracle under the whole-model elementwise bounds."""

    passed: bool
    max_abs: float
    reason: str


_ATOL, _RTOL = 1e-4, 1e-3  # the whole-model float32 bounds (shared tolerances)


def _error(got, want) -> _Off:
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    diff = np.abs(got - want)
    agree = (diff <= _ATOL + _RTOL * np.abs(want)) | (np.isnan(got) & np.isnan(want)) \
        | (got == want)
    bad = int(np.count_nonzero(~agree))
    max_abs = float(np.nanmax(np.where(got == want, 0.0, diff))) if diff.size else 0.0
    return _Off(bad == 0, max_abs, f"{bad} of {want.size} elements outside the bounds")


# -- the executor stage ------------------------------------------------------------------------
def _executor_stage(graph: Graph, oracle, trace: _Trace) -> Finding | None:
    from ..runtimes.execute import run
    from .reference import evaluate

    ops = [op for op in graph.operations
           if all(o.data_type in dtypes.FLOAT_TYPES for o in op.outputs)]
    if not ops:
        return None
    alone, feeds = isolate(graph, ops, oracle)
    expected = evaluate(alone, feeds, dtype=np.float64)
    got = run(alone, feeds)
    full = run(_exposed(graph), {n: _rounded(oracle[n], o.data_type)
                                 for n, o in graph.inputs.items()})
    for op in ops:
        for out in op.outputs:
            want = expected[out.name].astype(dtypes.numpy_dtype(out.data_type))
            budget = op_ulp_budget(op)
            ok, worst = within_ulp(got[out.name], want, budget)
            if ok:
                continue
            before = max((_max_abs(full.get(i.name), oracle.get(i.name)) for i in op.inputs
                          if i is not None and i.kind != "constant"), default=0.0)
            after = _max_abs(full.get(out.name), oracle.get(out.name))
            return _finding("executor", op, trace.label_of(op), before, after,
                            f"{budget} ULP", f"run alone on the oracle's inputs it is {worst} "
                            f"ULP from the float64 result", out.name)
    return None


def isolate(graph: Graph, ops: list[Operation], values: Mapping[str, np.ndarray]
            ) -> tuple[Graph, dict[str, np.ndarray]]:
    """One graph holding every op in `ops` alone: each reads graph inputs (named
    `<op>:<slot>`) fed with `values` of what it read, rounded to their data type; constants
    are shared. Outputs keep their operand names."""
    alone = Graph(f"{graph.name}_alone")
    feeds: dict[str, np.ndarray] = {}
    for op in ops:
        inputs = []
        for slot, operand in enumerate(op.inputs):
            if operand is None:
                inputs.append(None)
            elif operand.kind == "constant":
                if not alone.has_operand(operand.name):
                    alone.add_constant(operand.name, operand.constant)
                inputs.append(alone.operand(operand.name))
            else:
                name = f"{op.name}:{slot}"
                inputs.append(alone.add_input(name, operand.data_type, operand.shape))
                feeds[name] = _rounded(values[operand.name], operand.data_type)
        new = alone.add_operation(op.op_type, inputs, dict(op.attrs), name=op.name,
                                  output_names=[o.name for o in op.outputs])
        for out in new.outputs:
            alone.set_output(out.name, out)
    return alone, feeds


def _exposed(graph: Graph) -> Graph:
    """A copy of `graph` whose every operation result is also an output."""
    copy = Graph(graph.name)
    for name, operand in graph.inputs.items():
        copy.add_input(name, operand.data_type, operand.shape)
    for name, operand in graph.constants.items():
        copy.add_constant(name, operand.constant)
    for op in graph.operations:
        inputs = [None if o is None else copy.operand(o.name) for o in op.inputs]
        new = copy.add_operation(op.op_type, inputs, dict(op.attrs), name=op.name,
                                 output_names=[o.name for o in op.outputs])
        for out in new.outputs:
            copy.set_output(out.name, out)
    return copy


# -- reporting ---------------------------------------------------------------------------------
def source_node_of(op_name: str, node_names: list[str]) -> str | None:
    """The source node an operation came from: the longest node name that prefixes
    `<node>/`."""
    best = None
    for name in node_names:
        if op_name.startswith(name + "/") and (best is None or len(name) > len(best)):
            best = name
    return best


_TFLITE = re.compile(r"^([A-Z][A-Z0-9_]*)_(\d+)/")


def _labels(op_name: str) -> list[str]:
    m = _TFLITE.match(op_name)
    if m:
        return [f"TFLite op #{m.group(2)} ({m.group(1)})"]
    return [f"ONNX node '{op_name.rsplit('/', 1)[0]}'"] if "/" in op_name else []


def _finding(stage, op: Operation, sources, before, after, budget, detail, output,
             expected=None) -> Finding:
    return Finding(stage, op.name, op.op_type, sources,
                   [None if o is None else list(o.shape) for o in op.inputs],
                   [list(o.shape) for o in op.outputs], dict(op.attrs), float(before),
                   float(after), budget, detail, op_output=output,
                   expected=expected)


def _dump(graph: Graph, op: Operation, oracle, folder: Path, found: Finding) -> list[str]:
    from ..conversion.by_suffix import write_any as save
    from ..files.guard import check_writes

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ConverterError(f"cannot make the dump folder: {e.strerror}", where=str(folder),
                             fix="give --dump a folder that can be created") from None
    alone, feeds = isolate(graph, [op], oracle)
    safe = {name: _safe(name) for name in feeds}
    renamed = Graph(f"{graph.name}_{_safe(op.name)}")
    for name, operand in alone.inputs.items():
        renamed.add_input(safe[name], operand.data_type, operand.shape)
    for name, operand in alone.constants.items():
        renamed.add_constant(name, operand.constant)
    only = alone.operations[0]
    new = renamed.add_operation(
        only.op_type, [None if o is None else renamed.operand(safe.get(o.name, o.name))
                       for o in only.inputs], dict(only.attrs), name=only.name,
        output_names=[o.name for o in only.outputs])
    for out in new.outputs:
        renamed.set_output(out.name, out)
    values = [folder / f"{safe[name]}.npy" for name in feeds] + \
        [folder / f"expected_{_safe(out.name)}.npy" for out in op.outputs]
    check_writes(values)  # none is a file the command reads (an --input .npy)
    written = [str(p) for p in save(renamed, folder / "subgraph.webnn")]
    for name, value in feeds.items():
        path = folder / f"{safe[name]}.npy"
        np.save(path, value)
        written.append(str(path))
    for out in op.outputs:  # the source's value (conversion), else the float64 result
        path = folder / f"expected_{_safe(out.name)}.npy"
        value = found.expected if found.expected is not None and out.name == found.op_output \
            else oracle[out.name]
        np.save(path, _rounded(value, out.data_type))
        written.append(str(path))
    return written


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name).strip(".") or "value"


def _rounded(value, data_type: str) -> np.ndarray:
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(value).astype(dtypes.numpy_dtype(data_type))


def _max_abs(got, want) -> float:
    if got is None or want is None:
        return float("nan")
    return _error(got, want).max_abs


def _jsonable(v):
    if isinstance(v, (np.generic,)):
        return v.item()
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v
