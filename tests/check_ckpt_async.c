#include "config.h"

/* check_ckpt_async: the "async" test case of check_ckpt (check_ckpt.c builds the suite): the
 * background writer of ckpt_async.h writes behind the state at submit, the same file a save in
 * line makes (ZeRO's gathered moments too), applies retention, finishes a write in flight when
 * destroyed, and reports misuse and a failed write.  Fixtures from ckpt_fixtures.c. */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/ckpt.h"
#include "ckpt/ckpt_async.h"
#include "core/status.h"
#include "testutil.h"

#include "ckpt_fixtures.h"

/* ---- the background writer (ckpt_async.h) --------------------------------------------------- */

static struct ckpt_writer *writer_of(const struct tiny *m)
{
    struct ckpt_writer *w = NULL;
    struct rz_err err;
    rz_err_clear(&err);
    ck_assert_msg(ckpt_writer_create(&w, m->t.n_floats, &err) == RZ_OK, "%s", err.msg);
    return w;
}

static void assert_same_file_data(const char *p1, const char *p2)
{
    struct tiny x, y;
    struct ckpt_meta mx, my;
    struct rz_err err;
    make_tiny(&x, 0);
    make_tiny(&y, 0);
    ck_assert_msg(ckpt_load(p1, &mx, &x.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert_msg(ckpt_load(p2, &my, &y.t, &err) == RZ_OK, "%s", err.msg);
    ck_assert(memcmp(x.t.params, y.t.params, x.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(x.t.adam_m, y.t.adam_m, x.t.n_floats * sizeof(float)) == 0);
    ck_assert(memcmp(x.t.adam_v, y.t.adam_v, x.t.n_floats * sizeof(float)) == 0);
    assert_meta_equal(&mx, &my);
    ck_assert_str_eq(mx.params_sha256, my.params_sha256);
    ckpt_meta_free(&mx);
    ckpt_meta_free(&my);
    tiny_free(&x);
    tiny_free(&y);
}

/* The file written behind holds the state at submit, not what the caller's buffers hold once
 * the fence has passed, and is the file a save in line writes. */
START_TEST(async_write_is_the_sync_file_of_the_state_at_submit)
{
    struct tiny a, b;
    char d1[2048], d2[2048], inline_path[4096];
    struct rz_err err;
    make_tiny(&a, 7);
    make_tiny(&b, 7);
    path_in(d1, sizeof d1, "behind");
    path_in(d2, sizeof d2, "inline");
    struct ckpt_meta meta = make_meta(&a, 5);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    rz_err_clear(&err);
    ck_assert_msg(ckpt_writer_submit(w, d1, &meta, &a.t, 3, &known, &err) == RZ_OK, "%s",
                  err.msg);
    ck_assert(ckpt_writer_pending(w));
    ckpt_writer_fence(w);
    tiny_fill(&a, 9); /* what the optimizer would do next */
    struct ckpt_write_result res;
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_msg(res.status == RZ_OK, "%s", res.err.msg);
    ck_assert_int_eq(res.step, 5);
    ck_assert(!ckpt_writer_pending(w));
    ck_assert(!ckpt_writer_wait(w, &res, NULL)); /* nothing left to collect */
    ck_assert_int_eq(ckpt_save(d2, &meta, &b.t, inline_path, sizeof inline_path, &err), RZ_OK);
    assert_same_file_data(res.path, inline_path);
    ck_assert_int_eq(ckpt_verify(res.path, &err), RZ_OK);
    ck_assert_uint_eq(count_files(d1, ".tmp"), 0);
    ckpt_writer_destroy(w);
    tiny_free(&a);
    tiny_free(&b);
}
END_TEST

/* ZeRO's form: moments gathered into the writer's buffers make the same file. */
START_TEST(async_sharded_moments_come_from_the_writer_buffers)
{
    struct tiny a;
    char d1[2048], d2[2048], inline_path[4096];
    struct rz_err err;
    make_tiny(&a, 11);
    path_in(d1, sizeof d1, "behind");
    path_in(d2, sizeof d2, "inline");
    struct ckpt_meta meta = make_meta(&a, 2);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    memcpy(ckpt_writer_moment(w, 0), a.t.adam_m, a.t.n_floats * sizeof(float));
    memcpy(ckpt_writer_moment(w, 1), a.t.adam_v, a.t.n_floats * sizeof(float));
    struct ckpt_tensors x = a.t;
    x.moments_sharded = 1;
    x.adam_m = x.adam_v = NULL; /* the writer must not read them */
    x.moment_lo = x.moment_hi = 0;
    rz_err_clear(&err);
    ck_assert_msg(ckpt_writer_submit(w, d1, &meta, &x, 3, &known, &err) == RZ_OK, "%s", err.msg);
    struct ckpt_write_result res;
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_msg(res.status == RZ_OK, "%s", res.err.msg);
    ck_assert_int_eq(ckpt_save(d2, &meta, &a.t, inline_path, sizeof inline_path, &err), RZ_OK);
    assert_same_file_data(res.path, inline_path);
    ckpt_writer_destroy(w);
    tiny_free(&a);
}
END_TEST

/* Retention runs behind too: keep 2 of 4, the newest two. */
START_TEST(async_writes_keep_the_newest)
{
    struct tiny a;
    char dir[2048], want[4096];
    struct rz_err err;
    make_tiny(&a, 3);
    path_in(dir, sizeof dir, "ckpts");
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    for (int64_t step = 1; step <= 4; step++) {
        struct ckpt_meta meta = make_meta(&a, step);
        struct ckpt_write_result res;
        ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 2, &known, &err), RZ_OK);
        ck_assert(ckpt_writer_wait(w, &res, NULL));
        ck_assert_msg(res.status == RZ_OK && !res.prune_failed, "%s %s", res.err.msg,
                      res.prune_msg);
    }
    ck_assert_uint_eq(count_files(dir, ".h5"), 2);
    snprintf(want, sizeof want, "%s/step-00000004.h5", dir);
    ck_assert(exists(want));
    snprintf(want, sizeof want, "%s/step-00000003.h5", dir);
    ck_assert(exists(want));
    ckpt_writer_destroy(w);
    tiny_free(&a);
}
END_TEST

/* Destroying a writer with a write in flight finishes the write: nothing submitted is lost. */
START_TEST(async_destroy_finishes_the_write_in_flight)
{
    struct tiny a;
    char dir[2048], want[4096];
    struct rz_err err;
    make_tiny(&a, 5);
    path_in(dir, sizeof dir, "ckpts");
    struct ckpt_meta meta = make_meta(&a, 8);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 3, &known, &err), RZ_OK);
    ckpt_writer_destroy(w);
    snprintf(want, sizeof want, "%s/step-00000008.h5", dir);
    rz_err_clear(&err);
    ck_assert_msg(ckpt_verify(want, &err) == RZ_OK, "%s", err.msg);
    tiny_free(&a);
}
END_TEST

/* Misuse and a failed write: a second submit before the first is collected and a snapshot of
 * another size are refused, naming why; a write that fails says so in its result, with the path,
 * and leaves no file. */
START_TEST(async_errors_are_reported)
{
    struct tiny a;
    char dir[2048], file[2048], bad[4096];
    struct rz_err err;
    make_tiny(&a, 2);
    path_in(dir, sizeof dir, "ckpts");
    struct ckpt_meta meta = make_meta(&a, 1);
    struct ckpt_known known = {0};
    struct ckpt_writer *w = writer_of(&a);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 3, &known, &err), RZ_OK);
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &a.t, 3, &known, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "not collected") != NULL, "%s", err.msg);
    struct ckpt_write_result res;
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_int_eq(res.status, RZ_OK);

    struct ckpt_tensors other = a.t;
    other.n_floats--;
    rz_err_clear(&err);
    ck_assert_int_eq(ckpt_writer_submit(w, dir, &meta, &other, 3, &known, &err), RZ_ECONFIG);
    ck_assert_msg(strstr(err.msg, "floats") != NULL, "%s", err.msg);
    ck_assert(!ckpt_writer_pending(w));

    path_in(file, sizeof file, "plain"); /* a directory below a regular file cannot exist */
    fclose(fopen(file, "w"));
    snprintf(bad, sizeof bad, "%s/checkpoints", file);
    meta.step = 2;
    ck_assert_int_eq(ckpt_writer_submit(w, bad, &meta, &a.t, 3, &known, &err), RZ_OK);
    ck_assert(ckpt_writer_wait(w, &res, NULL));
    ck_assert_int_eq(res.status, RZ_EIO);
    ck_assert_int_eq(res.step, 2);
    ck_assert_msg(strstr(res.err.msg, file) != NULL, "%s", res.err.msg);
    ckpt_writer_destroy(w);
    tiny_free(&a);
}
END_TEST

TCase *ckpt_async_tcase(void)
{
    TCase *async = rz_test_tcase("async");
    tcase_add_checked_fixture(async, setup, teardown);
    tcase_add_test(async, async_write_is_the_sync_file_of_the_state_at_submit);
    tcase_add_test(async, async_sharded_moments_come_from_the_writer_buffers);
    tcase_add_test(async, async_writes_keep_the_newest);
    tcase_add_test(async, async_destroy_finishes_the_write_in_flight);
    tcase_add_test(async, async_errors_are_reported);
    return async;
}
