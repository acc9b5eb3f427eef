"""The page written beside a JavaScript module: builds the graph, runs it on `.npy` files or
seeded random inputs, and shows each output (data type, shape, first values), the device asked
for and what the context says of it, and the timings of context creation, weights loading, build
and dispatch. A stateful graph's page runs N steps (`?steps=N`, or the Steps field) through the
module's createSession, its state kept on the context, and shows each step's latency; a
decoder's page (token ids in, logits out, caches as state) decodes N greedy tokens after a
prompt (`?prompt=1,5,9`). `?device=` picks the device asked for; `?run` runs on load.

The page is static HTML plus a module script (page_template.html); only the graph's name and
the module's file name are filled in. It must be served over http(s) (or be `127.0.0.1`/
`localhost`): WebNN needs a secure context, and `file://` pages cannot fetch the weights.
"""
from __future__ import annotations

from pathlib import Path

from ..ir import Graph
from .escape import html_text, js_string

__all__ = ["page_html"]

_TEMPLATE = Path(__file__).with_name("page_template.html")


def page_html(graph: Graph, module_file: str) -> str:
    # The module's URL sits in a JS string inside <script>; every other name reaches the page
    # through the module (textContent), so these three are all the escaping the page needs.
    return (_TEMPLATE.read_text()
            .replace("__MODULE_URL__", js_string("./" + module_file))
            .replace("__MODULE__", html_text(module_file))
            .replace("__TITLE__", html_text(graph.name)))
