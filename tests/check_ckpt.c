#include "config.h"

/* check_ckpt: SHA-256 against the FIPS 180-4 vectors (portable and SHA-NI code), checkpoint
 * save/load round trips, the parameter hash, discovery, retention, listing, crash injection at
 * each commit point, and the ryzen-ckpt command line ($top_builddir/ryzen-ckpt, skipped with a
 * note when it has not been built); the suite also takes the "errors" test case of
 * check_ckpt_errors.c (damage, shape mismatches, I/O errors) and the "async" one of
 * check_ckpt_async.c (the background writer, ckpt_async.h).  The fixtures all share are in
 * ckpt_fixtures.c.  Tiny model tables are built by hand; no model code is used. */

#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "ckpt/ckpt_debug.h"
#include "config/cfg.h"
#include "core/hooks.h"
#include "core/sha256.h"
#include "core/status.h"
#include "core/util.h"
#include "testutil.h"

#include "ckpt_fixtures.h"

/* ---- SHA-256 --------------------------------------------------------------------------------- */

static void check_vectors(void)
{
    char hex[65];
    rz_sha256_hex("", 0, hex);
    ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    rz_sha256_hex("abc", 3, hex);
    ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    rz_sha256_hex(m448, strlen(m448), hex);
    ck_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");

    /* one million 'a', fed in uneven pieces to exercise the block buffering */
    static char a[1000000];
    memset(a, 'a', sizeof a);
    struct rz_sha256 s;
    uint8_t d[32];
    rz_sha256_init(&s);
    size_t done = 0, piece = 1;
    while (done < sizeof a) {
        size_t n = piece < sizeof a - done ? piece : sizeof a - done;
        rz_sha256_update(&s, a + done, n);
        done += n;
        piece = piece * 3 % 1021 + 1;
    }
    rz_sha256_final(&s, d);
    rz_sha256_to_hex(d, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    rz_sha256_hex(a, sizeof a, hex);
    ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

START_TEST(sha256_fips_vectors)
{
    bool was = rz_sha256_set_accel(false);
    check_vectors();
    rz_sha256_set_accel(true);
    check_vectors();
    rz_sha256_set_accel(was);
}
END_TEST

START_TEST(sha256_accel_matches_portable)
{
    unsigned char buf[300];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 131 + 7);
    for (size_t len = 0; len <= sizeof buf; len += 13) {
        char portable[65], accel[65];
        rz_sha256_set_accel(false);
        rz_sha256_hex(buf, len, portable);
        rz_sha256_set_accel(true);
        rz_sha256_hex(buf, len, accel);
        ck_assert_str_eq(portable, accel);
    }
}
END_TEST

/* ---- core ------------------------------------------------------------------------------------ */

START_TEST(round_trip_is_bit_exact)
{
    struct tiny a, b;
    char path[4096], want[4096];
    struct rz_err err;
    make_tiny(&a, 7);
    make_tiny(&b, 0);
    save_step(&a, 1, path, sizeof path);
    path_in(want, sizeof want, "step-00000001.h5");
    ck_assert_str_eq(path, want);
    ck_assert(!exists(strcat(want, ".tmp")));

    struct ckpt_meta in = make_meta(&a, 1), out, only;
    rz_err_clear(&err);
    ck_assert_msg(ckpt_load(path, &out, &b.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert(memcmp(a.t.params, b.t.params, a.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(a.t.adam_m, b.t.adam_m, a.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(a.t.adam_v, b.t.adam_v, a.t.n_floats * sizeof(float)) == 0);
    assert_meta_equal(&in, &out);
    ck_assert_int_eq(out.format_version, CKPT_FORMAT_VERSION);
    ck_assert_str_eq(out.build, PACKAGE_STRING);
    char hex[65];
    ckpt_params_sha256(&a.t, hex);
    ck_assert_str_eq(out.params_sha256, hex);

    ck_assert_msg(ckpt_read_meta(path, &only, &err) == RZ_OK, "%s", err.msg);
    assert_meta_equal(&out, &only);
    ck_assert_str_eq(only.params_sha256, hex);
    ck_assert_int_eq(ckpt_verify(path, &err), RZ_OK);
    ckpt_meta_free(&out);
    ckpt_meta_free(&only);
    ck_assert_ptr_null(out.config_yaml);
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

/* ZeRO: moments that come tensor by tensor from a fetch callback make the same file as whole
 * buffers, and a load that keeps only a part of the layout gets exactly that part. */
START_TEST(sharded_moments_same_file_and_part_loads)
{
    struct tiny a, b;
    char whole[4096], fetched[4096];
    struct rz_err err;
    make_tiny(&a, 11);
    make_tiny(&b, 0);
    save_step(&a, 1, whole, sizeof whole);
    struct fetch_log log = {.from = &a, .fail_at = -1, .order_ok = 1};
    float *spare_p = b.t.params, *spare_m = b.t.adam_m, *spare_v = b.t.adam_v;
    b.t.params = a.t.params;
    memset(spare_m, 0xff, b.t.n_floats * sizeof(float)); /* must not be written out */
    b.t.moments_sharded = 1;
    b.t.moment_lo = 100;
    b.t.moment_hi = 700;
    b.t.fetch = fetch_from;
    b.t.fetch_user = &log;
    save_step(&b, 2, fetched, sizeof fetched);
    ck_assert_int_eq(log.calls, 2 * (int)a.t.count);
    ck_assert(log.order_ok);
    struct ckpt_meta ma, mb;
    ck_assert_int_eq(ckpt_inspect(whole, &ma, &err), RZ_OK);
    ck_assert_int_eq(ckpt_inspect(fetched, &mb, &err), RZ_OK);
    ck_assert_str_eq(ma.adam_sha256, mb.adam_sha256);
    ck_assert_str_eq(ma.params_sha256, mb.params_sha256);
    ckpt_meta_free(&ma);
    ckpt_meta_free(&mb);
    /* a part of [100, 700): the moments of that part only, in a (600)-float buffer */
    b.t.params = spare_m;
    b.t.adam_m = calloc(600, sizeof(float));
    b.t.adam_v = calloc(600, sizeof(float));
    b.t.fetch = NULL;
    ck_assert_msg(ckpt_load(whole, &mb, &b.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert(memcmp(b.t.adam_m, a.t.adam_m + 100, 600 * sizeof(float)) == 0);
    ck_assert(memcmp(b.t.adam_v, a.t.adam_v + 100, 600 * sizeof(float)) == 0);
    ck_assert(memcmp(spare_m, a.t.params, a.t.n_floats * sizeof(float)) == 0);
    ck_assert_str_eq(mb.adam_sha256, ma.adam_sha256); /* every moment was still read, checked */
    ckpt_meta_free(&mb);
    free(b.t.adam_m);
    free(b.t.adam_v);
    b.t.params = spare_p;
    b.t.adam_m = spare_m;
    b.t.adam_v = spare_v;
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

START_TEST(params_sha256_stable_and_sensitive)
{
    struct tiny a;
    char h1[65], h2[65], h3[65], whole[65], path[4096];
    make_tiny(&a, 3);
    ckpt_params_sha256(&a.t, h1);
    ckpt_params_sha256(&a.t, h2);
    ck_assert_str_eq(h1, h2);
    /* the table is contiguous in buffer order, so it is the hash of the whole buffer */
    rz_sha256_hex(a.t.params, a.t.n_floats * sizeof(float), whole);
    ck_assert_str_eq(h1, whole);
    /* adam state is not part of it */
    a.t.adam_m[5] += 1.0f;
    ckpt_params_sha256(&a.t, h2);
    ck_assert_str_eq(h1, h2);
    /* one bit of one parameter changes it */
    uint32_t bits;
    size_t k = a.table[9].offset + 3;
    memcpy(&bits, &a.t.params[k], sizeof bits);
    bits ^= 1u;
    memcpy(&a.t.params[k], &bits, sizeof bits);
    ckpt_params_sha256(&a.t, h3);
    ck_assert_str_ne(h1, h3);
    save_step(&a, 4, path, sizeof path);
    struct ckpt_meta m;
    struct rz_err err;
    ck_assert_int_eq(ckpt_read_meta(path, &m, &err), RZ_OK);
    ck_assert_str_eq(m.params_sha256, h3);
    ckpt_meta_free(&m);
    tiny_free(&a);
}
END_TEST

START_TEST(find_latest_picks_newest_valid)
{
    struct tiny a;
    char path[4096], found[4096], junk[4096];
    struct rz_err err;
    make_tiny(&a, 5);
    save_step(&a, 5, path, sizeof path);
    save_step(&a, 300, path, sizeof path);
    save_step(&a, 40, path, sizeof path);
    save_step(&a, 123456789, path, sizeof path); /* nine digits still sort numerically */
    save_step(&a, 1000, path, sizeof path);
    /* leftovers that must be ignored */
    const char *ignored[] = {"step-99999999.h5.tmp", "notes.txt", "step-abc.h5", "step-7.h5x"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(ignored); i++) {
        path_in(junk, sizeof junk, ignored[i]);
        FILE *f = fopen(junk, "w");
        ck_assert_ptr_nonnull(f);
        fputs("junk", f);
        fclose(f);
    }
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, NULL, NULL, &err), RZ_OK);
    ck_assert_int_eq(step_of(found), 123456789);
    path_in(junk, sizeof junk, "step-123456789.h5");
    ck_assert_str_eq(found, junk);
    tiny_free(&a);
}
END_TEST

/* The newest committed name, without reading files: temporary files and other names do not
 * count; a damaged file still counts (it was committed; resuming verifies). */
START_TEST(newest_committed_reads_names_only)
{
    struct tiny a;
    char p1[4096], p2[4096], tmp[4200], dir[4096];
    make_tiny(&a, 7);
    path_in(dir, sizeof dir, "no/such/dir");
    ck_assert_int_eq(ckpt_newest_committed(dir), -1);
    ck_assert_int_eq(ckpt_newest_committed(tmpdir), -1);
    save_step(&a, 3, p1, sizeof p1);
    save_step(&a, 12, p2, sizeof p2);
    snprintf(tmp, sizeof tmp, "%s/step-00000099.h5.tmp", tmpdir);
    FILE *f = fopen(tmp, "w");
    fputs("half", f);
    fclose(f);
    ck_assert_int_eq(ckpt_newest_committed(tmpdir), 12);
    ck_assert_int_eq(truncate(p2, 10), 0);
    ck_assert_int_eq(ckpt_newest_committed(tmpdir), 12);
    tiny_free(&a);
}
END_TEST

START_TEST(prune_keeps_n_and_never_the_last_good)
{
    struct tiny a;
    char path[4096], p[4096], q[4096];
    struct rz_err err;
    make_tiny(&a, 9);
    for (int64_t s = 1; s <= 5; s++)
        save_step(&a, s, path, sizeof path);
    path_in(p, sizeof p, "step-00000006.h5.tmp");
    fclose(fopen(p, "w"));
    path_in(q, sizeof q, "quarantine");
    ck_assert_int_eq(rz_mkdirs(q, &err), RZ_OK);
    path_in(q, sizeof q, "quarantine/step-00000000.h5");
    fclose(fopen(q, "w"));

    ck_assert_int_eq(ckpt_prune(tmpdir, 2, NULL, &err), RZ_OK);
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 2);
    ck_assert_uint_eq(count_files(tmpdir, ".tmp"), 0);
    path_in(p, sizeof p, "step-00000004.h5");
    ck_assert(exists(p));
    path_in(p, sizeof p, "step-00000005.h5");
    ck_assert(exists(p));
    ck_assert(exists(q)); /* quarantined files are never touched */

    /* keep 0 still keeps the newest valid one */
    ck_assert_int_eq(ckpt_prune(tmpdir, 0, NULL, &err), RZ_OK);
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 1);
    ck_assert(exists(p));

    /* a damaged newer file does not count: the newest valid one survives keep 1 */
    save_step(&a, 6, path, sizeof path);
    truncate_half(path);
    ck_assert_int_eq(ckpt_prune(tmpdir, 1, NULL, &err), RZ_OK);
    ck_assert(exists(p));
    ck_assert_int_eq(ckpt_verify(p, &err), RZ_OK);
    ck_assert(exists(q));
    /* missing directory: nothing to do */
    path_in(p, sizeof p, "nope");
    ck_assert_int_eq(ckpt_prune(p, 1, NULL, &err), RZ_OK);
    tiny_free(&a);
}
END_TEST

START_TEST(prune_trusts_known_files_until_they_change)
{
    struct tiny a;
    char p1[4096], p2[4096], p3[4096];
    struct rz_err err;
    struct ckpt_known known;
    memset(&known, 0, sizeof known);
    make_tiny(&a, 4);
    save_step(&a, 1, p1, sizeof p1);
    save_step(&a, 2, p2, sizeof p2);
    save_step(&a, 3, p3, sizeof p3);
    ck_assert_int_eq(ckpt_prune(tmpdir, 3, &known, &err), RZ_OK);
    ck_assert_uint_eq(known.n, 3); /* each verified once, then known */
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 3);

    /* a changed file (new size) is unknown again: verified, damaged, not counted */
    truncate_half(p3);
    ck_assert_int_eq(ckpt_prune(tmpdir, 2, &known, &err), RZ_OK);
    ck_assert(exists(p1) && exists(p2) && exists(p3));
    ck_assert_uint_eq(known.n, 3);

    /* a known file is not read again: damage that keeps its size and mtime goes unseen here
     * (the load still catches it) and step 1 is pruned behind it */
    struct stat sb;
    ck_assert_int_eq(stat(p2, &sb), 0);
    apply_damage(FLIP_BYTE, p2);
    struct timespec times[2] = {sb.st_atim, sb.st_mtim};
    ck_assert_int_eq(utimensat(AT_FDCWD, p2, times, 0), 0);
    ck_assert_int_eq(ckpt_verify(p2, &err), RZ_ENOCKPT);
    ck_assert_int_eq(ckpt_prune(tmpdir, 1, &known, &err), RZ_OK);
    ck_assert(!exists(p1));
    ck_assert(exists(p2));
    /* without the record the same prune verifies and keeps going: nothing valid is left, so
     * nothing is deleted */
    ck_assert_int_eq(ckpt_prune(tmpdir, 1, NULL, &err), RZ_OK);
    ck_assert(exists(p2) && exists(p3));

    /* the record is bounded: the oldest entry makes room */
    memset(&known, 0, sizeof known);
    for (int i = 0; i < CKPT_KNOWN_MAX + 3; i++)
        ckpt_known_add(&known, p2);
    ck_assert_uint_eq(known.n, CKPT_KNOWN_MAX);
    ck_assert_uint_eq(known.next, 3);
    ckpt_known_add(&known, "/nonexistent/step-00000001.h5"); /* cannot stat: ignored */
    ck_assert_uint_eq(known.n, CKPT_KNOWN_MAX);

    /* ... and holds every file the config lets retention keep, so no kept file is read again
     * at each save: a keep above the record is refused by the config */
    struct cfg c;
    cfg_defaults(&c);
    char set[64];
    snprintf(set, sizeof set, "checkpoint.keep=%d", CKPT_KNOWN_MAX + 1);
    ck_assert_int_ne(cfg_set(&c, set, &err), RZ_OK);
    memset(&known, 0, sizeof known);
    for (int s = 4; s <= 24; s++)
        save_step(&a, s, p1, sizeof p1);
    ck_assert_int_eq(ckpt_prune(tmpdir, 20, &known, &err), RZ_OK);
    ck_assert_uint_ge(known.n, 20); /* all twenty kept, each verified once */
    tiny_free(&a);
}
END_TEST

START_TEST(list_reports_steps_sizes_validity)
{
    struct tiny a;
    char p1[4096], p2[4096];
    struct rz_err err;
    struct ckpt_entry *v = NULL;
    size_t n = 0;
    make_tiny(&a, 11);
    save_step(&a, 2, p2, sizeof p2);
    save_step(&a, 1, p1, sizeof p1);
    truncate_half(p2);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_list(tmpdir, &v, &n, &err), RZ_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(v[0].step, 1);
    ck_assert_str_eq(v[0].path, p1);
    ck_assert_int_eq(v[0].valid, 1);
    ck_assert_str_eq(v[0].reason, "");
    struct stat sb;
    ck_assert_int_eq(stat(p1, &sb), 0);
    ck_assert_int_eq(v[0].size_bytes, (int64_t)sb.st_size);
    ck_assert_int_eq(v[0].mtime, (int64_t)sb.st_mtime); /* the file's own, not "near now" */
    ck_assert_int_eq(v[1].step, 2);
    ck_assert_int_eq(v[1].valid, 0);
    ck_assert_msg(strstr(v[1].reason, "truncated") != NULL, "reason: %s", v[1].reason);
    free(v);
    /* listing does not quarantine */
    ck_assert(exists(p2));
    tiny_free(&a);
}
END_TEST

#ifdef RZ_TEST_HOOKS /* configure --enable-test-hooks */
/* ---- crash injection ------------------------------------------------------------------------- */

static const char *const crash_points[3] = {"before_fsync", "before_rename", "before_dirsync"};

START_TEST(crash_during_commit_never_exposes_partial_file)
{
    struct tiny a;
    char p1[4096], found[4096], p2[4096];
    struct rz_err err;
    make_tiny(&a, 13);
    save_step(&a, 1, p1, sizeof p1);
    path_in(p2, sizeof p2, "step-00000002.h5");
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        snprintf(rz_hooks.crash_at, sizeof rz_hooks.crash_at, "ckpt:%s", crash_points[_i]);
        struct ckpt_meta meta = make_meta(&a, 2);
        ckpt_save(tmpdir, &meta, &a.t, NULL, 0, NULL);
        _exit(1); /* the hook did not fire */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 86);

    bool renamed = _i == 2;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", p2);
    ck_assert(exists(tmp) == !renamed);
    ck_assert(exists(p2) == renamed);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, NULL, NULL, &err), RZ_OK);
    ck_assert_str_eq(found, renamed ? p2 : p1);
    ck_assert_int_eq(ckpt_verify(found, &err), RZ_OK);
    ck_assert_int_eq(ckpt_verify(p1, &err), RZ_OK);
    /* the next prune clears the debris */
    ck_assert_int_eq(ckpt_prune(tmpdir, 5, NULL, &err), RZ_OK);
    ck_assert(!exists(tmp));
    ck_assert(exists(p1));
    tiny_free(&a);
}
END_TEST
#endif


/* ---- command line ---------------------------------------------------------------------------- */

struct run_result {
    int rc;
    char *out, *err;
};

/* Run $top_builddir/ryzen-ckpt with up to two arguments; false if it has not been built. */
static bool run_cli(const char *a1, const char *a2, struct run_result *r)
{
    const char *top = getenv("top_builddir");
    char exe[4096], out[4096], errp[4096];
    snprintf(exe, sizeof exe, "%s/ryzen-ckpt", top != NULL ? top : ".");
    if (access(exe, X_OK) != 0) {
        fprintf(stderr, "check_ckpt: NOTE: %s not built; ryzen-ckpt CLI checks skipped\n",
                exe);
        return false;
    }
    path_in(out, sizeof out, "cli.out");
    path_in(errp, sizeof errp, "cli.err");
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(127);
        execl(exe, "ryzen-ckpt", a1, a2, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    r->rc = WEXITSTATUS(status);
    ck_assert_int_eq(rz_read_file(out, &r->out, NULL, NULL), RZ_OK);
    ck_assert_int_eq(rz_read_file(errp, &r->err, NULL, NULL), RZ_OK);
    return true;
}

static void run_free(struct run_result *r)
{
    free(r->out);
    free(r->err);
}

START_TEST(cli_list_info_verify)
{
    struct tiny a;
    char p1[4096], p2[4096], expect[4200], hex[65];
    struct run_result r;
    make_tiny(&a, 17);
    save_step(&a, 1, p1, sizeof p1);
    a.t.params[0] += 1.0f;
    save_step(&a, 2, p2, sizeof p2);
    ckpt_params_sha256(&a.t, hex);
    if (!run_cli("verify", p2, &r)) {
        tiny_free(&a);
        return;
    }
    ck_assert_int_eq(r.rc, 0);
    snprintf(expect, sizeof expect, "%s: ok\n", p2);
    ck_assert_str_eq(r.out, expect);
    run_free(&r);

    ck_assert(run_cli("info", p2, &r));
    ck_assert_int_eq(r.rc, 0);
    snprintf(expect, sizeof expect, "\"params_sha256\":\"%s\"", hex);
    ck_assert_msg(strstr(r.out, expect) != NULL, "info: %s", r.out);
    ck_assert_ptr_nonnull(strstr(r.out, "\"step\":2,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"samples_seen\":103,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"world_size\":3,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"global_batch\":48,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"format_version\":1,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"build\":\"" PACKAGE_STRING "\""));
    ck_assert_ptr_nonnull(strstr(r.out, "\"d_model\":16,"));
    ck_assert_ptr_nonnull(strstr(r.out, "\"config_sha256\":\""));
    run_free(&r);

    truncate_half(p2);
    ck_assert(run_cli("list", tmpdir, &r));
    ck_assert_int_eq(r.rc, 0);
    char *l1 = strstr(r.out, "\n1 "), *l2 = strstr(r.out, "\n2 ");
    ck_assert_ptr_nonnull(l1);
    ck_assert_ptr_nonnull(l2);
    ck_assert(l1 < l2);
    ck_assert_ptr_nonnull(strstr(l1, "valid"));
    ck_assert_ptr_nonnull(strstr(l2, "INVALID: "));
    run_free(&r);

    ck_assert(run_cli("verify", p2, &r));
    ck_assert_int_eq(r.rc, 65);
    ck_assert_ptr_nonnull(strstr(r.err, "truncated"));
    ck_assert_str_eq(r.out, "");
    run_free(&r);

    ck_assert(run_cli("info", p2, &r));
    ck_assert_int_eq(r.rc, 65);
    run_free(&r);

    path_in(expect, sizeof expect, "missing.h5");
    ck_assert(run_cli("verify", expect, &r));
    ck_assert_int_eq(r.rc, 65); /* no checkpoint there (74 is for a file that cannot be read) */
    ck_assert_ptr_nonnull(strstr(r.err, "No such file"));
    run_free(&r);

    ck_assert(run_cli("frobnicate", p1, &r));
    ck_assert_int_eq(r.rc, 64);
    ck_assert_ptr_nonnull(strstr(r.err, "usage"));
    run_free(&r);
    tiny_free(&a);
}
END_TEST

/* The data's tokenizer is recorded on / (tokenizer_sha256, "" when none) and read back; a file
 * written before the attribute existed (deleted here) still loads and verifies, with the
 * tokenizer "not recorded" (null in `ryzen-ckpt info`). */
START_TEST(tokenizer_hash_recorded_and_optional)
{
    static const char tok[] =
        "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    struct tiny a, b;
    char p1[4096], p2[4096];
    struct rz_err err;
    struct run_result r;
    make_tiny(&a, 5);
    make_tiny(&b, 0);
    struct ckpt_meta m = make_meta(&a, 1), out;
    snprintf(m.tokenizer_sha256, sizeof m.tokenizer_sha256, "%s", tok);
    rz_err_clear(&err);
    ck_assert_msg(ckpt_save(tmpdir, &m, &a.t, p1, sizeof p1, &err) == RZ_OK, "%s", err.msg);
    ck_assert_msg(ckpt_read_meta(p1, &out, &err) == RZ_OK, "%s", err.msg);
    ck_assert(out.tokenizer_recorded);
    ck_assert_str_eq(out.tokenizer_sha256, tok);
    ckpt_meta_free(&out);
    if (run_cli("info", p1, &r)) {
        ck_assert_int_eq(r.rc, 0);
        ck_assert_msg(strstr(r.out, "\"tokenizer_sha256\":\"9f86d081884c7d659a2feaa0c55ad015a3bf4f1"
                             "b2b0b822cd15d6c15b0f00a08\"") != NULL, "info: %s", r.out);
        run_free(&r);
    }
    save_step(&a, 2, p2, sizeof p2); /* no tokenizer: recorded as "" */
    ck_assert_int_eq(ckpt_read_meta(p2, &out, &err), RZ_OK);
    ck_assert(out.tokenizer_recorded);
    ck_assert_str_eq(out.tokenizer_sha256, "");
    ckpt_meta_free(&out);
    /* as an older writer left it: no attribute at all */
    ck_assert_msg(ckpt_debug_delete_attr(p1, "/", "tokenizer_sha256", &err) == RZ_OK, "%s",
                  err.msg);
    ck_assert_msg(ckpt_read_meta(p1, &out, &err) == RZ_OK, "%s", err.msg);
    ck_assert(!out.tokenizer_recorded);
    ck_assert_str_eq(out.tokenizer_sha256, "");
    ckpt_meta_free(&out);
    ck_assert_msg(ckpt_load(p1, &out, &b.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert(!out.tokenizer_recorded);
    ck_assert(memcmp(a.t.params, b.t.params, a.t.n_floats * sizeof(float)) == 0);
    ckpt_meta_free(&out);
    ck_assert_int_eq(ckpt_verify(p1, &err), RZ_OK);
    if (run_cli("info", p1, &r)) {
        ck_assert_int_eq(r.rc, 0);
        ck_assert_msg(strstr(r.out, "\"tokenizer_sha256\":null") != NULL, "info: %s", r.out);
        run_free(&r);
    }
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

static Suite *ckpt_suite(void)
{
    Suite *s = suite_create("ckpt");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, sha256_fips_vectors);
    tcase_add_test(core, sha256_accel_matches_portable);
    tcase_add_test(core, round_trip_is_bit_exact);
    tcase_add_test(core, params_sha256_stable_and_sensitive);
    tcase_add_test(core, sharded_moments_same_file_and_part_loads);
    tcase_add_test(core, find_latest_picks_newest_valid);
    tcase_add_test(core, newest_committed_reads_names_only);
    tcase_add_test(core, prune_keeps_n_and_never_the_last_good);
    tcase_add_test(core, prune_trusts_known_files_until_they_change);
    tcase_add_test(core, list_reports_steps_sizes_validity);
#ifdef RZ_TEST_HOOKS
    tcase_add_loop_test(core, crash_during_commit_never_exposes_partial_file, 0, 3);
#endif
    tcase_add_test(core, cli_list_info_verify);
    tcase_add_test(core, tokenizer_hash_recorded_and_optional);
    suite_add_tcase(s, core);
    suite_add_tcase(s, ckpt_errors_tcase());
    suite_add_tcase(s, ckpt_async_tcase());
    suite_add_tcase(s, ckpt_export_tcase());
    return s;
}

int main(void)
{
    return rz_test_main(ckpt_suite());
}
