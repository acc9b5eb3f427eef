"""The one kind of symbolic link a model's files may lead out of its folder through: a Hugging
Face cache's, from a snapshot into the same cache's blobs.

    models--org--name/blobs/<sha1 or sha256>             the files, each once
    models--org--name/snapshots/<rev>/onnx/model.onnx    -> ../../../blobs/<hash>

A hostile model must not reach a file outside its folder through a link (a key, a token), so
open_model_file and the ONNX external-data reader refuse such links; this layout is what
`huggingface_hub` writes for every download, so its links are followed, as the hub's own
readers do, and nothing else is.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["hub_cache_blob"]

# A blob's name: the git blob's sha1, or the LFS object's sha256.
_HUB_BLOB_NAME = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def hub_cache_blob(folder: str, real: str) -> bool:
    """Whether `real` (a resolved path) is a blob of the Hugging Face cache that `folder` (a
    resolved folder) is a snapshot in: folder is ROOT/snapshots/REV or a folder inside it,
    real is ROOT/blobs/NAME with NAME a hash, and ROOT/blobs a folder, not a link. A link
    there leads to a file the same download wrote, never out of the cache: those links are
    followed, as the hub's own readers do; every other link out of a model's folder is not."""
    parts = Path(folder).parts
    for k in range(len(parts) - 2, 0, -1):
        if parts[k] == "snapshots":
            root = os.path.join(*parts[:k])
            blobs = os.path.join(root, "blobs")
            return (os.path.dirname(real) == blobs and os.path.realpath(blobs) == blobs
                    and _HUB_BLOB_NAME.fullmatch(os.path.basename(real)) is not None)
    return False
