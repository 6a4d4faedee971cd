"""The IR's activation peak [A9] as `triaxc --report` prints it.

Shared by the scripts beside it that compare a prediction with it.
"""
import re
import subprocess

LIVENESS = re.compile(r"from the IR's liveness: (\d+)")


def liveness(report):
    """[A9] in a `triaxc --report` text."""
    return int(LIVENESS.search(report)[1])


def stage_a9(model, mesh, schedule, flags, rank):
    """[A9] of the pipeline stage rank `rank` holds on `mesh` (schedule
    None: a mesh without a pipeline)."""
    report = subprocess.run(
        ["triaxc", model, "--mesh", mesh,
         *(["--schedule", schedule] if schedule else []), *flags,
         "--report", "--report-rank", str(rank)],
        check=True, capture_output=True, text=True).stdout
    return liveness(report)
