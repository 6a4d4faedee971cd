#!/usr/bin/env python3
"""Turns a training binary's --log-json file (one JSON object per line) into
the {"losses": [...], "grad_norms": [...]} file test/reference/compare.py
reads. Step lines are those with a "loss" key; eval lines are skipped.

    log_to_losses.py LOG.jsonl OUT.json
"""

import json
import sys


def main(argv):
    if len(argv) != 3:
        print("usage: log_to_losses.py LOG.jsonl OUT.json", file=sys.stderr)
        return 2
    losses, norms = [], []
    with open(argv[1], encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"{argv[1]}:{n}: not JSON: {e}", file=sys.stderr)
                return 1
            if "loss" in rec:
                losses.append(rec["loss"])
                norms.append(rec["grad_norm"])
    with open(argv[2], "w", encoding="utf-8") as f:
        json.dump({"losses": losses, "grad_norms": norms}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
