/* tools/pmix-fence-probe.c: the smallest MPI start that shows the start-up SIGSEGV: MPI_Init,
 * then at once an MPI_Allreduce, then MPI_Finalize; rank 0 prints the world size and the sum.
 * No rendezvous (src/comm/comm_start.c), on purpose: under tools/pmix-fences it shows what
 * Open MPI's MPI_Init alone guarantees.  Built and run by tools/pmix-fences (tests/devcluster.sh
 * runs it); not part of the product. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank = 0, size = 0, sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("ranks %d, sum of ranks %d (expected %d)\n", size, sum, size * (size - 1) / 2);
    MPI_Finalize();
    return sum == size * (size - 1) / 2 ? 0 : 1;
}
