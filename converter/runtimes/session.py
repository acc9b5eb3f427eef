"""Running a stateful graph step by step: the graph's declared state (ir/state.py) is carried
from one call to the next.

    session = converter.Session(graph)
    for chunk in audio:
        outputs = session.step({"input": chunk})   # the model's outputs, state left out
    session.reset()                                  # back to the initial values

Each step feeds the state inputs what the previous step's next-state outputs gave (the initial
values at the start) and the caller's feeds for every other input. The graph is lowered once
and run on ONNX Runtime (`converter.run`'s executor), or with `runtime="chromium"` in headless
Chromium's WebNN through the emitted module's `createSession` (the state then stays on the
browser's context between steps: runtimes/chromium_session.py); a graph without state is a
Session too, each step then independent.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import ConverterError
from ..ir import Graph
from ..ir.state import initial_value

__all__ = ["Session"]


class Session:
    """A graph and its current state. `step(feeds)` runs one step and returns the model's
    outputs (on 'ort' the next-state outputs go to `state`, not to the caller; on 'chromium'
    they stay in the browser, and `read_state()` fetches them)."""

    def __init__(self, graph: Graph, runtime: str = "ort"):
        if runtime not in ("ort", "chromium"):
            raise ConverterError(f"a Session runs on 'ort' or 'chromium', not '{runtime}'")
        self.graph = graph
        self.runtime = runtime
        self._browser = None
        if runtime == "chromium":
            from .chromium_session import ChromiumSession

            self._browser = ChromiumSession(graph)
        else:
            from ..lowering.onnx.executor import prepare

            self._run = prepare(graph)
        self._state_outputs = {var.output for var in graph.state}
        self.state: dict[str, np.ndarray] = {}
        self.steps = 0
        self.reset()

    @property
    def feed_names(self) -> list[str]:
        """The inputs a caller feeds at each step: every input that is not state."""
        state = {var.input for var in self.graph.state}
        return [name for name in self.graph.inputs if name not in state]

    @property
    def output_names(self) -> list[str]:
        return [name for name in self.graph.outputs if name not in self._state_outputs]

    def reset(self) -> None:
        """Back to the initial state, as before the first step."""
        self.state = {var.input: initial_value(self.graph, var) for var in self.graph.state}
        self.steps = 0
        if self._browser is not None:
            self._browser.reset()

    def read_state(self) -> dict[str, np.ndarray]:
        """The state the next step will be fed, by state input name."""
        if self._browser is not None:
            return self._browser.read_state()
        return dict(self.state)

    def close(self) -> None:
        """Release the browser's session (an 'ort' session holds nothing to release)."""
        if self._browser is not None:
            self._browser.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def step(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one step on `feeds` (every non-state input); return the model's outputs."""
        clash = [name for name in feeds if name in self.state]
        if clash:
            raise ConverterError(f"'{clash[0]}' is state; the session feeds it",
                                 where=f"step {self.steps}",
                                 fix="feed only " + (", ".join(self.feed_names) or "nothing")
                                     + "; reset() starts the state over")
        if self._browser is not None:
            # The browser keeps the state on its context; `state` keeps the initial values.
            self.steps += 1
            return self._browser.step(feeds)
        results = self._run({**feeds, **self.state})
        self.state = {var.input: results[var.output] for var in self.graph.state}
        self.steps += 1
        return {name: value for name, value in results.items()
                if name not in self._state_outputs}
