"""The `webnn-convert` script's entry point, kept apart from cli.main so that it can act before
click, numpy and the converter are imported."""
from __future__ import annotations

from . import collector

__all__ = ["run"]


def run() -> None:
    """The console script: the collector paused while the command starts (cli/collector.py),
    then the command group run as launch.py runs it, with its quick exit."""
    collector.pause()  # before click, numpy and the rest are imported
    from .launch import launch
    from .main import main

    launch(main)
