"""What verification takes beyond a source and its graph: the options `verify` and `convert
--verify` share (options.VERIFYING), gathered in one value. Light to import: a plain
conversion imports this and no verification code."""
from __future__ import annotations

from dataclasses import dataclass, field, fields

__all__ = ["Checking"]


@dataclass(frozen=True)
class Checking:
    """What verification takes beyond the source and its graph (options.VERIFYING), as verify
    and convert --verify both take it."""

    runtime: str = "ort"
    given: dict = field(default_factory=dict)  # --input: name -> .npy path
    inputs_dir: str | None = None
    seed: int = 0
    atol: float | None = None
    rtol: float | None = None
    ulp: int | None = None
    oracle: str = "auto"
    do_bisect: bool = False
    dump_dir: str | None = None
    steps: int | None = None
    prompt: list | None = None
    accuracy: dict | None = None  # --accuracy, parsed: {metric: (direction, bound)}
    samples: int | None = None  # --samples; None: accuracy.DEFAULT_SAMPLES

    @classmethod
    def of(cls, params: dict) -> "Checking":
        """From a command's parameters (the VERIFYING options' names)."""
        return cls(**{f.name: params[f.name] for f in fields(cls)})

    def usage_problem(self) -> str | None:
        if self.dump_dir and not self.do_bisect:
            return "--dump writes what --bisect finds: give --bisect too"
        if self.runtime.startswith("device") and (self.steps is not None or self.prompt):
            return "--runtime device runs one stateless graph: drop --steps and --prompt"
        return None

    def feeds(self) -> dict | None:
        from .inputs import read_inputs

        return read_inputs(self.given, self.inputs_dir) \
            if self.given or self.inputs_dir else None

    def holds_samples(self) -> bool:
        """Whether --inputs names a folder of sample subfolders (measured by --weights)."""
        from .inputs import holds_samples

        return holds_samples(self.inputs_dir)

    def given_samples(self) -> list[tuple[str, dict]]:
        """(path, arrays by input name) per sample subfolder of --inputs, --input joining each."""
        from .inputs import read_samples

        return read_samples(self.given, self.inputs_dir)

    def first_sample(self) -> "Checking":
        """These checks with --inputs narrowed to its first sample subfolder: the float
        conversion's own verification runs once, on it."""
        import os
        from dataclasses import replace

        first = min(e.name for e in os.scandir(self.inputs_dir)
                    if e.is_dir(follow_symlinks=False))
        return replace(self, inputs_dir=os.path.join(self.inputs_dir, first))
