"""`webnn-convert convert SRC -o OUT --dim NAME=V1,V2,...` (or NAME=LO..HI): the model converted
at each value (converter.dynamic.variants), written as one .webnn/.json with one shared weights
file, or one .js module whose builder takes the dims; with --verify each value is checked
against the source at the same dims before anything is written."""
from __future__ import annotations

import click

import converter
from converter.dynamic.variants import point_text
from converter.conversion.variants import convert_variants

from ..logs import debugging, quiet_runtimes
from ..terminal import echo, echo_json
from .verify_model import _number, print_report

_FORMS = (".webnn", ".json", ".js")


def convert_several(source, output, dims, input_shapes, known_inputs, target_name, io_layout,
                    dequantize, then_verify, keep_on_mismatch, checks, as_json, verbose):
    """`checks` (cli.checking.Checking): --verify's options; each variant is verified with
    its seed, tolerances, runtime and oracle. Input files, --bisect and --steps fit one shape
    and are refused here."""
    _check_output(output)
    if then_verify and (checks.given or checks.inputs_dir or checks.do_bisect
                        or checks.steps is not None or checks.prompt is not None):
        raise click.UsageError("--dim with several values verifies each variant on seeded "
                               "inputs: --input, --inputs, --bisect, --steps and --prompt "
                               "take one shape; give one value of each dim for them")
    if (io_layout or dequantize) and not target_name:
        raise click.UsageError("--io-layout and --dequantize apply with --target")
    target = None
    if target_name:
        from converter.targets import load_target

        target = load_target(target_name)

    def told(point, graph):
        if verbose:
            echo(f"converted at {point_text(point)}: {len(graph.operations)} operations",
                 err=True)

    variants = convert_variants(source, dims, target=target, io_layout=io_layout,
                                input_shapes=input_shapes, known_inputs=known_inputs,
                                dequantize=dequantize, on_variant=told)
    reports = []
    if then_verify:
        quiet_runtimes(debugging())
        for point, graph in variants.entries:
            reports.append((point, converter.verify(
                source, graph, dims={**variants.fixed, **point}, input_shapes=input_shapes,
                known_inputs=known_inputs, graph_path=output, seed=checks.seed,
                atol=checks.atol, rtol=checks.rtol, ulp=checks.ulp, runtime=checks.runtime,
                oracle=checks.oracle)))
    passed = all(r.passed for _, r in reports)
    if passed or keep_on_mismatch:
        _write(variants, output, as_json, report_follows=bool(reports))
    if not reports:
        return
    if as_json:
        echo_json({"passed": passed, "variants": [
            {"at": point, "report": r.to_json()} for point, r in reports]}, indent=2,
            default=_number)
    else:
        for point, report in reports:
            echo(f"at {point_text(point)}:")
            print_report(report)
    if not passed:
        echo("verification failed at " + "; ".join(
            point_text(p) for p, r in reports if not r.passed) +
            ("; kept the outputs as --keep-on-mismatch asks" if keep_on_mismatch
             else "; nothing written"), err=True)
        raise SystemExit(1)


def write_variants(variants, output, target_name, io_layout, dequantize, as_json):
    """Variants read from a graph file: rewritten for the target (each graph) and written as
    one file again, or as a module (its expressions then checked on a listed value left out
    of the fit, as no source is at hand to convert at another)."""
    _check_output(output)
    if (io_layout or dequantize) and not target_name:
        raise click.UsageError("--io-layout and --dequantize apply with --target")
    if target_name:
        from converter.targets import load_target
        from converter.targets.pipeline import convert_for_target

        target = load_target(target_name)
        for _, graph in variants.entries:
            convert_for_target(graph, target, io_layout=io_layout, dequantize=dequantize)
    _write(variants, output, as_json)


def _check_output(output: str) -> None:
    if not output.lower().endswith(_FORMS):
        raise click.UsageError(f"several values of a dim are written as one "
                               f"{', '.join(_FORMS)} file; {output} holds one graph")


def _write(variants, output: str, as_json: bool, report_follows: bool = False) -> None:
    """Write the variants; say so in a line, or with `as_json` in one JSON document unless a
    verification report (which is then the document) follows."""
    note = None
    if output.lower().endswith(".js"):
        from converter.dynamic.module_js import write_variants_js

        written, note = write_variants_js(variants, output, convert=variants.convert)
    else:
        written = converter.save(variants, output)
    if as_json:
        if not report_follows:
            echo_json({"written": [str(p) for p in written],
                       "variants": [dict(point) for point, _ in variants.entries]}, indent=2)
        return
    echo(f"wrote {', '.join(map(str, written))} ({len(variants.entries)} "
         f"variants: {variants.accepted_text()})")
    if note:
        echo(note)
