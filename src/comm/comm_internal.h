/* comm_internal.h: what the comm module's files share, and nothing else may use. */
#ifndef RZ_COMM_INTERNAL_H
#define RZ_COMM_INTERNAL_H

#include <mpi.h>

#include "core/status.h"

/* The one checked call of MPI: on failure it records the call text, file:line and MPI's own
 * error string in `err` (RZ_EHANG), sets `st` and jumps to `cleanup`. */
#define MPI_CHECK(call) do { \
        int mpi_rc_ = (call); \
        if (mpi_rc_ != MPI_SUCCESS) { \
            char mpi_msg_[MPI_MAX_ERROR_STRING]; int mpi_len_ = 0; \
            MPI_Error_string(mpi_rc_, mpi_msg_, &mpi_len_); \
            st = rz_fail(err, RZ_EHANG, "%s:%d: %s failed: %s", __FILE__, __LINE__, #call, \
                         mpi_msg_); \
            goto cleanup; \
        } } while (0)

/* MPI_STATUSES_IGNORE for MPI_Waitall and MPI_Testall.  MPICH defines it as (MPI_Status *)1
 * and declares the parameter MPI_Status[], which GCC 12's -Wstringop-overflow takes for a write
 * of a status through a region of size 0 (a false positive: MPI never writes through the
 * sentinel).  Read back through a volatile, it is no constant the compiler can judge. */
static inline MPI_Status *comm_statuses_ignore(void)
{
    MPI_Status *volatile p = MPI_STATUSES_IGNORE;
    return p;
}

#endif
