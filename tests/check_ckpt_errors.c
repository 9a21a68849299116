#include "config.h"

/* check_ckpt_errors: the "errors" test case of check_ckpt (check_ckpt.c builds the suite):
 * every kind of damage to a checkpoint detected, named, quarantined and fallen back from; shape
 * mismatches refused naming the tensor; a failed moment fetch failing the save; and missing,
 * unwritable and unreadable paths (a read-only directory as an unprivileged user, even under
 * root).  Fixtures from ckpt_fixtures.c. */

#include <check.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/ckpt.h"
#include "core/status.h"
#include "core/util.h"
#include "testutil.h"

#include "ckpt_fixtures.h"

/* ---- errors: damage -------------------------------------------------------------------------- */

static const char *const damage_reason[] = {
    "dataset /adam_v/h1.mlp.fc.weight: SHA-256 mismatch", "truncated file", "empty file",
    "not an HDF5 file", "missing dataset /adam_m/wpe", "format version 2 is newer"};

struct skips {
    int n;
    char path[4096];
    char reason[8192];
};

static void on_skip(void *user, const char *path, const char *reason)
{
    struct skips *s = user;
    s->n++;
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->reason, sizeof s->reason, "%s", reason);
}

START_TEST(damage_is_detected_quarantined_and_skipped)
{
    struct tiny a, b;
    char p1[4096], p2[4096], found[4096], q[4096], note[4200];
    struct rz_err err;
    struct skips sk = {0};
    const char *want = damage_reason[_i];
    make_tiny(&a, 19);
    make_tiny(&b, 0);
    save_step(&a, 1, p1, sizeof p1);
    save_step(&a, 2, p2, sizeof p2);
    apply_damage((enum damage)_i, p2);

    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_verify(p2, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, want) != NULL, "want '%s' in: %s", want, err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, p2));
    struct ckpt_meta m;
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_load(p2, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, want) != NULL, "want '%s' in: %s", want, err.msg);

    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, p1);
    ck_assert_int_eq(sk.n, 1);
    ck_assert_str_eq(sk.path, p2);
    ck_assert_msg(strstr(sk.reason, want) != NULL, "reason: %s", sk.reason);
    ck_assert_ptr_nonnull(strstr(sk.reason, "quarantined as"));
    ck_assert(!exists(p2));
    path_in(q, sizeof q, "quarantine/step-00000002.h5");
    ck_assert(exists(q));
    snprintf(note, sizeof note, "%s.reason", q);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(note, &text, NULL, &err), RZ_OK);
    ck_assert_msg(strstr(text, want) != NULL, "note: %s", text);
    ck_assert_ptr_nonnull(strstr(text, "quarantined_utc: 20"));
    free(text);

    /* the previous checkpoint loads bit-exactly */
    rz_err_clear(&err);
    ck_assert_msg(ckpt_load(p1, &m, &b.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(m.step, 1);
    ck_assert(memcmp(a.t.adam_v, b.t.adam_v, a.t.n_floats * sizeof(float)) == 0);
    ckpt_meta_free(&m);
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

START_TEST(all_damaged_gives_none_and_quarantines_each)
{
    struct tiny a;
    char p[4096], found[4096] = "junk", q[4096];
    struct rz_err err;
    struct skips sk = {0};
    make_tiny(&a, 23);
    save_step(&a, 1, p, sizeof p);
    apply_damage(TRUNCATE, p);
    save_step(&a, 2, p, sizeof p);
    apply_damage(FLIP_BYTE, p);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    ck_assert_int_eq(sk.n, 2);
    ck_assert_uint_eq(count_files(tmpdir, ".h5"), 0);
    /* the same name damaged again is quarantined under a distinct name */
    save_step(&a, 1, p, sizeof p);
    apply_damage(EMPTY, p);
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    ck_assert_int_eq(sk.n, 3);
    ck_assert_ptr_nonnull(strstr(sk.reason, "quarantine/step-00000001.h5.1"));
    path_in(q, sizeof q, "quarantine");
    ck_assert_uint_eq(count_files(q, ".h5"), 2);
    ck_assert_uint_eq(count_files(q, ".h5.1"), 1);
    ck_assert_uint_eq(count_files(q, ".reason"), 3);
    tiny_free(&a);
}
END_TEST

/* ---- errors: shapes, paths ------------------------------------------------------------------- */

START_TEST(shape_mismatch_is_refused_naming_the_tensor)
{
    struct tiny a, b;
    char path[4096];
    struct ckpt_meta m;
    struct rz_err err;
    make_tiny(&a, 29);
    save_step(&a, 1, path, sizeof path);

    tiny_table(&b, 64, 16, 2, 40, 8); /* d_ff 40 instead of 32 */
    tiny_alloc(&b, 0);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_load(path, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, "'h0.mlp.fc.weight'") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "(32, 16)") != NULL, "%s", err.msg);
    ck_assert_msg(strstr(err.msg, "(40, 16)") != NULL, "%s", err.msg);
    ck_assert_ptr_nonnull(strstr(err.msg, path));
    tiny_free(&b);

    tiny_table(&b, 64, 16, 3, 32, 8); /* one more layer */
    tiny_alloc(&b, 0);
    ck_assert_int_eq(ckpt_load(path, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, "file has 30 tensors but the model has 42") != NULL, "%s",
                  err.msg);
    tiny_free(&b);

    tiny_table(&b, 64, 16, 2, 32, 8);
    snprintf(b.table[3].name, sizeof b.table[3].name, "h0.ln_one.bias");
    tiny_alloc(&b, 0);
    ck_assert_int_eq(ckpt_load(path, &m, &b.t, &err), RZ_ENOCKPT);
    ck_assert_msg(strstr(err.msg, "'h0.ln1.bias' in the file but 'h0.ln_one.bias'") != NULL,
                  "%s", err.msg);
    tiny_free(&b);
    /* the file itself is fine */
    ck_assert_int_eq(ckpt_verify(path, &err), RZ_OK);
    tiny_free(&a);
}
END_TEST

/* A fetch that fails mid-write: the save fails naming the tensor, leaves no file, and the
 * caller can tell how many fetches were made (train_ckpt.c makes the rest, so no rank waits). */
START_TEST(failed_fetch_fails_the_save)
{
    struct tiny a, b;
    char path[4096];
    struct rz_err err;
    make_tiny(&a, 3);
    make_tiny(&b, 3);
    struct fetch_log log = {.from = &a, .fail_at = 5, .order_ok = 1};
    b.t.moments_sharded = 1;
    b.t.fetch = fetch_from;
    b.t.fetch_user = &log;
    struct ckpt_meta meta = make_meta(&b, 4);
    ck_assert_int_eq(ckpt_save(tmpdir, &meta, &b.t, path, sizeof path, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, "moments of 'h0.attn.qkv.bias': gather failed on "
                                   "purpose") != NULL, "%s", err.msg);
    ck_assert_int_eq(log.calls, 6);
    path_in(path, sizeof path, "step-00000004.h5");
    ck_assert(!exists(path));
    ck_assert(!exists(strcat(path, ".tmp")));
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

START_TEST(missing_directory_is_empty_not_error)
{
    char dir[4096], found[4096] = "junk";
    struct rz_err err;
    struct skips sk = {0};
    path_in(dir, sizeof dir, "no/such/dir");
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_find_latest(dir, found, sizeof found, on_skip, &sk, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    ck_assert_int_eq(sk.n, 0);
    ck_assert(!exists(dir));
    /* an empty directory too */
    ck_assert_int_eq(ckpt_find_latest(tmpdir, found, sizeof found, NULL, NULL, &err), RZ_OK);
    ck_assert_str_eq(found, "");
    /* but listing a missing directory is an I/O error */
    struct ckpt_entry *v = NULL;
    size_t n = 5;
    ck_assert_int_eq(ckpt_list(dir, &v, &n, &err), RZ_EIO);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_nonnull(strstr(err.msg, dir));
}
END_TEST

/* What a checkpoint save did as an unprivileged user (unwritable_directory_is_eio). */
struct unpriv_save {
    enum rz_status status;
    long uid;
    char msg[RZ_ERR_MSG_MAX];
};

/* The uid and gid an unprivileged save runs as: rzuser when it exists (tools/devcluster creates
 * it), else nobody (65534). */
static void unprivileged_ids(uid_t *uid, gid_t *gid)
{
    const struct passwd *pw = getpwnam("rzuser");
    *uid = pw != NULL ? pw->pw_uid : 65534;
    *gid = pw != NULL ? pw->pw_gid : 65534;
}

/* ckpt_save into dir by this user, or, when this process is root (whom permissions do not bind),
 * in a child that has dropped to an unprivileged user and owns dir.  The child reports through a
 * pipe, so the assertions stay in the test process in either of Check's fork modes. */
static struct unpriv_save save_unprivileged(const char *dir, const struct ckpt_meta *meta,
                                            const struct ckpt_tensors *t)
{
    struct unpriv_save r = {.status = RZ_OK, .uid = (long)geteuid()};
    char path[4096];
    struct rz_err err;
    if (geteuid() != 0) {
        rz_err_clear(&err);
        r.status = ckpt_save(dir, meta, t, path, sizeof path, &err);
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        return r;
    }
    uid_t uid;
    gid_t gid;
    unprivileged_ids(&uid, &gid);
    ck_assert_int_eq(chown(dir, uid, gid), 0);
    ck_assert_int_eq(chmod(tmpdir, 0755), 0); /* the child must reach dir */
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        if (setgroups(0, NULL) != 0 || setgid(gid) != 0 || setuid(uid) != 0 || geteuid() == 0)
            _exit(90);
        r.uid = (long)geteuid();
        rz_err_clear(&err);
        r.status = ckpt_save(dir, meta, t, path, sizeof path, &err);
        snprintf(r.msg, sizeof r.msg, "%s", err.msg);
        _exit(write(fds[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 91);
    }
    close(fds[1]);
    ssize_t got = read(fds[0], &r, sizeof r);
    close(fds[0]);
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child as uid %ld failed: status "
                  "0x%x (90: could not drop root)", (long)uid, st);
    ck_assert_int_eq(got, (ssize_t)sizeof r);
    return r;
}

START_TEST(unwritable_directory_is_eio)
{
    struct tiny a;
    char file[2048], dir[4096], path[4096];
    struct rz_err err;
    make_tiny(&a, 31);
    struct ckpt_meta meta = make_meta(&a, 1);
    /* a directory below a regular file cannot be created, even by root */
    path_in(file, sizeof file, "plain");
    fclose(fopen(file, "w"));
    snprintf(dir, sizeof dir, "%s/checkpoints", file);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_save(dir, &meta, &a.t, path, sizeof path, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, file) != NULL, "%s", err.msg);
    /* a read-only directory of the user's own: permissions bind every user but root, so as root
     * the save runs in a child that has become an unprivileged user first (never skipped) */
    path_in(dir, sizeof dir, "ro");
    ck_assert_int_eq(mkdir(dir, 0555), 0);
    struct unpriv_save r = save_unprivileged(dir, &meta, &a.t);
    ck_assert_msg(r.status == RZ_EIO, "save into read-only %s as uid %ld: status %d (%s)", dir,
                  r.uid, (int)r.status, r.msg);
    ck_assert_msg(r.uid != 0, "the save ran as root");
    ck_assert_msg(strstr(r.msg, "Permission denied") != NULL, "%s", r.msg);
    ck_assert_msg(strstr(r.msg, dir) != NULL, "%s", r.msg);
    ck_assert_uint_eq(count_files(dir, ".tmp"), 0);
    ck_assert_uint_eq(count_files(dir, ".h5"), 0);
    tiny_free(&a);
}
END_TEST

START_TEST(unreadable_paths_are_eio)
{
    struct tiny a;
    char path[4096];
    struct ckpt_meta m;
    struct rz_err err;
    make_tiny(&a, 0);
    path_in(path, sizeof path, "missing.h5");
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_verify(path, &err), RZ_EIO);
    ck_assert_msg(strstr(err.msg, "No such file") != NULL && strstr(err.msg, path) != NULL,
                  "%s", err.msg);
    ck_assert_int_eq(ckpt_load(path, &m, &a.t, &err), RZ_EIO);
    ck_assert_int_eq(ckpt_read_meta(path, &m, &err), RZ_EIO);
    ck_assert_int_eq(ckpt_verify(tmpdir, &err), RZ_EIO); /* a directory */
    ck_assert_ptr_nonnull(strstr(err.msg, "not a regular file"));
    tiny_free(&a);
}
END_TEST

TCase *ckpt_errors_tcase(void)
{
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_loop_test(errors, damage_is_detected_quarantined_and_skipped, FLIP_BYTE,
                        NEWER_VERSION + 1);
    tcase_add_test(errors, all_damaged_gives_none_and_quarantines_each);
    tcase_add_test(errors, shape_mismatch_is_refused_naming_the_tensor);
    tcase_add_test(errors, failed_fetch_fails_the_save);
    tcase_add_test(errors, missing_directory_is_empty_not_error);
    tcase_add_test(errors, unwritable_directory_is_eio);
    tcase_add_test(errors, unreadable_paths_are_eio);
    return errors;
}
