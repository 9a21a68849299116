/* prep.c: ryzen-data's command line (see prep.h): the subcommands, their options and usage,
 * and what each prints.  The work is in prep_encode.c, prep_inspect.c, prep_manifest.c and
 * tok/; exit codes are main's (rz_exit_code of the status returned here).
 *
 * Not here: reading the environment (main does, once: struct prep_env), any file format. */
#include "config.h"

#include "prep/prep.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/util.h"
#include "record/manifest.h"
#include "tok/tok.h"

static const char usage_text[] =
    "usage: ryzen-data tokenizer train --vocab-size N --out PREFIX [--model-type bpe|unigram]\n"
    "                                  [--threads N] [--max-sentences N] FILE...\n"
    "       ryzen-data encode --tokenizer MODEL --out OUT.tok [--threads N] [--width 2|4] FILE...\n"
    "       ryzen-data decode --tokenizer MODEL [--first I] [--count N] FILE.tok\n"
    "       ryzen-data info [--json] FILE.tok|MANIFEST\n"
    "       ryzen-data manifest --out DIR/manifest.json SHARD.tok...\n"
    "       ryzen-data verify MANIFEST\n"
    "       ryzen-data --help | --version\n"
    "tokenizer train  a SentencePiece model (byte fallback: every byte is representable) from\n"
    "                 the FILEs: PREFIX.model and PREFIX.vocab; prints its vocabulary and SHA-256\n"
    "encode           the FILEs, concatenated, as one token file with a header, written durably,\n"
    "                 and OUT.tok.sha256 beside it (sha256sum's format); on --threads threads\n"
    "                 (default $SLURM_CPUS_PER_TASK, else the CPUs this process may use);\n"
    "                 progress on a terminal, one summary line on stderr\n"
    "decode           the text of ids [I, I+N) (default: all); refuses a token file of another\n"
    "                 tokenizer\n"
    "info             the header (or the manifest's summary) and the unigram entropy of the ids\n"
    "manifest         checks each shard against its .sha256 and the others (one tokenizer,\n"
    "                 vocabulary and width) and writes the manifest; shard paths relative to it\n"
    "verify           every shard of MANIFEST present, same size, same SHA-256\n"
    "Exit codes: 0 ok; 64 usage or bad input (names the file and the cause), a tokenizer or\n"
    "vocabulary mismatch, a shard missing or changed; 74 I/O error or disk full (nothing\n"
    "partial is left behind).\n";

static enum rz_status usage_error(struct rz_err *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static enum rz_status usage_error(struct rz_err *err, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return rz_fail(err, RZ_ECONFIG, "%s (see --help)", msg);
}

static enum rz_status parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi,
                                uint64_t *out, struct rz_err *err)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v < lo || v > hi)
        return usage_error(err, "%s needs a whole number in %" PRIu64 "..%" PRIu64 ", got '%s'",
                           opt, lo, hi, s);
    *out = v;
    return RZ_OK;
}

/* Options shared by every subcommand's parse. */
struct args {
    const char *tokenizer, *out, *model_type;
    uint64_t vocab, threads, max_sentences, width, first, count;
    bool json;
    char *const *files;
    int n_files;
};

enum { O_VOCAB = 256, O_OUT, O_TYPE, O_THREADS, O_MAXS, O_TOK, O_WIDTH, O_FIRST, O_COUNT, O_JSON };

static const struct option all_opts[] = {
    {"vocab-size", required_argument, NULL, O_VOCAB}, {"out", required_argument, NULL, O_OUT},
    {"model-type", required_argument, NULL, O_TYPE},
    {"threads", required_argument, NULL, O_THREADS},
    {"max-sentences", required_argument, NULL, O_MAXS},
    {"tokenizer", required_argument, NULL, O_TOK}, {"width", required_argument, NULL, O_WIDTH},
    {"first", required_argument, NULL, O_FIRST}, {"count", required_argument, NULL, O_COUNT},
    {"json", no_argument, NULL, O_JSON}, {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

static enum rz_status take_opt(struct args *a, int o, const char *cmd, const char *allowed,
                               struct rz_err *err)
{
    const char *name = NULL;
    for (const struct option *p = all_opts; p->name != NULL; p++)
        if (p->val == o)
            name = p->name;
    char flag[64];
    rz_fmt(flag, sizeof flag, "--%s", name != NULL ? name : "?");
    if (o != 'h' && strstr(allowed, flag) == NULL)
        return usage_error(err, "%s does not take %s", cmd, flag);
    switch (o) {
    case O_VOCAB: return parse_u64(flag, optarg, 1, (uint64_t)INT32_MAX, &a->vocab, err);
    case O_THREADS: return parse_u64(flag, optarg, 1, PREP_MAX_THREADS, &a->threads, err);
    case O_MAXS: return parse_u64(flag, optarg, 1, (uint64_t)INT64_MAX, &a->max_sentences, err);
    case O_WIDTH:
        if (strcmp(optarg, "2") != 0 && strcmp(optarg, "4") != 0)
            return usage_error(err, "--width is 2 or 4 (bytes per id), got '%s'", optarg);
        a->width = (uint64_t)atoi(optarg);
        return RZ_OK;
    case O_FIRST: return parse_u64(flag, optarg, 0, UINT64_MAX, &a->first, err);
    case O_COUNT: return parse_u64(flag, optarg, 0, UINT64_MAX, &a->count, err);
    case O_OUT: a->out = optarg; return RZ_OK;
    case O_TYPE: a->model_type = optarg; return RZ_OK;
    case O_TOK: a->tokenizer = optarg; return RZ_OK;
    case O_JSON: a->json = true; return RZ_OK;
    default: return RZ_OK; /* -h, --help: prep_run answered them */
    }
}

/* Parse argv[0..argc) (argv[0]: the subcommand's name) with the options `allowed` (a list of
 * "--name" words). */
static enum rz_status parse(struct args *a, const char *cmd, const char *allowed, int argc,
                            char **argv, struct rz_err *err)
{
    memset(a, 0, sizeof *a);
    a->count = UINT64_MAX;
    optind = 0; /* glibc: start afresh (prep_run may be called more than once) */
    opterr = 0;
    int o;
    enum rz_status st = RZ_OK;
    while (st == RZ_OK && (o = getopt_long(argc, argv, ":h", all_opts, NULL)) != -1) {
        if (o == ':')
            return usage_error(err, "%s: option '%s' needs a value", cmd, argv[optind - 1]);
        if (o == '?')
            return usage_error(err, "%s: unknown option '%s'", cmd, argv[optind - 1]);
        st = take_opt(a, o, cmd, allowed, err);
    }
    a->files = argv + optind;
    a->n_files = argc - optind;
    return st;
}

static int threads_of(const struct args *a, const struct prep_env *env)
{
    return a->threads > 0 ? (int)a->threads : prep_default_threads(env->cpus_per_task);
}

/* ---- the subcommands ---- */

static enum rz_status cmd_train(const struct prep_env *env, int argc, char **argv,
                                struct rz_err *err)
{
    struct args a;
    enum rz_status st = parse(&a, "tokenizer train", "--vocab-size --out --model-type --threads "
                              "--max-sentences", argc, argv, err);
    if (st != RZ_OK)
        return st;
    if (a.vocab == 0 || a.out == NULL || a.n_files == 0)
        return usage_error(err, "tokenizer train needs --vocab-size N, --out PREFIX and FILE...");
    struct tok_train_opts o = {
        .inputs = (const char *const *)a.files, .n_inputs = (size_t)a.n_files,
        .model_prefix = a.out, .vocab_size = (int64_t)a.vocab,
        .model_type = a.model_type != NULL ? a.model_type : "bpe",
        .threads = threads_of(&a, env), .max_sentences = (int64_t)a.max_sentences};
    if (strcmp(o.model_type, "bpe") != 0 && strcmp(o.model_type, "unigram") != 0)
        return usage_error(err, "--model-type is bpe or unigram, got '%s'", o.model_type);
    char model[4200];
    struct tok *t = NULL;
    rz_fmt(model, sizeof model, "%s.model", a.out); /* PREFIX itself may be a directory's name */
    if ((st = prep_check_out_dir(model, err)) != RZ_OK || (st = tok_train(&o, err)) != RZ_OK)
        return st;
    if ((st = tok_load(&t, model, err)) != RZ_OK)
        return st;
    fprintf(env->out, "ryzen-data: tokenizer %s (%s): vocabulary %" PRId64 ", sha256 %s\n",
            model, o.model_type, tok_vocab_size(t), tok_sha256_hex(t));
    tok_free(t);
    return RZ_OK;
}

static enum rz_status cmd_encode(const struct prep_env *env, int argc, char **argv,
                                 struct rz_err *err)
{
    struct args a;
    enum rz_status st = parse(&a, "encode", "--tokenizer --out --threads --width", argc, argv,
                              err);
    if (st != RZ_OK)
        return st;
    if (a.tokenizer == NULL || a.out == NULL || a.n_files == 0)
        return usage_error(err, "encode needs --tokenizer MODEL, --out OUT.tok and FILE...");
    struct prep_encode_opts o = {
        .inputs = (const char *const *)a.files, .n_inputs = (size_t)a.n_files, .out = a.out,
        .width = (unsigned)a.width, .threads = threads_of(&a, env), .log = env->log,
        .tty = env->log_tty};
    struct prep_encode_stats s;
    struct tok *t = NULL;
    if ((st = tok_load(&t, a.tokenizer, err)) == RZ_OK)
        st = prep_encode(t, &o, &s, err);
    tok_free(t);
    return st;
}

static enum rz_status cmd_decode(const struct prep_env *env, int argc, char **argv,
                                 struct rz_err *err)
{
    struct args a;
    enum rz_status st = parse(&a, "decode", "--tokenizer --first --count", argc, argv, err);
    if (st != RZ_OK)
        return st;
    if (a.tokenizer == NULL || a.n_files != 1)
        return usage_error(err, "decode needs --tokenizer MODEL and one FILE.tok");
    struct prep_decode_opts o = {.path = a.files[0], .first = a.first, .count = a.count,
                                 .out = env->out};
    struct tok *t = NULL;
    if ((st = tok_load(&t, a.tokenizer, err)) == RZ_OK)
        st = prep_decode(t, &o, err);
    tok_free(t);
    return st;
}

static enum rz_status cmd_info(const struct prep_env *env, int argc, char **argv,
                               struct rz_err *err)
{
    struct args a;
    enum rz_status st = parse(&a, "info", "--json", argc, argv, err);
    if (st != RZ_OK)
        return st;
    if (a.n_files != 1)
        return usage_error(err, "info needs one FILE.tok or MANIFEST");
    struct prep_info i;
    if ((st = prep_info_read(a.files[0], &i, err)) == RZ_OK)
        prep_info_print(env->out, a.files[0], &i, a.json);
    return st;
}

static enum rz_status cmd_manifest(const struct prep_env *env, int argc, char **argv,
                                   struct rz_err *err)
{
    struct args a;
    enum rz_status st = parse(&a, "manifest", "--out", argc, argv, err);
    if (st != RZ_OK)
        return st;
    if (a.out == NULL || a.n_files == 0)
        return usage_error(err, "manifest needs --out DIR/manifest.json and SHARD.tok...");
    uint64_t total = 0;
    st = prep_manifest(a.out, (const char *const *)a.files, (size_t)a.n_files, &total, err);
    if (st == RZ_OK)
        fprintf(env->out, "ryzen-data: manifest %s: %d shard(s), %" PRIu64 " tokens\n", a.out,
                a.n_files, total);
    return st;
}

static enum rz_status cmd_verify(const struct prep_env *env, int argc, char **argv,
                                 struct rz_err *err)
{
    struct args a;
    enum rz_status st = parse(&a, "verify", "", argc, argv, err);
    if (st != RZ_OK)
        return st;
    if (a.n_files != 1)
        return usage_error(err, "verify needs one MANIFEST");
    struct manifest *m = NULL;
    st = prep_check_input(a.files[0], err);
    if (st == RZ_OK)
        st = manifest_read(a.files[0], &m, err);
    if (st == RZ_OK)
        st = manifest_verify(m, err);
    if (st == RZ_OK)
        fprintf(env->out, "%s: ok (%zu shard(s), %" PRIu64 " tokens, tokenizer %s)\n",
                a.files[0], m->n_shards, m->tokens, m->tokenizer_sha256);
    manifest_free(m);
    return st;
}

typedef enum rz_status (*cmd_fn)(const struct prep_env *, int, char **, struct rz_err *);

static const struct {
    const char *name;
    cmd_fn fn;
} commands[] = {
    {"encode", cmd_encode}, {"decode", cmd_decode}, {"info", cmd_info},
    {"manifest", cmd_manifest}, {"verify", cmd_verify},
};

static bool is_help(const char *s)
{
    return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0;
}

enum rz_status prep_run(const struct prep_env *env, int argc, char **argv, struct rz_err *err)
{
    if (argc < 2)
        return usage_error(err, "a subcommand is required");
    for (int i = 1; i < argc; i++)
        if (is_help(argv[i])) {
            fputs(usage_text, env->out);
            return RZ_OK;
        }
    if (strcmp(argv[1], "--version") == 0) {
        rz_cli_version(env->out, "ryzen-data");
        return RZ_OK;
    }
    if (strcmp(argv[1], "tokenizer") == 0) {
        if (argc < 3 || strcmp(argv[2], "train") != 0)
            return usage_error(err, "tokenizer: the subcommand is 'tokenizer train'");
        return cmd_train(env, argc - 2, argv + 2, err);
    }
    for (size_t i = 0; i < RZ_ARRAY_LEN(commands); i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].fn(env, argc - 1, argv + 1, err);
    return usage_error(err, "unknown subcommand '%s'", argv[1]);
}
