"""`webnn-convert check GRAPH_OR_MODEL --target T`: will `convert --target T` succeed? What remains
after the target's passes, all at once, and what the passes fix, apart."""
from __future__ import annotations

import click

import converter
from converter.dynamic.variants import one_graph

from ..inputs import model_path
from ..options import SOURCE, STATE, use
from ..terminal import echo, echo_json

_REASONS_IN_TABLE = 2  # violations shown per target in the `--target all` table


@click.command("check")
@click.argument("source", metavar="GRAPH_OR_MODEL", type=click.Path(dir_okay=False))
@use("target", "json", "dequantize", *SOURCE, *STATE)
def command(source, target_name, as_json, dequantize, dims, input_shapes, known_inputs,
            follow_symlinks, state_patterns, cache_capacity):
    """Say whether `convert GRAPH_OR_MODEL --target T` succeeds (.onnx, .tflite, .webnn, .json).

    Runs the target's passes as `convert --target T` does, then lists every violation that
    remains: the op, operand, rule, the value found and what would fix it. The violations of
    the source that the passes fix are listed apart, as information ("fixed by pass X: N").
    Then it says what conversion does with each dequantizeLinear of constant weights (kept,
    re-encoded exactly, or dequantized; with --dequantize: dequantized) and which int8 ops
    the target computes in float32 between exact casts (its backend refuses their int8 form).
    Without --target (or with `--target all`), prints one row per built-in target. Exits 0
    when the graph fits every target checked after its passes, 1 when violations remain.
    """
    from converter.passes.int8_in_float import rewritten_ops
    from converter.passes.quantized_weights import plan
    from converter.targets import builtin_targets, load_target
    from converter.targets.pipeline import check_after_passes

    from .stepping import load_with_state

    source = model_path(source, follow_symlinks)
    target_name = target_name or "all"

    def load():
        if state_patterns or cache_capacity is not None:
            return load_with_state(source, dims=dims, input_shapes=input_shapes,
                                   known_inputs=known_inputs, state_patterns=state_patterns,
                                   capacity=cache_capacity)
        return one_graph(converter.load(source, dims=dims, input_shapes=input_shapes,
                                        known_inputs=known_inputs), source)

    names = builtin_targets() if target_name == "all" else [target_name]
    targets = [load_target(n) for n in names]
    reports, weights, in_float = {}, {}, {}
    operations = None
    for t in targets:
        graph = load()  # the passes edit it: each target converts the source afresh
        operations = len(graph.operations)
        weights[t.name] = plan(graph, t, dequantize)  # what the passes will do, said first
        in_float[t.name] = rewritten_ops(graph, t)
        reports[t.name] = check_after_passes(graph, t, dequantize=dequantize)
    failing = [name for name, report in reports.items() if report.violations]
    if as_json:
        echo_json({
            "source": source, "operations": operations, "passed": not failing,
            "targets": {name: {"passed": report.passed,
                  "violations": [v.to_json() for v in report.violations],
                  # what the passes fix: information; "" counts those no advice pins to a pass
                  "fixed": report.to_json()["fixed"],
                  "fixedByPass": {by or "": n for by, n in report.fixed_counts().items()},
                  "quantizedWeights": [d.to_json() for d in weights[name]],
                  "int8InFloat": [{"op": op.name, "opType": op.op_type}
                  for op in in_float[name]]}
                  for name, report in reports.items()}}, indent=1)
    elif target_name == "all":
        _table(source, operations, targets, reports)
    else:
        _listing(source, targets[0], reports[targets[0].name], weights[targets[0].name],
                 in_float[targets[0].name])
    if failing:
        raise SystemExit(1)


def _listing(source, target, report, weights, in_float) -> None:
    found = report.violations
    for v in found:
        echo(v.line())
    for by, count in report.fixed_counts().items():  # information: convert does this
        by = f"pass {by}" if by else "its other passes"
        echo(f"{target.name}: fixed by {by}: {count} violation{'s' * (count != 1)}")
    for decision in weights:  # what `convert --target` does with each quantized weight
        echo(f"{target.name}: {decision.line()}")
    for op in in_float:  # what its int8_in_float pass rewrites
        echo(f"{target.name}: int8 {op.op_type} '{op.name}': computed in float32 between "
             f"casts (exact: it only moves values; the backend refuses its int8 form)")
    if found:
        echo(f"{source}: does not fit {target.name} ({_count(found)} after its passes)")
    else:
        emulated = list(report.emulated)
        echo(f"{source}: fits {target.name} after conversion ({report.operations_after} "
             f"operations{'; emulated there: ' + ', '.join(emulated) if emulated else ''})")


def _table(source, operations, targets, reports) -> None:
    from ..tables import print_table

    rows = []
    for target in targets:
        report = reports[target.name]
        found = report.violations
        reasons = "; ".join(v.short() for v in found[:_REASONS_IN_TABLE])
        if len(found) > _REASONS_IN_TABLE:
            reasons += f"; ... {len(found) - _REASONS_IN_TABLE} more"
        rows.append((target.name, target.preferred_layout, _count(found) if found else "fits",
                     reasons))
    # Every column stays: the reasons wrap between words within the terminal (`--target T`
    # lists every violation of one target and what the passes fix, `--json` all of them).
    print_table(("target", "layout", "result", "first reasons"), rows)
    failing = [name for name, report in reports.items() if report.violations]
    summary = f"does not fit {', '.join(failing)}" if failing else "fits every target"
    echo(f"{source}: {operations} operations; {summary} after conversion")


def _count(found) -> str:
    return f"{len(found)} violation{'s' * (len(found) != 1)}"
