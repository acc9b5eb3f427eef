"""`verify --weights S` and `convert --verify --weights S`: the float conversion judged by the
float policy (as without the option), and the compressed one by its own accuracy verdict.

The two graphs are converted apart (the same source, target and state, with and without
compression): the float one for the parity report and the size before, the compressed one for
the accuracy report (converter.verification.accuracy) against the FLOAT SOURCE on its runtime.
"""
from __future__ import annotations

import click

from converter.errors import ConverterError

from ..checking import Checking

__all__ = ["converted", "refuse_without_weights", "measure", "check_usage", "float_checks"]


def refuse_without_weights(weights: str, checks: Checking) -> None:
    """--accuracy and --samples describe the accuracy report, which --weights asks for."""
    if weights == "float32":
        given = [flag for flag, value in (("--accuracy", checks.accuracy),
                                          ("--samples", checks.samples)) if value is not None]
        if given:
            raise click.UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'}"
                                   " with --weights float16|int8|int4 (the accuracy of a "
                                   "compressed graph)")


def converted(source, *, weights: str, target_name=None, io_layout=None, dims=None,
              input_shapes=None, known_inputs=None, state_patterns=(), cache_capacity=None,
              dequantize: bool = False, block_size: int | None = None,
              compute: str = "float32"):
    """SOURCE converted as the command converts it: with its state declared, for the target,
    its weights stored as `weights` (int4: one scale per `block_size` values), computing in
    `compute`."""
    import converter

    if cache_capacity is not None or state_patterns:
        from .stepping import load_with_state

        graph = load_with_state(source, dims=dims, input_shapes=input_shapes,
                                known_inputs=known_inputs, state_patterns=state_patterns,
                                capacity=cache_capacity)
        if target_name:
            from converter.targets.pipeline import convert_for_target

            convert_for_target(graph, target_name, io_layout=io_layout, dequantize=dequantize,
                               weights=weights, block_size=block_size, compute=compute)
        elif weights != "float32" or compute != "float32":
            from converter.targets.pipeline import store_weights

            store_weights(graph, weights, block_size, compute)
        return graph
    return converter.convert(source, target=target_name, io_layout=io_layout, dims=dims,
                             input_shapes=input_shapes, known_inputs=known_inputs,
                             dequantize=dequantize, weights=weights, block_size=block_size,
                             compute=compute)


def measure(source, compressed, checks: Checking, *, weights: str, bytes_before: int,
            known_inputs=None, state_patterns=(), dims=None):
    """The accuracy report of `compressed` against SOURCE: a decoder by its greedy tokens over
    --steps after --prompt, any other graph over --samples seeded (or the given) inputs, or
    over each sample subfolder of --inputs DIR."""
    from converter.verification.accuracy import (DEFAULT_SAMPLES, decoding_accuracy,
                                                 measure_accuracy, weights_bytes)

    if checks.prompt is not None:
        from converter.state.kv_cache import parse_state_patterns
        from converter.verification.decode import verify_decoding

        decoded = verify_decoding(source, compressed, prompt=checks.prompt,
                                  steps=checks.steps or 1,
                                  patterns=parse_state_patterns(state_patterns) or None,
                                  dims=dims or {}, runtime=checks.runtime)
        return decoding_accuracy(decoded, weights=weights, bytes_before=bytes_before,
                                 bytes_after=weights_bytes(compressed),
                                 accuracy=checks.accuracy)
    if checks.steps is not None or compressed.state:
        raise ConverterError("the accuracy of a stateful graph is measured by decoding",
                             fix="give a decoder --prompt IDS with --steps N (and "
                                 "--cache-capacity N), or drop --steps")
    if checks.holds_samples():  # --inputs DIR of sample subfolders: each one a sample
        return measure_accuracy(source, compressed, weights=weights, bytes_before=bytes_before,
                                seed=checks.seed, given_samples=checks.given_samples(),
                                known_inputs=known_inputs, runtime=checks.runtime,
                                accuracy=checks.accuracy)
    return measure_accuracy(source, compressed, weights=weights, bytes_before=bytes_before,
                            samples=checks.samples or DEFAULT_SAMPLES, seed=checks.seed,
                            feeds=checks.feeds(), known_inputs=known_inputs,
                            runtime=checks.runtime, accuracy=checks.accuracy)


def float_checks(weights: str, checks: Checking) -> Checking:
    """The checks the float conversion is verified by: with --weights and --inputs DIR of
    sample subfolders, its first sample (the accuracy report measures them all)."""
    return checks.first_sample() if weights != "float32" and checks.holds_samples() else checks


def check_usage(weights: str, checks: Checking, *, cache_capacity, graph_path=None) -> None:
    """What --weights cannot measure, refused before anything is converted."""
    refuse_without_weights(weights, checks)
    if weights == "float32":
        return
    if checks.samples is not None and checks.holds_samples():
        raise click.UsageError("--samples counts seeded inputs; --inputs DIR gives its sample "
                               "subfolders: drop --samples")
    if graph_path:
        raise click.UsageError("--weights converts SOURCE now and compresses it; --graph gives "
                               "a graph already: drop one")
    if checks.prompt is not None and cache_capacity is None:
        raise click.UsageError("--weights with --prompt measures a fixed-capacity decoder: give "
                               "--cache-capacity N")
    if checks.steps is not None and checks.prompt is None:
        raise click.UsageError("--weights with --steps measures a decoder's greedy tokens: "
                               "give --prompt IDS (and --cache-capacity N)")
