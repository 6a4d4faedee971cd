#!/usr/bin/env python3
"""Reader for llm.c token files (.bin), and a small inspection CLI.

Format: 256 little-endian int32 header (header[0] = 20240520 magic,
header[1] = 1 version, header[2] = token count, the rest 0), then the tokens
as little-endian uint16.  The file size must be exactly 1024 + 2 * count.

    python3 llmc_bin.py info FILE.bin
        prints "magic 20240520 version 1 tokens N min A max B"
    python3 llmc_bin.py decode-bytes FILE.bin -o OUT.txt
        writes the tokens back as bytes (every token must be < 256)
"""

import argparse
import array
import struct
import sys

MAGIC = 20240520
VERSION = 1
HEADER_BYTES = 256 * 4


class TokenFileError(ValueError):
    pass


def read_token_bytes(path):
    """Validate an llm.c .bin file; return its token section (raw bytes)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise TokenFileError(f"{path}: cannot read: {e.strerror}")
    if len(blob) < HEADER_BYTES:
        raise TokenFileError(f"{path}: {len(blob)} bytes, shorter than the "
                             f"{HEADER_BYTES}-byte header")
    magic, version, n = struct.unpack("<3i", blob[:12])
    if magic != MAGIC:
        raise TokenFileError(f"{path}: bad magic {magic} (expected {MAGIC}); "
                             "not an llm.c token file")
    if version != VERSION:
        raise TokenFileError(f"{path}: unsupported version {version} "
                             f"(expected {VERSION})")
    if n < 0:
        raise TokenFileError(f"{path}: negative token count {n}")
    expected = HEADER_BYTES + 2 * n
    if len(blob) != expected:
        raise TokenFileError(f"{path}: header says {n} tokens ({expected} "
                             f"bytes) but the file has {len(blob)} bytes")
    return blob[HEADER_BYTES:]


def read_tokens(path):
    """Return the tokens of an llm.c .bin file as a uint16 numpy array."""
    import numpy as np  # noqa: PLC0415 (the CLI below works without numpy)
    return np.frombuffer(read_token_bytes(path), dtype="<u2").astype(np.uint16)


def read_token_list(path):
    """Return the tokens as a Python array('H') (no numpy needed)."""
    toks = array.array("H")
    toks.frombytes(read_token_bytes(path))
    if sys.byteorder == "big":
        toks.byteswap()
    return toks


def main(argv=None):
    p = argparse.ArgumentParser(prog="llmc_bin", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("info", help="print header facts")
    pi.add_argument("file")
    pd = sub.add_parser("decode-bytes", help="write byte tokens back as bytes")
    pd.add_argument("file")
    pd.add_argument("-o", "--out", required=True)
    args = p.parse_args(argv)
    try:
        toks = read_token_list(args.file)
    except TokenFileError as e:
        print(f"llmc_bin: error: {e}", file=sys.stderr)
        return 1
    lo = min(toks) if toks else 0
    hi = max(toks) if toks else 0
    if args.cmd == "info":
        print(f"magic {MAGIC} version {VERSION} tokens {len(toks)} min {lo} max {hi}")
        return 0
    if hi > 255:
        print(f"llmc_bin: error: {args.file}: token {hi} > 255 "
              "is not a byte token", file=sys.stderr)
        return 1
    try:
        with open(args.out, "wb") as f:
            f.write(bytes(toks.tolist()))
    except OSError as e:
        print(f"llmc_bin: error: {args.out}: cannot write: {e.strerror}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
