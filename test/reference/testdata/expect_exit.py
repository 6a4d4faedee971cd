#!/usr/bin/env python3
"""expect_exit.py CODE CMD [ARGS...]: run CMD, pass its stdout/stderr through,
and exit 0 only if CMD exited with exactly CODE (lit's `not` only checks
for non-zero)."""

import subprocess
import sys

if len(sys.argv) < 3:
    print("usage: expect_exit.py CODE CMD [ARGS...]", file=sys.stderr)
    sys.exit(2)
want = int(sys.argv[1])
rc = subprocess.call(sys.argv[2:])
if rc != want:
    print(f"expect_exit: {sys.argv[2:]} exited {rc}, expected {want}", file=sys.stderr)
    sys.exit(1)
