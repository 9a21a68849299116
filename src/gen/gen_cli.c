/* gen_cli.c: ryzen-generate's run (gen.h's gen_main): the options, the checkpoint and the
 * tokenizer and their match, the prompt and its checks, the decoding loop, and the output: the
 * text, --json (ids, texts and the model's log-probabilities), --logits-out (float32 rows), and
 * --perplexity.  The exit codes are the documented ones (docs/exit-codes.md): 0; 64 bad input or
 * usage; 65 no usable checkpoint; 74 I/O.
 * Deliberately not here: the forward (gen_decode.c), the sampler (gen_sample.c), the scoring
 * (gen_score.c), reading the environment (main does, once). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cli.h"
#include "core/isa.h"
#include "core/json.h"
#include "core/util.h"
#include "gen/gen.h"
#include "kernels/kernels.h"
#include "record/tokfile.h"
#include "tok/tok.h"

struct gen_args {
    const char *checkpoint, *tokenizer, *prompt, *prompt_file, *perplexity, *logits_out;
    int64_t max_new;
    struct gen_sample_opts sample;
    bool json, timing;
};

static void usage(FILE *f)
{
    fputs("usage: ryzen-generate --checkpoint CKPT.h5|RUN_DIR --tokenizer MODEL\n"
          "                      (--prompt TEXT | --prompt-file FILE) [--max-new-tokens N]\n"
          "                      [--temperature T] [--top-k K] [--top-p P] [--seed S] [--greedy]\n"
          "                      [--json] [--logits-out FILE] [--timing]\n"
          "       ryzen-generate --checkpoint CKPT.h5|RUN_DIR [--tokenizer MODEL]\n"
          "                      --perplexity FILE.tok|TEXTFILE [--json]\n"
          "       ryzen-generate --help | --version\n"
          "RUN_DIR: its newest checkpoint that verifies.  Defaults: --max-new-tokens 64,\n"
          "--temperature 1, --top-k 0 (all), --top-p 1 (all), --seed 1; --greedy (or --temperature\n"
          "0) takes the most likely token.  The same seed gives the same text.  --json prints the\n"
          "prompt's ids and each new token's id, text and log-probability (the model's own, before\n"
          "temperature and filtering).  --logits-out writes float32 rows of V: one per position\n"
          "of the prompt, then one per generated token but the last (row i predicts token i+1).\n"
          "--timing prints the prompt's and the new tokens' wall time on stderr.\n"
          "--perplexity scores FILE (a token file, or a text the tokenizer encodes) as the\n"
          "trainer's validation does with data.val_path = FILE: the same windows and loss.\n"
          "Exit codes: 0 ok; 64 bad input or usage (empty prompt, a prompt longer than\n"
          "model.seq_len, a tokenizer that is not the checkpoint's); 65 no usable checkpoint;\n"
          "74 I/O error.\n",
          f);
}

/* ---- options ---------------------------------------------------------------------------------- */

static enum rz_status parse_num(const char *opt, const char *v, double lo, double *out,
                                struct rz_err *err)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !(x >= lo))
        return rz_fail(err, RZ_ECONFIG, "%s '%s': not a number >= %g", opt, v, lo);
    *out = x;
    return RZ_OK;
}

static enum rz_status parse_int(const char *opt, const char *v, int64_t *out, struct rz_err *err)
{
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < 0)
        return rz_fail(err, RZ_ECONFIG, "%s '%s': not a whole number >= 0", opt, v);
    *out = x;
    return RZ_OK;
}

/* One option that takes a value (takes_value). */
static enum rz_status parse_valued(struct gen_args *a, const char *opt, const char *v,
                                   struct rz_err *err)
{
    int64_t n = 0;
    enum rz_status st = RZ_OK;
    if (strcmp(opt, "--checkpoint") == 0)
        a->checkpoint = v;
    else if (strcmp(opt, "--tokenizer") == 0)
        a->tokenizer = v;
    else if (strcmp(opt, "--prompt") == 0)
        a->prompt = v;
    else if (strcmp(opt, "--prompt-file") == 0)
        a->prompt_file = v;
    else if (strcmp(opt, "--perplexity") == 0)
        a->perplexity = v;
    else if (strcmp(opt, "--logits-out") == 0)
        a->logits_out = v;
    else if (strcmp(opt, "--max-new-tokens") == 0)
        st = parse_int(opt, v, &a->max_new, err);
    else if (strcmp(opt, "--top-k") == 0)
        st = parse_int(opt, v, &a->sample.top_k, err);
    else if (strcmp(opt, "--seed") == 0) {
        st = parse_int(opt, v, &n, err);
        a->sample.seed = (uint64_t)n;
    } else if (strcmp(opt, "--temperature") == 0)
        st = parse_num(opt, v, 0.0, &a->sample.temperature, err);
    else
        st = parse_num(opt, v, 0.0, &a->sample.top_p, err);
    return st;
}

static bool takes_value(const char *opt)
{
    static const char *const valued[] = {"--checkpoint", "--tokenizer", "--prompt",
                                         "--prompt-file", "--perplexity", "--logits-out",
                                         "--max-new-tokens", "--top-k", "--seed",
                                         "--temperature", "--top-p"};
    for (size_t i = 0; i < sizeof valued / sizeof *valued; i++)
        if (strcmp(opt, valued[i]) == 0)
            return true;
    return false;
}

static enum rz_status check_args(const struct gen_args *a, struct rz_err *err)
{
    if (a->checkpoint == NULL)
        return rz_fail(err, RZ_ECONFIG, "--checkpoint is required (see --help)");
    if (a->perplexity != NULL) {
        if (a->prompt != NULL || a->prompt_file != NULL || a->logits_out != NULL)
            return rz_fail(err, RZ_ECONFIG, "--perplexity takes no prompt and no --logits-out");
        return RZ_OK;
    }
    if (a->tokenizer == NULL)
        return rz_fail(err, RZ_ECONFIG, "--tokenizer is required to generate (see --help)");
    if ((a->prompt == NULL) == (a->prompt_file == NULL))
        return rz_fail(err, RZ_ECONFIG, "give exactly one of --prompt and --prompt-file");
    return gen_sample_check(&a->sample, err);
}

/* 1: --help or --version printed; 0: parsed; -1: error in err. */
static int parse_args(struct gen_args *a, int argc, char **argv, struct rz_err *err)
{
    *a = (struct gen_args){.max_new = 64,
                           .sample = {.temperature = 1.0, .top_p = 1.0, .seed = 1}};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(opt, "--version") == 0) {
            rz_cli_version(stdout, "ryzen-generate");
            return 1;
        }
        enum rz_status st = RZ_OK;
        if (strcmp(opt, "--greedy") == 0)
            a->sample.greedy = true;
        else if (strcmp(opt, "--json") == 0)
            a->json = true;
        else if (strcmp(opt, "--timing") == 0)
            a->timing = true;
        else if (!takes_value(opt))
            st = rz_fail(err, RZ_ECONFIG, "unknown option '%s' (see --help)", opt);
        else if (i + 1 >= argc)
            st = rz_fail(err, RZ_ECONFIG, "%s needs a value", opt);
        else
            st = parse_valued(a, opt, argv[++i], err);
        if (st != RZ_OK)
            return -1;
    }
    return check_args(a, err) == RZ_OK ? 0 : -1;
}

/* ---- text in and out -------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s[0..n), or 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 && s[0] >= 0xC2 ? 2
             : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    if (k == 0 || k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return k;
}

/* s[0..n) as a C string of valid UTF-8 for JSON: NULs and bytes that are not valid UTF-8 become
 * U+FFFD (the ids stay exact).  malloc'd; NULL when out of memory. */
static char *json_text(const char *s, size_t n)
{
    char *out = malloc(3 * n + 1), *o = out;
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < n;) {
        size_t k = s[i] == '\0' ? 0 : utf8_len((const unsigned char *)s + i, n - i);
        if (k == 0) {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        } else {
            memcpy(o, s + i, k);
            o += k;
            i += k;
        }
    }
    *o = '\0';
    return out;
}

/* ---- generating --------------------------------------------------------------------------------- */

struct run {
    const struct gen_args *a;
    struct gen *g;
    struct tok *tok;
    char path[4096];          /* the checkpoint loaded */
    struct tok_ids prompt, out;
    double *logprob;
    FILE *logits;
    void *scratch;
    double prompt_s, new_s;   /* wall time of the prompt's positions and of the new tokens */
    double new_cpu_s;         /* the new tokens' CPU time (all threads): on a shared machine
                               * the work, where the wall time also counts the waiting */
};

static enum rz_status write_row(struct run *r, struct rz_err *err)
{
    if (r->logits == NULL)
        return RZ_OK;
    size_t V = (size_t)gen_dims(r->g)->vocab;
    if (fwrite(gen_logits(r->g), sizeof(float), V, r->logits) != V)
        return rz_fail(err, RZ_EIO, "write --logits-out '%s': %s", r->a->logits_out,
                       strerror(errno));
    return RZ_OK;
}

static enum rz_status encode_prompt(struct run *r, struct rz_err *err)
{
    const struct gen_args *a = r->a;
    char *text = NULL;
    size_t len = 0;
    enum rz_status st = RZ_OK;
    if (a->prompt_file != NULL)
        st = rz_read_file(a->prompt_file, &text, &len, err);
    const char *p = a->prompt_file != NULL ? text : a->prompt;
    if (st == RZ_OK)
        st = tok_encode(r->tok, p, a->prompt_file != NULL ? len : strlen(p), &r->prompt, err);
    free(text);
    int64_t T = gen_dims(r->g)->seq_len;
    if (st == RZ_OK && r->prompt.n == 0)
        st = rz_fail(err, RZ_ECONFIG, "the prompt is empty: give at least one character "
                     "(generation starts from the prompt's last token)");
    if (st == RZ_OK && (int64_t)r->prompt.n > T)
        st = rz_fail(err, RZ_ECONFIG, "the prompt is %zu tokens long, longer than the model's "
                     "context (model.seq_len %lld); shorten it", r->prompt.n, (long long)T);
    return st;
}

static enum rz_status push(struct tok_ids *v, int32_t id)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 64;
        int32_t *p = realloc(v->ids, cap * sizeof *p);
        if (p == NULL)
            return RZ_ENOMEM;
        v->ids = p;
        v->cap = cap;
    }
    v->ids[v->n++] = id;
    return RZ_OK;
}

/* The prompt in one pass (gen_prefill), with every position's logits for --logits-out. */
static enum rz_status prefill(struct run *r, struct rz_err *err)
{
    size_t n = r->prompt.n, V = (size_t)gen_dims(r->g)->vocab;
    float *rows = NULL;
    if (r->logits != NULL && (rows = malloc(n * V * sizeof *rows)) == NULL)
        return rz_fail(err, RZ_ENOMEM, "generate: out of memory for the prompt's %zu logit rows",
                       n);
    enum rz_status st = gen_prefill(r->g, r->prompt.ids, (int64_t)n, rows, err);
    if (st == RZ_OK && rows != NULL && fwrite(rows, sizeof *rows, n * V, r->logits) != n * V)
        st = rz_fail(err, RZ_EIO, "write --logits-out '%s': %s", r->a->logits_out,
                     strerror(errno));
    free(rows);
    return st;
}

/* The prompt through the cache, then up to max_new tokens, each fed back but the last, while the
 * whole text fits the context. */
static enum rz_status decode(struct run *r, struct rz_err *err)
{
    const struct model_dims *d = gen_dims(r->g);
    enum rz_status st = RZ_OK;
    gen_reset(r->g);
    double t0 = rz_now();
    st = prefill(r, err);
    int64_t room = d->seq_len - (int64_t)r->prompt.n;
    int64_t n = r->a->max_new < room ? r->a->max_new : room;
    if (st == RZ_OK && n > 0 && (r->logprob = calloc((size_t)n, sizeof *r->logprob)) == NULL)
        st = rz_fail(err, RZ_ENOMEM, "generate: out of memory");
    double t1 = rz_now();
    clock_t c1 = clock();
    for (int64_t k = 0; k < n && st == RZ_OK; k++) {
        const float *lg = gen_logits(r->g);
        int32_t id = gen_sample(lg, d->vocab, &r->a->sample, (uint64_t)k, r->scratch);
        r->logprob[k] = gen_logprob(lg, d->vocab, id);
        if (push(&r->out, id) != RZ_OK)
            st = rz_fail(err, RZ_ENOMEM, "generate: out of memory");
        if (st == RZ_OK && k + 1 < n) {
            st = gen_feed(r->g, id, err);
            if (st == RZ_OK)
                st = write_row(r, err);
        }
    }
    r->prompt_s = t1 - t0;
    r->new_s = rz_now() - t1;
    r->new_cpu_s = (double)(clock() - c1) / CLOCKS_PER_SEC;
    return st;
}

/* --timing: one line on stderr.  A new token's time is its draw and its step through the
 * model (the last one is drawn, not run). */
static void print_timing(const struct run *r)
{
    double n = (double)r->out.n;
    fprintf(stderr, "ryzen-generate: prompt %zu tokens in %.4f s (%.1f tokens/s); %zu new tokens "
            "in %.4f s (%.1f tokens/s, %.3f ms/token; CPU %.3f ms/token)\n", r->prompt.n,
            r->prompt_s, r->prompt_s > 0 ? (double)r->prompt.n / r->prompt_s : 0.0, r->out.n,
            r->new_s, r->new_s > 0 ? n / r->new_s : 0.0, n > 0 ? 1e3 * r->new_s / n : 0.0,
            n > 0 ? 1e3 * r->new_cpu_s / n : 0.0);
}

static enum rz_status print_json(struct run *r, const char *text, size_t len, struct rz_err *err)
{
    struct rz_json j;
    char *t = json_text(text, len);
    if (t == NULL)
        return rz_fail(err, RZ_ENOMEM, "generate: out of memory");
    rz_json_init(&j, stdout);
    rz_json_object_begin(&j);
    rz_json_key(&j, "prompt_ids");
    rz_json_array_begin(&j);
    for (size_t i = 0; i < r->prompt.n; i++)
        rz_json_int(&j, r->prompt.ids[i]);
    rz_json_array_end(&j);
    rz_json_key(&j, "tokens");
    rz_json_array_begin(&j);
    enum rz_status st = RZ_OK;
    for (size_t i = 0; i < r->out.n && st == RZ_OK; i++) {
        char *piece = NULL, *pt = NULL;
        size_t plen = 0;
        st = tok_decode(r->tok, &r->out.ids[i], 1, &piece, &plen, err);
        if (st == RZ_OK && (pt = json_text(piece, plen)) == NULL)
            st = rz_fail(err, RZ_ENOMEM, "generate: out of memory");
        if (st == RZ_OK) {
            rz_json_object_begin(&j);
            rz_json_kv_int(&j, "id", r->out.ids[i]);
            rz_json_kv_string(&j, "text", pt);
            rz_json_kv_double(&j, "logprob", r->logprob[i]);
            rz_json_object_end(&j);
        }
        free(piece);
        free(pt);
    }
    rz_json_array_end(&j);
    rz_json_kv_string(&j, "text", t);
    rz_json_kv_uint(&j, "seed", r->a->sample.seed);
    rz_json_kv_bool(&j, "greedy", r->a->sample.greedy || r->a->sample.temperature == 0.0);
    rz_json_kv_string(&j, "checkpoint", r->path);
    rz_json_kv_string(&j, "tokenizer_sha256", tok_sha256_hex(r->tok));
    rz_json_object_end(&j);
    fputc('\n', stdout);
    free(t);
    return st;
}

static enum rz_status output(struct run *r, struct rz_err *err)
{
    char *text = NULL;
    size_t len = 0;
    enum rz_status st = tok_decode(r->tok, r->out.ids, r->out.n, &text, &len, err);
    if (st == RZ_OK && r->a->json) {
        st = print_json(r, text, len, err);
    } else if (st == RZ_OK) {
        char *ptext = NULL;
        size_t plen = 0;
        st = tok_decode(r->tok, r->prompt.ids, r->prompt.n, &ptext, &plen, err);
        if (st == RZ_OK) {
            fwrite(ptext, 1, plen, stdout);
            fwrite(text, 1, len, stdout);
            fputc('\n', stdout);
        }
        free(ptext);
    }
    free(text);
    if (st == RZ_OK && fflush(stdout) != 0)
        st = rz_fail(err, RZ_EIO, "write the output: %s", strerror(errno));
    return st;
}

static enum rz_status generate(struct run *r, struct rz_err *err)
{
    const struct gen_args *a = r->a;
    enum rz_status st = encode_prompt(r, err);
    if (st == RZ_OK && (r->scratch = malloc(gen_sample_scratch_bytes(
                            gen_dims(r->g)->vocab))) == NULL)
        st = rz_fail(err, RZ_ENOMEM, "generate: out of memory");
    if (st == RZ_OK && a->logits_out != NULL && (r->logits = fopen(a->logits_out, "wb")) == NULL)
        st = rz_fail(err, RZ_EIO, "open --logits-out '%s': %s", a->logits_out, strerror(errno));
    if (st == RZ_OK)
        st = decode(r, err);
    if (st == RZ_OK && a->timing)
        print_timing(r);
    if (r->logits != NULL && fclose(r->logits) != 0 && st == RZ_OK)
        st = rz_fail(err, RZ_EIO, "write --logits-out '%s': %s", a->logits_out, strerror(errno));
    r->logits = NULL;
    if (st == RZ_OK)
        st = output(r, err);
    return st;
}

/* ---- perplexity ----------------------------------------------------------------------------------- */

/* A text file's ids as a token file in a fresh directory under tmpdir (path out). */
static enum rz_status text_to_tokens(struct run *r, const char *tmpdir, char *dir, char *path,
                                     size_t len, struct rz_err *err)
{
    char *text = NULL;
    size_t n = 0;
    struct tok_ids ids = {0};
    struct tokfile_writer w;
    uint8_t sha[32];
    rz_fmt(dir, len, "%s/ryzen-generate-XXXXXX", tmpdir);
    if (mkdtemp(dir) == NULL)
        return rz_fail(err, RZ_EIO, "perplexity: make a directory under '%s': %s", tmpdir,
                       strerror(errno));
    rz_fmt(path, len, "%s/text.tok", dir);
    enum rz_status st = rz_read_file(r->a->perplexity, &text, &n, err);
    if (st == RZ_OK)
        st = tok_encode(r->tok, text, n, &ids, err);
    tok_sha256(r->tok, sha);
    if (st == RZ_OK)
        st = tokfile_writer_open(&w, path, 0, (uint64_t)tok_vocab_size(r->tok), sha, err);
    if (st == RZ_OK) {
        st = tokfile_writer_append(&w, ids.ids, ids.n, err);
        if (st == RZ_OK)
            st = tokfile_writer_commit(&w, NULL, err);
        else
            tokfile_writer_abort(&w);
    }
    free(text);
    tok_ids_free(&ids);
    return st;
}

/* Whether path is a token file (it has the header), and if so that its tokenizer is the
 * checkpoint's and --tokenizer's, where they name one. */
static enum rz_status is_token_file(const struct run *r, const char *path, bool *yes,
                                    struct rz_err *err)
{
    struct tokfile_header h;
    char hex[65];
    enum rz_status st = tokfile_read_header(path, &h, yes, err);
    if (st != RZ_OK || !*yes)
        return st;
    tokfile_sha_hex(&h, hex);
    if (hex[0] == '\0')
        return RZ_OK;
    st = gen_check_tokenizer(r->g, (int64_t)h.vocab_size, hex, path, err);
    if (st == RZ_OK && r->tok != NULL && strcmp(hex, tok_sha256_hex(r->tok)) != 0)
        st = rz_fail(err, RZ_ECONFIG, "token file '%s' was encoded by tokenizer %s, not by "
                     "--tokenizer '%s' (%s)", path, hex, r->a->tokenizer, tok_sha256_hex(r->tok));
    return st;
}

static enum rz_status perplexity(struct run *r, const char *tmpdir, struct rz_err *err)
{
    const char *file = r->a->perplexity;
    char dir[4096] = "", tmp[4096] = "";
    bool tokens = false;
    struct gen_score s;
    enum rz_status st = is_token_file(r, file, &tokens, err);
    if (st == RZ_OK && !tokens && r->tok == NULL)
        st = rz_fail(err, RZ_ECONFIG, "--perplexity '%s' is a text (no token-file header): it "
                     "needs --tokenizer", file);
    if (st == RZ_OK && !tokens)
        st = text_to_tokens(r, tmpdir, dir, tmp, sizeof tmp, err);
    if (st == RZ_OK)
        st = gen_perplexity(r->g, tokens ? file : tmp, &s, err);
    if (tmp[0] != '\0')
        unlink(tmp);
    if (dir[0] != '\0')
        rmdir(dir);
    if (st != RZ_OK)
        return st;
    if (r->a->json) {
        struct rz_json j;
        rz_json_init(&j, stdout);
        rz_json_object_begin(&j);
        rz_json_kv_string(&j, "file", file);
        char hex[64];
        rz_fmt(hex, sizeof hex, "%a", s.loss); /* bit for bit, as summary.json's val_loss_hex */
        rz_json_kv_double(&j, "loss", s.loss);
        rz_json_kv_string(&j, "loss_hex", hex);
        rz_json_kv_double(&j, "perplexity", exp(s.loss));
        rz_json_kv_int(&j, "windows", s.windows);
        rz_json_kv_int(&j, "tokens", s.tokens);
        rz_json_kv_int(&j, "seq_len", gen_dims(r->g)->seq_len);
        rz_json_kv_string(&j, "checkpoint", r->path);
        rz_json_object_end(&j);
        fputc('\n', stdout);
    } else {
        printf("%s: loss %.6f nats/token, perplexity %.4f (%lld windows of %lld tokens)\n", file,
               s.loss, exp(s.loss), (long long)s.windows, (long long)gen_dims(r->g)->seq_len);
    }
    if (fflush(stdout) != 0)
        return rz_fail(err, RZ_EIO, "write the output: %s", strerror(errno));
    return RZ_OK;
}

/* ---- main --------------------------------------------------------------------------------------- */

static enum rz_status open_all(struct run *r, const struct gen_env *env, struct rz_err *err)
{
    enum rz_isa cap;
    char *path = r->path;
    enum rz_status st = rz_isa_parse(env->isa != NULL && env->isa[0] ? env->isa : "native",
                                     "RYZEN_ISA", &cap, err);
    if (st == RZ_OK) st = kern_isa_cap(cap, err);
    if (st == RZ_OK) st = gen_resolve_checkpoint(r->a->checkpoint, path, sizeof r->path, err);
    if (st == RZ_OK) st = gen_open(&r->g, path, err);
    if (st == RZ_OK && r->a->tokenizer != NULL) st = tok_load(&r->tok, r->a->tokenizer, err);
    if (st == RZ_OK && r->tok != NULL)
        st = gen_check_tokenizer(r->g, tok_vocab_size(r->tok), tok_sha256_hex(r->tok),
                                 r->a->tokenizer, err);
    return st;
}

int gen_main(int argc, char **argv, const struct gen_env *env)
{
    struct gen_args a;
    struct rz_err err;
    rz_err_clear(&err);
    int p = parse_args(&a, argc, argv, &err);
    if (p != 0) {
        if (p < 0)
            fprintf(stderr, "ryzen-generate: %s\n", err.msg);
        return p > 0 ? RZ_EXIT_OK : RZ_EXIT_USAGE;
    }
    struct run r = {.a = &a};
    enum rz_status st = open_all(&r, env, &err);
    const char *tmpdir = env->tmpdir != NULL && env->tmpdir[0] ? env->tmpdir : "/tmp";
    if (st == RZ_OK)
        st = a.perplexity != NULL ? perplexity(&r, tmpdir, &err) : generate(&r, &err);
    if (st != RZ_OK)
        fprintf(stderr, "ryzen-generate: %s\n", err.msg);
    tok_ids_free(&r.prompt);
    tok_ids_free(&r.out);
    free(r.logprob);
    free(r.scratch);
    tok_free(r.tok);
    gen_close(r.g);
    return rz_exit_code(st);
}
