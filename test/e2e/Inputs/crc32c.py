#!/usr/bin/env python3
"""Checks a checkpoint's state.json checksums against CRC-32C computed here.

  crc32c.py STEP_DIR          # prints "<file> ok" per listed file, exit 1 on a mismatch
  crc32c.py --flip FILE OFF   # flips the bits of byte OFF from the end of FILE

An independent reference for the runtime's table-driven CRC-32C: the
bitwise definition (Castagnoli, reflected polynomial 0x82F63B78, initial
and final XOR 0xFFFFFFFF; "123456789" gives 0xe3069283).
"""
import json
import os
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        table.append(c)
    for b in data:
        crc = (crc >> 8) ^ table[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def main():
    if sys.argv[1] == "--flip":
        path, off = sys.argv[2], int(sys.argv[3])
        with open(path, "r+b") as f:
            f.seek(-off, os.SEEK_END)
            b = f.read(1)
            f.seek(-off, os.SEEK_END)
            f.write(bytes([b[0] ^ 0xFF]))
        return 0
    assert crc32c(b"123456789") == 0xE3069283
    step = sys.argv[1]
    with open(os.path.join(step, "state.json")) as f:
        sums = json.load(f)["checksums"]
    bad = 0
    for name, want in sorted(sums.items()):
        with open(os.path.join(step, name), "rb") as f:
            got = "crc32c:%08x" % crc32c(f.read())
        print(name, "ok" if got == want else "MISMATCH %s != %s" % (got, want))
        bad += got != want
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
