#include "config.h"

/* ckpt_dir.c: the checkpoint directory: discovery of the newest valid checkpoint (quarantining
 * damaged ones on the way), retention, and listing.  A checkpoint is a regular file named
 * step-<digits>.h5; step-<digits>.h5.tmp is a commit that never finished and is never loaded.
 * Files in DIR/quarantine/ are never looked at again, and never deleted, by this module.
 * Deliberately not here: reading or writing checkpoint contents (ckpt.c, ckpt_read.c). */

#include "ckpt/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/ckpt_h5.h"
#include "core/util.h"

enum entry_kind { ENTRY_FINAL, ENTRY_TMP };

struct dir_entry {
    int64_t step;
    enum entry_kind kind;
    char name[64];
};

/* "step-<1..18 digits>.h5" or the same with ".tmp"; 0 if `name` is neither. */
static int parse_name(const char *name, int64_t *step, enum entry_kind *kind)
{
    if (strncmp(name, "step-", 5) != 0)
        return 0;
    const char *p = name + 5;
    int64_t v = 0;
    int digits = 0;
    for (; *p >= '0' && *p <= '9' && digits < 18; p++, digits++)
        v = v * 10 + (*p - '0');
    if (digits == 0)
        return 0;
    if (strcmp(p, ".h5") == 0)
        *kind = ENTRY_FINAL;
    else if (strcmp(p, ".h5.tmp") == 0)
        *kind = ENTRY_TMP;
    else
        return 0;
    *step = v;
    return 1;
}

static int cmp_entry(const void *a, const void *b)
{
    const struct dir_entry *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

static bool is_regular(DIR *d, const char *name)
{
    struct stat sb;
    return fstatat(dirfd(d), name, &sb, 0) == 0 && S_ISREG(sb.st_mode);
}

static enum rz_status push_entry(struct dir_entry **v, size_t *n, size_t *cap,
                                 const struct dir_entry *e, const char *dir, struct rz_err *err)
{
    if (*n == *cap) {
        size_t ncap = *cap ? 2 * *cap : 16;
        struct dir_entry *nv = realloc(*v, ncap * sizeof *nv);
        if (nv == NULL)
            return rz_fail(err, RZ_ENOMEM, "scan checkpoint directory '%s': out of memory", dir);
        *v = nv;
        *cap = ncap;
    }
    (*v)[(*n)++] = *e;
    return RZ_OK;
}

/* The checkpoint and temp files of DIR, ascending by step.  A missing DIR gives none and
 * *missing = true. */
static enum rz_status scan_dir(const char *dir, struct dir_entry **out, size_t *count,
                               bool *missing, struct rz_err *err)
{
    *out = NULL;
    *count = 0;
    *missing = false;
    DIR *d = opendir(dir);
    if (d == NULL) {
        if (errno == ENOENT) {
            *missing = true;
            return RZ_OK;
        }
        return rz_fail(err, RZ_EIO, "scan checkpoint directory '%s': %s", dir, strerror(errno));
    }
    size_t cap = 0;
    enum rz_status st = RZ_OK;
    struct dirent *de;
    while (st == RZ_OK && (de = readdir(d)) != NULL) {
        struct dir_entry e;
        if (strlen(de->d_name) >= sizeof e.name || !parse_name(de->d_name, &e.step, &e.kind) ||
            !is_regular(d, de->d_name))
            continue;
        snprintf(e.name, sizeof e.name, "%s", de->d_name);
        st = push_entry(out, count, &cap, &e, dir, err);
    }
    closedir(d);
    if (st != RZ_OK) {
        free(*out);
        *out = NULL;
        *count = 0;
        return st;
    }
    if (*count > 1)
        qsort(*out, *count, sizeof **out, cmp_entry);
    return RZ_OK;
}

int64_t ckpt_newest_committed(const char *dir)
{
    struct dir_entry *v = NULL;
    size_t n = 0;
    bool missing;
    int64_t step = -1;
    if (scan_dir(dir, &v, &n, &missing, NULL) == RZ_OK)
        for (size_t i = 0; i < n; i++)
            if (v[i].kind == ENTRY_FINAL && v[i].step > step)
                step = v[i].step;
    free(v);
    return step;
}

/* DIR/NAME into buf; false if it does not fit. */
static bool join(char *buf, size_t len, const char *dir, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    return n >= 0 && (size_t)n < len;
}

static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static enum rz_status write_reason(const char *path, const char *original, const char *reason,
                                   struct rz_err *err)
{
    char now[32];
    rz_utc_iso8601(now, sizeof now);
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return rz_fail(err, RZ_EIO, "quarantine note '%s': %s", path, strerror(errno));
    fprintf(f, "file: %s\nreason: %s\nquarantined_utc: %s\n", original, reason, now);
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    int saved = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad)
        return rz_fail(err, RZ_EIO, "quarantine note '%s': %s", path, strerror(saved));
    return RZ_OK;
}

/* Move DIR/NAME to DIR/quarantine/NAME (NAME.1, NAME.2, ... if taken) with a NAME.reason note. */
static enum rz_status quarantine(const char *dir, const char *name, const char *reason,
                                 char *dest, size_t dest_len, struct rz_err *err)
{
    char qdir[CKPT_PATH_MAX], src[CKPT_PATH_MAX], note[CKPT_PATH_MAX + 16];
    if (!join(qdir, sizeof qdir, dir, "quarantine") || !join(src, sizeof src, dir, name) ||
        !join(dest, dest_len, qdir, name))
        return rz_fail(err, RZ_EIO, "quarantine '%s' in '%s': path too long", name, dir);
    enum rz_status st = rz_mkdirs(qdir, err);
    if (st != RZ_OK)
        return st;
    struct stat sb;
    for (int k = 1; k < 1000 && lstat(dest, &sb) == 0; k++)
        if (snprintf(dest, dest_len, "%s/%s.%d", qdir, name, k) >= (int)dest_len)
            return rz_fail(err, RZ_EIO, "quarantine '%s' in '%s': path too long", name, dir);
    if (rename(src, dest) != 0)
        return rz_fail(err, RZ_EIO, "quarantine '%s' as '%s': %s", src, dest, strerror(errno));
    snprintf(note, sizeof note, "%s.reason", dest);
    st = write_reason(note, src, reason, err);
    fsync_dir(qdir);
    fsync_dir(dir);
    return st;
}

/* Quarantine a damaged file and tell the caller, whatever happens to the move. */
static void skip_damaged(const char *dir, const char *name, const char *path,
                         enum rz_status why, const char *cause, ckpt_skip_fn on_skip, void *user)
{
    char note[RZ_ERR_MSG_MAX + CKPT_PATH_MAX + 64], dest[CKPT_PATH_MAX];
    struct rz_err qerr;
    rz_err_clear(&qerr);
    if (why != RZ_ENOCKPT)
        snprintf(note, sizeof note, "%s (not quarantined: %s)", cause, rz_status_name(why));
    else if (quarantine(dir, name, cause, dest, sizeof dest, &qerr) == RZ_OK)
        snprintf(note, sizeof note, "%s (quarantined as %s)", cause, dest);
    else
        snprintf(note, sizeof note, "%s (could not quarantine: %s)", cause, qerr.msg);
    if (on_skip != NULL)
        on_skip(user, path, note);
}

enum rz_status ckpt_find_latest(const char *dir, char *path_out, size_t path_len,
                                ckpt_skip_fn on_skip, void *user, struct rz_err *err)
{
    struct dir_entry *v = NULL;
    size_t n = 0;
    bool missing = false;
    if (path_len > 0)
        path_out[0] = '\0';
    enum rz_status st = scan_dir(dir, &v, &n, &missing, err);
    for (size_t i = n; st == RZ_OK && i-- > 0;) {
        char path[CKPT_PATH_MAX];
        struct rz_err e;
        if (v[i].kind != ENTRY_FINAL)
            continue;
        if (!join(path, sizeof path, dir, v[i].name)) {
            st = rz_fail(err, RZ_EIO, "find checkpoint in '%s': path too long", dir);
            break;
        }
        rz_err_clear(&e);
        enum rz_status vs = ckpt_verify(path, &e);
        if (vs == RZ_OK) {
            if (strlen(path) >= path_len)
                st = rz_fail(err, RZ_EIO, "find checkpoint in '%s': path buffer too small", dir);
            else
                snprintf(path_out, path_len, "%s", path);
            break;
        }
        skip_damaged(dir, v[i].name, path, vs, ckpt_msg_cause(e.msg, path), on_skip, user);
    }
    free(v);
    return st;
}

static bool known_stat(const char *path, struct ckpt_known_file *out)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return false;
    out->dev = (uint64_t)sb.st_dev;
    out->ino = (uint64_t)sb.st_ino;
    out->size = (int64_t)sb.st_size;
    out->mtime_ns = (int64_t)sb.st_mtim.tv_sec * 1000000000 + sb.st_mtim.tv_nsec;
    return true;
}

void ckpt_known_add(struct ckpt_known *known, const char *path)
{
    struct ckpt_known_file f;
    if (known == NULL || !known_stat(path, &f))
        return;
    known->f[known->next] = f;
    known->next = (known->next + 1) % CKPT_KNOWN_MAX;
    if (known->n < CKPT_KNOWN_MAX)
        known->n++;
}

static bool known_has(const struct ckpt_known *known, const char *path)
{
    struct ckpt_known_file f;
    if (known == NULL || !known_stat(path, &f))
        return false;
    for (unsigned i = 0; i < known->n; i++)
        if (memcmp(&known->f[i], &f, sizeof f) == 0)
            return true;
    return false;
}

/* Whether PATH counts as valid for retention: known, or it verifies now (and becomes known). */
static bool valid_for_retention(struct ckpt_known *known, const char *path)
{
    if (known_has(known, path))
        return true;
    if (ckpt_verify(path, NULL) != RZ_OK)
        return false;
    ckpt_known_add(known, path);
    return true;
}

enum rz_status ckpt_prune(const char *dir, int64_t keep, struct ckpt_known *known,
                          struct rz_err *err)
{
    struct dir_entry *v = NULL;
    size_t n = 0;
    bool missing = false;
    enum rz_status st = scan_dir(dir, &v, &n, &missing, err), removal = RZ_OK;
    int64_t want = keep < 1 ? 1 : keep, valid = 0;
    for (size_t i = n; st == RZ_OK && i-- > 0;) {
        char path[CKPT_PATH_MAX];
        if (!join(path, sizeof path, dir, v[i].name)) {
            st = rz_fail(err, RZ_EIO, "prune checkpoints in '%s': path too long", dir);
            break;
        }
        bool drop = v[i].kind == ENTRY_TMP;
        if (v[i].kind == ENTRY_FINAL && valid < want)
            valid += valid_for_retention(known, path); /* damaged ones are left for find_latest */
        else if (v[i].kind == ENTRY_FINAL)
            drop = true;
        if (drop && unlink(path) != 0 && errno != ENOENT && removal == RZ_OK)
            removal = rz_fail(err, RZ_EIO, "prune checkpoints: remove '%s': %s", path,
                              strerror(errno));
    }
    free(v);
    return st != RZ_OK ? st : removal;
}

static void fill_entry(struct ckpt_entry *out, const char *dir, const struct dir_entry *e)
{
    struct stat sb;
    struct rz_err verr;
    memset(out, 0, sizeof *out);
    out->step = e->step;
    if (!join(out->path, sizeof out->path, dir, e->name)) {
        snprintf(out->reason, sizeof out->reason, "path too long");
        return;
    }
    if (stat(out->path, &sb) == 0) {
        out->mtime = (int64_t)sb.st_mtime;
        out->size_bytes = (int64_t)sb.st_size;
    }
    rz_err_clear(&verr);
    out->valid = ckpt_verify(out->path, &verr) == RZ_OK;
    if (!out->valid)
        snprintf(out->reason, sizeof out->reason, "%s", ckpt_msg_cause(verr.msg, out->path));
}

enum rz_status ckpt_list(const char *dir, struct ckpt_entry **out, size_t *count,
                         struct rz_err *err)
{
    struct dir_entry *v = NULL;
    size_t n = 0, k = 0;
    bool missing = false;
    *out = NULL;
    *count = 0;
    enum rz_status st = scan_dir(dir, &v, &n, &missing, err);
    if (st == RZ_OK && missing)
        st = rz_fail(err, RZ_EIO, "list checkpoints in '%s': %s", dir, strerror(ENOENT));
    if (st == RZ_OK && n > 0 && (*out = calloc(n, sizeof **out)) == NULL)
        st = rz_fail(err, RZ_ENOMEM, "list checkpoints in '%s': out of memory", dir);
    for (size_t i = 0; st == RZ_OK && i < n; i++)
        if (v[i].kind == ENTRY_FINAL)
            fill_entry(&(*out)[k++], dir, &v[i]);
    free(v);
    *count = k;
    return st;
}
