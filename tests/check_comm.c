/* check_comm: the MPI module.  Run plainly it tests a local world of one and a real MPI
 * singleton; tests/mpi.sh also runs it under `mpirun -np 2` (CK_FORK=no), where every test
 * checks the cross-rank results against values computed in closed form. */
#include "config.h"

#include <check.h>
#include <stdbool.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/comm.h"
#include "core/util.h"
#include "testutil.h"

static struct comm *world; /* MPI_COMM_WORLD, set up once in main */

#ifdef __SANITIZE_ADDRESS__
/* Under AddressSanitizer: Open MPI's runtime does not free everything at MPI_Finalize, and some
 * of it was allocated by MCA components it has already unloaded, whose frames the fast unwinder
 * cannot walk past.  The slow unwinder reaches the Open MPI library that called them, and only
 * leaks with such a frame are suppressed: leaks of our own code in this suite still fail it. */
const char *__asan_default_options(void);
const char *__lsan_default_suppressions(void);

const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

const char *__lsan_default_suppressions(void)
{
    return "leak:libmpi.so\nleak:libopen-pal.so\nleak:libopen-rte.so\nleak:libpmix.so\n"
           "leak:libhwloc.so\nleak:libevent\nleak:libprrte.so\n";
}
#endif

START_TEST(gradient_buckets_average_over_ranks)
{
    int r = comm_rank(world), n = comm_size(world);
    enum { N = 1000 };
    float g[N];
    for (int i = 0; i < N; i++)
        g[i] = (float)(i % 7) + (float)r; /* rank r adds r */
    comm_grads_begin(world, g, N, 64 * sizeof(float), true); /* 16 buckets */
    comm_grads_ready(world, 600, 400, g + 600);         /* as backward would: the end first */
    comm_grads_ready(world, 0, 600, g);
    double exposed = -1, sumsq = 0;
    ck_assert_int_eq(comm_grads_finish(world, &exposed, &sumsq, NULL), RZ_OK);
    ck_assert(exposed >= 0.0);
    double local = 0;
    for (int i = 0; i < N; i++) {
        float want = (float)n * (float)(i % 7) + (float)(n * (n - 1) / 2);
        ck_assert_msg(g[i] == want, "g[%d] = %g, want %g", i, (double)g[i], (double)want);
        double mine = (double)(i % 7) + r;
        local += mine * mine;
    }
    ck_assert_double_eq_tol(sumsq, local, 1e-6 * local); /* this rank's sum before the reduce */
}
END_TEST

/* ZeRO: reduce-scatter into shards (overwrite, then accumulate), from segment buffers that are
 * reused once their ranges were sent; then the parameter all-gather and the gather of a range
 * onto rank 0 for checkpoints.  Small integers: every sum is exact. */
START_TEST(zero_shards_reduce_gather_and_accumulate)
{
    int r = comm_rank(world), n = comm_size(world);
    enum { N = 1000, ALIGN = 16, SEG = 250 };
    size_t lo, hi;
    rz_shard(N, n, r, ALIGN, &lo, &hi);
    float *shard = calloc(hi - lo + 1, sizeof *shard), slot[SEG], params[N], out[N];
    for (int micro = 0; micro < 2; micro++) {
        ck_assert_int_eq(comm_grads_begin_sharded(world, shard, N, ALIGN, 64 * sizeof(float),
                                                  false, micro > 0, NULL), RZ_OK);
        for (int s0 = N - SEG; s0 >= 0; s0 -= SEG) { /* the end first, one slot reused */
            comm_grads_reuse(world, slot, SEG);
            for (int i = 0; i < SEG; i++)
                slot[i] = (float)((s0 + i) % 7) + (float)r;
            comm_grads_ready(world, (size_t)s0, SEG, slot);
        }
        double exposed = -1, sumsq = 0;
        ck_assert_int_eq(comm_grads_finish(world, &exposed, &sumsq, NULL), RZ_OK);
        for (size_t i = lo; i < hi; i++) {
            float want = (float)(micro + 1) * ((float)n * (float)(i % 7) + (float)(n * (n - 1) / 2));
            ck_assert_msg(shard[i - lo] == want, "micro %d: shard[%zu] = %g, want %g", micro, i,
                          (double)shard[i - lo], (double)want);
        }
    }
    for (int i = 0; i < N; i++) /* only this rank's part is right before the gather */
        params[i] = (size_t)i >= lo && (size_t)i < hi ? 0.5f * (float)i : -1.0f;
    ck_assert_int_eq(comm_params_begin(world, params, N, ALIGN, 256, NULL), RZ_OK);
    comm_params_need(world, 0, 100);
    for (int i = 0; i < 100; i++)
        ck_assert(params[i] == 0.5f * (float)i);
    ck_assert_int_eq(comm_params_finish(world, NULL), RZ_OK);
    for (int i = 0; i < N; i++)
        ck_assert(params[i] == 0.5f * (float)i);
    for (size_t i = lo; i < hi; i++)
        shard[i - lo] = 2.0f * (float)i;
    ck_assert_int_eq(comm_gather_range(world, shard, N, ALIGN, 10, 990, out, NULL), RZ_OK);
    for (int i = 10; r == 0 && i < 990; i++)
        ck_assert(out[i - 10] == 2.0f * (float)i);
    free(shard);
}
END_TEST

START_TEST(small_collectives)
{
    int r = comm_rank(world), n = comm_size(world);
    int mx = -1;
    ck_assert_int_eq(comm_max_int(world, r == n - 1 ? 5 : 0, &mx, NULL), RZ_OK);
    ck_assert_int_eq(mx, 5);
    double v[2] = {1.0, (double)r};
    ck_assert_int_eq(comm_sum_doubles(world, v, 2, NULL), RZ_OK);
    ck_assert(v[0] == (double)n && v[1] == (double)(n * (n - 1) / 2));
    double *all = calloc((size_t)n, sizeof *all);
    ck_assert_int_eq(comm_allgather_double(world, 10.0 + r, all, NULL), RZ_OK);
    for (int q = 0; q < n; q++)
        ck_assert(all[q] == 10.0 + q);
    free(all);
    char name[16] = "";
    if (r == 0)
        strcpy(name, "from-rank-0");
    ck_assert_int_eq(comm_bcast_bytes(world, name, sizeof name, NULL), RZ_OK);
    ck_assert_str_eq(name, "from-rank-0");
    double lat = -1;
    ck_assert_int_eq(comm_allreduce_latency(world, 5, &lat, NULL), RZ_OK);
    ck_assert(lat >= 0.0 && (n > 1 || lat == 0.0));
}
END_TEST

START_TEST(preflight_probes)
{
    bool ok = false;
    ck_assert_int_eq(comm_ring_check(world, &ok, NULL), RZ_OK);
    ck_assert(ok);
    double rel = 1;
    ck_assert_int_eq(comm_allreduce_check(world, 4096, &rel, NULL), RZ_OK);
    ck_assert(rel == 0.0); /* the probe values sum exactly in fp32 */
    /* the ring's hop: a time on two ranks or more, the same on every rank; none on one */
    double hop = -1, mx = 0;
    ck_assert_int_eq(comm_hop_probe(world, 5, &hop, NULL), RZ_OK);
    if (comm_size(world) == 1) {
        ck_assert(isnan(hop));
    } else {
        ck_assert(hop > 0.0 && isfinite(hop));
        mx = hop;
        ck_assert_int_eq(comm_sum_doubles(world, &mx, 1, NULL), RZ_OK);
        ck_assert_double_eq_tol(mx, comm_size(world) * hop, 1e-12 * mx);
    }
}
END_TEST

START_TEST(sync_check_agrees_on_identical_parameters)
{
    float p[64];
    for (int i = 0; i < 64; i++)
        p[i] = 0.25f * (float)i;
    struct comm_sync s;
    double pre = 1.0 + comm_rank(world); /* local norms differ, as with different data */
    ck_assert_int_eq(comm_sync_check(world, p, 64, pre, 3.0, &s, NULL), RZ_OK);
    ck_assert(s.agree);
    ck_assert(s.param_spread == 0.0);
    ck_assert(s.post_spread == 0.0);
    ck_assert(s.pre_min == 1.0 && s.pre_max == (double)comm_size(world));
    ck_assert_str_eq(s.bad_ranks, "");
}
END_TEST

START_TEST(sync_check_names_the_rank_that_differs)
{
    int n = comm_size(world);
    if (n < 2)
        return; /* needs two ranks: run by tests/mpi.sh under mpirun */
    float p[64];
    for (int i = 0; i < 64; i++)
        p[i] = 1.0f + (float)i;
    if (comm_rank(world) == n - 1)
        p[10] += 0.5f; /* the last rank drifted */
    struct comm_sync s;
    ck_assert_int_eq(comm_sync_check(world, p, 64, 1.0, 2.0 + comm_rank(world), &s, NULL), RZ_OK);
    ck_assert(!s.agree);
    char want[16];
    snprintf(want, sizeof want, "%d", n - 1);
    ck_assert_str_eq(s.bad_ranks, want);
    ck_assert_double_eq_tol(s.param_spread, 0.5 / 64.0, 1e-9); /* max |diff| / max |p| */
    ck_assert(s.post_spread > 0.0);
}
END_TEST

/* An environment entry (the parsers take environ's type). */
#define S(x) ((char *)(x))

START_TEST(launch_check_catches_a_wrong_world)
{
    struct rz_err e;
    struct comm_launch l;
    char ntasks[32];
    snprintf(ntasks, sizeof ntasks, "SLURM_NTASKS=%d", comm_size(world) + 1);
    char *env[] = {ntasks, S("SLURM_STEP_ID=0"), NULL};
    comm_launch_parse(&l, env);
    ck_assert_int_eq(comm_check_launch(world, &l, &e), RZ_EHEALTH);
    char fix[64], plugin[16];
    comm_srun_plugin(plugin, sizeof plugin);
    snprintf(fix, sizeof fix, "srun --mpi=%s`", plugin); /* the build's plugin */
    ck_assert_ptr_nonnull(strstr(e.msg, fix));
    snprintf(ntasks, sizeof ntasks, "SLURM_NTASKS=%d", comm_size(world));
    comm_launch_parse(&l, env);
    ck_assert_int_eq(comm_check_launch(world, &l, &e), RZ_OK);
    char *mpirun[] = {ntasks, NULL}; /* not an srun task */
    comm_launch_parse(&l, mpirun);
    ck_assert_int_eq(comm_check_launch(world, &l, &e), RZ_OK);
    ck_assert_int_eq(comm_check_launch(world, NULL, &e), RZ_OK);
}
END_TEST

/* The launch check of PLUGIN refuses the environment ENV, its message naming each of WANT. */
static void refused(const char *plugin, char **env, const char *const *want)
{
    struct comm_launch l;
    struct rz_err e;
    comm_launch_parse(&l, env);
    ck_assert_int_eq(comm_check_launch_env_as(&l, plugin, &e), RZ_EHEALTH);
    for (size_t i = 0; want[i] != NULL; i++)
        ck_assert_msg(strstr(e.msg, want[i]) != NULL, "'%s' lacks '%s'", e.msg, want[i]);
}

/* Open MPI's rule (either build checks it by name). */
START_TEST(launch_env_needs_a_pmix_rank_under_srun)
{
    struct rz_err e;
    struct comm_launch l;
    char *plain[] = {S("HOME=/root"), NULL};
    comm_launch_parse(&l, plain);
    ck_assert_int_eq(comm_check_launch_env_as(&l, "pmix", &e), RZ_OK);
    char *pmix[] = {S("SLURM_STEP_ID=3"), S("PMIX_RANK=2"), NULL};
    comm_launch_parse(&l, pmix);
    ck_assert_int_eq(comm_check_launch_env_as(&l, "pmix", &e), RZ_OK); /* PMIx ranks present */
    ck_assert_int_eq(l.launcher_rank, 2);
    char *pmi2[] = {S("SLURM_STEP_ID=3"), S("SLURM_PROCID=2"), S("SLURM_MPI_TYPE=pmi2"), NULL};
    const char *pmi2_says[] = {"task 2 of step 3", "--mpi=pmi2", "PMIX_RANK is unset",
                               "srun --mpi=pmix", NULL};
    refused("pmix", pmi2, pmi2_says);
    comm_launch_parse(&l, pmi2);
    ck_assert_int_eq(l.launcher_rank, 2);
    char *none[] = {S("SLURM_STEP_ID=3"), S("SLURM_PROCID=2"), NULL};
    const char *none_says[] = {"--mpi=none", NULL};
    refused("pmix", none, none_says);
    char *ompi[] = {S("SLURM_STEP_ID=3"), S("OMPI_COMM_WORLD_RANK=2"), NULL}; /* mpirun's ranks */
    comm_launch_parse(&l, ompi);
    ck_assert_int_eq(comm_check_launch_env_as(&l, "pmix", &e), RZ_OK);
}
END_TEST

/* MPICH's rule: a PMI-2 rank.  Under srun --mpi=pmix it would start each task as a world of one;
 * Slurm's pmi2 plugin and Hydra set PMI_RANK (recorded on the dev cluster: PMI_FD, PMI_JOBID,
 * PMI_RANK, PMI_SIZE). */
START_TEST(launch_env_needs_a_pmi2_rank_for_mpich)
{
    struct rz_err e;
    struct comm_launch l;
    char *pmi2[] = {S("SLURM_STEP_ID=3"), S("SLURM_MPI_TYPE=pmi2"), S("PMI_FD=11"),
                    S("PMI_RANK=1"), S("PMI_SIZE=2"), NULL};
    comm_launch_parse(&l, pmi2);
    ck_assert_int_eq(comm_check_launch_env_as(&l, "pmi2", &e), RZ_OK);
    ck_assert_int_eq(l.launcher_rank, 1);
    char *pmix[] = {S("SLURM_STEP_ID=3"), S("SLURM_PROCID=1"), S("SLURM_MPI_TYPE=pmix"),
                    S("PMIX_RANK=1"), NULL};
    const char *pmix_says[] = {"task 1 of step 3: srun started it with --mpi=pmix",
                               "PMI_RANK is unset", "each task would be a world of its own",
                               "Launch with `srun --mpi=pmi2`", NULL};
    refused("pmi2", pmix, pmix_says);
    char *plain[] = {S("PMIX_RANK=0"), NULL}; /* not an srun task */
    comm_launch_parse(&l, plain);
    ck_assert_int_eq(comm_check_launch_env_as(&l, "pmi2", &e), RZ_OK);
}
END_TEST

/* The MPI the program was compiled against is the one configure named (RYZEN_MPI_KIND, set by
 * make check), and its launch check follows its first plugin. */
START_TEST(the_build_names_its_mpi_and_plugin)
{
    const char *kind = getenv("RYZEN_MPI_KIND");
    const char *name = comm_mpi_name(), *plugins = comm_srun_plugins();
    if (kind != NULL && strcmp(kind, "mpich") == 0) {
        ck_assert_str_eq(name, "MPICH");
        ck_assert(strcmp(plugins, "pmi2") == 0 || strcmp(plugins, "pmix") == 0);
    } else if (kind != NULL && strcmp(kind, "openmpi") == 0) {
        ck_assert_str_eq(name, "Open MPI");
        ck_assert_str_eq(plugins, "pmix,pmi2");
    }
    char plugin[16];
    comm_srun_plugin(plugin, sizeof plugin);
    ck_assert_int_eq(strncmp(plugins, plugin, strlen(plugin)), 0);
    struct rz_err e1, e2;
    struct comm_launch l;
    char *bare[] = {S("SLURM_STEP_ID=3"), S("SLURM_PROCID=0"), NULL};
    comm_launch_parse(&l, bare);
    ck_assert_int_eq(comm_check_launch_env(&l, &e1), RZ_EHEALTH);
    ck_assert_int_eq(comm_check_launch_env_as(&l, plugin, &e2), RZ_EHEALTH);
    ck_assert_str_eq(e1.msg, e2.msg);
}
END_TEST

START_TEST(local_world_needs_no_mpi)
{
    struct comm *c;
    ck_assert_int_eq(comm_create_local(&c, NULL), RZ_OK);
    ck_assert_int_eq(comm_rank(c), 0);
    ck_assert_int_eq(comm_size(c), 1);
    float g[3] = {3, 4, 0};
    double exposed, sumsq;
    comm_grads_begin(c, g, 3, 4, true);
    ck_assert_int_eq(comm_grads_finish(c, &exposed, &sumsq, NULL), RZ_OK);
    ck_assert(sumsq == 25.0); /* nothing reported: the whole buffer */
    ck_assert(g[0] == 3.0f);
    comm_finalize(c);
}
END_TEST

/* The link probe of a job on one node: one host, nothing to measure, no MPI call; a probe size
 * out of range is refused as a config error. */
START_TEST(link_probe_of_one_node_and_its_limits)
{
    struct comm *c;
    static struct comm_links l;
    struct rz_err e;
    ck_assert_int_eq(comm_create_local(&c, NULL), RZ_OK);
    ck_assert_int_eq(comm_link_probe(c, 4096, 3, &l, &e), RZ_OK);
    ck_assert_int_eq(l.n_hosts, 1);
    ck_assert_str_eq(l.hosts[0], comm_host(c));
    ck_assert_int_eq(l.leader[0], 0);
    ck_assert(l.gbps[0][0] == 0.0 && l.latency_us[0][0] == 0.0);
    ck_assert_int_eq(comm_link_probe(c, 0, 3, &l, &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "out of range"));
    ck_assert_int_eq(comm_link_probe(c, 4096, 0, &l, &e), RZ_ECONFIG);
    double hop = 0;
    ck_assert_int_eq(comm_hop_probe(c, 5, &hop, &e), RZ_OK); /* one rank: no ring, no MPI */
    ck_assert(isnan(hop));
    ck_assert_int_eq(comm_hop_probe(c, 0, &hop, &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "ring hop probe of 0 blocks: out of range"));
    comm_finalize(c);
}
END_TEST

static bool exists(const char *path)
{
    return access(path, F_OK) == 0;
}

/* The start-up rendezvous' file part, no MPI: which launches need it, its directory's name, the
 * files appearing, and the cleanup. */
START_TEST(start_rendezvous_files_appear_and_go)
{
    struct rz_err e;
    struct comm_launch l;
    char run[256], dir[512], path[1024];
    char *plain[] = {S("SLURM_NTASKS=3"), NULL}; /* mpirun's ranks, a batch script */
    comm_launch_parse(&l, plain);
    ck_assert(!comm_start_needed(&l, 3));
    char *one[] = {S("SLURM_STEP_ID=4"), S("SLURM_NTASKS=1"), NULL};
    comm_launch_parse(&l, one);
    ck_assert(!comm_start_needed(&l, 1));
    char *other[] = {S("SLURM_STEP_ID=4"), S("SLURM_NTASKS=3"), NULL}; /* not the step's world */
    comm_launch_parse(&l, other);
    ck_assert(!comm_start_needed(&l, 1));
    ck_assert(comm_start_needed(&l, 3));
    char *env[] = {S("SLURM_JOB_ID=77"), S("SLURM_STEP_ID=4"), S("SLURM_NTASKS=3"),
                   S("SLURM_RESTART_COUNT=2"), NULL};
    comm_launch_parse(&l, env);
    ck_assert_str_eq(l.job_id, "77");
    ck_assert_str_eq(l.restart_count, "2");
    rz_test_tmpdir(run, sizeof run, "start");
    ck_assert_int_eq(comm_start_dir(dir, sizeof dir, run, &l, &e), RZ_OK);
    snprintf(path, sizeof path, "%s/.startup/77.4.2", run);
    ck_assert_str_eq(dir, path);
    char *first[] = {S("SLURM_JOB_ID=77"), S("SLURM_STEP_ID=4"), NULL}; /* never requeued */
    comm_launch_parse(&l, first);
    ck_assert_int_eq(comm_start_dir(path, sizeof path, run, &l, &e), RZ_OK);
    ck_assert_ptr_nonnull(strstr(path, "/.startup/77.4.0"));
    ck_assert_int_eq(comm_start_dir(path, 20, run, &l, &e), RZ_ECONFIG);
    /* ranks 0 and 2 are there already: rank 1 arrives and finds them all */
    ck_assert_int_eq(rz_mkdirs(dir, &e), RZ_OK);
    for (int r = 0; r <= 2; r += 2) {
        snprintf(path, sizeof path, "%s/rank-%d", dir, r);
        FILE *f = fopen(path, "w");
        ck_assert_ptr_nonnull(f);
        fclose(f);
    }
    ck_assert_int_eq(comm_start_arrive(dir, 1, 3, 5.0, &e), RZ_OK);
    snprintf(path, sizeof path, "%s/rank-1", dir);
    ck_assert(exists(path));
    comm_start_cleanup(dir, 3);
    ck_assert(!exists(path));
    ck_assert(!exists(dir));
    snprintf(path, sizeof path, "%s/.startup", run);
    ck_assert(exists(path)); /* another step may be making its own directory in it */
    comm_start_cleanup(dir, 3); /* nothing left to remove: fine */
    rmdir(path);
    rmdir(run);
}
END_TEST

/* A rank that never arrives: the wait ends at the timeout, naming it (and only it); a directory
 * that cannot be made is an I/O error naming it. */
START_TEST(start_rendezvous_names_the_rank_that_never_came)
{
    struct rz_err e;
    char run[256], dir[512], path[1024];
    rz_test_tmpdir(run, sizeof run, "start");
    snprintf(dir, sizeof dir, "%s/.startup/9.0.0", run);
    ck_assert_int_eq(rz_mkdirs(dir, &e), RZ_OK);
    snprintf(path, sizeof path, "%s/rank-1", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    ck_assert_int_eq(comm_start_arrive(dir, 0, 4, 0.05, &e), RZ_EHEALTH);
    ck_assert_ptr_nonnull(strstr(e.msg, "2 of 4 rank(s) did not arrive"));
    ck_assert_ptr_nonnull(strstr(e.msg, "(not arrived: rank 2 rank 3)"));
    ck_assert_ptr_nonnull(strstr(e.msg, dir));
    ck_assert_ptr_nonnull(strstr(e.msg, "one filesystem for every node"));
    snprintf(path, sizeof path, "%s/rank-0", dir);
    ck_assert(exists(path)); /* its own file was left for the others */
    comm_start_cleanup(dir, 4);
    ck_assert(!exists(dir));
    /* a run directory that is a file: this rank cannot arrive at all */
    snprintf(path, sizeof path, "%s/file", run);
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fclose(f);
    snprintf(dir, sizeof dir, "%s/file/.startup/9.0.0", run);
    ck_assert_int_eq(comm_start_arrive(dir, 3, 4, 0.05, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "start-up rendezvous of rank 3"));
    unlink(path);
    snprintf(path, sizeof path, "%s/.startup", run);
    rmdir(path);
    rmdir(run);
}
END_TEST

/* The whole rendezvous on this world: alone, nothing to wait for; under mpirun -np 2 each rank
 * has a run directory of its own (not shared), so neither sees the other: required, each fails
 * naming the other; not required (the preflight's), each notes it and both meet in the barrier. */
START_TEST(start_rendezvous_on_a_run_dir_that_is_not_shared)
{
    struct rz_err e = {0};
    struct comm_launch l;
    char run[256], ntasks[32], want[64];
    int n = comm_size(world), other = comm_rank(world) == 0 ? 1 : 0;
    snprintf(ntasks, sizeof ntasks, "SLURM_NTASKS=%d", n);
    char *env[] = {S("SLURM_JOB_ID=8"), S("SLURM_STEP_ID=5"), ntasks, NULL};
    comm_launch_parse(&l, env);
    rz_test_tmpdir(run, sizeof run, "startw");
    bool complete = false;
    ck_assert_int_eq(comm_start_rendezvous(world, run, &l, 0.05, false, &complete, &e), RZ_OK);
    ck_assert(complete == (n == 1));
    snprintf(want, sizeof want, "(not arrived: rank %d)", other);
    if (n == 2)
        ck_assert_ptr_nonnull(strstr(e.msg, want));
    enum rz_status st = comm_start_rendezvous(world, run, &l, 0.05, true, &complete, &e);
    ck_assert_int_eq(st, n == 1 ? RZ_OK : RZ_EHEALTH);
    if (n == 2)
        ck_assert_ptr_nonnull(strstr(e.msg, want));
    char dir[512];
    ck_assert_int_eq(comm_start_dir(dir, sizeof dir, run, &l, &e), RZ_OK);
    comm_start_cleanup(dir, n);
    snprintf(dir, sizeof dir, "%s/.startup", run);
    rmdir(dir);
    rmdir(run);
}
END_TEST

static Suite *comm_suite(void)
{
    Suite *s = suite_create("comm");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, gradient_buckets_average_over_ranks);
    tcase_add_test(core, zero_shards_reduce_gather_and_accumulate);
    tcase_add_test(core, small_collectives);
    tcase_add_test(core, preflight_probes);
    tcase_add_test(core, sync_check_agrees_on_identical_parameters);
    tcase_add_test(core, local_world_needs_no_mpi);
    tcase_add_test(core, start_rendezvous_files_appear_and_go);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, sync_check_names_the_rank_that_differs);
    tcase_add_test(errors, launch_check_catches_a_wrong_world);
    tcase_add_test(errors, launch_env_needs_a_pmix_rank_under_srun);
    tcase_add_test(errors, launch_env_needs_a_pmi2_rank_for_mpich);
    tcase_add_test(core, the_build_names_its_mpi_and_plugin);
    tcase_add_test(errors, link_probe_of_one_node_and_its_limits);
    tcase_add_test(errors, start_rendezvous_names_the_rank_that_never_came);
    tcase_add_test(errors, start_rendezvous_on_a_run_dir_that_is_not_shared);
    suite_add_tcase(s, errors);
    return s;
}

int main(int argc, char **argv)
{
    struct rz_err err;
    if (comm_init(&world, &argc, &argv, NULL, true, &err) != RZ_OK) {
        fprintf(stderr, "check_comm: %s\n", err.msg);
        return EXIT_FAILURE;
    }
    SRunner *sr = srunner_create(comm_suite());
    /* MPI lives across the tests: run them in this process (a forked child cannot use the
     * parent's MPI). */
    srunner_set_fork_status(sr, CK_NOFORK);
    srunner_run_all(sr, comm_rank(world) == 0 ? CK_NORMAL : CK_SILENT);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    int any = 0;
    comm_max_int(world, failed, &any, NULL);
    comm_finalize(world);
    return any == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
