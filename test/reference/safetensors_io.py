"""Pure-Python (numpy) reader and writer for the safetensors format.

Layout:
  8 bytes     little-endian u64 N, the JSON header length
  N bytes     UTF-8 JSON object:
                {"__metadata__": {"key": "value", ...},          (optional)
                 "name": {"dtype": "F32", "shape": [..],
                          "data_offsets": [begin, end]}, ...}
              begin/end are byte offsets relative to the first byte after
              the header; the writer pads the header with spaces so the data
              starts 8-byte aligned.
  data        the tensors, little-endian, row-major.

Supported dtypes: F32, F64, F16, BF16, I32, I64 (read and write; BF16 is
written with round-to-nearest-even).  BF16 tensors are returned as float32.

    tensors = load(path)                        # {name: np.ndarray}
    tensors, metadata = load_with_metadata(path)
    save(path, tensors, metadata=None, dtypes=None)

Errors raise SafetensorsError whose message starts with the file name.
"""

import json
import os
import struct
import tempfile

import numpy as np

__all__ = ["SafetensorsError", "load", "load_with_metadata", "save",
           "DTYPES"]

# safetensors dtype -> (numpy dtype as stored, bytes per element)
DTYPES = {
    "F64": (np.dtype("<f8"), 8),
    "F32": (np.dtype("<f4"), 4),
    "F16": (np.dtype("<f2"), 2),
    "BF16": (np.dtype("<u2"), 2),
    "I64": (np.dtype("<i8"), 8),
    "I32": (np.dtype("<i4"), 4),
}
_NP_TO_ST = {np.dtype(np.float64): "F64", np.dtype(np.float32): "F32",
             np.dtype(np.float16): "F16", np.dtype(np.int64): "I64",
             np.dtype(np.int32): "I32"}
MAX_HEADER = 100 * 1024 * 1024


class SafetensorsError(ValueError):
    pass


def bf16_to_f32(u16):
    return (np.asarray(u16, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """float32 -> bf16 bit patterns (uint16), round to nearest even."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = rounded.astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    out[nan] = ((u[nan] >> 16).astype(np.uint16) | 0x0040)  # keep quiet NaN
    return out


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise SafetensorsError(f"duplicate key {k!r} in JSON header")
        d[k] = v
    return d


def load_with_metadata(path):
    """Return ({name: ndarray}, metadata dict) for the safetensors file."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise SafetensorsError(f"{path}: cannot read: {e.strerror}")
    try:
        return _parse(blob)
    except SafetensorsError as e:
        raise SafetensorsError(f"{path}: {e}") from None


def load(path):
    return load_with_metadata(path)[0]


def _parse(blob):
    if len(blob) < 8:
        raise SafetensorsError(f"file is {len(blob)} bytes, too short for the "
                               "8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n == 0 or n > MAX_HEADER or 8 + n > len(blob):
        raise SafetensorsError(f"header length {n} is invalid for a file of "
                               f"{len(blob)} bytes")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"),
                            object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"header is not valid UTF-8 JSON: {e}")
    if not isinstance(header, dict):
        raise SafetensorsError("header JSON is not an object")
    data = memoryview(blob)[8 + n:]
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
        raise SafetensorsError("__metadata__ must map strings to strings")

    tensors = {}
    spans = []
    for name in sorted(header):
        info = header[name]
        if not isinstance(info, dict):
            raise SafetensorsError(f"tensor {name!r}: entry is not an object")
        dtype = info.get("dtype")
        shape = info.get("shape")
        offs = info.get("data_offsets")
        if dtype not in DTYPES:
            raise SafetensorsError(f"tensor {name!r}: unsupported dtype {dtype!r} "
                                   f"(supported: {', '.join(DTYPES)})")
        if (not isinstance(shape, list) or
                not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0
                        for s in shape)):
            raise SafetensorsError(f"tensor {name!r}: bad shape {shape!r}")
        if (not isinstance(offs, list) or len(offs) != 2 or
                not all(isinstance(o, int) and not isinstance(o, bool) for o in offs)):
            raise SafetensorsError(f"tensor {name!r}: bad data_offsets {offs!r}")
        b, e = offs
        npdt, size = DTYPES[dtype]
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if not (0 <= b <= e <= len(data)):
            raise SafetensorsError(f"tensor {name!r}: data_offsets [{b}, {e}] "
                                   f"outside the {len(data)}-byte data section")
        if e - b != numel * size:
            raise SafetensorsError(f"tensor {name!r}: data_offsets span {e - b} "
                                   f"bytes but {dtype} {shape} needs {numel * size}")
        arr = np.frombuffer(data[b:e], dtype=npdt).reshape(shape)
        if dtype == "BF16":
            arr = bf16_to_f32(arr)
        # native byte order, writable, owning its memory
        tensors[name] = arr.astype(arr.dtype.newbyteorder("="), copy=True)
        spans.append((b, e, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise SafetensorsError(f"tensors {n0!r} and {n1!r} overlap in the "
                                   "data section")
    return tensors, metadata


def save(path, tensors, metadata=None, dtypes=None):
    """Write {name: array} to `path` atomically.

    dtypes: optional {name: "BF16"|"F32"|...} to convert on write; otherwise
    each array's own dtype is used (float64, float32, float16, int64, int32).
    """
    dtypes = dtypes or {}
    header = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str)
                   for k, v in metadata.items()):
            raise SafetensorsError(f"{path}: metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)
    chunks = []
    offset = 0
    for name in sorted(tensors):
        if name == "__metadata__":
            raise SafetensorsError(f"{path}: '__metadata__' is not a tensor name")
        arr = np.asarray(tensors[name])
        st = dtypes.get(name) or _NP_TO_ST.get(arr.dtype.newbyteorder("="))
        if st is None or st not in DTYPES:
            raise SafetensorsError(f"{path}: tensor {name!r}: cannot store "
                                   f"dtype {arr.dtype} (give dtypes=)")
        if st == "BF16":
            raw = f32_to_bf16(arr).astype("<u2").tobytes()
        else:
            raw = np.ascontiguousarray(arr, dtype=DTYPES[st][0]).tobytes()
        header[name] = {"dtype": st, "shape": [int(s) for s in arr.shape],
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    hjson = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hjson += b" " * ((-len(hjson)) % 8)
    blob = struct.pack("<Q", len(hjson)) + hjson + b"".join(chunks)

    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(blob)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
