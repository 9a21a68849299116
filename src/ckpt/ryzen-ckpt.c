#include "config.h"

/* ryzen-ckpt: inspect checkpoints.  A thin main over ckpt/: `list DIR` prints a table, `info FILE`
 * prints JSON after a full verification, `verify FILE` checks every checksum.  Exit codes are the
 * documented ones (docs/exit-codes.md): 0 ok; 64 usage (also `list` of something that is not a
 * directory); 65 not a valid checkpoint: damaged, missing, a directory, a device; 74 a file that
 * is there but cannot be read (permissions, an I/O error).  It never modifies or quarantines
 * anything. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/ckpt.h"
#include "core/cli.h"
#include "core/json.h"
#include "core/status.h"
#include "core/util.h"

static void usage(FILE *f)
{
    fputs("usage: ryzen-ckpt list DIR      table of DIR's checkpoints: step, time, size, status\n"
          "       ryzen-ckpt info FILE     verify FILE, then print its metadata as JSON\n"
          "       ryzen-ckpt verify FILE   check every checksum; prints 'FILE: ok'\n"
          "       ryzen-ckpt --help | --version\n"
          "Exit codes: 0 ok; 64 usage, or `list` of something that is not a directory; 65 not a\n"
          "valid checkpoint (damaged, missing, a directory, a device); 74 a regular file that\n"
          "cannot be read (permissions, I/O error).\n",
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

/* The shortest decimal that reads back as the same float (1e-05, not 9.99999975e-06). */
static double float_for_json(float f)
{
    char buf[32];
    for (int prec = 6; prec < 9; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if (strtof(buf, NULL) == f)
            return strtod(buf, NULL);
    }
    return (double)f;
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
    rz_json_kv_double(j, "ln_eps", float_for_json(d->ln_eps));
    rz_json_kv_double(j, "init_std", float_for_json(d->init_std));
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
    else
        usage(stderr);
    if (fflush(stdout) != 0 && rc == RZ_EXIT_OK)
        rc = RZ_EXIT_IO;
    return rc;
}
