"""Where graphs and source models run: a WebNN graph on ONNX Runtime (lowered to ONNX) or in a
real Chromium's WebNN, once (execute.py) or step by step with its state carried (session.py);
and a source model on its own runtime, the reference a converted graph is compared with
(source_runs.py: ONNX Runtime, or LiteRT for TFLite, litert.py). Headless Chromium itself:
chromium*.py, browser_install.py."""
