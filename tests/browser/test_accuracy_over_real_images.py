"""`verify --weights int8 --runtime chromium --target chromium-litert --inputs DIR`: the light
squeezenet (its head fitted to tell four real photos apart) over 64 real crops, each a sample
subfolder, run in the browser against the float source on ONNX Runtime: the crops move the
source's choice and the int8 graph keeps it (issue 29's acceptance, in the browser)."""
from __future__ import annotations

import json

import numpy as np
from click.testing import CliRunner

from cli.main import main
from converter.testing.light_models import PHOTO_CLASSES, light_classifier
from converter.testing.real_images import imagenet_inputs


def test_int8_keeps_the_choice_over_64_real_crops_in_chromium(browser_limits, tmp_path):
    source = light_classifier("squeezenet", tmp_path)
    for i, crop in enumerate(imagenet_inputs(64)):
        (tmp_path / "crops" / f"{i:02d}").mkdir(parents=True)
        np.save(tmp_path / "crops" / f"{i:02d}" / "data_0.npy", crop)
    r = CliRunner().invoke(main, ["verify", str(source), "--weights", "int8", "--runtime",
                                  "chromium", "--target", "chromium-litert", "--inputs",
                                  str(tmp_path / "crops"), "--json"])
    assert r.exit_code == 0, r.output
    acc = json.loads(r.stdout)["accuracy"]
    assert acc["graphRuntime"] == "chromium" and acc["inputs"] == "64 samples given"
    (out,) = acc["outputs"]
    assert acc["weightsBytes"]["ratio"] <= 0.27
    assert out["rows"] == 64 and out["top1"] >= 0.99 and out["cosine"] >= 0.99
    assert out["sourceClasses"] == len(PHOTO_CLASSES)
