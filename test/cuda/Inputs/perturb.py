#!/usr/bin/env python3
"""perturb.py KERNELS.json DIR REL: multiplies the first sampled f32
element of the first kernel whose first memref is f32-typed and non-zero by
(1 + REL) in DIR/<kernel>.bin, so that kernel_check.py compare must flag
exactly that kernel (a test of the comparison, not of any kernel). Only elements of magnitude
above 0.01 are moved, where REL >= 0.01 is beyond atol + rtol."""
import json
import struct
import sys

meta = json.load(open(sys.argv[1]))
rel = float(sys.argv[3])
for k in meta["kernels"]:
    memrefs = [t for t in k["args"] if t["kind"] == "memref"]
    if not memrefs or memrefs[0]["elem"] not in ("f32", "bf16"):
        continue
    path = "%s/%s.bin" % (sys.argv[2], k["name"])
    data = bytearray(open(path, "rb").read())
    off = 8 if k.get("result") else 0
    (v,) = struct.unpack_from("<f", data, off)
    if not abs(v) > 0.01:  # (also skips NaN)
        continue
    struct.pack_into("<f", data, off, v * (1.0 + rel))
    open(path, "wb").write(bytes(data))
    print("perturb.py: %s element 0: %r -> %r" % (k["name"], v, v * (1 + rel)))
    sys.exit(0)
sys.exit("perturb.py: no kernel to perturb")
