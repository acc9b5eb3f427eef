"""`webnn-convert check GRAPH_OR_MODEL --target T`: what will not run on a backend, all at once."""
from __future__ import annotations

import click

import converter
from converter.dynamic.variants import one_graph

from ..options import decoder_options, source_options, target_option
from ..terminal import echo, echo_json

_REASONS_IN_TABLE = 2  # violations shown per target in the `--target all` table


@click.command("check")
@click.argument("source", metavar="GRAPH_OR_MODEL", type=click.Path(dir_okay=False))
@target_option(default="all", allow_all=True)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--dequantize", is_flag=True,
              help="Say what `convert --dequantize` does with quantized weights: float "
                   "everywhere (default: kept, re-encoded or dequantized per target).")
@source_options
@decoder_options
def command(source, target_name, as_json, dequantize, dims, input_shapes, known_inputs,
            state_patterns, cache_capacity, prompt):
    """Check GRAPH_OR_MODEL (.onnx, .tflite, .webnn, .json) against a backend target.

    Lists every violation: the op, operand, rule, the value found and what would fix it
    (`webnn-convert convert SRC --target T` runs the passes named), then what conversion
    does with each dequantizeLinear of constant weights (kept, re-encoded exactly, or
    dequantized; with --dequantize: dequantized) and which int8 ops the target computes in
    float32 between exact casts (its backend refuses their int8 form). With `--target all`,
    prints one row per built-in target. Exits 0 when the graph fits every target checked,
    1 when it does not.
    """
    from converter.passes.int8_in_float import rewritten_ops
    from converter.passes.quantized_weights import plan
    from converter.targets import builtin_targets, load_target
    from converter.targets.check import check

    from .stepping import load_with_state

    if prompt is not None:
        raise click.UsageError("--prompt applies to run and verify with --steps")
    if state_patterns or cache_capacity is not None:
        graph = load_with_state(source, dims=dims, input_shapes=input_shapes,
                                known_inputs=known_inputs, state_patterns=state_patterns,
                                capacity=cache_capacity)
    else:
        graph = one_graph(converter.load(source, dims=dims, input_shapes=input_shapes,
                                         known_inputs=known_inputs), source)
    names = builtin_targets() if target_name == "all" else [target_name]
    targets = [load_target(n) for n in names]
    results = {t.name: check(graph, t) for t in targets}
    weights = {t.name: plan(graph, t, dequantize) for t in targets}
    in_float = {t.name: rewritten_ops(graph, t) for t in targets}
    if as_json:
        echo_json({
            "source": source, "operations": len(graph.operations),
            "passed": not any(results.values()),
            "targets": {name: {"passed": not found, "violations": [v.to_json() for v in found],
                  "quantizedWeights": [d.to_json() for d in weights[name]],
                  "int8InFloat": [{"op": op.name, "opType": op.op_type}
                  for op in in_float[name]]}
                  for name, found in results.items()}}, indent=1)
    elif target_name == "all":
        _table(source, graph, targets, results)
    else:
        _listing(source, graph, targets[0], results[targets[0].name],
                 weights[targets[0].name], in_float[targets[0].name])
    if any(results.values()):
        raise SystemExit(1)


def _listing(source, graph, target, found, weights, in_float) -> None:
    for v in found:
        echo(v.line())
    for decision in weights:  # what `convert --target` does with each quantized weight
        echo(f"{target.name}: {decision.line()}")
    for op in in_float:  # what its int8_in_float pass rewrites
        echo(f"{target.name}: int8 {op.op_type} '{op.name}': computed in float32 between "
             f"casts (exact: it only moves values; the backend refuses its int8 form)")
    used = {op.op_type for op in graph.operations}
    emulated = [op for op in sorted(target.emulated) if op in used]
    if found:
        echo(f"{source}: does not fit {target.name} ({_count(found)})")
    else:
        echo(f"{source}: fits {target.name} ({len(graph.operations)} operations"
             f"{'; emulated there: ' + ', '.join(emulated) if emulated else ''})")


def _table(source, graph, targets, results) -> None:
    from ..tables import print_table

    rows = []
    for target in targets:
        found = results[target.name]
        reasons = "; ".join(v.short() for v in found[:_REASONS_IN_TABLE])
        if len(found) > _REASONS_IN_TABLE:
            reasons += f"; ... {len(found) - _REASONS_IN_TABLE} more"
        rows.append((target.name, target.preferred_layout, _count(found) if found else "fits",
                     reasons))
    # Every column stays: the reasons wrap between words within the terminal (`--target T`
    # lists every violation of one target, `--json` all of them).
    print_table(("target", "layout", "result", "first reasons"), rows)
    failing = [name for name, found in results.items() if found]
    summary = f"does not fit {', '.join(failing)}" if failing else "fits every target"
    echo(f"{source}: {len(graph.operations)} operations; {summary}")


def _count(found) -> str:
    return f"{len(found)} violation{'s' * (len(found) != 1)}"
