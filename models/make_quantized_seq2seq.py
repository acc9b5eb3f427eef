"""The quantized and float16 forms of the tiny optimum BART (models/optimum-tiny/bart/), its
encoder and merged decoder, derived from the committed float32 files as
models/make_quantized_decoders.py derives the Llama's (its functions, the same forms):
`*_quantized.onnx` (q8: quantize_dynamic, uint8 weights, If branches included), `*_q4.onnx`
(q4: MatMulNBits, blocks of 32) and `*_fp16.onnx` (every float32 tensor float16). The encoder
and decoder of a form share its suffix, as transformers.js ships them, so the loop finds the
encoder beside the decoder (encoder_model_q4.onnx beside decoder_model_merged_q4.onnx).

    venv/bin/pip install onnxruntime onnx-ir   # MatMulNBitsQuantizer imports onnx_ir (+ sympy)
    venv/bin/python models/make_quantized_seq2seq.py [DIR]   # default: models/optimum-tiny

Needs no torch: run it after models/make_optimum_seq2seq.py (which rewrites the README from its
own section on, dropping this one), and commit the files and the README section it writes.
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

ARCH = "bart"
FORMS = ("encoder_model", "decoder_model_merged")
SECTION = "## Quantized seq2seq forms"


def main(argv: list[str]) -> int:
    import onnxruntime

    sys.path.insert(0, str(Path(__file__).parent))
    from make_quantized_decoders import BLOCK, replace_section, write_forms

    logging.disable(logging.INFO)  # the quantizers log every node they pass
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent / "optimum-tiny"
    folder = root / ARCH
    lines = [SECTION, "", f"`{ARCH}/`'s encoder and merged decoder, derived by "
             "`models/make_quantized_seq2seq.py` with onnxruntime "
             f"{onnxruntime.__version__} as the decoders' quantized forms above: "
             "`*_quantized.onnx` (q8), `*_q4.onnx` (q4, block "
             f"{BLOCK}) and `*_fp16.onnx` (fp16).", "", "| file | bytes | sha256 |",
             "| --- | --- | --- |"]
    lines += write_forms(folder, FORMS)
    replace_section(root / "README.md", SECTION, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
