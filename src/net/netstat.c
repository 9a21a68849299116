/* netstat.c: a node's network counters from /proc (see netstat.h). */
#include "config.h"

#include "net/netstat.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* The next blank-separated word of line[0, len) from *p on: [*p, *q); false at the end. */
static bool next_word(const char *line, size_t len, size_t *p, size_t *q)
{
    while (*p < len && line[*p] == ' ')
        (*p)++;
    *q = *p;
    while (*q < len && line[*q] != ' ')
        (*q)++;
    return *q > *p;
}

/* The index of `name` among the words of a "Tcp: ..." header line, -1 if none. */
static int word_index(const char *line, size_t len, const char *name)
{
    size_t n = strlen(name), p = 0, q;
    for (int i = 0; next_word(line, len, &p, &q); i++, p = q)
        if (q - p == n && memcmp(line + p, name, n) == 0)
            return i;
    return -1;
}

/* The `index`-th word of a line as a number. */
static int word_value(const char *line, size_t len, int index, double *out)
{
    size_t p = 0, q;
    for (int i = 0; next_word(line, len, &p, &q); i++, p = q) {
        if (i != index)
            continue;
        char word[32], *end;
        if (q - p >= sizeof word)
            return -1;
        memcpy(word, line + p, q - p);
        word[q - p] = '\0';
        *out = strtod(word, &end);
        return *end == '\0' ? 0 : -1;
    }
    return -1;
}

/* The next line starting with `prefix` from *pos on: its start and length; NULL when none. */
static const char *find_line(const char *text, size_t *pos, const char *prefix, size_t *len)
{
    size_t n = strlen(prefix);
    while (text[*pos] != '\0') {
        const char *line = text + *pos;
        const char *nl = strchr(line, '\n');
        size_t l = nl != NULL ? (size_t)(nl - line) : strlen(line);
        *pos += l + (nl != NULL);
        if (l >= n && memcmp(line, prefix, n) == 0) {
            *len = l;
            return line;
        }
    }
    return NULL;
}

enum rz_status netstat_parse_snmp(const char *text, const char *what, struct netstat *out,
                                  struct rz_err *err)
{
    size_t pos = 0, hl = 0, vl = 0;
    const char *head = find_line(text, &pos, "Tcp:", &hl);
    const char *vals = head != NULL ? find_line(text, &pos, "Tcp:", &vl) : NULL;
    if (vals == NULL)
        return rz_fail(err, RZ_EIO, "%s: no \"Tcp:\" header and values lines", what);
    int io = word_index(head, hl, "OutSegs"), ir = word_index(head, hl, "RetransSegs");
    if (io < 0 || ir < 0)
        return rz_fail(err, RZ_EIO, "%s: the Tcp: header names no %s", what,
                       io < 0 ? "OutSegs" : "RetransSegs");
    if (word_value(vals, vl, io, &out->tcp_out_segs) != 0 ||
        word_value(vals, vl, ir, &out->tcp_retrans_segs) != 0)
        return rz_fail(err, RZ_EIO, "%s: the Tcp: values line has no number for OutSegs or "
                       "RetransSegs", what);
    return RZ_OK;
}

enum rz_status netstat_parse_dev(const char *text, const char *what, struct netstat *out,
                                 struct rz_err *err)
{
    size_t pos = 0, len = 0;
    out->tx_bytes = out->rx_bytes = out->drops = out->errors = 0.0;
    /* "  eth0: rx_bytes packets errs drop fifo frame compressed multicast tx_bytes packets errs
     * drop fifo colls carrier compressed" */
    for (const char *line; (line = find_line(text, &pos, "", &len)) != NULL;) {
        const char *colon = memchr(line, ':', len);
        if (colon == NULL)
            continue; /* the two header lines */
        const char *name = line;
        while (name < colon && *name == ' ')
            name++;
        if (colon - name == 2 && memcmp(name, "lo", 2) == 0)
            continue;
        double v[16];
        size_t rest = len - (size_t)(colon + 1 - line);
        for (int i = 0; i < 16; i++)
            if (word_value(colon + 1, rest, i, &v[i]) != 0)
                return rz_fail(err, RZ_EIO, "%s: interface %.*s: %d counters, not 16", what,
                               (int)(colon - name), name, i);
        out->rx_bytes += v[0];
        out->tx_bytes += v[8];
        out->errors += v[2] + v[10];
        out->drops += v[3] + v[11];
    }
    return RZ_OK; /* a host with lo alone has no traffic to count: zeros */
}

static enum rz_status read_one(const char *proc, const char *name, struct netstat *out,
                               enum rz_status (*parse)(const char *, const char *,
                                                       struct netstat *, struct rz_err *),
                               struct rz_err *err)
{
    char path[4096];
    char *text = NULL;
    size_t len = 0;
    rz_fmt(path, sizeof path, "%s/net/%s", proc, name);
    enum rz_status st = rz_read_file(path, &text, &len, err);
    if (st == RZ_OK)
        st = parse(text, path, out, err);
    free(text);
    return st;
}

enum rz_status netstat_read(const char *proc, struct netstat *out, struct rz_err *err)
{
    memset(out, 0, sizeof *out);
    enum rz_status st = read_one(proc, "snmp", out, netstat_parse_snmp, err);
    return st == RZ_OK ? read_one(proc, "dev", out, netstat_parse_dev, err) : st;
}

static double up(double later, double earlier)
{
    return later > earlier ? later - earlier : 0.0;
}

struct netstat netstat_delta(const struct netstat *later, const struct netstat *earlier)
{
    struct netstat d = {
        .tcp_out_segs = up(later->tcp_out_segs, earlier->tcp_out_segs),
        .tcp_retrans_segs = up(later->tcp_retrans_segs, earlier->tcp_retrans_segs),
        .tx_bytes = up(later->tx_bytes, earlier->tx_bytes),
        .rx_bytes = up(later->rx_bytes, earlier->rx_bytes),
        .drops = up(later->drops, earlier->drops),
        .errors = up(later->errors, earlier->errors)};
    return d;
}

double netstat_retrans_share(const struct netstat *d)
{
    return d->tcp_out_segs > 0.0 ? d->tcp_retrans_segs / d->tcp_out_segs : 0.0;
}
