#!/usr/bin/env python3
"""Lists the CUDA cubins embedded in a file (a training binary, an object):
one line "cubin sm_NN" per ELF image with e_machine EM_CUDA (190), read from
its e_flags (CUDA ELF ABI 8 and later: bits 8-15; before: bits 0-7), and a
last line "fatbins N" (the 0xBA55ED50 fatbin headers). cuobjdump does the
same, but this toolkit has none: ptxas wrote these images, so an sm_90
cubin here is ptxas having accepted the kernels for sm_90."""
import struct
import sys

data = open(sys.argv[1], "rb").read()
i = -1
while True:
    i = data.find(b"\x7fELF", i + 1)
    if i < 0:
        break
    if i == 0 or len(data) < i + 52 or data[i + 4] != 2:  # 64-bit images only
        continue
    machine = struct.unpack_from("<H", data, i + 18)[0]
    if machine != 190:
        continue
    flags = struct.unpack_from("<I", data, i + 48)[0]
    sm = (flags >> 8) & 0xFF if data[i + 8] >= 8 else flags & 0xFF
    print("cubin sm_%d" % sm)
print("fatbins %d" % data.count(struct.pack("<I", 0xBA55ED50)))
