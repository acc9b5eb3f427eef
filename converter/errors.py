"""The errors the converter raises.

Every error renders as one line that says what is wrong, where, and what to do about it; the
CLI prints exactly that line (and the traceback only with --debug).
"""
from __future__ import annotations

__all__ = [
    "ConverterError",
    "FormatError",
    "MissingFileError",
    "ParseError",
    "OpValidationError",
    "GraphInvalidError",
    "WeightsError",
    "UnsupportedError",
    "OpenDimsError",
    "VerificationError",
    "NoSourceRuntimeError",
    "ConversionWarning",
]


class ConverterError(Exception):
    """Base of every error the converter raises on bad input.

    Args:
        what: what is wrong, as a sentence fragment ("unknown op 'conv3d'").
        where: where it is (a file, a file:line:col, a node, an operand); optional.
        fix: what the user can do about it; optional.
    """

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None):
        self.what = what
        self.where = where
        self.fix = fix
        super().__init__(self.line())

    def line(self) -> str:
        text = f"{self.where}: {self.what}" if self.where else self.what
        if self.fix:
            text += f"; {self.fix}"
        return _shortened(text)


# A line keeps its start (what is wrong, where) and its end (what to do) within this many
# characters: a value a message lists from a hostile file (200,000 axes, say) could otherwise
# make it megabytes long.
MAX_LINE = 8000
_TAIL = 1500


def _shortened(text: str) -> str:
    if len(text) <= MAX_LINE:
        return text
    left_out = len(text) - (MAX_LINE - _TAIL) - _TAIL
    return (f"{text[:MAX_LINE - _TAIL]} ... [{left_out} characters left out] ... "
            f"{text[-_TAIL:]}")


class FormatError(ConverterError):
    """A file does not follow its format (wrong magic, schema violation, bad reference)."""


class MissingFileError(FormatError, FileNotFoundError):
    """A file the user named does not exist: a FormatError (the CLI's one line) that Python code
    can also catch as the FileNotFoundError it is."""


class VerificationError(ConverterError):
    """A converted graph does not compute what its source does (`convert(..., verify=True)`);
    `report` is the VerifyReport, which prints as `webnn-convert verify` does."""

    def __init__(self, report, *, where: str | None = None):
        self.report = report
        failed = [o.name for o in report.outputs if not o.passed]
        super().__init__(f"the graph does not match its source ({len(failed)} output"
                         f"{'s' * (len(failed) != 1)} outside the bounds: "
                         f"{', '.join(failed) or 'none compared'})", where=where,
                         fix="print(e.report) for the figures; " + _BISECT)


_BISECT = "`webnn-convert verify --bisect` finds the first operation that leaves its budget"


class AccuracyError(VerificationError):
    """A graph with compressed weights (`convert(..., weights=..., verify=True)`) misses its
    accuracy bounds against the float source; `report` is the AccuracyReport
    (converter.verification.accuracy), which prints as `webnn-convert verify --weights` does."""

    def __init__(self, report, *, where: str | None = None):
        self.report = report
        missed = "; ".join(c.text() for c in report.failures()) or "no bound applied"
        ConverterError.__init__(self, f"the {report.weights} weights miss their accuracy "
                                f"bounds ({missed})", where=where,
                                fix="print(e.report) for the figures; give looser bounds "
                                    "(accuracy=) or keep float32 weights")


class ParseError(FormatError):
    """A syntax error in a text file, located by line and column (both 1-based)."""

    def __init__(self, what: str, *, path: str, line: int, column: int, fix: str | None = None):
        self.path, self.line_no, self.column = path, line, column
        super().__init__(what, where=f"{path}:{line}:{column}", fix=fix)


class WeightsError(FormatError):
    """The weights manifest or weights file is inconsistent with itself or the graph."""


class OpValidationError(ConverterError):
    """An operation breaks one of the spec's validation steps.

    The message names the op (and its node when known), the argument and the rule broken.
    """

    def __init__(self, op: str, argument: str, rule: str, *, node: str | None = None):
        self.op, self.argument, self.rule, self.node = op, argument, rule, node
        where = f"{op} '{node}'" if node else op
        super().__init__(f"{argument}: {rule}", where=where)


class GraphInvalidError(ConverterError):
    """A graph breaks one or more invariants; `problems` lists every one of them."""

    def __init__(self, problems: list[str], *, where: str | None = None):
        self.problems = list(problems)
        first = self.problems[0] if self.problems else "unknown problem"
        more = len(self.problems) - 1
        what = first if more == 0 else f"{first} (and {more} more problem{'s' * (more > 1)})"
        fix = "run `webnn-convert validate` to list them all" if more else None
        super().__init__(what, where=where, fix=fix)


class UnsupportedError(ConverterError):
    """Something cannot be converted; `items` lists every reason at once, not only the first."""

    def __init__(self, items: list[str], *, where: str | None = None, fix: str | None = None):
        self.items = list(items)
        what = f"{len(self.items)} unsupported: " + "; ".join(self.items)
        super().__init__(what, where=where, fix=fix)


class OpenDimsError(ConverterError):
    """A model's inputs have dimensions with no value, given or stored: nothing is wrong with
    the model, but its WebNN graph is made only at values of them (inspect and validate show
    what can be told without them, converter.dynamic.open_dims)."""


class NoSourceRuntimeError(ConverterError):
    """The source model's own runtime cannot run it at all, by what the model is (a TFLite
    custom op LiteRT has no kernel for): verify then checks the graph against its float64
    evaluation only, and its verdict is "unjudged: no source runtime"."""


class ConversionWarning(UserWarning):
    """Something a conversion did that the user should know of although it succeeded (an output
    left out ...); its message is one line, which the CLI prints as "warning: <message>"."""
