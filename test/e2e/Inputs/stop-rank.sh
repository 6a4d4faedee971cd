#!/bin/sh
# stop-rank.sh RANK SECONDS PROGRAM ARGS...: runs PROGRAM; under mpirun, the
# process of world rank RANK stops itself (SIGSTOP) SECONDS after it starts,
# as a rank stuck in a debugger, swapped out or frozen would.
rank=$1 seconds=$2
shift 2
if [ "${OMPI_COMM_WORLD_RANK:-0}" = "$rank" ]; then
  (sleep "$seconds"; kill -STOP $$) &
fi
exec "$@"
