/* netstat.c: a node's network counters from /proc and /sys/class/infiniband (see netstat.h). */
#include "config.h"

#include "net/netstat.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* The counters `names` of a two-line "PREFIX ..." table (names, then values) into `out`. */
static enum rz_status parse_table(const char *text, const char *what, const char *prefix,
                                  const char *const *names, double *const *out, int n,
                                  struct rz_err *err)
{
    size_t pos = 0, hl = 0, vl = 0;
    const char *head = find_line(text, &pos, prefix, &hl);
    const char *vals = head != NULL ? find_line(text, &pos, prefix, &vl) : NULL;
    if (vals == NULL)
        return rz_fail(err, RZ_EIO, "%s: no \"%s\" header and values lines", what, prefix);
    for (int i = 0; i < n; i++) {
        int at = word_index(head, hl, names[i]);
        if (at < 0)
            return rz_fail(err, RZ_EIO, "%s: the %s header names no %s", what, prefix, names[i]);
        if (word_value(vals, vl, at, out[i]) != 0)
            return rz_fail(err, RZ_EIO, "%s: the %s values line has no number for %s", what,
                           prefix, names[i]);
    }
    return RZ_OK;
}

enum rz_status netstat_parse_snmp(const char *text, const char *what, struct netstat *out,
                                  struct rz_err *err)
{
    static const char *const names[] = {"OutSegs", "RetransSegs"};
    double *const v[] = {&out->tcp_out_segs, &out->tcp_retrans_segs};
    return parse_table(text, what, "Tcp:", names, v, 2, err);
}

enum rz_status netstat_parse_ext(const char *text, const char *what, struct netstat *out,
                                 struct rz_err *err)
{
    static const char *const names[] = {"TCPLossProbes",  "TCPLossProbeRecovery",
                                        "TCPDSACKRecv",   "TCPSpuriousRTOs",
                                        "TCPLostRetransmit", "TCPTimeouts"};
    double *const v[] = {&out->loss_probes,   &out->loss_probe_recovery, &out->dsack_recv,
                         &out->spurious_rtos, &out->lost_retransmit,     &out->timeouts};
    enum rz_status st = parse_table(text, what, "TcpExt:", names, v, 6, err);
    out->has_ext = st == RZ_OK;
    return st;
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
    if (st == RZ_OK)
        st = read_one(proc, "dev", out, netstat_parse_dev, err);
    struct rz_err ignored;
    if (st == RZ_OK && read_one(proc, "netstat", out, netstat_parse_ext, &ignored) != RZ_OK)
        out->has_ext = 0; /* context only: a kernel without it still has the counters judged */
    return st;
}

/* ---- InfiniBand / RoCE ports ----------------------------------------------------------------- */

/* The counters of a port that say a packet was damaged or dropped on the fabric (the IB
 * specification's PortCounters; Documentation/ABI/stable/sysfs-class-infiniband).  Congestion
 * (port_xmit_wait) is not an error and is left out. */
static const char *const FABRIC_ERROR_COUNTERS[] = {
    "symbol_error",          "port_rcv_errors",
    "port_rcv_remote_physical_errors", "port_xmit_discards",
    "local_link_integrity_errors",     "excessive_buffer_overrun_errors",
    "link_error_recovery",   "link_downed"};

/* One counter file's value; 0 when it is missing or not a number. */
static double counter_file(const char *dir, const char *name)
{
    char path[4096], buf[64];
    rz_fmt(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return 0.0;
    double v = 0.0;
    if (fgets(buf, sizeof buf, f) != NULL)
        v = strtod(buf, NULL);
    fclose(f);
    return v;
}

static void fabric_port(const char *counters, struct netstat *out)
{
    out->fabric_ports += 1.0;
    out->fabric_packets += counter_file(counters, "port_xmit_packets") +
                           counter_file(counters, "port_rcv_packets");
    for (size_t i = 0; i < sizeof FABRIC_ERROR_COUNTERS / sizeof *FABRIC_ERROR_COUNTERS; i++)
        out->fabric_errors += counter_file(counters, FABRIC_ERROR_COUNTERS[i]);
}

enum rz_status netstat_read_fabric(const char *dir, struct netstat *out, struct rz_err *err)
{
    (void)err; /* every failure here means "no fabric counters": context, never an error */
    out->fabric_ports = out->fabric_packets = out->fabric_errors = 0.0;
    DIR *devs = opendir(dir);
    if (devs == NULL)
        return RZ_OK;
    for (struct dirent *d; (d = readdir(devs)) != NULL;) {
        if (d->d_name[0] == '.')
            continue;
        char ports[4096];
        rz_fmt(ports, sizeof ports, "%s/%s/ports", dir, d->d_name);
        DIR *pd = opendir(ports);
        for (struct dirent *p; pd != NULL && (p = readdir(pd)) != NULL;) {
            char counters[4096];
            struct stat sb;
            rz_fmt(counters, sizeof counters, "%s/%s/counters", ports, p->d_name);
            if (p->d_name[0] != '.' && stat(counters, &sb) == 0 && S_ISDIR(sb.st_mode))
                fabric_port(counters, out);
        }
        if (pd != NULL)
            closedir(pd);
    }
    closedir(devs);
    return RZ_OK;
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
        .errors = up(later->errors, earlier->errors),
        .has_ext = later->has_ext && earlier->has_ext,
        .loss_probes = up(later->loss_probes, earlier->loss_probes),
        .loss_probe_recovery = up(later->loss_probe_recovery, earlier->loss_probe_recovery),
        .dsack_recv = up(later->dsack_recv, earlier->dsack_recv),
        .spurious_rtos = up(later->spurious_rtos, earlier->spurious_rtos),
        .lost_retransmit = up(later->lost_retransmit, earlier->lost_retransmit),
        .timeouts = up(later->timeouts, earlier->timeouts),
        .fabric_ports = earlier->fabric_ports > 0.0 ? later->fabric_ports : 0.0,
        .fabric_packets = up(later->fabric_packets, earlier->fabric_packets),
        .fabric_errors = up(later->fabric_errors, earlier->fabric_errors)};
    return d;
}

double netstat_retrans_share(const struct netstat *d)
{
    return d->tcp_out_segs > 0.0 ? d->tcp_retrans_segs / d->tcp_out_segs : 0.0;
}
