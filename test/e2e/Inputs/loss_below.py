"""loss_below.py LOG STEP BOUND: the loss logged at STEP is below BOUND."""
import re
import sys

log, step, bound = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
losses = {int(m.group(1)): float(m.group(2))
          for m in re.finditer(r"step\s+(\d+) \| loss ([0-9.]+)", open(log).read())}
if step not in losses:
    sys.exit(f"error: {log} has no loss for step {step}")
first = losses[min(losses)]
print(f"loss at step {min(losses)}: {first:.4f}, at step {step}: {losses[step]:.4f} (bound {bound})")
if not losses[step] < bound:
    sys.exit(f"error: loss {losses[step]:.4f} at step {step} is not below {bound}")
