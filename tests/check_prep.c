/* check_prep.c: ryzen-data's logic (src/prep/).  Two small BPE tokenizers are trained once per
 * run, in main, from a generated corpus; every test forks from there.  The encode pipeline
 * writes the same bytes for 1, 2 and 3 threads and any chunk size (one byte: every line a chunk;
 * a line longer than a chunk; inputs that join mid-line; an empty input), and the same ids as
 * one tok_encode of the whole text; decode gives the bytes back in any block size; the entropy,
 * info, the sidecar and the manifest agree with what was written; and each error (missing
 * input, missing output directory, full disk, another tokenizer, a changed shard, bad usage)
 * names its file and leaves nothing partial. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "prep/prep.h"
#include "record/manifest.h"
#include "testutil.h"
#include "tok/tok.h"

static char fixture_dir[64];               /* made by main, removed at exit */
static char model_a[128], model_b[128];    /* two tokenizers of the same corpus */
static char text_path[3][128];             /* the text to encode, in three parts */
static char dir[64];                       /* each test's scratch directory */

static uint64_t rng_state;
static unsigned rnd_below(unsigned n)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (unsigned)((rng_state * 2685821657736338717ull) >> 33) % n;
}

static const char *const words[] = {
    "the", "of", "and", "to", "in", "is", "that", "it", "was", "for", "on", "are", "with",
    "they", "be", "at", "one", "have", "this", "from", "by", "hot", "word", "but", "what",
    "some", "we", "can", "out", "other", "were", "all", "there", "when", "up", "use", "fortune",
    "caf\xc3\xa9", "\xce\xbb\xcf\x8c\xce\xb3\xce\xbf\xcf\x82", "\xe6\x97\xa5\xe6\x9c\xac", "(1984)"};

/* Lines of words; every 40th line empty. */
static void put_words(FILE *f, size_t bytes)
{
    size_t n = 0;
    while (n < bytes) {
        int k = rnd_below(40) == 0 ? 0 : 1 + (int)rnd_below(12);
        for (int i = 0; i < k; i++)
            n += (size_t)fprintf(f, "%s%s", i > 0 ? " " : "", words[rnd_below(RZ_ARRAY_LEN(words))]);
        n += (size_t)fprintf(f, k > 0 ? ".\n" : "\n");
    }
}

static void write_file(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, len, f), len);
    ck_assert_int_eq(fclose(f), 0);
}

/* Fixture set-up runs outside any test: a failure ends the run. */
static void must(bool ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "check_prep: fixture: %s: %s\n", what, strerror(errno));
        exit(EXIT_FAILURE);
    }
}

/* The text to encode: words, then a 5000-byte line, invalid UTF-8 and an empty line (part 1),
 * a part that ends without a newline, then one that goes on with the same line (parts 2, 3). */
static void write_text(void)
{
    FILE *f = fopen(text_path[0], "wb");
    must(f != NULL, text_path[0]);
    put_words(f, 20000);
    for (int i = 0; i < 1000; i++)
        fputs(words[rnd_below(RZ_ARRAY_LEN(words))], f);
    fputs("\n\xff\xfe bad \xc3 bytes \x80\n\n", f);
    must(fclose(f) == 0, text_path[0]);
    f = fopen(text_path[1], "wb");
    must(f != NULL, text_path[1]);
    put_words(f, 8000);
    fputs("a line cut between two fi", f);
    must(fclose(f) == 0, text_path[1]);
    f = fopen(text_path[2], "wb");
    must(f != NULL, text_path[2]);
    fputs("les goes on here.\n", f);
    put_words(f, 4000);
    must(fclose(f) == 0, text_path[2]);
}

static void train(const char *corpus, const char *prefix, int64_t vocab, char *model, size_t len)
{
    const char *in[] = {corpus};
    struct tok_train_opts o = {.inputs = in, .n_inputs = 1, .model_prefix = prefix,
                               .vocab_size = vocab, .model_type = "bpe", .threads = 1};
    struct rz_err e;
    rz_err_clear(&e);
    if (tok_train(&o, &e) != RZ_OK) {
        fprintf(stderr, "check_prep: training the fixture tokenizer: %s\n", e.msg);
        exit(EXIT_FAILURE);
    }
    snprintf(model, len, "%s.model", prefix);
}

static void make_fixture(void)
{
    char corpus[128], prefix[128];
    snprintf(fixture_dir, sizeof fixture_dir, "/tmp/rz-prep-fixture-XXXXXX");
    must(mkdtemp(fixture_dir) != NULL, "mkdtemp");
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", fixture_dir);
    FILE *f = fopen(corpus, "wb");
    must(f != NULL, corpus);
    rng_state = 0x3939;
    put_words(f, 60000);
    must(fclose(f) == 0, corpus);
    snprintf(prefix, sizeof prefix, "%s/a", fixture_dir);
    train(corpus, prefix, 400, model_a, sizeof model_a);
    snprintf(prefix, sizeof prefix, "%s/b", fixture_dir);
    train(corpus, prefix, 300, model_b, sizeof model_b);
    for (int i = 0; i < 3; i++)
        snprintf(text_path[i], sizeof text_path[i], "%s/text-%d.txt", fixture_dir, i);
    write_text();
}

static void setup(void)
{
    rz_test_tmpdir(dir, sizeof dir, "prep");
}

static void teardown(void)
{
    rz_test_rmtree(dir);
}

static struct tok *load(const char *model)
{
    struct tok *t = NULL;
    struct rz_err e;
    ck_assert_msg(tok_load(&t, model, &e) == RZ_OK, "%s", e.msg);
    return t;
}

/* The whole file at `path` (NUL-terminated; caller frees). */
static char *slurp(const char *path, size_t *len)
{
    char *data = NULL;
    struct rz_err e;
    ck_assert_msg(rz_read_file(path, &data, len, &e) == RZ_OK, "%s", e.msg);
    return data;
}

/* The three parts, concatenated. */
static char *whole_text(size_t *len)
{
    size_t n[3];
    char *p[3];
    for (int i = 0; i < 3; i++)
        p[i] = slurp(text_path[i], &n[i]);
    char *all = malloc(n[0] + n[1] + n[2] + 1);
    ck_assert_ptr_nonnull(all);
    memcpy(all, p[0], n[0]);
    memcpy(all + n[0], p[1], n[1]);
    memcpy(all + n[0] + n[1], p[2], n[2]);
    *len = n[0] + n[1] + n[2];
    for (int i = 0; i < 3; i++)
        free(p[i]);
    return all;
}

static enum rz_status encode_to(const struct tok *t, const char *out, int threads, size_t chunk,
                                struct prep_encode_stats *st, struct rz_err *e)
{
    const char *in[] = {text_path[0], text_path[1], text_path[2]};
    struct prep_encode_opts o = {.inputs = in, .n_inputs = 3, .out = out, .threads = threads,
                                 .chunk_bytes = chunk};
    return prep_encode(t, &o, st, e);
}

/* All ids of a token file (caller frees). */
static int32_t *read_ids(const char *path, size_t *n)
{
    struct prep_ids r;
    struct rz_err e;
    ck_assert_msg(prep_ids_open(&r, path, 0, &e) == RZ_OK, "%s", e.msg);
    int32_t *ids = malloc((r.h.n_tokens + 1) * sizeof *ids);
    ck_assert_ptr_nonnull(ids);
    size_t got = 0, k = 1;
    while (k > 0) {
        ck_assert_msg(prep_ids_read(&r, ids + got, 777, &k, &e) == RZ_OK, "%s", e.msg);
        got += k;
    }
    ck_assert_uint_eq(got, r.h.n_tokens);
    prep_ids_close(&r);
    *n = got;
    return ids;
}

static bool same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    bool same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

/* ---- core ---- */

/* 1, 2, 3 threads and chunks of 1000, 100 and 1 byte and the default (1 MiB): the same file, whose ids are one
 * tok_encode of the whole text, and whose sidecar is its SHA-256 and name. */
START_TEST(encode_is_the_same_for_any_threads_and_chunks)
{
    struct tok *t = load(model_a);
    static const int threads[] = {1, 2, 3, 2, 3, 2};
    static const size_t chunks[] = {1000, 1000, 1000, 100, 1, 0};
    char first[128], out[128];
    struct rz_err e;
    for (size_t i = 0; i < RZ_ARRAY_LEN(threads); i++) {
        struct prep_encode_stats st;
        snprintf(out, sizeof out, "%s/t%zu.tok", dir, i);
        ck_assert_msg(encode_to(t, out, threads[i], chunks[i], &st, &e) == RZ_OK, "%s", e.msg);
        ck_assert_int_eq(st.threads, threads[i]);
        ck_assert_uint_gt(st.tokens, 10000);
        if (chunks[i] == 0)
            ck_assert_uint_eq(st.chunks, 1); /* 37 kB: less than one default chunk */
        else
            ck_assert_uint_gt(st.chunks, 30);
        if (i == 0)
            snprintf(first, sizeof first, "%s", out);
        else
            ck_assert_msg(same_file(first, out), "%s differs from %s", out, first);
    }
    size_t len, n;
    char *text = whole_text(&len);
    struct tok_ids want = {0};
    ck_assert(tok_encode(t, text, len, &want, &e) == RZ_OK);
    int32_t *got = read_ids(first, &n);
    ck_assert_uint_eq(n, want.n);
    ck_assert_int_eq(memcmp(got, want.ids, n * sizeof *got), 0);
    char hex[65], side[128], line[200];
    ck_assert(tokfile_sha256_file(first, hex, NULL, &e) == RZ_OK);
    rz_fmt(side, sizeof side, "%s.sha256", first);
    snprintf(line, sizeof line, "%s  t0.tok\n", hex);
    size_t sl;
    char *s = slurp(side, &sl);
    ck_assert_str_eq(s, line);
    free(s);
    free(got);
    free(text);
    tok_ids_free(&want);
    tok_free(t);
}
END_TEST

/* A line longer than the chunk grows it; an empty input is a file of 0 tokens; an empty file
 * among the inputs changes nothing. */
START_TEST(encode_chunk_edges)
{
    struct tok *t = load(model_a);
    char in[128], empty[128], out[128], out2[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(in, sizeof in, "%s/long.txt", dir);
    snprintf(empty, sizeof empty, "%s/empty.txt", dir);
    static char line[3001];
    memset(line, 'x', 3000);
    write_file(in, line, 3000); /* no newline at all */
    write_file(empty, "", 0);
    const char *one[] = {in}, *with_empty[] = {empty, in, empty}, *none[] = {empty};
    struct prep_encode_opts o = {.inputs = one, .n_inputs = 1, .out = out, .threads = 2,
                                 .chunk_bytes = 16};
    snprintf(out, sizeof out, "%s/long.tok", dir);
    ck_assert_msg(prep_encode(t, &o, &st, &e) == RZ_OK, "%s", e.msg);
    ck_assert_uint_eq(st.chunks, 1);
    ck_assert_uint_eq(st.bytes, 3000);
    snprintf(out2, sizeof out2, "%s/long2.tok", dir);
    o = (struct prep_encode_opts){.inputs = with_empty, .n_inputs = 3, .out = out2,
                                  .threads = 3, .chunk_bytes = 7};
    ck_assert_msg(prep_encode(t, &o, &st, &e) == RZ_OK, "%s", e.msg);
    ck_assert(same_file(out, out2));
    o = (struct prep_encode_opts){.inputs = none, .n_inputs = 1, .out = out2, .threads = 1};
    ck_assert_msg(prep_encode(t, &o, &st, &e) == RZ_OK, "%s", e.msg);
    ck_assert_uint_eq(st.tokens, 0);
    struct prep_info i;
    ck_assert_msg(prep_info_read(out2, &i, &e) == RZ_OK, "%s", e.msg);
    ck_assert_uint_eq(i.h.n_tokens, 0);
    ck_assert_uint_eq(i.bytes, TOKFILE_HEADER_BYTES);
    ck_assert(i.entropy == 0);
    tok_free(t);
}
END_TEST

/* The default chunk: a 300 kB input on 2 threads is several 64 KiB chunks, not one of 1 MiB. */
START_TEST(encode_default_chunk_keeps_threads_busy)
{
    struct tok *t = load(model_a);
    char in[128], out[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(in, sizeof in, "%s/300k.txt", dir);
    snprintf(out, sizeof out, "%s/300k.tok", dir);
    FILE *f = fopen(in, "wb");
    ck_assert_ptr_nonnull(f);
    for (int i = 0; i < 20000; i++)
        fputs("the word of one.\n", f);
    ck_assert_int_eq(fclose(f), 0);
    const char *one[] = {in};
    struct prep_encode_opts o = {.inputs = one, .n_inputs = 1, .out = out, .threads = 2};
    ck_assert_msg(prep_encode(t, &o, &st, &e) == RZ_OK, "%s", e.msg);
    ck_assert_uint_eq(st.bytes, 20000 * 17);
    ck_assert_uint_eq(st.chunks, (20000 * 17 + (64 << 10) - 1) / (64 << 10));
    tok_free(t);
}
END_TEST

/* decode gives the input's bytes back whole, in blocks of 1 and 7 ids, and a slice is the
 * decoded text of exactly those ids; --width 4 holds the same ids. */
START_TEST(decode_round_trip)
{
    struct tok *t = load(model_a);
    char out[128], txt[128], wide[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(out, sizeof out, "%s/rt.tok", dir);
    ck_assert_msg(encode_to(t, out, 2, 0, &st, &e) == RZ_OK, "%s", e.msg);
    size_t len, got_len, n;
    char *text = whole_text(&len);
    static const size_t blocks[] = {0, 1, 7};
    snprintf(txt, sizeof txt, "%s/rt.txt", dir);
    for (size_t b = 0; b < RZ_ARRAY_LEN(blocks); b++) {
        FILE *f = fopen(txt, "wb");
        struct prep_decode_opts o = {.path = out, .count = UINT64_MAX, .block_ids = blocks[b],
                                     .out = f};
        ck_assert_msg(prep_decode(t, &o, &e) == RZ_OK, "%s", e.msg);
        fclose(f);
        char *got = slurp(txt, &got_len);
        ck_assert_uint_eq(got_len, len);
        ck_assert_msg(memcmp(got, text, len) == 0, "block %zu: not the input", blocks[b]);
        free(got);
    }
    int32_t *ids = read_ids(out, &n);
    FILE *f = fopen(txt, "wb");
    struct prep_decode_opts o = {.path = out, .first = 100, .count = 50, .out = f};
    ck_assert_msg(prep_decode(t, &o, &e) == RZ_OK, "%s", e.msg);
    fclose(f);
    char *want = NULL, *got = slurp(txt, &got_len);
    size_t want_len;
    ck_assert(tok_decode(t, ids + 100, 50, &want, &want_len, &e) == RZ_OK);
    ck_assert_uint_eq(got_len, want_len);
    ck_assert_int_eq(memcmp(got, want, want_len), 0);
    snprintf(wide, sizeof wide, "%s/wide.tok", dir);
    const char *in[] = {text_path[0], text_path[1], text_path[2]};
    struct prep_encode_opts eo = {.inputs = in, .n_inputs = 3, .out = wide, .width = 4,
                                  .threads = 1};
    ck_assert_msg(prep_encode(t, &eo, &st, &e) == RZ_OK, "%s", e.msg);
    size_t n4;
    int32_t *ids4 = read_ids(wide, &n4);
    ck_assert_uint_eq(n4, n);
    ck_assert_int_eq(memcmp(ids4, ids, n * sizeof *ids), 0);
    free(ids4);
    free(want);
    free(got);
    free(ids);
    free(text);
    tok_free(t);
}
END_TEST

START_TEST(entropy_of_counts)
{
    static const uint64_t two[] = {1, 1}, one[] = {0, 4, 0, 0}, four[] = {3, 3, 3, 3},
                          skew[] = {2, 1, 1};
    ck_assert_double_eq_tol(prep_entropy_of_counts(two, 2), log(2.0), 1e-12);
    ck_assert(prep_entropy_of_counts(one, 4) == 0);
    ck_assert_double_eq_tol(prep_entropy_of_counts(four, 4), log(4.0), 1e-12);
    /* -(1/2 ln 1/2 + 2 * 1/4 ln 1/4) = 1.5 ln 2 */
    ck_assert_double_eq_tol(prep_entropy_of_counts(skew, 3), 1.5 * log(2.0), 1e-12);
    ck_assert(prep_entropy_of_counts(one, 0) == 0);
}
END_TEST

/* info: the header as written, and the entropy of the ids counted here; --json says the same. */
START_TEST(info_of_a_token_file)
{
    struct tok *t = load(model_a);
    char out[128], js[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(out, sizeof out, "%s/i.tok", dir);
    ck_assert_msg(encode_to(t, out, 1, 0, &st, &e) == RZ_OK, "%s", e.msg);
    struct prep_info i;
    ck_assert_msg(prep_info_read(out, &i, &e) == RZ_OK, "%s", e.msg);
    ck_assert(!i.is_manifest);
    ck_assert_uint_eq(i.h.n_tokens, st.tokens);
    ck_assert_uint_eq(i.h.vocab_size, 400);
    ck_assert_uint_eq(i.h.width, 2);
    ck_assert_uint_eq(i.bytes, TOKFILE_HEADER_BYTES + 2 * st.tokens);
    char sha[65];
    tokfile_sha_hex(&i.h, sha);
    ck_assert_str_eq(sha, tok_sha256_hex(t));
    size_t n;
    int32_t *ids = read_ids(out, &n);
    uint64_t *counts = calloc(400, sizeof *counts);
    for (size_t k = 0; k < n; k++)
        counts[ids[k]]++;
    double h = prep_entropy_of_counts(counts, 400);
    ck_assert(h > 1.0 && h < log(400.0));
    ck_assert(i.entropy == h);
    snprintf(js, sizeof js, "%s/i.json", dir);
    FILE *f = fopen(js, "w");
    prep_info_print(f, out, &i, true);
    fclose(f);
    size_t len;
    char *j = slurp(js, &len), want[200];
    snprintf(want, sizeof want, "\"tokens\":%llu", (unsigned long long)st.tokens);
    ck_assert_ptr_nonnull(strstr(j, want));
    snprintf(want, sizeof want, "\"tokenizer_sha256\":\"%s\"", sha);
    ck_assert_ptr_nonnull(strstr(j, want));
    ck_assert_ptr_nonnull(strstr(j, "\"unigram_entropy\":"));
    free(j);
    free(counts);
    free(ids);
    tok_free(t);
}
END_TEST

/* Encode each part as a shard under DIR/shards/; the manifest in DIR names them relative to it. */
static void three_shards(const struct tok *t, char shard[3][128], char *manifest, size_t len)
{
    char sub[128];
    struct rz_err e;
    snprintf(sub, sizeof sub, "%s/shards", dir);
    ck_assert_int_eq(mkdir(sub, 0755), 0);
    for (int i = 0; i < 3; i++) {
        const char *in[] = {text_path[i]};
        struct prep_encode_stats st;
        rz_fmt(shard[i], 128, "%s/shard-%05d.tok", sub, i);
        struct prep_encode_opts o = {.inputs = in, .n_inputs = 1, .out = shard[i],
                                     .threads = 2};
        ck_assert_msg(prep_encode(t, &o, &st, &e) == RZ_OK, "%s", e.msg);
    }
    snprintf(manifest, len, "%s/manifest.json", dir);
}

START_TEST(manifest_over_three_shards)
{
    struct tok *t = load(model_a);
    char shard[3][128], manifest[128];
    const char *paths[3];
    struct rz_err e;
    three_shards(t, shard, manifest, sizeof manifest);
    for (int i = 0; i < 3; i++)
        paths[i] = shard[i];
    uint64_t total = 0;
    ck_assert_msg(prep_manifest(manifest, paths, 3, &total, &e) == RZ_OK, "%s", e.msg);
    struct manifest *m = NULL;
    ck_assert_msg(manifest_read(manifest, &m, &e) == RZ_OK, "%s", e.msg);
    ck_assert_uint_eq(m->n_shards, 3);
    ck_assert_str_eq(m->shards[1].path, "shards/shard-00001.tok");
    ck_assert_str_eq(m->tokenizer_sha256, tok_sha256_hex(t));
    ck_assert_uint_eq(m->tokens, total);
    ck_assert_uint_eq(m->vocab_size, 400);
    ck_assert_msg(manifest_verify(m, &e) == RZ_OK, "%s", e.msg);
    struct prep_info i;
    ck_assert_msg(prep_info_read(manifest, &i, &e) == RZ_OK, "%s", e.msg);
    ck_assert(i.is_manifest);
    ck_assert_uint_eq(i.n_shards, 3);
    ck_assert_uint_eq(i.h.n_tokens, total);
    double h;
    ck_assert(prep_unigram_entropy(paths, 3, 400, &h, &e) == RZ_OK);
    ck_assert(i.entropy == h && h > 1.0);
    manifest_free(m);
    tok_free(t);
}
END_TEST

START_TEST(relative_paths)
{
    char a[128], b[128], f[128], rel[256];
    struct rz_err e;
    snprintf(a, sizeof a, "%s/x/y", dir);
    snprintf(b, sizeof b, "%s/x/z", dir);
    ck_assert(rz_mkdirs(a, &e) == RZ_OK && rz_mkdirs(b, &e) == RZ_OK);
    rz_fmt(f, sizeof f, "%s/s.tok", b);
    write_file(f, "x", 1);
    ck_assert(prep_relative_path(a, f, rel, sizeof rel, &e) == RZ_OK);
    ck_assert_str_eq(rel, "../z/s.tok");
    ck_assert(prep_relative_path(b, f, rel, sizeof rel, &e) == RZ_OK);
    ck_assert_str_eq(rel, "s.tok");
    snprintf(a, sizeof a, "%s/x/../x/y/", dir);
    ck_assert(prep_relative_path(a, f, rel, sizeof rel, &e) == RZ_OK);
    ck_assert_str_eq(rel, "../z/s.tok");
}
END_TEST

/* On a terminal: progress lines (bytes, MB/s); always: one summary line. */
START_TEST(progress_and_summary)
{
    struct tok *t = load(model_a);
    char out[128], log_path[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(out, sizeof out, "%s/p.tok", dir);
    snprintf(log_path, sizeof log_path, "%s/log", dir);
    const char *in[] = {text_path[0], text_path[1], text_path[2]};
    for (int tty = 0; tty < 2; tty++) {
        FILE *log = fopen(log_path, "w");
        struct prep_encode_opts o = {.inputs = in, .n_inputs = 3, .out = out, .threads = 2,
                                     .chunk_bytes = 1000, .log = log, .tty = tty};
        ck_assert_msg(prep_encode(t, &o, &st, &e) == RZ_OK, "%s", e.msg);
        fclose(log);
        size_t len;
        char *text = slurp(log_path, &len), want[256];
        snprintf(want, sizeof want, "ryzen-data: encode: %llu tokens from %llu bytes of 3 "
                 "file(s) in ", (unsigned long long)st.tokens, (unsigned long long)st.bytes);
        ck_assert_msg(strstr(text, want) != NULL, "no summary in: %s", text);
        ck_assert_ptr_nonnull(strstr(text, "on 2 thread(s)"));
        ck_assert_ptr_nonnull(strstr(text, "tokens/byte -> "));
        ck_assert_int_eq(strstr(text, "\r") != NULL, tty);
        ck_assert_int_eq(strstr(text, " MB (") != NULL, tty);
        free(text);
    }
    tok_free(t);
}
END_TEST

START_TEST(default_threads)
{
    ck_assert_int_eq(prep_default_threads("3"), 3);
    ck_assert_int_eq(prep_default_threads("100000"), PREP_MAX_THREADS);
    int cpus = prep_default_threads(NULL);
    ck_assert_int_ge(cpus, 1);
    ck_assert_int_eq(prep_default_threads("0"), cpus);
    ck_assert_int_eq(prep_default_threads("4x"), cpus);
}
END_TEST

/* ---- errors ---- */

/* Nothing in `d` but `keep` (may be NULL). */
static bool only_file(const char *d, const char *keep)
{
    DIR *dd = opendir(d);
    ck_assert_ptr_nonnull(dd);
    struct dirent *de;
    bool only = true;
    while ((de = readdir(dd)) != NULL)
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
            (keep == NULL || strcmp(de->d_name, keep) != 0)) {
            fprintf(stderr, "check_prep: %s/%s is left\n", d, de->d_name);
            only = false;
        }
    closedir(dd);
    return only;
}

START_TEST(encode_refuses_missing_input_and_output_dir)
{
    struct tok *t = load(model_a);
    char out[128], missing[128], nodir[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(out, sizeof out, "%s/x.tok", dir);
    snprintf(missing, sizeof missing, "%s/none.txt", dir);
    const char *in[] = {text_path[0], missing};
    struct prep_encode_opts o = {.inputs = in, .n_inputs = 2, .out = out, .threads = 2};
    ck_assert_int_eq(prep_encode(t, &o, &st, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, missing) && strstr(e.msg, "No such file"), "%s", e.msg);
    ck_assert(only_file(dir, NULL));
    in[1] = dir;
    ck_assert_int_eq(prep_encode(t, &o, &st, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, "is a directory"), "%s", e.msg);
    snprintf(nodir, sizeof nodir, "%s/nodir/x.tok", dir);
    o = (struct prep_encode_opts){.inputs = in, .n_inputs = 1, .out = nodir, .threads = 1};
    ck_assert_int_eq(prep_encode(t, &o, &st, &e), RZ_ECONFIG);
    ck_assert_msg(strstr(e.msg, "/nodir' does not exist"), "%s", e.msg);
    o.out = dir;
    ck_assert_int_eq(prep_encode(t, &o, &st, &e), RZ_ECONFIG);
    ck_assert_msg(strstr(e.msg, "is a directory: name a file"), "%s", e.msg);
    o.out = out;
    o.threads = 0;
    ck_assert_int_eq(prep_encode(t, &o, &st, &e), RZ_ECONFIG);
    ck_assert(only_file(dir, NULL));
    tok_free(t);
}
END_TEST

/* A full disk (here: the file-size limit) is an I/O error that leaves no temporary file, no
 * sidecar, and the older token file as it was. */
START_TEST(encode_full_disk_leaves_nothing_partial)
{
    struct tok *t = load(model_a);
    char out[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(out, sizeof out, "%s/full.tok", dir);
    write_file(out, "old", 3);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    enum rz_status s = encode_to(t, out, 2, 1000, &st, &e);
    lim.rlim_cur = RLIM_INFINITY;
    setrlimit(RLIMIT_FSIZE, &lim);
    ck_assert_msg(s == RZ_EIO, "%d: %s", s, e.msg);
    ck_assert_msg(strstr(e.msg, "full.tok"), "%s", e.msg);
    ck_assert(only_file(dir, "full.tok"));
    size_t len;
    char *old = slurp(out, &len);
    ck_assert_str_eq(old, "old");
    free(old);
    tok_free(t);
}
END_TEST

START_TEST(decode_refuses_another_tokenizer)
{
    struct tok *a = load(model_a), *b = load(model_b);
    char out[128];
    struct rz_err e;
    struct prep_encode_stats st;
    snprintf(out, sizeof out, "%s/a.tok", dir);
    ck_assert_msg(encode_to(a, out, 1, 0, &st, &e) == RZ_OK, "%s", e.msg);
    struct prep_decode_opts o = {.path = out, .count = UINT64_MAX, .out = stdout};
    ck_assert_int_eq(prep_decode(b, &o, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, tok_sha256_hex(a)) && strstr(e.msg, tok_sha256_hex(b)) &&
                      strstr(e.msg, model_b),
                  "%s", e.msg);
    o.first = st.tokens + 1;
    ck_assert_int_eq(prep_decode(a, &o, &e), RZ_ECONFIG);
    ck_assert_msg(strstr(e.msg, "past its"), "%s", e.msg);
    o.path = text_path[0];
    o.first = 0;
    ck_assert_int_eq(prep_decode(a, &o, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, "no token-file header"), "%s", e.msg);
    tok_free(a);
    tok_free(b);
}
END_TEST

/* manifest refuses a changed shard (naming it and both hashes), a shard without its sidecar,
 * and shards of two tokenizers; verify names a shard changed after the manifest. */
START_TEST(manifest_refuses_what_does_not_match)
{
    struct tok *a = load(model_a), *b = load(model_b);
    char shard[3][128], manifest[128], side[140], other[128];
    const char *paths[3];
    struct rz_err e;
    three_shards(a, shard, manifest, sizeof manifest);
    for (int i = 0; i < 3; i++)
        paths[i] = shard[i];
    ck_assert_msg(prep_manifest(manifest, paths, 3, NULL, &e) == RZ_OK, "%s", e.msg);
    FILE *f = fopen(shard[1], "r+b");
    fseek(f, TOKFILE_HEADER_BYTES + 10, SEEK_SET);
    int c = fgetc(f);
    fseek(f, TOKFILE_HEADER_BYTES + 10, SEEK_SET);
    fputc(c ^ 1, f);
    fclose(f);
    struct manifest *m = NULL;
    ck_assert(manifest_read(manifest, &m, &e) == RZ_OK);
    ck_assert_int_eq(manifest_verify(m, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, "shard-00001.tok"), "%s", e.msg);
    manifest_free(m);
    ck_assert_int_eq(prep_manifest(manifest, paths, 3, NULL, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, shard[1]) && strstr(e.msg, "changed"), "%s", e.msg);
    snprintf(side, sizeof side, "%s.sha256", shard[0]);
    ck_assert_int_eq(unlink(side), 0);
    ck_assert_int_eq(prep_manifest(manifest, paths, 3, NULL, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, side), "%s", e.msg);
    snprintf(other, sizeof other, "%s/other.tok", dir);
    const char *in[] = {text_path[2]};
    struct prep_encode_stats st;
    struct prep_encode_opts o = {.inputs = in, .n_inputs = 1, .out = other, .threads = 1};
    ck_assert(prep_encode(b, &o, &st, &e) == RZ_OK);
    paths[0] = shard[2];
    paths[1] = other;
    ck_assert_int_eq(prep_manifest(manifest, paths, 2, NULL, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, other) && strstr(e.msg, tok_sha256_hex(b)), "%s", e.msg);
    paths[1] = text_path[0];
    ck_assert_int_eq(prep_manifest(manifest, paths, 2, NULL, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, "no token-file header"), "%s", e.msg);
    snprintf(other, sizeof other, "%s/nodir/manifest.json", dir);
    ck_assert_int_eq(prep_manifest(other, paths, 1, NULL, &e), RZ_ECONFIG);
    ck_assert_msg(strstr(e.msg, "/nodir' does not exist"), "%s", e.msg);
    tok_free(a);
    tok_free(b);
}
END_TEST

/* The command line: usage errors are RZ_ECONFIG naming the problem; --help answers RZ_OK. */
START_TEST(command_line_errors)
{
    char log_path[128];
    snprintf(log_path, sizeof log_path, "%s/out", dir);
    FILE *out = fopen(log_path, "w");
    struct prep_env env = {.out = out, .log = out};
    static const struct {
        const char *args[6];
        enum rz_status st;
        const char *msg;
    } cases[] = {
        {{"ryzen-data"}, RZ_ECONFIG, "a subcommand is required"},
        {{"ryzen-data", "bogus"}, RZ_ECONFIG, "unknown subcommand 'bogus'"},
        {{"ryzen-data", "tokenizer", "eat"}, RZ_ECONFIG, "tokenizer train"},
        {{"ryzen-data", "encode", "--bogus"}, RZ_ECONFIG, "unknown option '--bogus'"},
        {{"ryzen-data", "encode", "--json"}, RZ_ECONFIG, "encode does not take --json"},
        {{"ryzen-data", "encode", "--width", "3"}, RZ_ECONFIG, "--width is 2 or 4"},
        {{"ryzen-data", "encode", "--threads", "0"}, RZ_ECONFIG, "--threads needs"},
        {{"ryzen-data", "encode", "--out"}, RZ_ECONFIG, "'--out' needs a value"},
        {{"ryzen-data", "encode", "--out", "x.tok"}, RZ_ECONFIG, "encode needs --tokenizer"},
        {{"ryzen-data", "verify"}, RZ_ECONFIG, "verify needs one MANIFEST"},
        {{"ryzen-data", "info", "/nonexistent.tok"}, RZ_EDATA, "/nonexistent.tok"},
        {{"ryzen-data", "encode", "--help"}, RZ_OK, ""},
        {{"ryzen-data", "--version"}, RZ_OK, ""},
    };
    for (size_t i = 0; i < RZ_ARRAY_LEN(cases); i++) {
        char *argv[7] = {0};
        int argc = 0;
        while (argc < 6 && cases[i].args[argc] != NULL) {
            argv[argc] = (char *)cases[i].args[argc];
            argc++;
        }
        struct rz_err e;
        rz_err_clear(&e);
        enum rz_status s = prep_run(&env, argc, argv, &e);
        ck_assert_msg(s == cases[i].st, "case %zu: status %d: %s", i, s, e.msg);
        ck_assert_msg(strstr(e.msg, cases[i].msg) != NULL, "case %zu: %s", i, e.msg);
    }
    fclose(out);
    size_t len;
    char *text = slurp(log_path, &len);
    ck_assert_ptr_nonnull(strstr(text, "usage: ryzen-data tokenizer train"));
    ck_assert_ptr_nonnull(strstr(text, "ryzen-data (ryzen-llm)"));
    free(text);
}
END_TEST

static Suite *prep_suite(void)
{
    Suite *s = suite_create("prep");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, encode_is_the_same_for_any_threads_and_chunks);
    tcase_add_test(core, encode_chunk_edges);
    tcase_add_test(core, encode_default_chunk_keeps_threads_busy);
    tcase_add_test(core, decode_round_trip);
    tcase_add_test(core, entropy_of_counts);
    tcase_add_test(core, info_of_a_token_file);
    tcase_add_test(core, manifest_over_three_shards);
    tcase_add_test(core, relative_paths);
    tcase_add_test(core, progress_and_summary);
    tcase_add_test(core, default_threads);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, teardown);
    tcase_add_test(errors, encode_refuses_missing_input_and_output_dir);
    tcase_add_test(errors, encode_full_disk_leaves_nothing_partial);
    tcase_add_test(errors, decode_refuses_another_tokenizer);
    tcase_add_test(errors, manifest_refuses_what_does_not_match);
    tcase_add_test(errors, command_line_errors);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    make_fixture();
    int rc = rz_test_main(prep_suite());
    rz_test_rmtree(fixture_dir);
    return rc;
}
