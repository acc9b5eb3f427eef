"""Every tensor an ONNX model holds, read one way: checked, bounded, and kept inside its folder.

A model holds tensors in many places: graph initializers, sparse initializers, node attributes
(`t`, `tensors`, `sparse_tensor`, `sparse_tensors`) and the same again in subgraphs (If, Loop
and Scan bodies) at any depth. Any of them may keep its bytes in an external file. The model
file is untrusted, so all of them go through this module:

  * `external_bytes` is the only place an external data file is opened. The location is taken
    relative to the model's own folder (never the working directory); it may not be absolute,
    contain `..` or a hidden component (`.ssh/id_rsa`), or resolve (through symlinks) outside
    the folder or to a hidden file, but for a link from a Hugging Face cache's snapshot into
    that cache's blobs/ (formats/hub_cache.py: the layout `huggingface_hub` writes);
    the file must be a regular file with one link (a hard link
    passes every folder test), opened non-blocking (a FIFO or a device can neither block nor
    be read); `offset` and `length` must be decimal integers. A tensor reads exactly the bytes
    its dims and data type take, from `offset`: a `length` that says otherwise is refused, and
    without one the rest of the file is never read. The file is recorded as read (files/guard.py),
    so no output of the command may replace it.
  * `resolve_tensors` walks the whole model once when it is read. External data of every tensor
    other than the top-level initializers (which stay memory-mapped views) is copied into the
    tensor's raw_data, so nothing downstream (the reference evaluator that folds constants, ONNX
    helpers) ever opens a file; and every tensor's declared shape is checked against the data it
    holds, so a tensor that declares dims it has no data for is rejected here, with its name.
  * `tensor_array` (initializers, WebNN types), `attribute_array` (any numeric type) and
    `sparse_array` turn a checked tensor into numpy, claiming what they allocate from the
    conversion's MemoryBudget first.
"""
from __future__ import annotations

import math
import mmap
import os
import re
import stat
from pathlib import Path

import numpy as np
import onnx

from ...budget import MemoryBudget, shape_bytes
from ...dtypes import MAX_RANK
from ...errors import FormatError
from ...files.guard import note_read
from ...formats.hub_cache import hub_cache_blob
from ...files.mapped import map_file

__all__ = ["ONNX_TO_WEBNN", "onnx_dtype_name", "external_bytes", "resolve_tensors",
           "tensor_array", "attribute_array", "sparse_array", "check_tensor", "declared_bytes"]

# ONNX TensorProto data type -> (WebNN data type, numpy storage dtype). BOOL is stored as uint8:
# WebNN has no bool, and comparisons produce uint8 0/1.
ONNX_TO_WEBNN: dict[int, tuple[str, np.dtype]] = {
    onnx.TensorProto.FLOAT: ("float32", np.dtype("<f4")),
    onnx.TensorProto.FLOAT16: ("float16", np.dtype("<f2")),
    onnx.TensorProto.INT32: ("int32", np.dtype("<i4")),
    onnx.TensorProto.UINT32: ("uint32", np.dtype("<u4")),
    onnx.TensorProto.INT64: ("int64", np.dtype("<i8")),
    onnx.TensorProto.UINT64: ("uint64", np.dtype("<u8")),
    onnx.TensorProto.INT8: ("int8", np.dtype("i1")),
    onnx.TensorProto.UINT8: ("uint8", np.dtype("u1")),
    onnx.TensorProto.BOOL: ("uint8", np.dtype("u1")),
    onnx.TensorProto.INT4: ("int4", np.dtype("i1")),
    onnx.TensorProto.UINT4: ("uint4", np.dtype("u1")),
}
_T = onnx.TensorProto
_PACKED = {_T.INT4, _T.UINT4, getattr(_T, "FLOAT4E2M1", -1)}
_COMPLEX = {_T.COMPLEX64, _T.COMPLEX128}
_TYPED_FIELDS = ("float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                 "string_data")
_DECIMAL = re.compile(r"[0-9]{1,20}")


def onnx_dtype_name(elem_type: int) -> str:
    try:
        return onnx.TensorProto.DataType.Name(elem_type)
    except (ValueError, TypeError):
        return f"unknown data type {elem_type}"


def _itemsize(tensor: onnx.TensorProto, what: str, where: str) -> float | None:
    """Bytes per element (0.5 for 4-bit types); None for strings, which have no fixed size."""
    if tensor.data_type in _PACKED:
        return 0.5
    if tensor.data_type == _T.STRING:
        return None
    try:
        return onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (KeyError, ValueError, TypeError):
        raise FormatError(f"{what} has {onnx_dtype_name(tensor.data_type)}, which is not an "
                          f"ONNX tensor data type", where=where) from None


def _dims(tensor, what: str, where: str) -> tuple[int, ...]:
    if len(tensor.dims) > MAX_RANK:
        raise FormatError(f"{what} has rank {len(tensor.dims)}; the converter handles up to "
                          f"{MAX_RANK} axes", where=where)
    dims = tuple(int(d) for d in tensor.dims)
    if any(d < 0 for d in dims):
        raise FormatError(f"{what} declares a negative dimension in {list(dims)}", where=where)
    return dims


def declared_bytes(tensor: onnx.TensorProto) -> int:
    """What a tensor's declared shape takes in memory (0 when it cannot be told)."""
    try:
        size = _itemsize(tensor, "", "")
    except FormatError:
        return 0
    return shape_bytes([max(int(d), 0) for d in tensor.dims], size or 0)


# -- external data ------------------------------------------------------------------------------
_MAPS: dict[tuple, mmap.mmap | memoryview | bytes] = {}  # see files.mapped.map_file


def external_bytes(tensor: onnx.TensorProto, folder: Path | None, what: str,
                   where: str) -> memoryview:
    """The bytes of an external-data tensor, as a view of its memory-mapped file (see the module
    docstring for the rules); FormatError naming the tensor for anything else."""
    info = {}
    for entry in tensor.external_data:
        if not isinstance(entry.key, str) or not isinstance(entry.value, str):
            # protobuf hands over a string that is not valid UTF-8 as bytes
            raise FormatError(f"{what}: an external data entry is not valid UTF-8 text",
                              where=where, fix="the model file is damaged; re-export it")
        info[entry.key] = entry.value
    location = info.get("location", "")
    fix = "keep external data files beside the model, named relatively"
    if folder is None:
        raise FormatError(f"{what} keeps its data in external file {location!r}, but the model "
                          f"was not read from a file", where=where,
                          fix="load the model from its .onnx path")
    parts = re.split(r"[/\\]", location)
    if not location or "\0" in location or os.path.isabs(location) \
            or location.startswith(("/", "\\")) or ".." in parts or re.match(r"[A-Za-z]:", location):
        raise FormatError(f"{what}: external data path {location!r} leaves the model's folder",
                          where=where, fix=fix)
    if any(_hidden(part) for part in parts):
        raise FormatError(f"{what}: external data path {location!r} names a hidden file or "
                          f"folder, which is never read as weights", where=where,
                          fix="keep external data in plain, visible files beside the model")
    need = _external_need(tensor, what, where)
    numbers = {}
    for key in ("offset", "length"):
        text = info.get(key)
        if text is None or text == "":
            continue
        if not _DECIMAL.fullmatch(text):
            raise FormatError(f"{what}: external data {key} {text!r} is not a non-negative "
                              f"integer", where=where)
        numbers[key] = int(text)
    root = os.path.realpath(folder)
    target = os.path.realpath(os.path.join(root, location))
    in_hub_cache = hub_cache_blob(root, target)  # snapshots/REV/NAME -> ../../blobs/HASH
    if (os.path.commonpath([root, target]) != root or target == root) and not in_hub_cache:
        raise FormatError(f"{what}: external data path {location!r} leaves the model's folder "
                          f"(through a symbolic link)", where=where,
                          fix=fix + "; links are followed only into the blobs/ of the "
                              "Hugging Face cache the model is a snapshot of")
    if not in_hub_cache and any(_hidden(part)
                                for part in Path(os.path.relpath(target, root)).parts):
        raise FormatError(f"{what}: external data path {location!r} leads to a hidden file "
                          f"(through a symbolic link), which is never read as weights",
                          where=where, fix="keep external data in plain, visible files")
    if "length" in numbers and numbers["length"] != need:
        raise FormatError(f"{what}: external data length {numbers['length']} does not match "
                          f"its shape, which takes {need} bytes", where=where,
                          fix="the model file is damaged or hostile; re-export it")
    buf = _map_regular(target, location, what, where)
    offset = numbers.get("offset", 0)
    end = offset + need
    if end > len(buf):
        raise FormatError(f"{what}: external data [{offset}, {end}) lies outside {location!r} "
                          f"({len(buf)} bytes)", where=where)
    return memoryview(buf)[offset:end]


def _hidden(part: str) -> bool:
    """A path component naming a hidden file or folder (`.ssh`); `.` itself is the folder."""
    return part.startswith(".") and part != "."


def _external_need(tensor: onnx.TensorProto, what: str, where: str) -> int:
    """The bytes an external tensor's dims and data type take: all it may read."""
    dims = _dims(tensor, what, where)
    size = _itemsize(tensor, what, where)
    if size is None:
        raise FormatError(f"{what} is a string tensor with external data, which has no fixed "
                          f"size to read", where=where, fix="store string tensors in the model")
    return shape_bytes(dims, size)


def _map_regular(target: str, location: str, what: str, where: str):
    """Map a regular file read-only; a FIFO, device or directory is refused without blocking."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) \
        | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags)
    except FileNotFoundError:
        raise FormatError(f"{what}: external data file {location!r} is missing",
                          where=where) from None
    except OSError as e:
        raise FormatError(f"{what}: cannot open external data file {location!r} "
                          f"({e.strerror})", where=where) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FormatError(f"{what}: external data file {location!r} is not a regular file",
                              where=where, fix="external data must be a plain file")
        if st.st_nlink > 1:
            raise FormatError(f"{what}: external data file {location!r} has {st.st_nlink} hard "
                              f"links; a file linked from elsewhere is not read as weights",
                              where=where, fix="make it a file of its own (cp it to a new "
                              "name and back)")
        note_read(target, f"external data of {where}", st)
        key = (target, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        if key not in _MAPS:
            _MAPS[key] = map_file(fd, target, "external data file")
        return _MAPS[key]
    finally:
        os.close(fd)


# -- checking and walking -----------------------------------------------------------------------
def check_tensor(tensor: onnx.TensorProto, what: str, where: str,
                 raw_length: int | None = None) -> None:
    """Raise FormatError unless the tensor holds exactly the data its shape declares.

    `raw_length` is the length of raw data kept outside the proto (a mapped initializer).
    """
    dims = _dims(tensor, what, where)
    size = _itemsize(tensor, what, where)
    count = math.prod(dims)
    if tensor.data_location == _T.EXTERNAL and raw_length is None:
        raise FormatError(f"{what} keeps its data in an external file the importer did not "
                          f"resolve", where=where)
    if raw_length is None and tensor.HasField("raw_data"):
        raw_length = len(tensor.raw_data)
    if raw_length is not None:
        if size is None:
            raise FormatError(f"{what} is a string tensor with raw data", where=where)
        need = shape_bytes(dims, size)
        if raw_length != need:
            raise FormatError(f"{what} has {raw_length} bytes, its shape {list(dims)} needs "
                              f"{need}", where=where)
        return
    stored = max(len(getattr(tensor, f)) for f in _TYPED_FIELDS)
    need = math.ceil(count / 2) if tensor.data_type in _PACKED \
        else count * (2 if tensor.data_type in _COMPLEX else 1)
    if stored == 0 and need > 0:
        nbytes = shape_bytes(dims, size or 1)
        raise FormatError(f"{what} declares shape {list(dims)} ({nbytes} bytes) but holds no "
                          f"data", where=where, fix="the file is truncated or corrupt")
    if stored != need:
        raise FormatError(f"{what} holds {stored} values, its shape {list(dims)} needs {need}",
                          where=where)


def resolve_tensors(model: onnx.ModelProto, folder: Path | None, where: str,
                    budget: MemoryBudget) -> None:
    """Make every tensor below the top-level initializers self-contained (external data copied
    in, claimed from `budget`) and check each one's data against its shape."""
    todo = [(model.graph, "")]
    top = True
    while todo:
        graph, scope = todo.pop()
        tensors = [] if top else [(t, f"{scope}initializer '{t.name}'") for t in graph.initializer]
        for sparse in graph.sparse_initializer:
            name = sparse.values.name
            tensors += [(sparse.values, f"{scope}sparse initializer '{name}' values"),
                        (sparse.indices, f"{scope}sparse initializer '{name}' indices")]
        top = False
        for node in graph.node:
            label = f"{scope}{node.op_type} '{node.name or '?'}'"
            for a in node.attribute:
                what = f"{label} attribute '{a.name}'"
                if a.HasField("t"):
                    tensors.append((a.t, what))
                tensors += [(t, f"{what}[{i}]") for i, t in enumerate(a.tensors)]
                sparse = ([a.sparse_tensor] if a.HasField("sparse_tensor") else []) \
                    + list(a.sparse_tensors)
                for s in sparse:
                    tensors += [(s.values, f"{what} values"), (s.indices, f"{what} indices")]
                if a.HasField("g"):
                    todo.append((a.g, f"{what}: "))
                todo += [(g, f"{what}[{i}]: ") for i, g in enumerate(a.graphs)]
        for tensor, what in tensors:
            if tensor.data_location == _T.EXTERNAL:
                data = external_bytes(tensor, folder, what, where)
                budget.claim(len(data), f"{what} (external data)", where=where)
                tensor.raw_data = bytes(data)
                del tensor.external_data[:]
                tensor.data_location = _T.DEFAULT
            check_tensor(tensor, what, where)


# -- as numpy -----------------------------------------------------------------------------------
def tensor_array(tensor: onnx.TensorProto, *, folder: Path | None = None, where: str = "model",
                 budget: MemoryBudget | None = None, release: bool = True,
                 raw: memoryview | None = None, what: str | None = None) -> np.ndarray:
    """An initializer as an ndarray with the WebNN storage dtype (BOOL as uint8, 4-bit packed).

    Raw and external data become views (nothing is allocated); typed fields are decoded, claimed
    from `budget` first. With `release` the proto's raw bytes are dropped once read, so a
    model's weights are held once, not twice (read_model owns its proto).
    """
    what = what or f"initializer '{tensor.name}'"
    if tensor.data_type not in ONNX_TO_WEBNN:
        raise FormatError(f"{what} has data type {onnx_dtype_name(tensor.data_type)}, which "
                          f"WebNN cannot hold", where=where)
    _, np_dtype = ONNX_TO_WEBNN[tensor.data_type]
    dims = _dims(tensor, what, where)
    packed = tensor.data_type in _PACKED
    if raw is None and tensor.data_location == _T.EXTERNAL:
        raw = external_bytes(tensor, folder, what, where)
    check_tensor(tensor, what, where, None if raw is None else len(raw))
    if raw is None and tensor.HasField("raw_data"):
        raw = tensor.raw_data
        if release:
            tensor.ClearField("raw_data")
    if raw is not None:
        arr = np.frombuffer(raw, dtype=np.uint8 if packed else np_dtype)
        return arr if packed else arr.reshape(dims)
    # Typed fields (small tensors written without raw_data): numpy_helper knows their encodings.
    (budget or MemoryBudget()).claim(shape_bytes(dims, np_dtype.itemsize), what, where=where)
    value = onnx.numpy_helper.to_array(tensor)
    if packed:
        from ...ir.operand import pack4

        return pack4(value)
    return np.ascontiguousarray(value.astype(np_dtype, copy=False)).reshape(dims)


def attribute_array(tensor: onnx.TensorProto, what: str, where: str,
                    budget: MemoryBudget) -> np.ndarray:
    """A checked tensor's logical values in any numeric ONNX type (bool as bool), as ONNX's own
    reader gives them; its size is claimed from `budget` first."""
    check_tensor(tensor, what, where)
    size = _itemsize(tensor, what, where) or 8
    budget.claim(shape_bytes(_dims(tensor, what, where), size), what, where=where)
    return onnx.numpy_helper.to_array(tensor)


def sparse_array(sparse: onnx.SparseTensorProto, what: str, where: str,
                 budget: MemoryBudget) -> np.ndarray:
    """A SparseTensorProto as a dense array (indices flat, or one coordinate per row), with
    indices checked against its shape and the dense size claimed before it is allocated."""
    dims = _dims(sparse, what, where)
    values = attribute_array(sparse.values, f"{what} values", where, budget).reshape(-1)
    indices = attribute_array(sparse.indices, f"{what} indices", where, budget)
    if indices.dtype.kind not in "iu":
        raise FormatError(f"{what}: its indices are {indices.dtype}, not integers", where=where)
    indices = indices.astype(np.int64)
    total = math.prod(dims)
    if indices.ndim == 2 and indices.shape[1] == len(dims) and len(dims) > 1:
        if indices.size and (np.any(indices < 0) or np.any(indices >= np.array(dims))):
            raise FormatError(f"{what}: an index lies outside its shape {list(dims)}",
                              where=where)
        flat = np.ravel_multi_index(indices.T, dims) if indices.size else indices.reshape(-1)
    elif indices.ndim == 1:
        if indices.size and (indices.min() < 0 or indices.max() >= total):
            raise FormatError(f"{what}: an index lies outside its {total} elements", where=where)
        flat = indices
    else:
        raise FormatError(f"{what}: indices of shape {list(indices.shape)} do not fit shape "
                          f"{list(dims)}", where=where)
    if flat.shape[0] != values.shape[0]:
        raise FormatError(f"{what}: {flat.shape[0]} indices for {values.shape[0]} values",
                          where=where)
    budget.claim(shape_bytes(dims, values.dtype.itemsize), f"{what} (dense)", where=where)
    dense = np.zeros(total, dtype=values.dtype)
    dense[flat] = values
    return dense.reshape(dims)
