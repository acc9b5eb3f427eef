"""MediaPipe's face landmark model with attention (mediapipe 0.10.21's
mediapipe/modules/face_landmark/face_landmark_with_attention.tflite, fetched from its wheel and
sha256-checked): its 11 custom ops (Landmarks2TransformMatrix x3, TransformTensorBilinear x3,
TransformLandmarks x5, all version 2) import by composition, and the whole model matches a
reference that runs everything else on LiteRT.

LiteRT has no kernels for MediaPipe's ops, so the reference is the model cut at them: the
custom ops are removed, their outputs become inputs and their inputs outputs; LiteRT runs the
rest, the numpy kernels of mediapipe_reference.py compute the custom ops from what LiteRT gives,
and the two alternate until nothing changes (as deep as the chain of custom ops, 3 rounds).
"""
from __future__ import annotations

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as schema
from flatbuffers import flexbuffers

from converter.runtimes.execute import run
from converter.zoo.fetch import fetch_model
from converter.importers.tflite import import_tflite
from converter.verification.parity import compare
from converter.runtimes.litert import run_litert

from . import mediapipe_reference as ref

SOURCE = {"package": "mediapipe", "version": "0.10.21",
          "path": "mediapipe/modules/face_landmark/face_landmark_with_attention.tflite",
          "sha256": "e06a804e0144f9929eda782122916b35d60c697c3c9344013ca2bbe76a6ce2b4"}


def _kernel(code: str, inputs: list[np.ndarray], options: dict, out_shape) -> np.ndarray:
    if code == "Landmarks2TransformMatrix":
        return ref.landmarks_to_transform_matrix_v2(
            inputs[0], options["subset_idxs"], options["left_rotation_idx"],
            options["right_rotation_idx"], options["target_rotation_radians"],
            options["output_height"], options["output_width"], options["scale_x"],
            options["scale_y"])
    if code == "TransformTensorBilinear":
        return ref.transform_tensor_bilinear(inputs[0], inputs[1], out_shape[1:3], 2)
    assert code == "TransformLandmarks", code
    return ref.transform_landmarks(inputs[0], inputs[1], 2)


def _reference(data: bytes, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """LiteRT for the builtin ops and the numpy kernels for the custom ones (module doc)."""
    model = schema.ModelT.InitFromPackedBuf(bytearray(data), 0)
    sg = model.subgraphs[0]
    codes = model.operatorCodes
    custom = [op for op in sg.operators if codes[op.opcodeIndex].customCode]
    assert len(custom) == 11
    outputs = list(sg.outputs)
    cut_in = [i for op in custom for i in op.outputs]
    cut_out = list(dict.fromkeys(i for op in custom for i in op.inputs))
    sg.operators = [op for op in sg.operators if not codes[op.opcodeIndex].customCode]
    sg.inputs = list(sg.inputs) + cut_in
    sg.outputs = outputs + [i for i in cut_out if i not in outputs]
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), b"TFL3")
    cut = bytes(builder.Output())

    def name(i: int) -> str:
        return sg.tensors[i].name.decode()

    feeds = dict(feeds)
    feeds.update({name(i): np.zeros(sg.tensors[i].shape, np.float32) for i in cut_in})
    for _ in range(len(custom) + 1):
        got = run_litert(cut, feeds)
        computed = {
            name(op.outputs[0]): _kernel(
                codes[op.opcodeIndex].customCode.decode(), [got[name(i)] for i in op.inputs],
                flexbuffers.Loads(bytes(op.customOptions)) if op.customOptions is not None
                else {}, sg.tensors[op.outputs[0]].shape).astype(np.float32)
            for op in custom}
        if all(np.array_equal(v, feeds[k]) for k, v in computed.items()):
            return {name(i): got[name(i)] for i in outputs}
        feeds.update(computed)
    raise AssertionError("the custom ops' values did not settle")


def test_face_landmark_with_attention_matches_litert_with_mediapipe_kernels():
    path = fetch_model(SOURCE)
    graph = import_tflite(path)
    histogram = graph.op_histogram()
    assert histogram["gather"] >= 3 * 4 + 3  # 4 neighbours per crop, one subset per matrix
    rng = np.random.default_rng(0)
    feeds = {name: rng.random(x.shape, dtype=np.float64).astype(np.float32)  # images [0, 1)
             for name, x in graph.inputs.items()}
    want = _reference(path.read_bytes(), feeds)
    got = run(graph, feeds)
    assert set(got) == set(want) and len(want) == 7
    for name, expected in want.items():
        result = compare(name, got[name], expected)
        assert result.passed, result.to_json()
