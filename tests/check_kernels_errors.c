/* check_kernels_errors: the "errors" test case of check_kernels (check_kernels.c builds the
 * suite): a bad backend name, and bad matmul and other shapes, return RZ_ECONFIG with a message
 * naming the op.  Fixtures from kernels_fixtures.c. */

#include "config.h"

#include <check.h>
#include <math.h>
#include <string.h>

#include "core/util.h"
#include "kernels/kern_impl.h"
#include "kernels/kernels.h"
#include "testutil.h"

#include "kernels_fixtures.h"

/* The call failed with RZ_ECONFIG, and err names `op`. */
static void assert_config_error(enum rz_status st, const struct rz_err *err, const char *op)
{
    ck_assert_int_eq(st, RZ_ECONFIG);
    ck_assert_int_eq(err->status, RZ_ECONFIG);
    ck_assert_msg(strstr(err->msg, op) != NULL, "message '%s' does not name '%s'", err->msg, op);
}

START_TEST(test_bad_backend_name)
{
    struct rz_err err;
    enum kern_backend b = KERN_DNNL;
    ck_assert_int_eq(kern_backend_parse("ref", &b, &err), RZ_OK);
    ck_assert_int_eq(b, KERN_REF);
    ck_assert_int_eq(kern_backend_parse("dnnl", &b, &err), RZ_OK);
    ck_assert_int_eq(b, KERN_DNNL);
    assert_config_error(kern_backend_parse("mkl", &b, &err), &err, "kernel backend");
    ck_assert_ptr_nonnull(strstr(err.msg, "mkl"));
    ck_assert_ptr_nonnull(strstr(err.msg, "ref, dnnl"));
    assert_config_error(kern_backend_parse("", &b, &err), &err, "kernel backend");
    assert_config_error(kern_backend_parse(NULL, &b, &err), &err, "kernel backend");
}
END_TEST

START_TEST(test_bad_matmul_sizes)
{
    struct kern_ctx *ctx = _i ? g_dnnl : g_ref;
    struct rz_err err;
    struct kern_matmul *op = (struct kern_matmul *)&err; /* must be reset to NULL */
    const int64_t huge = (int64_t)1 << 40;
    const struct kern_matmul_desc bad[] = {
        {0, 2, 2, 2, false, false, 1.0f, false, false, false},
        {1, 0, 2, 2, false, false, 1.0f, false, false, false},
        {1, 2, -3, 2, false, false, 1.0f, false, false, false},
        {1, 2, 2, -1, false, false, 1.0f, false, false, false},
        {1, huge, huge, huge, false, false, 1.0f, false, false, false}, /* m*n*k overflows size_t */
        {huge, huge, 1, 1, false, false, 1.0f, false, false, false},
        {1, 2, 2, 2, false, false, NAN, false, false, false},
    };
    for (size_t i = 0; i < RZ_ARRAY_LEN(bad); i++) {
        assert_config_error(kern_matmul_create(&op, ctx, &bad[i], &err), &err, "matmul");
        ck_assert_ptr_null(op);
    }
    double gf = 1.0;
    assert_config_error(kern_measure_peak(ctx, 0, 8, 8, false, 0.1, &gf, &err), &err, "matmul");
    assert_config_error(kern_measure_peak(ctx, 8, 8, 8, false, -1.0, &gf, &err), &err, "measure peak");
}
END_TEST

START_TEST(test_bad_other_sizes)
{
    struct kern_ctx *ctx = _i ? g_dnnl : g_ref;
    struct rz_err err;
    struct kern_layernorm *ln = NULL;
    struct kern_gelu *ge = NULL;
    struct kern_attention *at = NULL;
    struct kern_xent *xe = NULL;
    const int64_t huge = (int64_t)1 << 62;
    assert_config_error(kern_layernorm_create(&ln, ctx, 0, 256, 1e-5f, false, &err), &err, "layernorm");
    assert_config_error(kern_layernorm_create(&ln, ctx, 8, -1, 1e-5f, false, &err), &err, "layernorm");
    assert_config_error(kern_layernorm_create(&ln, ctx, huge, huge, 1e-5f, false, &err), &err,
                        "layernorm");
    assert_config_error(kern_layernorm_create(&ln, ctx, 8, 8, -1.0f, false, &err), &err, "layernorm");
    assert_config_error(kern_gelu_create(&ge, ctx, 0, 512, false, &err), &err, "gelu");
    assert_config_error(kern_gelu_create(&ge, ctx, 2048, -1, false, &err), &err, "gelu");
    assert_config_error(kern_gelu_create(&ge, ctx, huge, huge, false, &err), &err, "gelu");
    assert_config_error(kern_attention_create(&at, ctx, 2, 128, 0, 64, 0, &err), &err,
                        "attention");
    assert_config_error(kern_attention_create(&at, ctx, 2, -1, 4, 64, 0, &err), &err, "attention");
    assert_config_error(kern_attention_create(&at, ctx, 1, huge, 1, 1, 0, &err), &err,
                        "attention"); /* T^2 overflows */
    assert_config_error(kern_attention_create(&at, ctx, 2, 128, 4, 64, -1, &err), &err,
                        "attention");
    assert_config_error(kern_xent_create(&xe, ctx, 16, 0, false, &err), &err, "xent");
    assert_config_error(kern_xent_create(&xe, ctx, 1, (int64_t)INT32_MAX + 1, false, &err), &err,
                        "xent");
    ck_assert(ln == NULL && ge == NULL && at == NULL && xe == NULL);
}
END_TEST

TCase *kernels_errors_tcase(void)
{
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, test_bad_backend_name);
    tcase_add_loop_test(errors, test_bad_matmul_sizes, 0, 2);
    tcase_add_loop_test(errors, test_bad_other_sizes, 0, 2);
    return errors;
}
