"""The quantized and float16 forms of the tiny optimum Llama decoders
(models/optimum-tiny/llama/), derived from the committed float32 files without torch (ONNX
Runtime's own quantization tools; the onnx helper for fp16), the way transformers.js ships its
decoders beside the float ones:

- `*_quantized.onnx` (transformers.js's q8): `quantize_dynamic` with uint8 weights, inside the
  merged decoder's If branches too (`EnableSubgraph`), MatMuls with a constant weight only;
  each such MatMul becomes DynamicQuantizeLinear + MatMulInteger.
- `*_q4.onnx` (q4): `MatMulNBitsQuantizer`, 4-bit blocks of 32 along K, symmetric; each
  constant-weight MatMul becomes com.microsoft's MatMulNBits.
- `*_fp16.onnx` (fp16): every float32 tensor float16, inputs and outputs too (the past and the
  logits), written here with the onnx helper (no onnxconverter-common): initializers and
  Constant/ConstantOfShape values (clipped to float16's +-65504, so the masks' float32 minimum
  stays finite), Cast-to-float32 nodes and the declared types, in the If branches as well.

For the merged decoder (`decoder_model_merged`), the unmerged pair (`decoder_model` +
`decoder_with_past_model`, which keep one suffix so the pair is found beside each other) and
optimum 2.x's single form (`model`: `model_quantized.onnx`, `model_q4.onnx`, `model_fp16.onnx`,
the names transformers.js loads; the single form is the with-past export, so its files are
the same bytes as `decoder_with_past_model_*.onnx`).

    venv/bin/pip install onnxruntime onnx-ir   # MatMulNBitsQuantizer imports onnx_ir (+ sympy)
    venv/bin/python models/make_quantized_decoders.py [DIR]   # default: models/optimum-tiny

Needs no torch: run it after models/make_optimum_decoders.py (which rewrites the README
without this section), and commit the files and the README's section it writes.
"""
from __future__ import annotations

import hashlib
import logging
import sys
from pathlib import Path

FORMS = ("decoder_model_merged", "decoder_model", "decoder_with_past_model", "model")
BLOCK = 32
SECTION = "## Quantized forms"
FLOAT16_MAX = 65504.0


def quantize_q8(source: Path, target: Path) -> None:
    """transformers.js's q8: dynamic uint8 weights, If branches included."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(source, target, weight_type=QuantType.QUInt8,
                     extra_options={"EnableSubgraph": True, "MatMulConstBOnly": True})


def quantize_q4(source: Path, target: Path) -> None:
    """transformers.js's q4: MatMulNBits, blocks of BLOCK along K (it walks If branches)."""
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    quantizer = MatMulNBitsQuantizer(onnx.load(source), block_size=BLOCK, is_symmetric=True)
    quantizer.process()
    onnx.save(quantizer.model.model, target)


def convert_fp16(source: Path, target: Path) -> None:
    """transformers.js's fp16: the whole model in float16 (see the module docstring)."""
    import onnx

    model = onnx.load(source)
    _graph_to_fp16(model.graph)
    onnx.checker.check_model(model)
    onnx.save(model, target)


def _graph_to_fp16(graph) -> None:
    from onnx import AttributeProto, TensorProto

    for tensor in graph.initializer:
        _tensor_to_fp16(tensor)
    for value in (*graph.input, *graph.output, *graph.value_info):
        if value.type.tensor_type.elem_type == TensorProto.FLOAT:
            value.type.tensor_type.elem_type = TensorProto.FLOAT16
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == AttributeProto.TENSOR:
                _tensor_to_fp16(attr.t)
            elif attr.type == AttributeProto.GRAPH:
                _graph_to_fp16(attr.g)
            elif node.op_type == "Cast" and attr.name == "to" and attr.i == TensorProto.FLOAT:
                attr.i = TensorProto.FLOAT16


def _tensor_to_fp16(tensor) -> None:
    import numpy as np
    from onnx import TensorProto, numpy_helper

    if tensor.data_type != TensorProto.FLOAT:
        return
    values = np.clip(numpy_helper.to_array(tensor), -FLOAT16_MAX, FLOAT16_MAX)
    tensor.CopyFrom(numpy_helper.from_array(values.astype(np.float16), tensor.name))


def main(argv: list[str]) -> int:
    import onnxruntime

    logging.disable(logging.INFO)  # the quantizers log every node they pass
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).parent / "optimum-tiny"
    llama = root / "llama"
    lines = [SECTION, "", "Derived from the float32 files above by "
             "`models/make_quantized_decoders.py` with onnxruntime "
             f"{onnxruntime.__version__}: `*_quantized.onnx` (q8: `quantize_dynamic`, uint8 "
             "weights, If branches included), `*_q4.onnx` (q4: `MatMulNBitsQuantizer`, "
             f"block {BLOCK}, symmetric) and `*_fp16.onnx` (fp16: every float32 tensor "
             "float16, inputs and outputs too). `model_*.onnx` are optimum 2.x's single form "
             "(the with-past export, so the same bytes as `decoder_with_past_model_*.onnx`).",
             "", "| file | bytes | sha256 |",
             "| --- | --- | --- |"]
    lines += write_forms(llama, FORMS)
    replace_section(root / "README.md", SECTION, lines)
    return 0


def write_forms(folder: Path, forms) -> list[str]:
    """Each of `forms` (file stems in `folder`) written as q8, q4 and fp16 beside it; the
    README table's rows (file, bytes, sha256)."""
    rows = []
    for suffix, quantize in (("quantized", quantize_q8), ("q4", quantize_q4),
                             ("fp16", convert_fp16)):
        for form in forms:
            target = folder / f"{form}_{suffix}.onnx"
            quantize(folder / f"{form}.onnx", target)
            data = target.read_bytes()
            rows.append(f"| {folder.name}/{target.name} | {len(data):,} | "
                        f"{hashlib.sha256(data).hexdigest()} |")
    return rows


def replace_section(readme: Path, section: str, lines: list[str]) -> None:
    """`readme` with `section` (from its heading line to the next `## ` heading, or the end)
    replaced by `lines`, or `lines` appended; the sections after it kept as they are (the
    seq2seq sections follow this one)."""
    print("\n".join(lines))
    text = readme.read_text("utf-8")
    before, found, after = text.partition(f"\n{section}\n")
    rest = after[after.find("\n## ") + 1:] if found and "\n## " in after else ""
    parts = [before.rstrip("\n"), "\n".join(lines)] + ([rest.rstrip("\n")] if rest else [])
    readme.write_text("\n\n".join(parts) + "\n", "utf-8")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
