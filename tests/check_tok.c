/* check_tok.c: the tokenizer (src/tok/tok.h on SentencePiece).  One small BPE model is trained
 * once per run, in main, from a generated corpus (no package data needed); every test forks
 * from there and loads it.  The round trip is exact for any bytes (random UTF-8, invalid bytes,
 * empty lines, text without a final newline), a text encodes the same whole or cut at line
 * ends, two threads encode alike, the identity is the SHA-256 of the .model file, and each
 * error names its file or id.  Where Debian's spm_encode is on PATH, our ids for valid UTF-8
 * lines are compared with its own. */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/hooks.h"
#include "core/sha256.h"
#include "core/util.h"
#include "testutil.h"
#include "tok/tok.h"

enum { VOCAB = 600 };

static char fixture_dir[64];        /* made by main, removed at exit */
static char corpus_path[128];       /* the generated corpus */
static char model_path[160];        /* its tokenizer: PREFIX.model */
static char prefix[128];

/* xorshift64*: the same texts on every run. */
static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}
static unsigned rnd_below(unsigned n) { return (unsigned)(rnd() >> 33) % n; }

/* A corpus of about 150 kB: sentences of English and some accented, Greek, CJK and emoji
 * words, with tabs, runs of spaces, digits and empty lines. */
static int write_corpus(const char *path)
{
    static const char *const words[] = {
        "the", "of", "and", "to", "in", "is", "that", "it", "was", "for", "on", "are", "with",
        "they", "be", "at", "one", "have", "this", "from", "by", "hot", "word", "but", "what",
        "some", "we", "can", "out", "other", "were", "all", "there", "when", "up", "use", "your",
        "how", "said", "an", "each", "she", "which", "do", "their", "time", "if", "will", "way",
        "about", "many", "then", "them", "write", "would", "like", "so", "these", "her", "long",
        "make", "thing", "see", "him", "two", "has", "look", "more", "day", "could", "go",
        "come", "did", "number", "sound", "no", "most", "people", "my", "over", "know", "water",
        "than", "call", "first", "who", "may", "down", "side", "been", "now", "find", "fortune",
        "caf\xc3\xa9", "na\xc3\xafve", "Stra\xc3\x9f" "e", "\xce\xbb\xcf\x8c\xce\xb3\xce\xbf\xcf\x82",
        "\xe6\x97\xa5\xe6\x9c\xac", "\xf0\x9f\x99\x82", "--", "(1984)", "\"quoted\""};
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        return -1;
    rng_state = 0x39;
    size_t bytes = 0;
    while (bytes < 150000) {
        int n = 3 + (int)rnd_below(12);
        if (rnd_below(8) == 0)
            bytes += (size_t)fprintf(f, "\t");
        for (int i = 0; i < n; i++)
            bytes += (size_t)fprintf(f, "%s%s", i > 0 ? (rnd_below(20) == 0 ? "  " : " ") : "",
                                     words[rnd_below(sizeof words / sizeof *words)]);
        bytes += (size_t)fprintf(f, rnd_below(10) == 0 ? ".\n\n" : ".\n");
    }
    return fclose(f);
}

static struct tok *load_fixture(void)
{
    struct tok *t = NULL;
    struct rz_err e = {0};
    enum rz_status st = tok_load(&t, model_path, &e);
    ck_assert_msg(st == RZ_OK, "load %s: %s", model_path, e.msg);
    return t;
}

/* Encode, decode, and compare bytes and length; returns the number of ids. */
static size_t round_trip(const struct tok *t, const char *text, size_t len)
{
    struct tok_ids ids = {0};
    struct rz_err e = {0};
    char *back = NULL;
    size_t back_len = 0;
    ck_assert_msg(tok_encode(t, text, len, &ids, &e) == RZ_OK, "encode: %s", e.msg);
    for (size_t i = 0; i < ids.n; i++)
        ck_assert(ids.ids[i] >= 0 && ids.ids[i] < VOCAB);
    ck_assert_msg(tok_decode(t, ids.ids, ids.n, &back, &back_len, &e) == RZ_OK, "%s", e.msg);
    ck_assert_uint_eq(back_len, len);
    ck_assert_msg(memcmp(back, text, len) == 0, "round trip changed the text");
    ck_assert_int_eq(back[len], '\0');
    size_t n = ids.n;
    free(back);
    tok_ids_free(&ids);
    return n;
}

/* The UTF-8 bytes of code point c into out; their number. */
static size_t utf8_put(uint32_t c, unsigned char *out)
{
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (unsigned char)(0xc0 | c >> 6);
        out[1] = (unsigned char)(0x80 | (c & 0x3f));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xe0 | c >> 12);
        out[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
        out[2] = (unsigned char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (unsigned char)(0xf0 | c >> 18);
    out[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
    out[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
    out[3] = (unsigned char)(0x80 | (c & 0x3f));
    return 4;
}

/* A random valid code point: 1 to 4 UTF-8 bytes, the separators, U+2581 itself. */
static uint32_t random_code_point(void)
{
    static const uint32_t special[] = {' ', '\t', '\r', '\n', 0x2581, 0xfffd, 0xfeff, 0x2047};
    switch (rnd_below(6)) {
    case 0: return special[rnd_below(sizeof special / sizeof *special)];
    case 1: return 0x20 + rnd_below(0x5f);
    case 2: return 0x80 + rnd_below(0x800 - 0x80);
    case 3: {
        uint32_t c = 0x800 + rnd_below(0x10000 - 0x800);
        return c >= 0xd800 && c < 0xe000 ? c + 0x800 : c; /* no surrogates */
    }
    case 4: return 0x10000 + rnd_below(0x110000 - 0x10000);
    default: return "etaoin shrdlu"[rnd_below(13)];
    }
}

START_TEST(round_trip_random_utf8)
{
    struct tok *t = load_fixture();
    unsigned char buf[4096];
    rng_state = 0x2581;
    for (int k = 0; k < 300; k++) {
        size_t len = 0, n = rnd_below(400);
        for (size_t i = 0; i < n; i++)
            len += utf8_put(random_code_point(), buf + len);
        round_trip(t, (const char *)buf, len);
    }
    tok_free(t);
}
END_TEST

START_TEST(round_trip_invalid_bytes)
{
    static const struct { const char *s; size_t n; } cases[] = {
        {"\x80", 1}, {"a\xbf" "b", 3},                       /* lone continuation bytes */
        {"\xc0\x80", 2}, {"\xc1\xbf", 2}, {"\xe0\x80\x80", 3}, {"\xf0\x80\x80\x80", 4},
        {"x\xe2\x82", 3}, {"\xf0\x9f\x99", 3}, {"\xe2\x82 y", 4}, /* truncated */
        {"\xff", 1}, {"\xfe\xff", 2}, {"\xf5\x80\x80\x80", 4}, {"\xf4\x90\x80\x80", 4},
        {"\xed\xa0\x80", 3}, {"\xed\xbf\xbf", 3},              /* surrogates */
        {"\0", 1}, {"a\0b\0\0c", 6}, {"caf\xe9 na\xefve\n", 11},  /* NUL, Latin-1 */
        {"\xe2\x96\x81", 3}, {" \xe2\x96\x81 ", 5},          /* U+2581 itself */
        {"<0x41><s></s><unk>", 18},                            /* piece names as text */
    };
    struct tok *t = load_fixture();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        round_trip(t, cases[i].s, cases[i].n);
    /* An invalid byte is one byte piece of its own. */
    struct tok_ids ids = {0};
    struct rz_err e = {0};
    ck_assert_int_eq(tok_encode(t, "\xff", 1, &ids, &e), RZ_OK);
    ck_assert_uint_eq(ids.n, 1);
    ck_assert_int_eq(tok_encode(t, "\x80\x80\x80", 3, &ids, &e), RZ_OK);
    ck_assert_uint_eq(ids.n, 4);
    ck_assert_int_eq(ids.ids[1], ids.ids[2]);
    tok_ids_free(&ids);
    /* Random bytes, any of them. */
    unsigned char buf[1024];
    rng_state = 0xff;
    for (int k = 0; k < 200; k++) {
        size_t n = rnd_below(sizeof buf);
        for (size_t j = 0; j < n; j++)
            buf[j] = (unsigned char)rnd();
        round_trip(t, (const char *)buf, n);
    }
    tok_free(t);
}
END_TEST

START_TEST(round_trip_lines)
{
    static const char *const cases[] = {"", "\n", "\n\n\n", "a\n\nb\n", "\r\n", "   ", "  lead",
                                        "trail  \n", "\tindented\n  two  spaces  \n",
                                        "no newline at the end", "the end.\n"};
    struct tok *t = load_fixture();
    size_t n[sizeof cases / sizeof *cases];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        n[i] = round_trip(t, cases[i], strlen(cases[i]));
    ck_assert_uint_eq(n[0], 0);  /* nothing: no ids */
    ck_assert_uint_eq(n[1], 1);  /* a newline: <0x0A> */
    ck_assert_uint_eq(n[2], 3);
    tok_free(t);
}
END_TEST

/* The whole corpus fixture, and random lines; appended to ids of a previous call. */
START_TEST(whole_equals_cut_at_line_ends)
{
    struct tok *t = load_fixture();
    char *text = NULL;
    size_t len = 0;
    struct rz_err e = {0};
    ck_assert_int_eq(rz_read_file(corpus_path, &text, &len, &e), RZ_OK);
    struct tok_ids whole = {0}, cut = {0};
    ck_assert_int_eq(tok_encode(t, text, len, &whole, &e), RZ_OK);
    ck_assert_uint_gt(whole.n, len / 8);   /* it does merge: fewer ids than bytes */
    ck_assert_uint_lt(whole.n, len / 2);
    size_t pos = 0, lines = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl != NULL ? (size_t)(nl - text) + 1 : len;
        ck_assert_int_eq(tok_encode(t, text + pos, end - pos, &cut, &e), RZ_OK);
        pos = end;
        lines++;
    }
    ck_assert_uint_gt(lines, 1000);
    ck_assert_uint_eq(cut.n, whole.n);
    ck_assert(memcmp(cut.ids, whole.ids, whole.n * sizeof *whole.ids) == 0);
    ck_assert_uint_eq(round_trip(t, text, len), whole.n);
    tok_ids_free(&whole);
    tok_ids_free(&cut);
    free(text);
    tok_free(t);
}
END_TEST

START_TEST(vocab_and_sha256_of_the_model_file)
{
    struct tok *t = load_fixture();
    ck_assert_int_eq(tok_vocab_size(t), VOCAB);
    ck_assert_str_eq(tok_model_path(t), model_path);
    char *bytes = NULL;
    size_t len = 0;
    struct rz_err e = {0};
    ck_assert_int_eq(rz_read_file(model_path, &bytes, &len, &e), RZ_OK);
    char hex[65];
    rz_sha256_hex(bytes, len, hex);
    ck_assert_str_eq(tok_sha256_hex(t), hex);
    uint8_t raw[32];
    char raw_hex[65];
    tok_sha256(t, raw);
    rz_sha256_to_hex(raw, raw_hex);
    ck_assert_str_eq(raw_hex, hex);
    /* sha256sum agrees. */
    char cmd[256], line[256] = "";
    snprintf(cmd, sizeof cmd, "sha256sum '%s'", model_path);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    ck_assert_ptr_nonnull(fgets(line, sizeof line, p));
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_int_eq(strncmp(line, hex, 64), 0);
    /* PREFIX.vocab: one "piece<TAB>score" line per id. */
    char vocab[160];
    snprintf(vocab, sizeof vocab, "%s.vocab", prefix);
    FILE *f = fopen(vocab, "r");
    ck_assert_ptr_nonnull(f);
    int lines = 0;
    while (fgets(line, sizeof line, f) != NULL)
        lines += strchr(line, '\t') != NULL;
    fclose(f);
    ck_assert_int_eq(lines, VOCAB);
    /* A second load: the same identity. */
    struct tok *t2 = load_fixture();
    ck_assert_str_eq(tok_sha256_hex(t2), hex);
    tok_free(t2);
    free(bytes);
    tok_free(t);
}
END_TEST

/* Train a tokenizer on the fixture corpus into DIR/NAME.model and load it. */
static struct tok *train_fixture_copy(const char *dir, const char *name, int64_t vocab,
                                      const char *type, int threads)
{
    char pre[128], path[160];
    snprintf(pre, sizeof pre, "%s/%s", dir, name);
    snprintf(path, sizeof path, "%s.model", pre);
    const char *in[] = {corpus_path};
    struct tok_train_opts o = {.inputs = in, .n_inputs = 1, .model_prefix = pre,
                               .vocab_size = vocab, .model_type = type, .threads = threads};
    struct rz_err e = {0};
    struct tok *t = NULL;
    ck_assert_msg(tok_train(&o, &e) == RZ_OK, "%s", e.msg);
    ck_assert_msg(tok_load(&t, path, &e) == RZ_OK, "%s", e.msg);
    ck_assert_int_eq(tok_vocab_size(t), vocab);
    return t;
}

/* Training again on the same corpus writes the same bytes: the same SHA-256.  Nothing but
 * PREFIX.model and PREFIX.vocab is left in the directory. */
START_TEST(training_is_reproducible_and_leaves_no_temporary)
{
    char dir[64];
    rz_test_tmpdir(dir, sizeof dir, "tok");
    struct tok *t = train_fixture_copy(dir, "again", VOCAB, "bpe", 2), *ref = load_fixture();
    ck_assert_str_eq(tok_sha256_hex(t), tok_sha256_hex(ref));
    tok_free(t);
    tok_free(ref);
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;)
        if (de->d_name[0] != '.') {
            files++;
            ck_assert_msg(strcmp(de->d_name, "again.model") == 0 ||
                          strcmp(de->d_name, "again.vocab") == 0, "left behind: %s", de->d_name);
        }
    closedir(d);
    ck_assert_int_eq(files, 2);
    rz_test_rmtree(dir);
}
END_TEST

/* A unigram model round-trips as well. */
START_TEST(unigram_round_trip)
{
    char dir[64];
    rz_test_tmpdir(dir, sizeof dir, "tok");
    struct tok *t = train_fixture_copy(dir, "uni", 400, "unigram", 1);
    static const char text[] = "caf\xc3\xa9 \xff the  water\t\xe2\x96\x81\n\nno end";
    ck_assert_uint_gt(round_trip(t, text, sizeof text - 1), 10);
    tok_free(t);
    rz_test_rmtree(dir);
}
END_TEST

struct encoder {
    const struct tok *t;
    const char *text;
    size_t len;
    struct tok_ids ids;
    enum rz_status st;
};

static void *encode_thread(void *arg)
{
    struct encoder *c = arg;
    struct rz_err e = {0};
    for (int k = 0; k < 3 && c->st == RZ_OK; k++) {
        c->ids.n = 0;
        c->st = tok_encode(c->t, c->text, c->len, &c->ids, &e);
    }
    return NULL;
}

/* tok_encode on one struct tok from two threads at once gives the ids of one thread alone. */
START_TEST(two_threads_encode_alike)
{
    struct tok *t = load_fixture();
    char *text = NULL;
    size_t len = 0;
    struct rz_err e = {0};
    ck_assert_int_eq(rz_read_file(corpus_path, &text, &len, &e), RZ_OK);
    struct tok_ids ref = {0};
    ck_assert_int_eq(tok_encode(t, text, len, &ref, &e), RZ_OK);
    struct encoder c[2] = {{t, text, len, {0}, RZ_OK}, {t, text, len, {0}, RZ_OK}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, encode_thread, &c[i]), 0);
    for (int i = 0; i < 2; i++)
        ck_assert_int_eq(pthread_join(th[i], NULL), 0);
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(c[i].st, RZ_OK);
        ck_assert_uint_eq(c[i].ids.n, ref.n);
        ck_assert(memcmp(c[i].ids.ids, ref.ids, ref.n * sizeof *ref.ids) == 0);
        tok_ids_free(&c[i].ids);
    }
    tok_ids_free(&ref);
    free(text);
    tok_free(t);
}
END_TEST

/* Whether Debian's sentencepiece package put `prog` on PATH; says so when it did not. */
static int on_path(const char *prog)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
    if (system(cmd) == 0)
        return 1;
    fprintf(stderr, "check_tok: %s not on PATH (Debian package sentencepiece): skipped\n", prog);
    return 0;
}

/* Our ids for lines of valid UTF-8 (neither NUL nor U+2581, which we write as byte pieces) are
 * spm_encode's ids for the same lines. */
START_TEST(same_ids_as_spm_encode)
{
    if (!on_path("spm_encode"))
        return;
    char dir[64], lines_path[128], ids_path[128], cmd[512];
    rz_test_tmpdir(dir, sizeof dir, "tok");
    snprintf(lines_path, sizeof lines_path, "%s/lines.txt", dir);
    snprintf(ids_path, sizeof ids_path, "%s/ids.txt", dir);
    /* The corpus's first 300 lines, then 300 random lines of valid UTF-8. */
    char *text = NULL;
    size_t len = 0, cut = 0;
    struct rz_err e = {0};
    ck_assert_int_eq(rz_read_file(corpus_path, &text, &len, &e), RZ_OK);
    for (int n = 0; n < 300; n++)
        cut = (size_t)((char *)memchr(text + cut, '\n', len - cut) - text) + 1;
    FILE *f = fopen(lines_path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, cut, f), cut);
    rng_state = 0x5e;
    for (int k = 0; k < 300; k++) {
        unsigned char buf[8];
        for (int n = (int)rnd_below(60); n > 0; n--) {
            uint32_t c = random_code_point();
            if (c != '\n' && c != 0x2581)
                ck_assert_uint_eq(fwrite(buf, 1, utf8_put(c, buf), f), utf8_put(c, buf));
        }
        fputc('\n', f);
    }
    ck_assert_int_eq(fclose(f), 0);
    snprintf(cmd, sizeof cmd, "spm_encode --model '%s' --output_format=id < '%s' > '%s'",
             model_path, lines_path, ids_path);
    ck_assert_int_eq(system(cmd), 0);
    free(text);
    ck_assert_int_eq(rz_read_file(lines_path, &text, &len, &e), RZ_OK);
    FILE *ids = fopen(ids_path, "r");
    ck_assert_ptr_nonnull(ids);
    struct tok *t = load_fixture();
    char *line = NULL;
    size_t cap = 0, pos = 0;
    int agree = 0, differ = 0;
    while (pos < len) {
        size_t end = (size_t)((char *)memchr(text + pos, '\n', len - pos) - text);
        struct tok_ids ours = {0};
        ck_assert_int_eq(tok_encode(t, text + pos, end - pos, &ours, &e), RZ_OK);
        ck_assert_int_ge(getline(&line, &cap, ids), 0);
        size_t n = 0;
        int same = 1;
        for (char *s = line, *next; ; s = next) {
            long id = strtol(s, &next, 10);
            if (next == s)
                break;
            same = same && n < ours.n && ours.ids[n] == id;
            n++;
        }
        same = same && n == ours.n;
        agree += same;
        differ += !same;
        if (!same && differ <= 3)
            fprintf(stderr, "check_tok: spm_encode differs on line \"%.*s\"\n",
                    (int)(end - pos), text + pos);
        tok_ids_free(&ours);
        pos = end + 1;
    }
    fprintf(stderr, "check_tok: spm_encode: %d lines agree, %d differ\n", agree, differ);
    ck_assert_int_eq(agree, 600);
    ck_assert_int_eq(differ, 0);
    free(line);
    fclose(ids);
    free(text);
    tok_free(t);
    rz_test_rmtree(dir);
}
END_TEST

#ifdef RZ_TEST_HOOKS
/* A training killed while writing its files leaves no PREFIX.model or PREFIX.vocab, new or
 * partial (core/durable.h; at most a PREFIX.vocab.tmp.PID). */
START_TEST(killed_training_leaves_no_model)
{
    char dir[64], pre[128], path[160];
    rz_test_tmpdir(dir, sizeof dir, "tok");
    snprintf(pre, sizeof pre, "%s/killed", dir);
    fflush(NULL);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        snprintf(rz_hooks.crash_at, sizeof rz_hooks.crash_at, "tok:before_rename");
        const char *in[] = {corpus_path};
        struct tok_train_opts o = {.inputs = in, .n_inputs = 1, .model_prefix = pre,
                                   .vocab_size = VOCAB, .model_type = "bpe"};
        tok_train(&o, NULL);
        _exit(1); /* the hook did not fire */
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 86);
    struct stat sb;
    snprintf(path, sizeof path, "%s.model", pre);
    ck_assert_int_ne(stat(path, &sb), 0);
    snprintf(path, sizeof path, "%s.vocab", pre);
    ck_assert_int_ne(stat(path, &sb), 0);
    rz_test_rmtree(dir);
}
END_TEST
#endif

/* Error paths: each names its file, limit or id. */
static void expect_load_error(const char *path, const char *needle)
{
    struct tok *t = (struct tok *)1;
    struct rz_err e = {0};
    ck_assert_int_eq(tok_load(&t, path, &e), RZ_EDATA);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(e.msg, path) != NULL, "message without the path: %s", e.msg);
    ck_assert_msg(strstr(e.msg, needle) != NULL, "message without '%s': %s", needle, e.msg);
}

START_TEST(errors_loading)
{
    char dir[64], path[128];
    rz_test_tmpdir(dir, sizeof dir, "tok");
    snprintf(path, sizeof path, "%s/missing.model", dir);
    expect_load_error(path, "No such file");
    snprintf(path, sizeof path, "%s/empty.model", dir);
    fclose(fopen(path, "w"));
    expect_load_error(path, "empty");
    snprintf(path, sizeof path, "%s/text.model", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("this is not a SentencePiece model, only some text\n", f);
    fclose(f);
    expect_load_error(path, "not a SentencePiece model");
    expect_load_error(corpus_path, "not a SentencePiece model");
    rz_test_rmtree(dir);
}
END_TEST

/* Models that spm_train makes with its defaults cannot round-trip: refused at load. */
START_TEST(errors_loading_foreign_models)
{
    if (!on_path("spm_train"))
        return;
    static const struct { const char *args, *needle; } cases[] = {
        {"--vocab_size=200 --byte_fallback=false --normalization_rule_name=identity "
         "--add_dummy_prefix=false", "no byte piece <0x00>"},
        {"--vocab_size=400 --byte_fallback=true", "normalizes text"}, /* NFKC, dummy prefix */
    };
    char dir[64], cmd[1024], path[160];
    rz_test_tmpdir(dir, sizeof dir, "tok");
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(cmd, sizeof cmd, "spm_train --input='%s' --model_prefix='%s/m%zu' "
                 "--minloglevel=2 %s", corpus_path, dir, i, cases[i].args);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(path, sizeof path, "%s/m%zu.model", dir, i);
        expect_load_error(path, cases[i].needle);
    }
    rz_test_rmtree(dir);
}
END_TEST

static enum rz_status train_into(const char *dir, const char *const *in, size_t n,
                                 int64_t vocab, const char *type, struct rz_err *e)
{
    char pre[160];
    snprintf(pre, sizeof pre, "%s/t", dir);
    struct tok_train_opts o = {.inputs = in, .n_inputs = n, .model_prefix = pre,
                               .vocab_size = vocab, .model_type = type};
    return tok_train(&o, e);
}

START_TEST(errors_training)
{
    char dir[64], missing[128], empty[128], junk[128], path[160];
    rz_test_tmpdir(dir, sizeof dir, "tok");
    struct rz_err e = {0};
    const char *in[] = {corpus_path};
    /* Vocabulary too small: names the limit, 256 byte pieces + 3 + 1. */
    ck_assert_int_eq(train_into(dir, in, 1, 259, "bpe", &e), RZ_ECONFIG);
    ck_assert_msg(strstr(e.msg, "259") && strstr(e.msg, "at least 260"), "%s", e.msg);
    ck_assert_int_eq(train_into(dir, in, 1, (int64_t)1 << 40, "bpe", &e), RZ_ECONFIG);
    ck_assert_int_eq(train_into(dir, in, 1, VOCAB, "word", &e), RZ_ECONFIG);
    ck_assert_ptr_nonnull(strstr(e.msg, "'word'"));
    ck_assert_int_eq(train_into(dir, in, 0, VOCAB, "bpe", &e), RZ_ECONFIG);
    /* A missing input, second of two: named. */
    snprintf(missing, sizeof missing, "%s/missing.txt", dir);
    const char *two[] = {corpus_path, missing};
    ck_assert_int_eq(train_into(dir, two, 2, VOCAB, "bpe", &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, missing) && strstr(e.msg, "No such file"), "%s", e.msg);
    /* A corpus with no text: empty lines and bytes that are not UTF-8. */
    snprintf(empty, sizeof empty, "%s/empty.txt", dir);
    snprintf(junk, sizeof junk, "%s/junk.txt", dir);
    fclose(fopen(empty, "w"));
    FILE *f = fopen(junk, "w");
    ck_assert_ptr_nonnull(f);
    fputs("\n\n\xff\xfe\n\x80\n", f);
    fclose(f);
    const char *none[] = {empty, junk};
    ck_assert_int_eq(train_into(dir, none, 2, VOCAB, "bpe", &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, empty) && strstr(e.msg, "no text"), "%s", e.msg);
    /* A vocabulary larger than the corpus allows: SentencePiece's cause, named. */
    f = fopen(junk, "w");
    fputs("ab ab ab\n", f);
    fclose(f);
    ck_assert_int_eq(train_into(dir, (const char *[]){junk}, 1, 5000, "bpe", &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, junk) && strstr(e.msg, "SentencePiece"), "%s", e.msg);
    /* No failed training left a file behind. */
    snprintf(path, sizeof path, "%s/t.model", dir);
    struct stat sb;
    ck_assert_int_ne(stat(path, &sb), 0);
    /* An output directory that does not exist: an I/O error naming it. */
    char pre[192];
    snprintf(pre, sizeof pre, "%s/no/such/dir/t", dir);
    struct tok_train_opts o = {.inputs = in, .n_inputs = 1, .model_prefix = pre,
                               .vocab_size = 400, .model_type = "bpe"};
    ck_assert_msg(tok_train(&o, &e) == RZ_EIO, "%s", e.msg);
    ck_assert_msg(strstr(e.msg, "/no/such/dir/t.vocab") != NULL, "%s", e.msg);
    rz_test_rmtree(dir);
}
END_TEST

START_TEST(errors_decoding)
{
    struct tok *t = load_fixture();
    struct rz_err e = {0};
    char *text = (char *)1;
    size_t len = 1;
    const int32_t bad[] = {5, 7, VOCAB};
    ck_assert_int_eq(tok_decode(t, bad, 3, &text, &len, &e), RZ_EDATA);
    ck_assert_ptr_null(text);
    ck_assert_msg(strstr(e.msg, "600") && strstr(e.msg, "position 2"), "%s", e.msg);
    const int32_t neg[] = {-1};
    ck_assert_int_eq(tok_decode(t, neg, 1, &text, &len, &e), RZ_EDATA);
    ck_assert_msg(strstr(e.msg, "-1") && strstr(e.msg, "position 0"), "%s", e.msg);
    /* Control pieces decode to nothing; nothing decodes to "". */
    const int32_t ctl[] = {1, 2};
    ck_assert_int_eq(tok_decode(t, ctl, 2, &text, &len, &e), RZ_OK);
    ck_assert_uint_eq(len, 0);
    ck_assert_str_eq(text, "");
    free(text);
    ck_assert_int_eq(tok_decode(t, NULL, 0, &text, &len, &e), RZ_OK);
    ck_assert_uint_eq(len, 0);
    free(text);
    /* A failed encode appends nothing; tok_ids_free leaves an empty vector. */
    struct tok_ids ids = {0};
    ck_assert_int_eq(tok_encode(t, "abc", 3, &ids, &e), RZ_OK);
    size_t n = ids.n;
    ck_assert_uint_gt(n, 0);
    tok_ids_free(&ids);
    ck_assert_ptr_null(ids.ids);
    ck_assert_uint_eq(ids.n + ids.cap, 0);
    tok_ids_free(NULL);
    tok_free(NULL);
    tok_free(t);
}
END_TEST

static Suite *tok_suite(void)
{
    Suite *s = suite_create("tok");
    TCase *core = rz_test_tcase("core");
    tcase_add_test(core, round_trip_random_utf8);
    tcase_add_test(core, round_trip_invalid_bytes);
    tcase_add_test(core, round_trip_lines);
    tcase_add_test(core, whole_equals_cut_at_line_ends);
    tcase_add_test(core, vocab_and_sha256_of_the_model_file);
    tcase_add_test(core, training_is_reproducible_and_leaves_no_temporary);
    tcase_add_test(core, unigram_round_trip);
    tcase_add_test(core, two_threads_encode_alike);
    tcase_add_test(core, same_ids_as_spm_encode);
#ifdef RZ_TEST_HOOKS
    tcase_add_test(core, killed_training_leaves_no_model);
#endif
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, errors_loading);
    tcase_add_test(errors, errors_loading_foreign_models);
    tcase_add_test(errors, errors_training);
    tcase_add_test(errors, errors_decoding);
    suite_add_tcase(s, errors);
    return s;
}

/* The fixture: the corpus and its tokenizer, made once before the tests fork. */
int main(void)
{
    snprintf(fixture_dir, sizeof fixture_dir, "/tmp/rz-tok-fixture-XXXXXX");
    if (mkdtemp(fixture_dir) == NULL) {
        perror("check_tok: mkdtemp");
        return EXIT_FAILURE;
    }
    snprintf(corpus_path, sizeof corpus_path, "%s/corpus.txt", fixture_dir);
    snprintf(prefix, sizeof prefix, "%s/fixture", fixture_dir);
    snprintf(model_path, sizeof model_path, "%s.model", prefix);
    if (write_corpus(corpus_path) != 0) {
        perror("check_tok: write the corpus");
        return EXIT_FAILURE;
    }
    const char *in[] = {corpus_path};
    struct tok_train_opts o = {.inputs = in, .n_inputs = 1, .model_prefix = prefix,
                               .vocab_size = VOCAB, .model_type = "bpe", .threads = 2};
    struct rz_err e = {0};
    double t0 = rz_now();
    int rc = EXIT_FAILURE;
    if (tok_train(&o, &e) != RZ_OK)
        fprintf(stderr, "check_tok: training the fixture tokenizer: %s\n", e.msg);
    else {
        fprintf(stderr, "check_tok: fixture tokenizer (vocab %d) trained in %.2f s\n", VOCAB,
                rz_now() - t0);
        rc = rz_test_main(tok_suite());
    }
    rz_test_rmtree(fixture_dir);
    return rc;
}
