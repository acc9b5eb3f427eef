"""The quantized and float16 forms of the tiny optimum encoder-decoders
(models/optimum-tiny/{whisper,t5,bart,marian}/), derived from the committed float32 files as
models/make_quantized_decoders.py derives the Llama's (its functions, the same forms):
`*_quantized.onnx` (q8: quantize_dynamic, uint8 weights, If branches included; MatMuls with a
constant weight, and Whisper's two convolutions, which become ConvInteger), `*_q4.onnx` (q4:
MatMulNBits, blocks of 32; the convolutions stay float32 Conv) and `*_fp16.onnx` (every
float32 tensor float16). Each architecture's encoder and merged decoder, and T5's unmerged pair (decoder_model +
decoder_with_past_model) too. The encoder and decoder of a form share its suffix, as
transformers.js ships them, so the loop finds the encoder beside the decoder
(encoder_model_q4.onnx beside decoder_model_merged_q4.onnx).

    venv/bin/pip install onnxruntime onnx-ir   # MatMulNBitsQuantizer imports onnx_ir (+ sympy)
    venv/bin/python models/make_quantized_seq2seq.py [DIR]   # default: models/optimum-tiny

Needs no torch: run it after models/make_optimum_seq2seq.py (which rewrites the README from its
own section on, dropping this one), and commit the files and the README section it writes.
"""
from __future__ import annotations

import logging
import sys
from pathlib import Path

MERGED = ("encoder_model", "decoder_model_merged")
ARCHS = {"whisper": MERGED, "t5": (*MERGED, "decoder_model", "decoder_with_past_model"),
         "bart": MERGED, "marian": MERGED}
SECTION = "## Quantized seq2seq forms"


def main(argv: list[str]) -> int:
    import onnx
    import onnxruntime

    sys.path.insert(0, str(Path(__file__).parent))
    from make_quantized_decoders import BLOCK, replace_section, write_forms

    logging.disable(logging.INFO)  # the quantizers log every node they pass
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent / "optimum-tiny"
    lines = [SECTION, "", "Each architecture's encoder and merged decoder (`t5/`'s unmerged "
             "pair too), derived by `models/make_quantized_seq2seq.py` with onnxruntime "
             f"{onnxruntime.__version__} and onnx {onnx.__version__} as the decoders' "
             "quantized forms above: `*_quantized.onnx` (q8; Whisper's convolutions become "
             "`ConvInteger`), `*_q4.onnx` (q4, block "
             f"{BLOCK}; MatMuls only) and `*_fp16.onnx` (fp16).", "", "| file | bytes | sha256 |",
             "| --- | --- | --- |"]
    for arch, forms in ARCHS.items():
        lines += write_forms(root / arch, forms)
    replace_section(root / "README.md", SECTION, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
