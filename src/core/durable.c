/* durable.c: temp file, fsync, rename, fsync of the directory (see durable.h). */
#include "config.h"

#include "core/durable.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "core/hooks.h"
#include "core/util.h"

const char *rz_io_cause(int e)
{
    switch (e) {
    case ENOSPC: return "disk full (ENOSPC): free space in this filesystem";
#ifdef EDQUOT
    case EDQUOT: return "disk quota exceeded (EDQUOT)";
#endif
    case EROFS: return "read-only filesystem (EROFS)";
    default: return strerror(e);
    }
}

static enum rz_status fsync_fd_path(const char *path, int flags, struct rz_err *err)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return rz_fail(err, RZ_EIO, "open '%s' for fsync: %s", path, rz_io_cause(errno));
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    if (rc != 0)
        return rz_fail(err, RZ_EIO, "fsync '%s': %s", path, rz_io_cause(saved));
    return RZ_OK;
}

/* tmp (closed, in path's directory) -> path, durably. */
static enum rz_status rename_durably(const char *tmp, const char *path, const char *tag,
                                     struct rz_err *err)
{
    char dir[RZ_DURABLE_PATH_MAX];
    rz_hook_crash_point(tag, "before_rename");
    if (rename(tmp, path) != 0)
        return rz_fail(err, RZ_EIO, "rename '%s' to '%s': %s", tmp, path, rz_io_cause(errno));
    rz_hook_crash_point(tag, "before_dirsync");
    rz_dir_of(path, dir, sizeof dir);
    return fsync_fd_path(dir, O_RDONLY | O_DIRECTORY, err);
}

enum rz_status rz_durable_open(struct rz_durable *d, const char *path, const char *tag,
                               struct rz_err *err)
{
    memset(d, 0, sizeof *d);
    d->tag = tag != NULL ? tag : "file";
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof d->path)
        return rz_fail(err, RZ_EIO, "write '%s': path empty or too long", path);
    memcpy(d->path, path, n + 1);
    rz_fmt(d->tmp, sizeof d->tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(d->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return rz_fail(err, RZ_EIO, "write '%s': create '%s': %s", path, d->tmp,
                       rz_io_cause(errno));
    d->f = fdopen(fd, "w");
    if (d->f == NULL) {
        int saved = errno;
        close(fd);
        unlink(d->tmp);
        return rz_fail(err, RZ_EIO, "write '%s': %s", path, rz_io_cause(saved));
    }
    return RZ_OK;
}

void rz_durable_abort(struct rz_durable *d)
{
    if (d->f != NULL) {
        fclose(d->f);
        d->f = NULL;
    }
    if (d->tmp[0] != '\0')
        unlink(d->tmp);
    d->tmp[0] = '\0';
}

enum rz_status rz_durable_commit(struct rz_durable *d, struct rz_err *err)
{
    if (d->f == NULL)
        return rz_fail(err, RZ_EIO, "write '%s': not open", d->path);
    errno = 0;
    bool ok = fflush(d->f) == 0 && !ferror(d->f);
    int saved = errno;
    rz_hook_crash_point(d->tag, "before_fsync");
    if (ok && fsync(fileno(d->f)) != 0) {
        ok = false;
        saved = errno;
    }
    FILE *f = d->f;
    d->f = NULL;
    if (fclose(f) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    enum rz_status st = ok ? rename_durably(d->tmp, d->path, d->tag, err)
                           : rz_fail(err, RZ_EIO, "write '%s': %s", d->path,
                                     saved != 0 ? rz_io_cause(saved) : "write error");
    if (st != RZ_OK)
        unlink(d->tmp);
    d->tmp[0] = '\0';
    return st;
}

enum rz_status rz_durable_write(const char *path, const char *tag, rz_durable_fn fn,
                                const void *ctx, struct rz_err *err)
{
    struct rz_durable d;
    enum rz_status st = rz_durable_open(&d, path, tag, err);
    if (st != RZ_OK)
        return st;
    fn(d.f, ctx);
    return rz_durable_commit(&d, err);
}

static void put_text(FILE *f, const void *text) { fputs(text, f); }

enum rz_status rz_durable_write_text(const char *path, const char *tag, const char *text,
                                     struct rz_err *err)
{
    return rz_durable_write(path, tag, put_text, text, err);
}

enum rz_status rz_durable_commit_file(const char *tmp, const char *path, const char *tag,
                                      struct rz_err *err)
{
    rz_hook_crash_point(tag, "before_fsync");
    enum rz_status st = fsync_fd_path(tmp, O_RDONLY, err);
    if (st == RZ_OK)
        st = rename_durably(tmp, path, tag, err);
    if (st != RZ_OK)
        unlink(tmp);
    return st;
}

enum rz_status rz_durable_create_excl(const char *path, const char *text, bool *existed,
                                      struct rz_err *err)
{
    char dir[RZ_DURABLE_PATH_MAX];
    *existed = false;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0 && errno == EEXIST) {
        *existed = true;
        return RZ_OK;
    }
    if (fd < 0)
        return rz_fail(err, RZ_EIO, "create '%s': %s", path, rz_io_cause(errno));
    size_t n = strlen(text), done = 0;
    int saved = 0;
    while (done < n) {
        ssize_t w = write(fd, text + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            saved = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    if (saved == 0 && fsync(fd) != 0)
        saved = errno;
    if (close(fd) != 0 && saved == 0)
        saved = errno;
    if (saved != 0) {
        unlink(path);
        return rz_fail(err, RZ_EIO, "create '%s': %s", path, rz_io_cause(saved));
    }
    rz_dir_of(path, dir, sizeof dir);
    return fsync_fd_path(dir, O_RDONLY | O_DIRECTORY, err);
}
