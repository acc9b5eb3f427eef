"""A stateful graph run step by step in Chromium's WebNN, through the emitted module's own
`createSession(context, weights)` (emit/webnn_session.js): the state stays on the browser's
context as MLTensors between steps, and only the model's outputs come back to Python.

    session = ChromiumSession(graph)
    outputs = session.step({"x": chunk})   # {output name: ndarray}, state outputs left out
    session.reset(); session.close()

It shares the chromium runtime's browser, server and runner page (chromium.py); the session
lives in that page until `close()` (or the browser's end).
"""
from __future__ import annotations

import base64
import shutil
from typing import Mapping

import numpy as np

from .. import dtypes
from ..errors import ConverterError
from ..ir import Graph
from .chromium import _browser_error, _input_bytes, _session

__all__ = ["ChromiumSession"]


class ChromiumSession:
    """One open `createSession()` of `graph`'s module in the shared browser."""

    def __init__(self, graph: Graph):
        from ..emit.javascript import write_js

        self.graph = graph
        state_inputs = {var.input for var in graph.state}
        state_outputs = {var.output for var in graph.state}
        self.feed_names = [n for n in graph.inputs if n not in state_inputs]
        self.output_names = [n for n in graph.outputs if n not in state_outputs]
        self._browser = _session()
        self._folder = self._browser.new_folder()
        self._id = None
        try:
            write_js(graph, self._folder / "model.js")
            opened = self._call("webnnOpenSession",
                                f"{self._browser.url(self._folder)}/model.js")
            self._id = opened["id"]
        except BaseException:
            shutil.rmtree(self._folder, ignore_errors=True)
            raise

    def _call(self, function: str, argument) -> dict:
        raw = self._browser.page.evaluate(f"(a) => window.{function}(a)", argument)
        if "error" in raw:
            raise _browser_error(self.graph, raw["error"])
        return raw

    def step(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One step on `feeds` (every non-state input); the model's outputs by name."""
        encoded = {}
        for name, value in feeds.items():
            if name not in self.feed_names:
                raise ConverterError(f"'{name}' is not an input the caller feeds",
                                     where=f"graph '{self.graph.name}' in chromium",
                                     fix="feed only " + (", ".join(self.feed_names) or "nothing"))
            encoded[name] = base64.b64encode(
                _input_bytes(self.graph, name, self._checked(name, value))).decode()
        missing = [n for n in self.feed_names if n not in feeds]
        if missing:
            raise ConverterError(f"input '{missing[0]}' is not fed",
                                 where=f"graph '{self.graph.name}' in chromium")
        raw = self._call("webnnStep", [self._id, encoded])
        return {name: self._decode(name, raw["outputs"][name]) for name in self.output_names}

    def read_state(self) -> dict[str, np.ndarray]:
        """The state the browser holds now, by state input name (read back for inspection)."""
        raw = self._call("webnnReadState", self._id)
        return {var.input: self._decode(var.output, raw["outputs"][var.input])
                for var in self.graph.state}

    def reset(self) -> None:
        self._call("webnnReset", self._id)

    def close(self) -> None:
        if self._id is not None:
            self._browser.page.evaluate("(id) => window.webnnCloseSession(id)", self._id)
            self._id = None
        shutil.rmtree(self._folder, ignore_errors=True)

    def _checked(self, name: str, value) -> np.ndarray:
        operand = self.graph.inputs[name]
        array = np.asarray(value)
        want = dtypes.numpy_dtype(operand.data_type)
        if array.dtype.newbyteorder("=") != want.newbyteorder("=") or array.shape != operand.shape:
            raise ConverterError(f"input '{name}' is {operand.desc}, the feed is numpy "
                                 f"{array.dtype}{list(array.shape)}",
                                 where=f"graph '{self.graph.name}' in chromium",
                                 fix="feed each input its exact data type and shape")
        return np.ascontiguousarray(array)

    def _decode(self, output: str, text: str) -> np.ndarray:
        operand = self.graph.outputs[output]
        info = dtypes.info(operand.data_type)
        data = base64.b64decode(text)
        if info.bits == 4:
            from ..ir.operand import unpack4

            return unpack4(np.frombuffer(data, np.uint8), operand.shape, signed=info.is_signed)
        return np.frombuffer(data, info.numpy).reshape(operand.shape).copy()
