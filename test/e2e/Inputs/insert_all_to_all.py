"""Puts an all_to_all round trip into a triax-model GPT: after the
embeddings' sum, dist.all_to_all over dp (split the sequence, concat the
features) and its inverse (split the features, concat the sequence), so
the model computes what it did, through two exchanges whose slices are
neither outermost (the lowering packs and unpacks both). Adds the mesh
@mesh with dp=N.

usage: insert_all_to_all.py IN.mlir OUT.mlir N
"""
import re
import sys

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(src).read()
m = re.search(r"( *)(%\d+) = triax\.add %\d+, %\d+ : tensor<(\d+)x(\d+)x(\d+)xf32>\n",
              text)
if not m:
    sys.exit("insert_all_to_all.py: no embeddings' sum in " + src)
indent, value = m.group(1), m.group(2)
b, s, h = (int(m.group(i)) for i in (3, 4, 5))
whole = "tensor<%dx%dx%dxf32>" % (b, s, h)
mid = "tensor<%dx%dx%dxf32>" % (b, s // n, h * n)
trip = (
    f"{indent}%a2a_d = dist.all_to_all {value} over @mesh [\"dp\"] split 1 concat 2 : {whole} -> {mid}\n"
    f"{indent}%a2a_c = dist.all_to_all %a2a_d over @mesh [\"dp\"] split 2 concat 1 : {mid} -> {whole}\n")
head, rest = text[:m.end()], text[m.end():]
# The next reader of the sum (the first block) reads the round trip.
rest = rest.replace("(" + value + ")", "(%a2a_c)", 1)
head = head.replace("module {\n", "module {\n  dist.mesh @mesh <[\"dp\"=%d]>\n" % n, 1)
open(dst, "w").write(head + trip + rest)
