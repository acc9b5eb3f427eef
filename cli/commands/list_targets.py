"""`webnn-convert targets`: the built-in backend targets, one row each."""
from __future__ import annotations

import click

from ..options import use
from ..terminal import echo, echo_json


@click.command("targets")
@use("json")
def command(as_json: bool) -> None:
    """List the built-in targets: name, preferred layout, op count and description.

    Any opSupportLimits JSON copied out of a browser is a target too: pass its path to
    `--target`.
    """
    from converter.targets import builtin_targets, load_target

    targets = [load_target(name) for name in builtin_targets()]
    if as_json:
        echo_json([
            {"name": t.name, "preferredLayout": t.preferred_layout, "ops": len(t.ops()),
             "maxTensorByteLength": t.max_tensor_bytes, "description": t.description,
             "constantOperands": t.constant_operands, "emulated": t.emulated,
             # what build() refuses beyond opSupportLimits(): the rewrite passes read these
             "maxConstantByteLength": t.max_constant_bytes,
             "refusedOptions": t.refused_options,
             "sources": t.sources} for t in targets], indent=1)
        return
    from ..tables import print_table

    print_table(("target", "layout", "ops", "description"),
                [(t.name, t.preferred_layout, str(len(t.ops())), t.description) for t in targets])
    echo(f"{len(targets)} targets")
