/* A stand-in libmpi.so.40 for single-rank runs of Triax training binaries
 * on a machine without Open MPI, or whose C library is too old for the
 * build machine's Open MPI (libevent there needs glibc 2.36).
 *
 * A one-device run never starts MPI (runtime/lib/cpu/driver.cpp): only
 * MPI_Initialized / MPI_Finalized may be asked, and they answer "no". Any
 * other call means a multi-rank run, which needs the real library: it
 * prints why and exits.
 *
 * Built by bench/gpu/run.sh prepare (cc -shared -fPIC, soname
 * libmpi.so.40). Only the symbols the runtime uses are defined (nm -D
 * --undefined-only on a training binary lists them); the data objects are
 * reached through the GOT, so their size does not matter. */
#include <stdio.h>
#include <stdlib.h>

static void unavailable(const char *fn) {
  fprintf(stderr,
          "triax: %s: this binary runs with a stub MPI (bench/gpu/"
          "mpi_stub.c): single-rank runs only; use the real Open MPI for "
          "more ranks\n",
          fn);
  exit(1);
}

#define STUB(name)                                                             \
  int name() {                                                                 \
    unavailable(#name);                                                        \
    return 1;                                                                  \
  }

int MPI_Initialized(int *flag) {
  *flag = 0;
  return 0;
}
int MPI_Finalized(int *flag) {
  *flag = 0;
  return 0;
}

STUB(MPI_Abort)
STUB(MPI_Barrier)
STUB(MPI_Comm_create_group)
STUB(MPI_Comm_free)
STUB(MPI_Comm_group)
STUB(MPI_Comm_rank)
STUB(MPI_Comm_set_errhandler)
STUB(MPI_Comm_size)
STUB(MPI_Comm_split)
STUB(MPI_Error_string)
STUB(MPI_Finalize)
STUB(MPI_Get_count)
STUB(MPI_Group_free)
STUB(MPI_Group_incl)
STUB(MPI_Init_thread)
STUB(MPI_Irecv)
STUB(MPI_Isend)
STUB(MPI_Probe)
STUB(MPI_Recv)
STUB(MPI_Send)
STUB(MPI_Sendrecv)
STUB(MPI_Waitall)
STUB(MPI_Allreduce)
STUB(MPI_Allgather)
STUB(MPI_Reduce_scatter_block)
STUB(MPI_Bcast)

char ompi_mpi_byte[1024], ompi_mpi_comm_null[1024], ompi_mpi_comm_world[1024],
    ompi_mpi_errors_return[1024], ompi_mpi_float[1024], ompi_mpi_double[1024],
    ompi_mpi_int[1024], ompi_mpi_long_long_int[1024], ompi_mpi_op_sum[1024],
    ompi_mpi_op_max[1024], ompi_mpi_op_min[1024];
