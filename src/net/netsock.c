/* netsock.c: TCP connections and their counters from NETLINK_SOCK_DIAG (see netsock.h). */
#include "config.h"

#include "net/netsock.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <math.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/util.h"

enum { TCP_STATE_LISTEN = 10 }; /* include/net/tcp_states.h */

/* One syscall, checked: on failure, the call's text and errno's message. */
#define SYS_CHECK(call, what)                                                                    \
    do {                                                                                         \
        if ((call) < 0) {                                                                        \
            st = rz_fail(err, RZ_EIO, "socket diagnostics: %s: %s", what, strerror(errno));      \
            goto cleanup;                                                                        \
        }                                                                                        \
    } while (0)

/* The remote address as text; an IPv4-mapped IPv6 address as IPv4. */
static void addr_text(int family, const uint32_t *a, char *out, size_t len)
{
    static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (family == AF_INET6 && memcmp(a, mapped, sizeof mapped) == 0)
        family = AF_INET, a += 3;
    if (inet_ntop(family, a, out, (socklen_t)len) == NULL)
        rz_fmt(out, len, "?");
}

static enum rz_status grow(struct netsock_conn **v, size_t n, size_t *cap, struct rz_err *err)
{
    if (n < *cap)
        return RZ_OK;
    size_t c = *cap ? 2 * *cap : 64;
    struct netsock_conn *nv = realloc(*v, c * sizeof *nv);
    if (nv == NULL)
        return rz_fail(err, RZ_ENOMEM, "socket diagnostics: out of memory for %zu connections",
                       c);
    *v = nv;
    *cap = c;
    return RZ_OK;
}

/* Whether a tcp_info of `len` bytes holds the 32-bit field at `offset` (older kernels send a
 * shorter one). */
static bool has(size_t len, size_t offset)
{
    return len >= offset + sizeof(uint32_t);
}

/* One message of the dump: a socket, with its tcp_info when the kernel sent one. */
static enum rz_status take(const struct nlmsghdr *h, struct netsock_conn **v, size_t *n,
                           size_t *cap, struct rz_err *err)
{
    const struct inet_diag_msg *m = NLMSG_DATA(h);
    if (h->nlmsg_len < NLMSG_LENGTH(sizeof *m) || m->idiag_state == TCP_STATE_LISTEN)
        return RZ_OK;
    const struct tcp_info *ti = NULL;
    size_t a_len = 0;
    int left = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
    for (const struct rtattr *a = (const struct rtattr *)(m + 1); RTA_OK(a, left);
         a = RTA_NEXT(a, left))
        if (a->rta_type == INET_DIAG_INFO &&
            has((size_t)RTA_PAYLOAD(a), offsetof(struct tcp_info, tcpi_segs_out))) {
            ti = RTA_DATA(a);
            a_len = (size_t)RTA_PAYLOAD(a);
        }
    if (ti == NULL)
        return RZ_OK; /* a kernel too old for tcpi_segs_out, or no info: nothing to count */
    enum rz_status st = grow(v, *n, cap, err);
    if (st != RZ_OK)
        return st;
    struct netsock_conn *c = &(*v)[(*n)++];
    addr_text(m->idiag_family, m->id.idiag_dst, c->remote, sizeof c->remote);
    c->remote_port = ntohs(m->id.idiag_dport);
    c->local_port = ntohs(m->id.idiag_sport);
    c->segs_out = ti->tcpi_segs_out;
    c->retrans = ti->tcpi_total_retrans;
    c->data_segs_out = has(a_len, offsetof(struct tcp_info, tcpi_data_segs_out))
                           ? ti->tcpi_data_segs_out : c->segs_out;
    c->dsack_dups = has(a_len, offsetof(struct tcp_info, tcpi_dsack_dups))
                        ? (double)ti->tcpi_dsack_dups : (double)NAN;
    c->data_segs_in = has(a_len, offsetof(struct tcp_info, tcpi_data_segs_in))
                          ? (double)ti->tcpi_data_segs_in : (double)NAN;
    c->unacked = ti->tcpi_unacked;
    c->uid = m->idiag_uid;
    c->inode = m->idiag_inode;
    return RZ_OK;
}

/* Dump one family's TCP sockets into v. */
static enum rz_status dump(int family, struct netsock_conn **v, size_t *n, size_t *cap,
                           struct rz_err *err)
{
    enum rz_status st = RZ_OK;
    int fd = -1;
    char *buf = NULL;
    struct {
        struct nlmsghdr h;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof req);
    req.h.nlmsg_len = sizeof req;
    req.h.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
    req.r.sdiag_family = (uint8_t)family;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~0u;
    req.r.idiag_ext = 1u << (INET_DIAG_INFO - 1);
    const size_t len = 1 << 16;
    buf = malloc(len);
    if (buf == NULL)
        return rz_fail(err, RZ_ENOMEM, "socket diagnostics: out of memory");
    SYS_CHECK(fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG),
              "socket(AF_NETLINK, NETLINK_SOCK_DIAG)");
    SYS_CHECK(send(fd, &req, sizeof req, 0), "send the dump request");
    for (bool done = false; !done && st == RZ_OK;) {
        ssize_t got;
        SYS_CHECK(got = recv(fd, buf, len, 0), "receive the dump");
        int left = (int)got;
        for (const struct nlmsghdr *h = (const struct nlmsghdr *)buf; NLMSG_OK(h, left);
             h = NLMSG_NEXT(h, left)) {
            if (h->nlmsg_type == NLMSG_DONE) {
                done = true;
                break;
            }
            if (h->nlmsg_type == NLMSG_ERROR) {
                const struct nlmsgerr *e = NLMSG_DATA(h);
                st = rz_fail(err, RZ_EIO, "socket diagnostics: the kernel refused the %s dump: "
                             "%s", family == AF_INET ? "IPv4" : "IPv6", strerror(-e->error));
                break;
            }
            st = take(h, v, n, cap, err);
            if (st != RZ_OK)
                break;
        }
        if (got == 0)
            done = true;
    }
cleanup:
    if (fd >= 0)
        close(fd);
    free(buf);
    return st;
}

double netsock_lost(double total_retrans, double dsack_dups)
{
    return isfinite(dsack_dups) ? fmax(0.0, total_retrans - dsack_dups) : total_retrans;
}

enum rz_status netsock_list(struct netsock_conn **out, size_t *n, struct rz_err *err)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    enum rz_status st = dump(AF_INET, out, n, &cap, err);
    if (st == RZ_OK)
        st = dump(AF_INET6, out, n, &cap, err);
    if (st != RZ_OK) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return st;
}

enum rz_status netsock_pid_sockets(const char *proc, long pid, unsigned long **inodes, size_t *n,
                                   size_t *cap, struct rz_err *err)
{
    char dir[4096];
    rz_fmt(dir, sizeof dir, "%s/%ld/fd", proc, pid);
    DIR *d = opendir(dir);
    if (d == NULL)
        return rz_fail(err, RZ_EIO, "%s: %s", dir, strerror(errno));
    enum rz_status st = RZ_OK;
    for (struct dirent *e; st == RZ_OK && (e = readdir(d)) != NULL;) {
        char path[4400], link[64];
        unsigned long ino;
        rz_fmt(path, sizeof path, "%s/%s", dir, e->d_name);
        ssize_t len = e->d_name[0] == '.' ? -1 : readlink(path, link, sizeof link - 1);
        if (len <= 0)
            continue; /* ".", "..", or a descriptor closed meanwhile */
        link[len] = '\0';
        if (sscanf(link, "socket:[%lu]", &ino) != 1)
            continue;
        if (*n == *cap) {
            size_t want = *cap ? 2 * *cap : 64;
            unsigned long *v = realloc(*inodes, want * sizeof *v);
            if (v == NULL) {
                st = rz_fail(err, RZ_ENOMEM, "%s: out of memory", dir);
                break;
            }
            *inodes = v;
            *cap = want;
        }
        (*inodes)[(*n)++] = ino;
    }
    closedir(d);
    return st;
}

enum rz_status netsock_local_addrs(char (*addrs)[NETSOCK_ADDR_LEN], int max, int *n,
                                   struct rz_err *err)
{
    struct ifaddrs *all = NULL;
    *n = 0;
    if (getifaddrs(&all) != 0)
        return rz_fail(err, RZ_EIO, "getifaddrs: %s", strerror(errno));
    for (const struct ifaddrs *i = all; i != NULL && *n < max; i = i->ifa_next) {
        const struct sockaddr *sa = i->ifa_addr;
        if (sa == NULL || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
            continue;
        const void *a = sa->sa_family == AF_INET
                            ? (const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr
                            : (const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;
        char text[NETSOCK_ADDR_LEN];
        if (inet_ntop(sa->sa_family, a, text, sizeof text) == NULL ||
            strcmp(text, "127.0.0.1") == 0 || strcmp(text, "::1") == 0)
            continue;
        rz_fmt(addrs[(*n)++], NETSOCK_ADDR_LEN, "%s", text);
    }
    freeifaddrs(all);
    return RZ_OK;
}
