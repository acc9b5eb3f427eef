"""`webnn-convert`: the command-line entry point.

Every command reports bad input as one line on stderr (what, where, what to do) and exits
non-zero; `--debug` adds the traceback. Exit codes: 0 success, 1 the command ran and found a
problem (an invalid graph, a mismatch), 2 an error (bad input, bad usage), 128 + N stopped by
signal N (130: Ctrl-C; 143: SIGTERM), its partial outputs removed.
"""
from __future__ import annotations

import signal
import sys
import warnings

import click

from converter import __version__
from converter.errors import ConverterError

from . import collector
from .commands import LazyGroup
from .options import use
from .terminal import echo, echo_traceback, show_warning, shown

EXIT_ERROR = 2


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where the program is, so that it unwinds as on Ctrl-C: every
    save in progress removes its temporary files on the way out."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _stop(signum, frame) -> None:
    raise Stopped(signum)


def _stop_on_signals() -> None:
    for name in ("SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _stop)


class _Group(LazyGroup):
    """Turns every error into one line on stderr; the traceback only with --debug."""

    def resolve_command(self, ctx: click.Context, args: list[str]):
        found = super().resolve_command(ctx, args)
        command = found[1]
        if not getattr(command, "resumes_collector", False):  # its modules are imported now
            collector.resume()
        return found

    def invoke(self, ctx: click.Context):
        from converter.files.guard import tracking
        from converter.files.mapped import FileChanging, guarding

        try:
            # tracking: every file the command reads, so that no output replaces one;
            # guarding: a mapped file another program starts to change stops the command.
            with tracking(), guarding():
                return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except click.ClickException as e:  # click prints it: a file name in it is shown too
            e.message = shown(e.message)
            raise
        except FileChanging as e:  # before Stopped: a KeyboardInterrupt too
            _report(ctx, f"error: {e.line()}")
        except KeyboardInterrupt as e:  # Stopped (SIGTERM, SIGHUP) or Ctrl-C (SIGINT)
            # 128 + the signal: the shell's status of a process a signal ended (130 for
            # Ctrl-C), never 1, which means "found a problem" (verify: a mismatch). The
            # saves in progress removed their files as the exception unwound them.
            signum = e.signum if isinstance(e, Stopped) else signal.SIGINT
            echo(f"stopped by {signal.Signals(signum).name}; nothing was left half "
                 f"written", err=True)
            ctx.exit(128 + signum)
        except BrokenPipeError:  # the reader went away (`| head`): nothing left to report
            import os

            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            ctx.exit(0)
        except ConverterError as e:
            _report(ctx, f"error: {e.line()}")
        except (OSError, MemoryError) as e:
            _report(ctx, f"error: {_os_error_line(e)}")
        except Exception as e:  # a bug of ours: say so plainly, keep the trace behind --debug
            line = f"internal error: {type(e).__name__}: {e}"
            if not ctx.find_root().params.get("debug"):  # with --debug the trace is above
                line += "; rerun with --debug and report it"
            _report(ctx, line)


def _os_error_line(e: Exception) -> str:
    if isinstance(e, OSError) and e.filename:
        return f"{e.filename}: {e.strerror or e}"
    return str(e) or type(e).__name__


def _report(ctx: click.Context, line: str) -> None:
    if ctx.find_root().params.get("debug"):
        echo_traceback(sys.exc_info()[1])
    echo(line, err=True)
    ctx.exit(EXIT_ERROR)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="webnn-convert")
@use("debug")
def main(debug: bool) -> None:
    """Convert models between ONNX, TFLite and W3C WebNN graphs, and verify them.

    Graph files are the WebNN graph format: NAME.webnn (text) or NAME.json, with
    NAME.manifest.json and NAME.weights beside them. An option means the same in every
    command that takes it. Exit status: 0 success, 1 a problem found (a mismatch, an invalid
    graph), 2 an error, 130 stopped by Ctrl-C (128 + N for signal N), nothing left behind.
    """
    _stop_on_signals()
    warnings.showwarning = show_warning  # the converter's warnings as one line, `shown`


if __name__ == "__main__":  # `python -m cli.main`: as the webnn-convert script runs the group
    from .launch import launch

    collector.pause()  # as the script does (click is imported by now, the command is not)
    launch(main)
