#include "config.h"

/* ryzen-ckpt: inspect checkpoints.  A thin main over ckpt/: `list DIR` prints a table, `info FILE`
 * prints JSON after a full verification, `verify FILE` checks every checksum; and over export/:
 * `export` writes Hugging Face GPT-2 files, `import` reads them back into a new run.  Exit codes
 * are the documented ones (docs/exit-codes.md): 0 ok; 64 usage (also `list` of something that
 * is not a directory); 65 not a valid checkpoint: damaged, missing, a directory, a device; 74 a
 * file that is there but cannot be read (permissions, an I/O error).  It never modifies or
 * quarantines anything (export and import write only into their output directory). */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "core/cli.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"
#include "export/export.h"

static void usage(FILE *f)
{
    fputs("usage: ryzen-ckpt list DIR      table of DIR's checkpoints: step, time, size, status\n"
          "       ryzen-ckpt info FILE     verify FILE, then print its metadata as JSON\n"
          "       ryzen-ckpt verify FILE   check every checksum; prints 'FILE: ok'\n"
          "       ryzen-ckpt export --format safetensors [--tokenizer MODEL] [--head-bias]\n"
          "                  CKPT.h5|RUN_DIR OUTDIR\n"
          "                  Hugging Face GPT-2 files: model.safetensors, config.json (and\n"
          "                  tokenizer.model, tokenizer_config.json); a RUN_DIR gives its newest\n"
          "                  checkpoint that verifies; --head-bias writes our head's bias, which\n"
          "                  GPT-2 lacks, as lm_head.bias (refused without it; a model with\n"
          "                  model.head_bias false has none)\n"
          "       ryzen-ckpt import --format safetensors [--set KEY=VALUE]... SRC_DIR RUN_DIR\n"
          "                  those files into RUN_DIR/checkpoints/step-00000000.h5 and\n"
          "                  RUN_DIR/config.yaml, for ryzen-train to resume from\n"
          "       ryzen-ckpt --help | --version\n"
          "Exit codes: 0 ok; 64 usage, or `list` of something that is not a directory; 65 not a\n"
          "valid checkpoint (damaged, missing, a directory, a device); 74 a regular file that\n"
          "cannot be read (permissions, I/O error); export/import: 64 also for what GPT-2 or our\n"
          "model cannot express (the message says why), 74 for files that cannot be written.\n",
          f);
}

static int fail(enum rz_status st, const struct rz_err *err)
{
    fprintf(stderr, "ryzen-ckpt: %s\n", err->msg);
    return rz_exit_code(st);
}

/* verify and info answer "is PATH a valid checkpoint?": anything that is not a regular file is
 * no checkpoint (65); a regular file that cannot be read is an I/O error (74). */
static int fail_file(enum rz_status st, const struct rz_err *err, const char *path)
{
    struct stat sb;
    if (st == RZ_EIO && (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)))
        st = RZ_ENOCKPT;
    return fail(st, err);
}

static int cmd_list(const char *dir)
{
    struct rz_err err;
    struct ckpt_entry *v = NULL;
    size_t n = 0;
    rz_err_clear(&err);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        fprintf(stderr, "ryzen-ckpt: list '%s': not a directory%s\n", dir,
                stat(dir, &sb) != 0 ? " (it does not exist)" : "");
        return RZ_EXIT_USAGE;
    }
    enum rz_status st = ckpt_list(dir, &v, &n, &err);
    if (st != RZ_OK)
        return fail(st, &err);
    printf("%-10s  %-20s  %12s  %s\n", "STEP", "SAVED (UTC)", "SIZE (bytes)", "STATUS");
    for (size_t i = 0; i < n; i++) {
        char when[32];
        rz_utc_format(when, sizeof when, (double)v[i].mtime, RZ_UTC_ISO8601);
        printf("%-10lld  %-20s  %12lld  %s%s\n", (long long)v[i].step, when,
               (long long)v[i].size_bytes, v[i].valid ? "valid" : "INVALID: ",
               v[i].valid ? "" : v[i].reason);
    }
    free(v);
    return RZ_EXIT_OK;
}

static void print_dims(struct rz_json *j, const struct model_dims *d)
{
    rz_json_key(j, "model");
    rz_json_object_begin(j);
    rz_json_kv_int(j, "vocab_size", d->vocab);
    rz_json_kv_int(j, "d_model", d->d_model);
    rz_json_kv_int(j, "n_heads", d->n_heads);
    rz_json_kv_int(j, "n_layers", d->n_layers);
    rz_json_kv_int(j, "d_ff", d->d_ff);
    rz_json_kv_int(j, "seq_len", d->seq_len);
    rz_json_kv_int(j, "batch", d->batch);
    rz_json_kv_float(j, "ln_eps", d->ln_eps);
    rz_json_kv_float(j, "init_std", d->init_std);
    rz_json_object_end(j);
}

static void print_info(const char *path, const struct ckpt_meta *m)
{
    struct rz_json j;
    rz_json_init(&j, stdout);
    rz_json_object_begin(&j);
    rz_json_kv_string(&j, "path", path);
    rz_json_kv_int(&j, "format_version", m->format_version);
    rz_json_kv_string(&j, "build", m->build);
    rz_json_kv_int(&j, "step", m->step);
    rz_json_kv_int(&j, "samples_seen", m->samples_seen);
    rz_json_kv_int(&j, "global_batch", m->global_batch);
    rz_json_kv_int(&j, "world_size", m->world_size);
    rz_json_kv_int(&j, "adam_t", m->adam_t);
    rz_json_kv_double(&j, "lr", m->lr);
    rz_json_kv_uint(&j, "init_seed", m->init_seed);
    rz_json_kv_uint(&j, "data_seed", m->data_seed);
    rz_json_kv_double(&j, "loss_sum", m->loss_sum);
    rz_json_kv_double(&j, "train_time_s", m->train_time_s);
    rz_json_kv_int(&j, "restarts", m->restarts);
    print_dims(&j, &m->dims);
    rz_json_kv_string(&j, "config_sha256", m->config_sha256);
    rz_json_kv_string(&j, "params_sha256", m->params_sha256);
    rz_json_kv_string(&j, "adam_sha256", m->adam_sha256);
    rz_json_key(&j, "tokenizer_sha256"); /* "" none named; null not recorded (an older file) */
    if (m->tokenizer_recorded)
        rz_json_string(&j, m->tokenizer_sha256);
    else
        rz_json_null(&j);
    rz_json_kv_bool(&j, "verified", true);
    rz_json_object_end(&j);
    fputc('\n', stdout);
}

/* ckpt_inspect recomputes params_sha256 from the file's parameter bytes in table order and fails
 * unless it equals the stored one, so the value printed is the recomputed one; adam_sha256 is
 * recomputed the same way. */
static int cmd_info(const char *path)
{
    struct rz_err err;
    struct ckpt_meta m;
    rz_err_clear(&err);
    enum rz_status st = ckpt_inspect(path, &m, &err);
    if (st != RZ_OK)
        return fail_file(st, &err, path);
    print_info(path, &m);
    ckpt_meta_free(&m);
    return RZ_EXIT_OK;
}

static int cmd_verify(const char *path)
{
    struct rz_err err;
    rz_err_clear(&err);
    enum rz_status st = ckpt_verify(path, &err);
    if (st != RZ_OK)
        return fail_file(st, &err, path);
    printf("%s: ok\n", path);
    return RZ_EXIT_OK;
}

/* The arguments of export and import: --format (required: safetensors, the only format, so
 * that others can come), the options of each, and two operands. */
struct io_args {
    const char *format, *tokenizer, *pos[2];
    bool head_bias;
    const char **sets;        /* argc entries */
    int n_sets;
};

static bool parse_io_args(int argc, char **argv, bool is_export, struct io_args *a)
{
    int npos = 0;
    bool ok = true;
    for (int i = 2; i < argc && ok; i++) {
        bool more = i + 1 < argc;
        if (strcmp(argv[i], "--format") == 0 && more)
            a->format = argv[++i];
        else if (is_export && strcmp(argv[i], "--tokenizer") == 0 && more)
            a->tokenizer = argv[++i];
        else if (is_export && strcmp(argv[i], "--head-bias") == 0)
            a->head_bias = true;
        else if (!is_export && strcmp(argv[i], "--set") == 0 && more)
            a->sets[a->n_sets++] = argv[++i];
        else if (argv[i][0] != '-' && npos < 2)
            a->pos[npos++] = argv[i];
        else
            ok = false;
    }
    if (!ok || npos != 2) {
        usage(stderr);
        return false;
    }
    if (a->format != NULL && strcmp(a->format, "safetensors") == 0)
        return true;
    fprintf(stderr, "ryzen-ckpt: --format %s: the formats are: safetensors\n",
            a->format != NULL ? a->format : "(missing)");
    return false;
}

static int cmd_export(const struct io_args *a)
{
    struct export_opts o = {.source = a->pos[0], .out_dir = a->pos[1],
                            .tokenizer = a->tokenizer, .allow_head_bias = a->head_bias};
    struct export_result r;
    struct rz_err err;
    rz_err_clear(&err);
    enum rz_status st = export_safetensors(&o, &r, &err);
    if (st != RZ_OK)
        return fail(st, &err);
    printf("exported %s (step %lld, params_sha256 %s) to %s: model.safetensors (%zu tensors%s), "
           "config.json%s\n", r.checkpoint, (long long)r.step, r.params_sha256, o.out_dir,
           r.tensors, r.head_bias ? ", with lm_head.bias" : "",
           o.tokenizer != NULL ? ", tokenizer.model, tokenizer_config.json" : "");
    if (r.note[0] != '\0')
        fprintf(stderr, "ryzen-ckpt: note: %s\n", r.note);
    return RZ_EXIT_OK;
}

static int cmd_import(const struct io_args *a)
{
    struct import_opts o = {.src_dir = a->pos[0], .run_dir = a->pos[1], .sets = a->sets,
                            .n_sets = a->n_sets};
    struct import_result r;
    struct rz_err err;
    rz_err_clear(&err);
    enum rz_status st = import_safetensors(&o, &r, &err);
    if (st != RZ_OK)
        return fail(st, &err);
    printf("imported %s to %s (params_sha256 %s); config %s\n", o.src_dir, r.checkpoint,
           r.params_sha256, r.config);
    if (r.note[0] != '\0')
        fprintf(stderr, "ryzen-ckpt: note: %s\n", r.note);
    return RZ_EXIT_OK;
}

static int cmd_io(int argc, char **argv, bool is_export)
{
    struct io_args a = {.sets = calloc((size_t)argc, sizeof(const char *))};
    int rc = RZ_EXIT_USAGE;
    if (a.sets == NULL) {
        fputs("ryzen-ckpt: out of memory\n", stderr);
        return rz_exit_code(RZ_ENOMEM);
    }
    if (parse_io_args(argc, argv, is_export, &a))
        rc = is_export ? cmd_export(&a) : cmd_import(&a);
    free(a.sets);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return RZ_EXIT_OK;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        rz_cli_version(stdout, "ryzen-ckpt");
        return RZ_EXIT_OK;
    }
    int rc = RZ_EXIT_USAGE;
    if (argc == 3 && strcmp(argv[1], "list") == 0)
        rc = cmd_list(argv[2]);
    else if (argc == 3 && strcmp(argv[1], "info") == 0)
        rc = cmd_info(argv[2]);
    else if (argc == 3 && strcmp(argv[1], "verify") == 0)
        rc = cmd_verify(argv[2]);
    else if (argc >= 2 && strcmp(argv[1], "export") == 0)
        rc = cmd_io(argc, argv, true);
    else if (argc >= 2 && strcmp(argv[1], "import") == 0)
        rc = cmd_io(argc, argv, false);
    else
        usage(stderr);
    if (fflush(stdout) != 0 && rc == RZ_EXIT_OK)
        rc = RZ_EXIT_IO;
    return rc;
}
