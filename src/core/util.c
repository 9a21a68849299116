/* util.c: time, time stamps, quantiles, allocation, memory accounting and filesystem helpers
 * (see util.h). */
#include "config.h"

#include "core/util.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void rz_fmt(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

bool rz_list_has(const char *list, const char *name)
{
    size_t n = strlen(name);
    if (n == 0)
        return false;
    for (const char *p = list; (p = strstr(p, name)) != NULL; p++)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return true;
    return false;
}

void rz_list_add(char *out, size_t len, const char *names)
{
    const char *p = names;
    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        char name[256];
        rz_fmt(name, sizeof name, "%.*s", (int)(n < sizeof name ? n : sizeof name - 1), p);
        size_t used = strlen(out);
        if (name[0] != '\0' && !rz_list_has(out, name) && used + (used ? 1 : 0) + strlen(name) < len)
            rz_fmt(out + used, len - used, "%s%s", used ? "," : "", name);
        p += n;
        if (*p == ',')
            p++;
    }
}

void rz_shard(size_t n, int parts, int index, size_t align, size_t *lo, size_t *hi)
{
    size_t units = (n + align - 1) / align; /* whole alignment units, the last may be short */
    size_t a = units * (size_t)index / (size_t)parts, b = units * (size_t)(index + 1) / (size_t)parts;
    *lo = a * align < n ? a * align : n;
    *hi = b * align < n ? b * align : n;
}

double rz_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double rz_unix_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void rz_sleep(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - floor(seconds)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

void rz_utc_format(char *buf, size_t len, double t, enum rz_utc_form form)
{
    time_t secs = (time_t)floor(t);
    struct tm tm;
    gmtime_r(&secs, &tm);
    switch (form) { /* literal formats, so the compiler checks them */
    case RZ_UTC_ISO8601: strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm); return;
    case RZ_UTC_COMPACT: strftime(buf, len, "%Y%m%dT%H%M%SZ", &tm); return;
    case RZ_UTC_SPACED: strftime(buf, len, "%Y-%m-%d %H:%M:%SZ", &tm); return;
    }
}

void rz_utc_iso8601(char *buf, size_t len)
{
    rz_utc_format(buf, len, (double)time(NULL), RZ_UTC_ISO8601);
}

static int rz_dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double rz_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    qsort(v, n, sizeof *v, rz_dbl_cmp);
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

void *rz_alloc_aligned(size_t bytes)
{
    void *p = NULL;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded == 0)
        rounded = 64;
    if (posix_memalign(&p, 64, rounded) != 0)
        return NULL;
    memset(p, 0, rounded);
    return p;
}

bool rz_malloc_tune(size_t reused)
{
    const size_t mmap_max = (size_t)32 << 20; /* glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit */
    size_t mmap_at = reused > mmap_max / 2 ? mmap_max : 2 * reused;
    if (reused > 0 && mallopt(M_MMAP_THRESHOLD, (int)mmap_at) != 1)
        return false;
    return mallopt(M_TRIM_THRESHOLD, reused > 0 ? (int)(2 * mmap_at) : 1 << 20) == 1;
}

uint64_t rz_peak_rss_bytes(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return (uint64_t)ru.ru_maxrss * 1024u; /* Linux reports kilobytes */
}

uint64_t rz_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    unsigned long size = 0, resident = 0;
    int n = fscanf(f, "%lu %lu", &size, &resident);
    fclose(f);
    if (n != 2)
        return 0;
    return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

enum rz_status rz_mkdirs(const char *path, struct rz_err *err)
{
    char buf[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf)
        return rz_fail(err, RZ_EIO, "create directory '%s': path empty or too long", path);
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char saved = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return rz_fail(err, RZ_EIO, "create directory '%s': %s", buf, strerror(errno));
        buf[i] = saved;
    }
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return rz_fail(err, RZ_EIO, "create directory '%s': exists and is not a directory", path);
    return RZ_OK;
}

enum rz_status rz_read_file(const char *path, char **out, size_t *len, struct rz_err *err)
{
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return rz_fail(err, RZ_EIO, "open '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (buf == NULL) {
        fclose(f);
        return rz_fail(err, RZ_ENOMEM, "read '%s': out of memory", path);
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = realloc(buf, cap * 2);
            if (nb == NULL) {
                free(buf);
                fclose(f);
                return rz_fail(err, RZ_ENOMEM, "read '%s': out of memory", path);
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return rz_fail(err, RZ_EIO, "read '%s': %s", path, strerror(errno));
    }
    buf[n] = '\0';
    *out = buf;
    if (len != NULL)
        *len = n;
    return RZ_OK;
}

void rz_dir_of(const char *path, char *out, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (slash == NULL)
        rz_fmt(out, len, ".");
    else if (slash == path)
        rz_fmt(out, len, "/");
    else
        rz_fmt(out, len, "%.*s", (int)(slash - path), path);
}
