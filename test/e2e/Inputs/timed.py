"""timed.py LIMIT_S CMD...: runs CMD, fails if it fails or takes over LIMIT_S."""
import subprocess
import sys
import time

limit = float(sys.argv[1])
start = time.monotonic()
rc = subprocess.call(sys.argv[2:])
elapsed = time.monotonic() - start
print(f"elapsed {elapsed:.1f} s (limit {limit:.0f} s)")
if rc != 0:
    sys.exit(rc)
if elapsed > limit:
    print(f"error: took {elapsed:.1f} s, over the {limit:.0f} s limit", file=sys.stderr)
    sys.exit(1)
