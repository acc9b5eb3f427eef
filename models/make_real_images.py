"""Write models/real_images.npz: four real photos from scikit-image's wheel, made small.

    pip install scikit-image pillow       # or: pip download scikit-image --no-deps; unzip it
    python models/make_real_images.py [SKIMAGE_DATA_DIR]

The photos (astronaut, chelsea, coffee, rocket) are the ones the scikit-image wheel bundles in
skimage/data (not the ones its pooch registry fetches at run time); real_images/README.md says
who took them and under which terms. Each is stored as uint8 RGB, resized (Pillow, Lanczos) so
that its short side is 256 pixels: the crops the tests and bench/bench_accuracy.py use are cut
from these at load time (converter.testing.real_images), which keeps the file near 1 MB instead
of the 9.6 MB that 64 stored 224x224 crops take.

Only this script needs scikit-image's data and Pillow; nothing the project runs or tests does.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE / "real_images.npz"
# name in the .npz -> file in skimage/data
PHOTOS = {"astronaut": "astronaut.png", "chelsea": "chelsea.png", "coffee": "coffee.png",
          "rocket": "rocket.jpg"}
SHORT_SIDE = 256


def skimage_data_dir() -> Path:
    """skimage/data of the installed package, found without importing it (its import needs
    scipy and more; the photos are plain files)."""
    spec = importlib.util.find_spec("skimage")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("scikit-image is not installed: pip install scikit-image, or give the path "
                 "of skimage/data from its unzipped wheel")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def photo(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        image = image.convert("RGB")
        w, h = image.size
        scale = SHORT_SIDE / min(w, h)
        size = (max(SHORT_SIDE, round(w * scale)), max(SHORT_SIDE, round(h * scale)))
        return np.asarray(image.resize(size, Image.Resampling.LANCZOS), dtype=np.uint8)


def main(argv: list[str]) -> None:
    folder = Path(argv[0]) if argv else skimage_data_dir()
    arrays = {name: photo(folder / file) for name, file in PHOTOS.items()}
    tmp = OUT.with_suffix(".part.npz")
    np.savez_compressed(tmp, **arrays)
    os.replace(tmp, OUT)
    for name, a in arrays.items():
        print(f"{name}: {a.shape}")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main(sys.argv[1:])
