/* check_core: status/exit-code mapping, error records, the JSON writer, file helpers, the durable
 * writer (and its crash points in a test-hook build), the test hooks' parsing (in a test-hook
 * build), the counter-based RNG, quantiles and time stamps. */
#include "config.h"

#include <check.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/durable.h"
#include "core/hooks.h"
#include "core/isa.h"
#include "core/json.h"
#include "core/rng.h"
#include "core/status.h"
#include "core/util.h"
#include "testutil.h"

static volatile sig_atomic_t alarms;
static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* rz_sleep sleeps its whole time though signals arrive in it: a 10 ms timer interrupts a 60 ms
 * sleep several times, and the sleep still lasts 60 ms (a lower bound only: no speed in it). */
START_TEST(sleep_lasts_through_signals)
{
    struct sigaction sa = {.sa_handler = on_alarm}, old;
    struct itimerval every = {.it_interval = {0, 10000}, .it_value = {0, 10000}}, off = {0};
    sigemptyset(&sa.sa_mask);
    ck_assert_int_eq(sigaction(SIGALRM, &sa, &old), 0);
    alarms = 0;
    ck_assert_int_eq(setitimer(ITIMER_REAL, &every, NULL), 0);
    double t0 = rz_now();
    rz_sleep(0.06);
    double took = rz_now() - t0;
    setitimer(ITIMER_REAL, &off, NULL);
    sigaction(SIGALRM, &old, NULL);
    ck_assert_int_ge(alarms, 1);
    ck_assert_msg(took >= 0.06, "slept %.4f s of 0.06", took);
}
END_TEST

START_TEST(exit_codes_match_contract)
{
    ck_assert_int_eq(rz_exit_code(RZ_OK), 0);
    ck_assert_int_eq(rz_exit_code(RZ_ECONFIG), 64);
    ck_assert_int_eq(rz_exit_code(RZ_EDATA), 64);
    ck_assert_int_eq(rz_exit_code(RZ_ENOCKPT), 65);
    ck_assert_int_eq(rz_exit_code(RZ_EHEALTH), 70);
    ck_assert_int_eq(rz_exit_code(RZ_ENOMEM), 70);
    ck_assert_int_eq(rz_exit_code(RZ_EBACKEND), 70);
    ck_assert_int_eq(rz_exit_code(RZ_EIO), 74);
    ck_assert_int_eq(rz_exit_code(RZ_ESIGNAL), 75);
    ck_assert_int_eq(rz_exit_code(RZ_EHANG), 76);
    ck_assert_str_eq(rz_status_name(RZ_EIO), "I/O error");
}
END_TEST

START_TEST(fail_records_and_appends)
{
    struct rz_err e;
    rz_err_clear(&e);
    ck_assert_int_eq(rz_fail(&e, RZ_EIO, "open '%s': %s", "x.h5", "No such file"), RZ_EIO);
    ck_assert_int_eq(e.status, RZ_EIO);
    ck_assert_str_eq(e.msg, "open 'x.h5': No such file");
    rz_err_append(&e, "\n%d more", 2);
    ck_assert_str_eq(e.msg, "open 'x.h5': No such file\n2 more");
    ck_assert_int_eq(rz_fail(NULL, RZ_ECONFIG, "ignored"), RZ_ECONFIG);
}
END_TEST

START_TEST(json_writer_output)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_int(&j, "step", 3);
    rz_json_kv_string(&j, "s", "a\"b\\c\n\x01");
    rz_json_kv_double(&j, "x", 0.5);
    rz_json_kv_double(&j, "nan", NAN);
    rz_json_key(&j, "arr");
    rz_json_array_begin(&j);
    rz_json_int(&j, 1);
    rz_json_bool(&j, true);
    rz_json_null(&j);
    rz_json_array_end(&j);
    rz_json_object_end(&j);
    fclose(f);
    ck_assert_str_eq(buf, "{\"step\":3,\"s\":\"a\\\"b\\\\c\\n\\u0001\",\"x\":0.5,\"nan\":null,"
                          "\"arr\":[1,true,null]}");
    free(buf);
}
END_TEST

START_TEST(json_fixed_keeps_unix_time_precision)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_fixed(&j, "t", 1763694519.1234, 3);
    rz_json_kv_double(&j, "coarse", 1763694519.1234);
    rz_json_kv_fixed(&j, "nan", NAN, 3);
    rz_json_object_end(&j);
    fclose(f);
    ck_assert_str_eq(buf, "{\"t\":1763694519.123,\"coarse\":1.76369452e+09,\"nan\":null}");
    free(buf);
}
END_TEST

/* A float as the shortest decimal that reads back as it (rz_json_kv_float). */
START_TEST(json_float_is_shortest_round_trip)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct rz_json j;
    rz_json_init(&j, f);
    rz_json_object_begin(&j);
    rz_json_kv_float(&j, "eps", 1e-5f);
    rz_json_kv_double(&j, "as_double", (double)1e-5f);
    rz_json_kv_float(&j, "third", 1.0f / 3.0f);
    rz_json_kv_float(&j, "inf", INFINITY);
    rz_json_object_end(&j);
    fclose(f);
    ck_assert_str_eq(buf, "{\"eps\":1e-05,\"as_double\":9.99999975e-06,\"third\":0.33333334,"
                          "\"inf\":null}");
    free(buf);
}
END_TEST

/* The vector level: "native" is the CPU's best, each level up to it parses to itself, an
 * unknown name and a level above the CPU's are refused naming the variable, and the process
 * runs the level it was set to. */
START_TEST(isa_levels_parse_and_set)
{
    struct rz_err err;
    enum rz_isa got, best = rz_isa_detect();
    ck_assert_int_eq(rz_isa_parse("native", "RYZEN_ISA", &got, &err), RZ_OK);
    ck_assert_int_eq(got, best);
    for (int i = 0; i < RZ_ISA_LEVELS; i++) {
        enum rz_status st = rz_isa_parse(rz_isa_name((enum rz_isa)i), "RYZEN_ISA", &got, &err);
        if (i <= (int)best) {
            ck_assert_int_eq(st, RZ_OK);
            ck_assert_int_eq(got, i);
        } else {
            ck_assert_int_eq(st, RZ_ECONFIG);
            ck_assert_ptr_nonnull(strstr(err.msg, "this CPU runs at most"));
        }
    }
    ck_assert_int_eq(rz_isa_parse("avx3", "RYZEN_ISA", &got, &err), RZ_ECONFIG);
    ck_assert_str_eq(err.msg, "RYZEN_ISA=avx3: unknown level (native, avx512, avx2 or baseline)");
    ck_assert_str_eq(rz_isa_name((enum rz_isa)RZ_ISA_LEVELS), "?");
    ck_assert_int_eq(rz_isa_active(), best); /* unset: the CPU's best */
    rz_isa_set(RZ_ISA_BASELINE);
    ck_assert_int_eq(rz_isa_active(), RZ_ISA_BASELINE);
}
END_TEST

/* Shards cover [0, n) in order without overlap, start at multiples of the alignment, and are
 * as even as that allows; tiny buffers leave later shards empty. */
START_TEST(shards_partition_the_buffer)
{
    const size_t ns[] = {0, 1, 1000, 4096, 4097, 2138112};
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (int parts = 1; parts <= 16; parts++) {
            size_t end = 0, biggest = 0, smallest = (size_t)-1;
            for (int r = 0; r < parts; r++) {
                size_t lo, hi;
                rz_shard(ns[k], parts, r, 1024, &lo, &hi);
                ck_assert_uint_eq(lo, end);
                ck_assert_uint_le(lo, hi);
                ck_assert(lo % 1024 == 0 || lo == ns[k]);
                end = hi;
                biggest = hi - lo > biggest ? hi - lo : biggest;
                smallest = hi - lo < smallest ? hi - lo : smallest;
            }
            ck_assert_uint_eq(end, ns[k]);
            if (ns[k] >= (size_t)parts * 1024 * 2)
                ck_assert_uint_le(biggest - smallest, 1024 + ns[k] % 1024);
        }
    size_t lo, hi;
    rz_shard(2138112, 4, 1, 4096, &lo, &hi); /* the seed model on 4 ranks */
    ck_assert_uint_eq(lo, 130 * 4096); /* 522 blocks: 130, 131, 130, 131 */
    ck_assert_uint_eq(hi, 261 * 4096);
}
END_TEST

/* Comma-separated sets of names: whole names only, each once, never cut. */
START_TEST(name_lists)
{
    ck_assert(rz_list_has("n1,n12,n3", "n12"));
    ck_assert(rz_list_has("n1,n12,n3", "n3"));
    ck_assert(!rz_list_has("n1,n12,n3", "n2"));
    ck_assert(!rz_list_has("n12", "n1"));
    ck_assert(!rz_list_has("n1", ""));
    char out[12] = "n4";
    rz_list_add(out, sizeof out, "n2,n4,,n2");
    ck_assert_str_eq(out, "n4,n2");
    rz_list_add(out, sizeof out, "n10,n7"); /* n10 fits (10 bytes with the NUL), n7 would need 13 */
    ck_assert_str_eq(out, "n4,n2,n10");
    rz_list_add(out, sizeof out, "n7");
    ck_assert_str_eq(out, "n4,n2,n10");
}
END_TEST

/* Quantiles interpolate between neighbouring order statistics and sort the values in place. */
START_TEST(quantiles_interpolate_between_order_statistics)
{
    double v[] = {4, 1, 3, 2};
    ck_assert_double_eq(rz_quantile(v, 4, 0.5), 2.5); /* halfway between 2 and 3 */
    ck_assert_double_eq(v[0], 1);
    ck_assert_double_eq(v[3], 4);
    ck_assert_double_eq(rz_quantile(v, 4, 0.0), 1);
    ck_assert_double_eq(rz_quantile(v, 4, 1.0), 4);
    ck_assert_double_eq_tol(rz_quantile(v, 4, 0.99), 3.97, 1e-12);
    double w[11];
    for (int i = 0; i < 11; i++)
        w[i] = 10 - i;
    ck_assert_double_eq_tol(rz_quantile(w, 11, 0.1), 1.0, 1e-12);
    double one = 7;
    ck_assert_double_eq(rz_quantile(&one, 1, 0.99), 7);
    ck_assert(isnan(rz_quantile(v, 0, 0.5)));
}
END_TEST

/* Time stamps: the two UTC shapes, whole seconds (a fraction is dropped, never rounded up), and
 * a wall clock that agrees with time(). */
START_TEST(utc_time_stamps)
{
    char buf[32];
    rz_utc_format(buf, sizeof buf, 1795229319.999, RZ_UTC_ISO8601);
    ck_assert_str_eq(buf, "2026-11-21T02:48:39Z");
    rz_utc_format(buf, sizeof buf, 1795229319.0, RZ_UTC_COMPACT);
    ck_assert_str_eq(buf, "20261121T024839Z");
    rz_utc_format(buf, sizeof buf, 0, RZ_UTC_ISO8601);
    ck_assert_str_eq(buf, "1970-01-01T00:00:00Z");
    time_t t0 = time(NULL);
    double now = rz_unix_now();
    rz_utc_iso8601(buf, sizeof buf);
    time_t t1 = time(NULL);
    ck_assert_double_ge(now, (double)t0 - 1); /* time() may read a coarser clock */
    ck_assert_double_lt(now, (double)t1 + 2);
    ck_assert_uint_eq(strlen(buf), 20);
    ck_assert(buf[4] == '-' && buf[10] == 'T' && buf[19] == 'Z');
    ck_assert_int_eq(strncmp(buf, "20", 2), 0);
}
END_TEST

START_TEST(rng_is_a_pure_function)
{
    ck_assert_uint_eq(rz_rand64(7, 11), rz_rand64(7, 11));
    ck_assert_uint_ne(rz_rand64(7, 11), rz_rand64(7, 12));
    ck_assert_uint_ne(rz_rand64(7, 11), rz_rand64(8, 11));
    double sum = 0, sq = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double z = rz_rand_normal(42, (uint64_t)i);
        sum += z;
        sq += z * z;
    }
    ck_assert_double_lt(fabs(sum / n), 0.01);          /* mean 0: 4.5 sigma bound */
    ck_assert_double_lt(fabs(sq / n - 1.0), 0.02);     /* variance 1 */
}
END_TEST

START_TEST(mkdirs_and_read_file)
{
    char dir[64];
    rz_test_tmpdir(dir, sizeof dir, "core");
    char path[256], file[300];
    snprintf(path, sizeof path, "%s/a/b/c", dir);
    struct rz_err e;
    ck_assert_int_eq(rz_mkdirs(path, &e), RZ_OK);
    ck_assert_int_eq(rz_mkdirs(path, &e), RZ_OK); /* idempotent */
    snprintf(file, sizeof file, "%s/f.txt", path);
    FILE *f = fopen(file, "w");
    fputs("hello", f);
    fclose(f);
    char *text = NULL;
    size_t len = 0;
    ck_assert_int_eq(rz_read_file(file, &text, &len, &e), RZ_OK);
    ck_assert_str_eq(text, "hello");
    ck_assert_uint_eq(len, 5);
    free(text);
    rz_test_rmtree(dir);
    ck_assert_int_ne(access(dir, F_OK), 0);
}
END_TEST

START_TEST(file_errors_name_the_path)
{
    struct rz_err e;
    char *text = NULL;
    ck_assert_int_eq(rz_read_file("/nonexistent/x.yaml", &text, NULL, &e), RZ_EIO);
    ck_assert_ptr_null(text);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/x.yaml"));
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file"));
    ck_assert_int_eq(rz_mkdirs("/proc/self/rz-cannot-create/x", &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "rz-cannot-create"));
    ck_assert_int_eq(rz_mkdirs("", &e), RZ_EIO);
}
END_TEST

START_TEST(alloc_aligned_and_rss)
{
    float *p = rz_alloc_aligned(1000 * sizeof(float));
    ck_assert_ptr_nonnull(p);
    ck_assert_uint_eq((uintptr_t)p % 64, 0);
    ck_assert(p[999] == 0.0f);
    free(p);
    ck_assert_uint_gt(rz_rss_bytes(), 0);
    ck_assert_uint_ge(rz_peak_rss_bytes(), rz_rss_bytes() / 2);
}
END_TEST

#ifndef __SANITIZE_ADDRESS__ /* ASan's allocator replaces glibc's: nothing to measure there */
/* A block of `bytes`, written to: GCC may drop a malloc/free pair whose block is never used. */
static void *used_block(size_t bytes)
{
    char *p = malloc(bytes);
    ck_assert_ptr_nonnull(p);
    volatile char *v = p;
    v[0] = v[bytes - 1] = 1;
    return p;
}

/* Whether a block of `bytes` comes from a fresh mmap (one more mmapped block while held). */
static bool mmapped(size_t bytes)
{
    size_t before = mallinfo2().hblks;
    void *p = used_block(bytes);
    size_t held = mallinfo2().hblks;
    free(p);
    return held > before;
}
#endif

START_TEST(malloc_tune)
{
#ifdef __SANITIZE_ADDRESS__
    (void)rz_malloc_tune(0); /* ASan's allocator replaces glibc's and ignores mallopt */
#else
    ck_assert_msg(rz_malloc_tune(0), "glibc refused M_TRIM_THRESHOLD"); /* one rank */
    ck_assert(rz_malloc_tune((size_t)4 << 20)); /* 4 MiB buckets: blocks up to 8 MiB reused */
    ck_assert_msg(!mmapped((size_t)6 << 20), "a 6 MiB block was mmapped, not reused");
    ck_assert(mmapped((size_t)9 << 20));
    void *p = used_block((size_t)6 << 20); /* freed, it stays for the next step to reuse */
    size_t heap = mallinfo2().arena;
    free(p);
    ck_assert_uint_ge(mallinfo2().arena, heap);
    ck_assert(rz_malloc_tune((size_t)4096 << 20)); /* capped at glibc's 32 MiB, not refused */
    ck_assert(!mmapped((size_t)30 << 20));
    ck_assert(mmapped((size_t)40 << 20));
#endif
}
END_TEST

/* ---- durable writes ------------------------------------------------------------------------------ */

static char *slurp(const char *path)
{
    char *text = NULL;
    struct rz_err e;
    return rz_read_file(path, &text, NULL, &e) == RZ_OK ? text : NULL;
}

/* Entries of dir whose name contains ".tmp". */
static int tmp_files(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += strstr(e->d_name, ".tmp") != NULL;
    if (d != NULL)
        closedir(d);
    return n;
}

START_TEST(durable_write_replaces_whole_files)
{
    char dir[64], path[128];
    struct rz_err e;
    rz_test_tmpdir(dir, sizeof dir, "durable");
    snprintf(path, sizeof path, "%s/report.json", dir);
    ck_assert_int_eq(rz_durable_write_text(path, "t", "old\n", &e), RZ_OK);
    ck_assert_int_eq(rz_durable_write_text(path, "t", "new\n", &e), RZ_OK);
    char *text = slurp(path);
    ck_assert_str_eq(text, "new\n");
    free(text);
    /* an aborted write leaves the committed file and no temporary file */
    struct rz_durable d;
    ck_assert_int_eq(rz_durable_open(&d, path, "t", &e), RZ_OK);
    fputs("half a fi", d.f);
    ck_assert_int_eq(tmp_files(dir), 1);
    rz_durable_abort(&d);
    rz_durable_abort(&d); /* twice is harmless */
    text = slurp(path);
    ck_assert_str_eq(text, "new\n");
    free(text);
    ck_assert_int_eq(tmp_files(dir), 0);
    rz_test_rmtree(dir);
}
END_TEST

START_TEST(durable_create_excl_is_a_lock)
{
    char dir[64], path[128];
    struct rz_err e;
    bool existed = true;
    rz_test_tmpdir(dir, sizeof dir, "durable");
    snprintf(path, sizeof path, "%s/owner", dir);
    ck_assert_int_eq(rz_durable_create_excl(path, "job 17\n", &existed, &e), RZ_OK);
    ck_assert(!existed);
    ck_assert_int_eq(rz_durable_create_excl(path, "job 18\n", &existed, &e), RZ_OK);
    ck_assert(existed);
    char *text = slurp(path);
    ck_assert_str_eq(text, "job 17\n"); /* the second caller wrote nothing */
    free(text);
    rz_test_rmtree(dir);
}
END_TEST

START_TEST(durable_errors_name_the_file_and_cause)
{
    struct rz_err e;
    bool existed;
    ck_assert_int_eq(rz_durable_write_text("/nonexistent-dir/r.json", "t", "x", &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent-dir/r.json"));
    ck_assert_ptr_nonnull(strstr(e.msg, "No such file"));
    ck_assert_int_eq(rz_durable_create_excl("/nonexistent-dir/owner", "x", &existed, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent-dir/owner"));
    ck_assert_int_eq(rz_durable_commit_file("/nonexistent-dir/a.tmp", "/nonexistent-dir/a", "t",
                                            &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "a.tmp"));
    ck_assert_ptr_nonnull(strstr(rz_io_cause(ENOSPC), "disk full"));
    ck_assert_ptr_nonnull(strstr(rz_io_cause(EROFS), "read-only"));
    ck_assert_str_eq(rz_io_cause(ENOENT), strerror(ENOENT));
}
END_TEST

#ifdef RZ_TEST_HOOKS
/* In a child: commit "new" over "old" and die at the loop's stage; what survives? */
static const char *const stages[3] = {"before_fsync", "before_rename", "before_dirsync"};

START_TEST(durable_crash_points_never_expose_half_a_file)
{
    char dir[64], path[128];
    struct rz_err e;
    rz_test_tmpdir(dir, sizeof dir, "durable");
    snprintf(path, sizeof path, "%s/summary.json", dir);
    ck_assert_int_eq(rz_durable_write_text(path, "summary", "old\n", &e), RZ_OK);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        snprintf(rz_hooks.crash_at, sizeof rz_hooks.crash_at, "summary:%s", stages[_i]);
        rz_durable_write_text(path, "summary", "new\n", NULL);
        _exit(1); /* the hook did not fire */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 86);
    char *text = slurp(path);
    ck_assert_str_eq(text, _i == 2 ? "new\n" : "old\n"); /* renamed only before the dir sync */
    free(text);
    ck_assert_int_eq(tmp_files(dir), _i == 2 ? 0 : 1);
    rz_test_rmtree(dir);
}
END_TEST

/* The environment of one rz_hooks_load: every hook variable this suite sets, unset first. */
static void hook_env(const char *const *pairs)
{
    static const char *const names[] = {"RYZEN_TEST_HOLD", "RYZEN_TEST_HOLD_MAX_S",
                                        "RYZEN_TEST_SLOW_RANK", "RYZEN_TEST_SLOW_FACTOR",
                                        "RYZEN_TEST_SLOW_MS", "RYZEN_TEST_CKPT_FULL"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unsetenv(names[i]);
    for (size_t i = 0; pairs[i] != NULL; i += 2)
        setenv(pairs[i], pairs[i + 1], 1);
}

START_TEST(hooks_hold_and_slow_factor_parse)
{
    struct rz_err e;
    hook_env((const char *const[]){NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_OK);
    ck_assert_int_eq(rz_hooks.hold.n, 0); /* off */
    ck_assert(rz_hooks.hold.max_s == 600.0);
    ck_assert_int_eq(rz_hooks.slow_rank, -1);
    ck_assert(rz_hooks.slow_factor == 1.0);
    hook_env((const char *const[]){"RYZEN_TEST_HOLD", "15:/tmp/d:x/release",
                                   "RYZEN_TEST_HOLD_MAX_S", "2.5", "RYZEN_TEST_SLOW_RANK", "2",
                                   "RYZEN_TEST_SLOW_FACTOR", "3.5", NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_OK);
    ck_assert_int_eq(rz_hooks.hold.n, 1);
    ck_assert_int_eq(rz_hooks.hold.steps[0], 15);
    ck_assert_str_eq(rz_hooks.hold.file, "/tmp/d:x/release"); /* the first ':' splits */
    ck_assert(rz_hooks.hold.max_s == 2.5);
    ck_assert_int_eq(rz_hooks.slow_rank, 2);
    ck_assert(rz_hooks.slow_factor == 3.5);
    hook_env((const char *const[]){"RYZEN_TEST_HOLD", "10,25:/tmp/r", NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_OK);
    ck_assert_int_eq(rz_hooks.hold.n, 2);
    ck_assert_int_eq(rz_hooks.hold.steps[0], 10);
    ck_assert_int_eq(rz_hooks.hold.steps[1], 25);
    ck_assert_str_eq(rz_hooks.hold.file, "/tmp/r");
    /* loaded again without them: off again, nothing left from the last load */
    hook_env((const char *const[]){NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_OK);
    ck_assert_int_eq(rz_hooks.hold.n, 0);
    ck_assert_int_eq(rz_hooks.slow_rank, -1);
    /* step 0: before step 1 of a fresh run */
    hook_env((const char *const[]){"RYZEN_TEST_HOLD", "0:go", NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_OK);
    ck_assert_int_eq(rz_hooks.hold.n, 1);
    ck_assert_int_eq(rz_hooks.hold.steps[0], 0);
    ck_assert_str_eq(rz_hooks.hold.file, "go");
    ck_assert(rz_hooks.slow_factor == 1.0);
    /* the full-disk steps: a list, off again when unset */
    ck_assert_int_eq(rz_hooks.ckpt_full.n, 0);
    hook_env((const char *const[]){"RYZEN_TEST_CKPT_FULL", "4,6,10", NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_OK);
    ck_assert_int_eq(rz_hooks.ckpt_full.n, 3);
    ck_assert(rz_hook_step_in(&rz_hooks.ckpt_full, 6));
    ck_assert(!rz_hook_step_in(&rz_hooks.ckpt_full, 8));
    hook_env((const char *const[]){NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_OK);
    ck_assert_int_eq(rz_hooks.ckpt_full.n, 0);
    ck_assert(!rz_hook_step_in(&rz_hooks.ckpt_full, 6));
}
END_TEST

/* Each malformed setting fails the load with RZ_ECONFIG naming its variable: a test that asked
 * for a hold or a straggler and silently got none would race or pass for nothing. */
static const char *const bad_hooks[][3] = {
    {"RYZEN_TEST_HOLD", "15", "RYZEN_TEST_HOLD=\"15\""},
    {"RYZEN_TEST_HOLD", "15:", "RYZEN_TEST_HOLD=\"15:\""},
    {"RYZEN_TEST_HOLD", ":release", "RYZEN_TEST_HOLD=\":release\""},
    {"RYZEN_TEST_HOLD", "1.5:release", "want STEP[,STEP...]:FILE"},
    {"RYZEN_TEST_HOLD", "-3:release", "want STEP[,STEP...]:FILE"},
    {"RYZEN_TEST_HOLD", "15x:release", "want STEP[,STEP...]:FILE"},
    {"RYZEN_TEST_HOLD", "release:15", "want STEP[,STEP...]:FILE"},
    {"RYZEN_TEST_HOLD", "25,10:release", "ascending"},
    {"RYZEN_TEST_HOLD", "10,:release", "want STEP[,STEP...]:FILE"},
    {"RYZEN_TEST_HOLD", "1,2,3,4,5:release", "up to 4"},
    {"RYZEN_TEST_HOLD_MAX_S", "0", "RYZEN_TEST_HOLD_MAX_S=\"0\""},
    {"RYZEN_TEST_HOLD_MAX_S", "10s", "RYZEN_TEST_HOLD_MAX_S=\"10s\""},
    {"RYZEN_TEST_SLOW_FACTOR", "0.5", "RYZEN_TEST_SLOW_FACTOR=\"0.5\": not a factor >= 1"},
    {"RYZEN_TEST_SLOW_FACTOR", "fast", "RYZEN_TEST_SLOW_FACTOR=\"fast\""},
    {"RYZEN_TEST_SLOW_RANK", "one", "RYZEN_TEST_SLOW_RANK=\"one\": not a rank number"},
    {"RYZEN_TEST_SLOW_RANK", "1.5", "RYZEN_TEST_SLOW_RANK=\"1.5\""},
    {"RYZEN_TEST_SLOW_MS", "100", "RYZEN_TEST_SLOW_MS was removed"},
    {"RYZEN_TEST_CKPT_FULL", "4:x", "RYZEN_TEST_CKPT_FULL=\"4:x\": want STEP[,STEP...]"},
    {"RYZEN_TEST_CKPT_FULL", "6,4", "ascending"},
    {"RYZEN_TEST_CKPT_FULL", "1,2,3,4,5,6,7,8,9", "up to 8"},
};

START_TEST(hooks_malformed_settings_fail_naming_the_variable)
{
    struct rz_err e;
    const char *const *b = bad_hooks[_i];
    /* the slowdown's two variables go together: the other one is set valid */
    bool slow = strncmp(b[0], "RYZEN_TEST_SLOW_", 16) == 0 && strcmp(b[0], "RYZEN_TEST_SLOW_MS");
    const char *other = strcmp(b[0], "RYZEN_TEST_SLOW_RANK") == 0 ? "RYZEN_TEST_SLOW_FACTOR"
                                                                  : "RYZEN_TEST_SLOW_RANK";
    hook_env((const char *const[]){b[0], b[1], slow ? other : NULL, "2", NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_ECONFIG);
    ck_assert_msg(strstr(e.msg, b[2]) != NULL, "\"%s\" lacks \"%s\"", e.msg, b[2]);
}
END_TEST

START_TEST(hooks_slow_rank_and_factor_go_together)
{
    struct rz_err e;
    hook_env((const char *const[]){"RYZEN_TEST_SLOW_RANK", "1", NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "only the rank is set"));
    hook_env((const char *const[]){"RYZEN_TEST_SLOW_FACTOR", "4", NULL});
    ck_assert_int_eq(rz_hooks_load(&e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "only the factor is set"));
}
END_TEST
#endif

static Suite *core_suite(void)
{
    Suite *s = suite_create("core");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, exit_codes_match_contract);
    tcase_add_test(core, sleep_lasts_through_signals);
    tcase_add_test(core, fail_records_and_appends);
    tcase_add_test(core, json_writer_output);
    tcase_add_test(core, json_fixed_keeps_unix_time_precision);
    tcase_add_test(core, json_float_is_shortest_round_trip);
    tcase_add_test(core, rng_is_a_pure_function);
    tcase_add_test(core, shards_partition_the_buffer);
    tcase_add_test(core, name_lists);
    tcase_add_test(core, quantiles_interpolate_between_order_statistics);
    tcase_add_test(core, utc_time_stamps);
    tcase_add_test(core, isa_levels_parse_and_set);
    tcase_add_test(core, mkdirs_and_read_file);
    tcase_add_test(core, alloc_aligned_and_rss);
    tcase_add_test(core, malloc_tune);
    tcase_add_test(core, durable_write_replaces_whole_files);
    tcase_add_test(core, durable_create_excl_is_a_lock);
#ifdef RZ_TEST_HOOKS
    tcase_add_loop_test(core, durable_crash_points_never_expose_half_a_file, 0, 3);
    tcase_add_test(core, hooks_hold_and_slow_factor_parse);
#endif
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, file_errors_name_the_path);
    tcase_add_test(errors, durable_errors_name_the_file_and_cause);
#ifdef RZ_TEST_HOOKS
    tcase_add_loop_test(errors, hooks_malformed_settings_fail_naming_the_variable, 0,
                        (int)(sizeof bad_hooks / sizeof bad_hooks[0]));
    tcase_add_test(errors, hooks_slow_rank_and_factor_go_together);
#endif
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(core_suite());
}
