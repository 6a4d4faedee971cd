#!/usr/bin/env python3
"""Tokenize a text file into llm.c's token file format (.bin).

File format (identical to llm.c's dev/data/*.bin):
  header: 256 little-endian int32
      header[0] = 20240520  (magic)
      header[1] = 1         (version)
      header[2] = number of tokens
      header[3..255] = 0
  body:   the tokens as little-endian uint16

Tokenizers:
  bytes (default)  every byte of the input file is one token (vocab 256).
  gpt2             GPT-2 BPE via the optional `tiktoken` package
                   (encode_ordinary: special-token text is encoded as plain
                   text, no end-of-text token is inserted).

With --val-fraction F (0 < F < 1) and --val-out VAL.bin the token stream is
split: the first ntok - round(F*ntok) tokens go to OUT.bin, the rest to
VAL.bin.

Outputs are written atomically (temporary file in the destination folder,
then os.replace).

Needs only the Python standard library (plus tiktoken for --tokenizer gpt2).

Exit codes: 0 ok, 1 bad input / I/O error, 2 usage error or missing tiktoken.
"""

import argparse
import array
import os
import struct
import sys
import tempfile

MAGIC = 20240520
VERSION = 1
HEADER_INTS = 256
HEADER_BYTES = HEADER_INTS * 4
MAX_TOKENS = 2**31 - 1  # header[2] is an int32

TIKTOKEN_MISSING = ("tiktoken is not installed; pip install tiktoken or use "
                    "--tokenizer bytes")


class PrepError(Exception):
    """An error to report as 'triax-data-prep: error: <message>'."""

    def __init__(self, message, code=1):
        super().__init__(message)
        self.code = code


def encode_bin(tokens):
    """Return the llm.c .bin image (bytes) for a sequence of token ids.

    `tokens` is either bytes (byte tokenizer: each byte is a token) or a
    sequence of ints in [0, 65535]."""
    n = len(tokens)
    if n > MAX_TOKENS:
        raise PrepError(f"{n} tokens do not fit the int32 token count of the header")
    header = struct.pack("<%di" % HEADER_INTS, MAGIC, VERSION, n,
                         *([0] * (HEADER_INTS - 3)))
    if isinstance(tokens, (bytes, bytearray)):
        body = bytearray(2 * n)
        body[0::2] = tokens  # little-endian uint16: low byte, then 0
        return header + bytes(body)
    if n and (min(tokens) < 0 or max(tokens) > 0xFFFF):
        raise PrepError("token ids must lie in [0, 65535] to be stored as uint16")
    body = array.array("H", tokens)
    if body.itemsize != 2:
        raise PrepError("this Python's array('H') is not 16-bit")
    if sys.byteorder == "big":
        body.byteswap()
    return header + body.tobytes()


def write_atomic(path, data):
    """Write `data` (bytes) to `path` through a temp file and os.replace."""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise PrepError(f"{path}: output directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".",
                               suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def tokenize_bytes(raw, path):
    return raw


def tokenize_gpt2(raw, path):
    try:
        import tiktoken  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise PrepError(TIKTOKEN_MISSING, code=2)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PrepError(f"{path}: not valid UTF-8 at byte {e.start} "
                        f"(the gpt2 tokenizer needs UTF-8 text; "
                        f"--tokenizer bytes accepts any bytes)")
    try:
        enc = tiktoken.get_encoding("gpt2")
    except Exception as e:  # network / cache failures surface here
        raise PrepError(f"tiktoken could not load the gpt2 encoding: {e}", code=2)
    return list(enc.encode_ordinary(text))


TOKENIZERS = {"bytes": tokenize_bytes, "gpt2": tokenize_gpt2}


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="triax-data-prep",
        description="Tokenize a text file into llm.c's .bin token format.")
    p.add_argument("input", help="input text file")
    p.add_argument("-o", "--out", required=True, help="output .bin file")
    p.add_argument("--tokenizer", choices=sorted(TOKENIZERS), default="bytes",
                   help="bytes: one token per byte (vocab 256, default); "
                        "gpt2: GPT-2 BPE through tiktoken")
    p.add_argument("--val-fraction", type=float, default=0.0,
                   help="fraction of the tokens (taken from the end) written "
                        "to --val-out; 0 (default) writes no validation split")
    p.add_argument("--val-out", help="validation .bin file (with --val-fraction)")
    return p.parse_args(argv)


def run(args):
    f = args.val_fraction
    if not (0.0 <= f < 1.0):
        raise PrepError(f"--val-fraction must be in [0, 1), got {f}", code=2)
    if f > 0.0 and not args.val_out:
        raise PrepError("--val-fraction > 0 needs --val-out VAL.bin", code=2)
    if args.val_out and f == 0.0:
        raise PrepError("--val-out needs --val-fraction F with 0 < F < 1", code=2)
    if args.val_out and os.path.abspath(args.val_out) == os.path.abspath(args.out):
        raise PrepError("--val-out and -o name the same file", code=2)

    path = args.input
    if not os.path.exists(path):
        raise PrepError(f"{path}: no such file")
    if os.path.isdir(path):
        raise PrepError(f"{path}: is a directory, expected a text file")
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise PrepError(f"{path}: cannot read: {e.strerror}")
    if not raw:
        raise PrepError(f"{path}: input is empty")

    tokens = TOKENIZERS[args.tokenizer](raw, path)
    n = len(tokens)
    if n == 0:
        raise PrepError(f"{path}: tokenizer produced no tokens")

    if f > 0.0:
        nval = int(round(f * n))
        ntrain = n - nval
        if nval == 0 or ntrain == 0:
            raise PrepError(f"{path}: {n} tokens cannot be split with "
                            f"--val-fraction {f} (a split would be empty)")
        train, val = tokens[:ntrain], tokens[ntrain:]
    else:
        train, val = tokens, None

    try:
        train_img = encode_bin(train)
        val_img = encode_bin(val) if val is not None else None
        write_atomic(args.out, train_img)
        msg = f"wrote {args.out}: {len(train)} tokens ({args.tokenizer})"
        if val_img is not None:
            write_atomic(args.val_out, val_img)
            msg += f"; {args.val_out}: {len(val)} tokens"
    except OSError as e:
        raise PrepError(f"{e.filename or args.out}: cannot write: {e.strerror}")
    print(msg, file=sys.stderr)
    return 0


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return run(args)
    except PrepError as e:
        print(f"triax-data-prep: error: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
