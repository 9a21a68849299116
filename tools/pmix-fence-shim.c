/* tools/pmix-fence-shim.c: an LD_PRELOAD library that logs each PMIx fence a process makes, with
 * its host, Slurm rank and wall-clock times, so tools/pmix-fences can tell whether a fence was a
 * barrier: whether any node saw it complete before another node's ranks had even called it.
 *
 * It wraps PMIx_Fence_nb (Open MPI 4.1's MPI_Init makes its two fences through it) and PMIx_Fence,
 * passes every argument on unchanged, and logs "FENCE host rank k call|done status t" on stderr;
 * the callback's status is logged too, since Open MPI 4.1.4's fence_release ignores it.  It
 * declares the few PMIx types it needs itself (int status, opaque pointers) so that it builds
 * without PMIx's headers.  Built and run by tools/pmix-fences (tests/devcluster.sh runs it); not
 * part of the product, and never loaded by it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

typedef int fence_status;
typedef void (*fence_cb)(fence_status, void *);

struct pending {
    fence_cb cb;
    void *data;
    int k;
};

static atomic_int fences;

static void log_line(int k, const char *what, int status)
{
    struct timespec t;
    char host[64] = "?";
    const char *rank = getenv("SLURM_PROCID");
    clock_gettime(CLOCK_REALTIME, &t);
    gethostname(host, sizeof host - 1);
    fprintf(stderr, "FENCE %s %s %d %s %d %.6f\n", host, rank ? rank : "?", k, what, status,
            (double)t.tv_sec + (double)t.tv_nsec * 1e-9);
}

static void released(fence_status s, void *data)
{
    struct pending *p = data;
    log_line(p->k, "done", s);
    p->cb(s, p->data);
    free(p);
}

fence_status PMIx_Fence_nb(const void *procs, size_t nprocs, const void *info, size_t ninfo,
                           fence_cb cb, void *cbdata)
{
    static fence_status (*real)(const void *, size_t, const void *, size_t, fence_cb, void *);
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "PMIx_Fence_nb");
    struct pending *p = malloc(sizeof *p);
    if (real == NULL || p == NULL || cb == NULL) {
        free(p);
        return real ? real(procs, nprocs, info, ninfo, cb, cbdata) : -1;
    }
    *p = (struct pending){.cb = cb, .data = cbdata, .k = ++fences};
    log_line(p->k, "call", 0);
    fence_status s = real(procs, nprocs, info, ninfo, released, p);
    if (s != 0) {
        log_line(p->k, "refused", s);
        free(p);
    }
    return s;
}

fence_status PMIx_Fence(const void *procs, size_t nprocs, const void *info, size_t ninfo)
{
    static fence_status (*real)(const void *, size_t, const void *, size_t);
    if (real == NULL)
        *(void **)&real = dlsym(RTLD_NEXT, "PMIx_Fence");
    if (real == NULL)
        return -1;
    int k = ++fences;
    log_line(k, "call", 0);
    fence_status s = real(procs, nprocs, info, ninfo);
    log_line(k, "done", s);
    return s;
}
