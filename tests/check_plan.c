/* check_plan: the memory planner's figures for the seed model against numbers computed by hand
 * from the layouts (model.c, kern_xsmm.c, kern_simd.c), its ZeRO and recomputation variants, the
 * order of its suggestions, and its errors.  The measured side (predicted against measured peak
 * RSS) is tools/bench-memory and summary.json, not a unit test. */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config/cfg.h"
#include "plan/plan.h"
#include "testutil.h"

#define MIB ((uint64_t)1 << 20)

/* The seed model (configs/seed_benchmark.yaml = the defaults): V 2048, C 256, H 4, L 2, F 512,
 * T 128, B 16, untied head.  N = B T = 2048 rows. */
enum {
    N_PARAMS = 2138112,
    /* one block's activations: x, ln1, atty, x2, ln2 (N C each), qkv (3 N C), the LayerNorms'
     * mean and var (4 N), lse (B H T), fc and fcg (N F each) */
    BLOCK = 5 * 524288 + 1572864 + 4 * 2048 + 16 * 4 * 128 + 2 * 1048576,
    /* after the blocks: x_out, lnf (N C), lnf mean and var (2 N), probs (N V), losses (N) */
    HEAD = 2 * 524288 + 2 * 2048 + 2048 * 2048 + 2048,
    /* backward's scratch: dqkv (3 N C), tmp, dresid, dln (N C), dfcg (N F) */
    SCRATCH = 1572864 + 3 * 524288 + 1048576,
    /* attention, one thread: K^T and V^T of a head (2 D T), 2 tiles of 64 x 64, 2 x 64, T;
     * LayerNorm 2 x 32 chunks x C; xent 32 x V */
    KERNEL = (2 * 64 * 128 + 2 * 4096 + 128 + 128) + 2 * 32 * 256 + 32 * 2048,
    NORM_BLOCKS = 522,      /* ceil(2138112 / 4096) */
};

static void seed(struct cfg *c)
{
    cfg_defaults(c);
}

START_TEST(seed_model_by_hand)
{
    struct cfg c;
    seed(&c);
    struct plan p;
    ck_assert_int_eq(plan_compute(&p, &c, 1, NULL, NULL), RZ_OK);
    ck_assert_int_eq(p.n_params, N_PARAMS);
    ck_assert_uint_eq(p.params, 4 * (uint64_t)N_PARAMS);
    ck_assert_uint_eq(p.grads, 4 * (uint64_t)N_PARAMS);
    ck_assert_uint_eq(p.optimizer, 8 * (uint64_t)N_PARAMS);
    ck_assert_uint_eq(p.acts_kept, 4 * (uint64_t)(2 * BLOCK + HEAD));
    ck_assert_uint_eq(p.acts_kept_none, p.acts_kept);
    /* recomputation: the two blocks' inputs, one block's other activations, the head's */
    ck_assert_uint_eq(p.acts_kept_block, 4 * (uint64_t)(2 * 524288 + (BLOCK - 524288) + HEAD));
    ck_assert_uint_eq(p.acts_scratch, 4 * (uint64_t)SCRATCH);
    ck_assert_uint_eq(p.kernel_ws, 4 * (uint64_t)KERNEL);
    ck_assert_uint_eq(p.comm, 8 * (uint64_t)NORM_BLOCKS);
    ck_assert_uint_eq(p.runtime, 48 * MIB);
    ck_assert_uint_eq(p.ckpt_staging, 0);
    uint64_t sum = p.params + p.grads + p.optimizer + p.acts_kept + p.acts_scratch + p.kernel_ws +
                   p.comm + p.runtime;
    ck_assert_uint_eq(p.peak, sum);
    ck_assert_uint_eq(p.peak, (uint64_t)173208656); /* 165.2 MiB */
    ck_assert_uint_eq(p.peak_rank0, p.peak);
}
END_TEST

START_TEST(seed_model_zero2_recompute_on_four_ranks)
{
    struct cfg c;
    seed(&c);
    struct plan_settings s = plan_settings_of(&c);
    s.zero_stage = 2;
    s.recompute = true;
    struct plan p;
    ck_assert_int_eq(plan_compute(&p, &c, 4, &s, NULL), RZ_OK);
    /* 522 blocks of 4096 floats over 4 ranks: 130, 131, 130, 131; the largest part is 131 */
    uint64_t part = 131 * 4096;
    ck_assert_uint_eq(p.optimizer, 2 * 4 * part);
    /* segments: embeddings V C + T C (the big buffer), a block's 12 tensors twice (the small
     * ones: 2C + (3C C + 3C) + (C C + C) + 2C + (F C + F) + (C F + C)), and the shard */
    uint64_t emb = 2048 * 256 + 128 * 256, block = 512 + 197376 + 65792 + 512 + 131584 + 131328;
    ck_assert_uint_eq(p.grads, 4 * (emb + 2 * block + part));
    ck_assert_uint_eq(p.acts_kept, p.acts_kept_block);
    /* MPI's temporaries for the largest segment's buckets, three bucket tables, norm blocks */
    ck_assert_uint_eq(p.comm, 4 * emb + 3 * 4096 * 4 * 4 + 8 * (uint64_t)NORM_BLOCKS);
    /* rank 0 stages the largest tensor's moments (wte, V C) to write a checkpoint, and MPI's
     * buffers for the 3 other ranks' sends (6 MiB each, measured) */
    ck_assert_uint_eq(p.ckpt_staging, 4 * 2048 * 256 + 3 * 6 * MIB);
    ck_assert_uint_eq(p.peak_rank0, p.peak + p.ckpt_staging);
    struct plan z0;
    ck_assert_int_eq(plan_compute(&z0, &c, 4, NULL, NULL), RZ_OK);
    ck_assert_uint_lt(p.peak, z0.peak);
}
END_TEST

/* checkpoint.mode async: rank 0's writer holds parameters, m and v whole; with ZeRO its
 * gathers land in them, so only MPI's buffers for the others' sends stay staged. */
START_TEST(async_checkpoints_add_the_snapshot_to_rank0)
{
    struct cfg c;
    seed(&c);
    snprintf(c.checkpoint.mode, sizeof c.checkpoint.mode, "async");
    struct plan p;
    ck_assert_int_eq(plan_compute(&p, &c, 1, NULL, NULL), RZ_OK);
    ck_assert_uint_eq(p.ckpt_snapshot, 12 * (uint64_t)N_PARAMS);
    ck_assert_uint_eq(p.peak, (uint64_t)173208656); /* the other ranks: as sync */
    ck_assert_uint_eq(p.peak_rank0, p.peak + p.ckpt_snapshot);
    struct plan_settings s = plan_settings_of(&c);
    s.zero_stage = 1;
    ck_assert_int_eq(plan_compute(&p, &c, 4, &s, NULL), RZ_OK);
    ck_assert_uint_eq(p.ckpt_staging, 3 * 6 * MIB);
    ck_assert_uint_eq(p.peak_rank0, p.peak + p.ckpt_staging + 12 * (uint64_t)N_PARAMS);
}
END_TEST

START_TEST(suggestions_in_order_of_cost)
{
    struct cfg c;
    seed(&c); /* wider and deeper, so that sharding the moments pays for rank 0's staging */
    c.model.d_model = 512;
    c.model.n_layers = 4;
    c.model.d_ff = 2048;
    struct plan base, z1, z2, z1rc, z2rc;
    struct plan_settings s = plan_settings_of(&c), got;
    ck_assert_int_eq(plan_compute(&base, &c, 4, NULL, NULL), RZ_OK);
    s.zero_stage = 1;
    ck_assert_int_eq(plan_compute(&z1, &c, 4, &s, NULL), RZ_OK);
    s.recompute = true;
    ck_assert_int_eq(plan_compute(&z1rc, &c, 4, &s, NULL), RZ_OK);
    s.zero_stage = 2;
    ck_assert_int_eq(plan_compute(&z2rc, &c, 4, &s, NULL), RZ_OK);
    s.recompute = false;
    ck_assert_int_eq(plan_compute(&z2, &c, 4, &s, NULL), RZ_OK);
    ck_assert(base.peak_rank0 > z1.peak_rank0 && z1.peak_rank0 > z2.peak_rank0 &&
              z2.peak_rank0 > z1rc.peak_rank0 && z1rc.peak_rank0 > z2rc.peak_rank0);
    struct plan q;
    char text[400];
    ck_assert(plan_suggest(&got, &q, &c, 4, base.peak_rank0)); /* fits as it is */
    ck_assert_int_eq(got.zero_stage, 0);
    plan_describe_change(text, sizeof text, &c, &got);
    ck_assert_str_eq(text, "");
    /* communication before compute: ZeRO-1, then ZeRO-2, before recomputation */
    ck_assert(plan_suggest(&got, &q, &c, 4, z1.peak_rank0));
    ck_assert(got.zero_stage == 1 && !got.recompute);
    ck_assert(plan_suggest(&got, &q, &c, 4, z2.peak_rank0));
    ck_assert(got.zero_stage == 2 && !got.recompute);
    /* with recomputation, the lowest stage that fits */
    ck_assert(plan_suggest(&got, &q, &c, 4, z1rc.peak_rank0));
    ck_assert(got.zero_stage == 1 && got.recompute && got.batch == 16);
    ck_assert(plan_suggest(&got, &q, &c, 4, z2rc.peak_rank0));
    ck_assert(got.zero_stage == 2 && got.recompute && got.batch == 16);
    ck_assert(plan_suggest(&got, &q, &c, 4, z2rc.peak_rank0 - 1)); /* one byte less: halve */
    ck_assert(got.batch == 8 && got.accum == 2 && got.recompute);
    ck_assert_uint_le(q.peak_rank0, z2rc.peak_rank0 - 1);
    plan_describe_change(text, sizeof text, &c, &got);
    ck_assert_str_eq(text, "--set training.zero_stage=1 --set training.recompute=block "
                           "--set training.batch_size=8 --set training.grad_accum=2");
    ck_assert(!plan_suggest(&got, &q, &c, 4, 1000));   /* nothing fits: the smallest is left */
    ck_assert(got.batch == 1 && got.accum == 16 && got.zero_stage == 2);
    ck_assert(plan_suggest(&got, &q, &c, 1, z1.peak_rank0)); /* one rank: no ZeRO offered */
    ck_assert_int_eq(got.zero_stage, 0);
    ck_assert(got.recompute);
    char out[8192] = "";
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    plan_print(f, &base, &c, (uint64_t)((double)z1.peak_rank0 / 0.9) + 2); /* 90% usable */
    fclose(f);
    ck_assert_ptr_nonnull(strstr(out, "predicted peak RSS"));
    ck_assert_ptr_nonnull(strstr(out, "fits       no; the cheapest change that fits: --set "
                                      "training.zero_stage=1 (predicted"));
    ck_assert_ptr_nonnull(strstr(out, "ZeRO 1, recompute none  micro-batch   16 x accum    1:"));
}
END_TEST

/* An async config over its limit: synchronous checkpoints (no snapshot on rank 0) come before
 * recomputation, after the ZeRO stages; a sync config is never told to go async. */
START_TEST(async_is_given_up_before_compute)
{
    struct cfg c;
    seed(&c);
    snprintf(c.checkpoint.mode, sizeof c.checkpoint.mode, "async");
    struct plan a, sy, q;
    struct plan_settings s = plan_settings_of(&c), got;
    ck_assert(s.async_ckpt);
    ck_assert_int_eq(plan_compute(&a, &c, 1, NULL, NULL), RZ_OK);
    s.async_ckpt = false;
    ck_assert_int_eq(plan_compute(&sy, &c, 1, &s, NULL), RZ_OK);
    ck_assert_uint_eq(sy.ckpt_snapshot, 0);
    ck_assert_uint_eq(a.peak_rank0 - sy.peak_rank0, 12 * (uint64_t)N_PARAMS);
    char text[400];
    ck_assert(plan_suggest(&got, &q, &c, 1, a.peak_rank0)); /* fits as it is */
    plan_describe_change(text, sizeof text, &c, &got);
    ck_assert_str_eq(text, "");
    /* one byte less: recomputation, async kept, would fit too; the order picks sync */
    struct plan rc;
    s = plan_settings_of(&c);
    s.recompute = true;
    ck_assert_int_eq(plan_compute(&rc, &c, 1, &s, NULL), RZ_OK);
    ck_assert_uint_lt(rc.peak_rank0, a.peak_rank0);
    ck_assert(plan_suggest(&got, &q, &c, 1, a.peak_rank0 - 1));
    ck_assert(!got.async_ckpt && !got.recompute && got.batch == 16);
    plan_describe_change(text, sizeof text, &c, &got);
    ck_assert_str_eq(text, "--set checkpoint.mode=sync");
    ck_assert(!plan_suggest(&got, &q, &c, 1, 1000)); /* the smallest candidate is sync */
    ck_assert(!got.async_ckpt && got.recompute && got.batch == 1);
    char out[8192] = "";
    FILE *f = fmemopen(out, sizeof out - 1, "w");
    plan_print(f, &a, &c, (uint64_t)((double)sy.peak_rank0 / 0.9) + 2);
    fclose(f);
    ck_assert_msg(strstr(out, "the cheapest change that fits: --set checkpoint.mode=sync "
                              "(predicted") != NULL, "%s", out);
    seed(&c); /* sync: async is never offered */
    ck_assert(!plan_suggest(&got, &q, &c, 1, 1000));
    ck_assert(!got.async_ckpt);
}
END_TEST

START_TEST(bad_world_and_sizes)
{
    struct cfg c;
    seed(&c);
    struct plan p;
    struct rz_err e;
    ck_assert_int_eq(plan_compute(&p, &c, 0, NULL, &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "world size 0"));
    uint64_t v = 0;
    ck_assert_int_eq(plan_parse_size("256G", &v, NULL), RZ_OK);
    ck_assert_uint_eq(v, (uint64_t)256 << 30);
    ck_assert_int_eq(plan_parse_size("1.5M", &v, NULL), RZ_OK);
    ck_assert_uint_eq(v, 1572864);
    ck_assert_int_eq(plan_parse_size("4096", &v, NULL), RZ_OK);
    ck_assert_uint_eq(v, 4096);
    const char *bad[] = {"", "G", "12Q", "-3G", "1GB", "nan"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(plan_parse_size(bad[i], &v, &e), RZ_ECONFIG);
        ck_assert_ptr_nonnull(strstr(e.msg, "expected bytes, or a number with K, M, G or T"));
    }
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, seed_model_by_hand);
    tcase_add_test(core, seed_model_zero2_recompute_on_four_ranks);
    tcase_add_test(core, async_checkpoints_add_the_snapshot_to_rank0);
    tcase_add_test(core, suggestions_in_order_of_cost);
    tcase_add_test(core, async_is_given_up_before_compute);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, bad_world_and_sizes);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(plan_suite());
}
