/* slurm.c: what ryzen-step asks Slurm and tells it, through the runner (see step_internal.h):
 * the job as `scontrol show job -o` shows it (the fallback where squeue --json is not read:
 * slurm_json.c), the job's own sbatch flags for the next job, its
 * --signal, and scontrol requeue / requeuehold / release / update. */
#include "config.h"

#include <ctype.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"
#include "step/step_internal.h"

/* ---- scontrol show job -o ----------------------------------------------------------------------- */

/* A token "Key=value" starts a field when Key is a field name (letters, digits, / : _). */
static size_t key_length(const char *tok)
{
    size_t n = 0;
    if (!isalpha((unsigned char)tok[0]))
        return 0;
    while (isalnum((unsigned char)tok[n]) || tok[n] == '/' || tok[n] == ':' || tok[n] == '_')
        n++;
    return tok[n] == '=' ? n : 0;
}

struct field {
    const char *key;
    size_t offset, len;         /* into struct slurm_job */
};
#define FIELD(k, m) {k, offsetof(struct slurm_job, m), sizeof(((struct slurm_job *)0)->m)}
static const struct field fields[] = {
    FIELD("JobState", state), FIELD("Reason", reason), FIELD("Partition", partition),
    FIELD("Account", account), FIELD("QOS", qos), FIELD("TimeLimit", time_limit),
    FIELD("Reservation", reservation), FIELD("Features", features),
    FIELD("ExcNodeList", exc_nodes), FIELD("MailUser", mail_user), FIELD("MailType", mail_type),
    FIELD("MinMemoryNode", min_mem_node), FIELD("MinMemoryCPU", min_mem_cpu),
    FIELD("Command", command), FIELD("NodeList", node_list), FIELD("BatchHost", batch_host),
    FIELD("Comment", comment), FIELD("PreemptTime", preempt_time), FIELD("EndTime", end_time),
    FIELD("StartTime", start_time),
};

static void set_field(struct slurm_job *j, const char *key, size_t klen, const char *value)
{
    char buf[64];
    rz_fmt(buf, sizeof buf, "%.*s", (int)klen, key);
    if (strcmp(buf, "CPUs/Task") == 0)
        j->cpus_per_task = atol(value);
    else if (strcmp(buf, "Restarts") == 0)
        j->restarts = atol(value);
    for (size_t i = 0; i < RZ_ARRAY_LEN(fields); i++)
        if (strcmp(buf, fields[i].key) == 0)
            rz_fmt((char *)j + fields[i].offset, fields[i].len, "%s",
                   slurm_empty_value(value) ? "" : value);
}

/* "2026-11-22T14:50:42" (local time, as scontrol prints it) -> Unix seconds (0 if not a time). */
static double parse_time(const char *s)
{
    struct tm tm;
    char tail;
    memset(&tm, 0, sizeof tm);
    if (sscanf(s, "%d-%d-%dT%d:%d:%d%c", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &tm.tm_sec, &tail) != 6)
        return 0.0;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    tm.tm_isdst = -1;
    return (double)mktime(&tm);
}

void slurm_job_parse(const char *text, struct slurm_job *j)
{
    memset(j, 0, sizeof *j);
    j->time_limit_s = -1;
    char *copy = strdup(text), *save = NULL;
    if (copy == NULL)
        return;
    /* Values may contain spaces (Comment, Command): a token that is not "Key=" continues the
     * value of the field before it. */
    char key[64] = "", value[STEP_PATH_MAX] = "";
    for (char *tok = strtok_r(copy, " \n", &save);; tok = strtok_r(NULL, " \n", &save)) {
        size_t klen = tok != NULL ? key_length(tok) : 0;
        if (tok != NULL && klen == 0 && key[0] != '\0') {
            size_t used = strlen(value);
            rz_fmt(value + used, sizeof value - used, " %s", tok);
            continue;
        }
        if (key[0] != '\0')
            set_field(j, key, strlen(key), value);
        if (tok == NULL)
            break;
        rz_fmt(key, sizeof key, "%.*s", (int)klen, tok);
        rz_fmt(value, sizeof value, "%s", tok + klen + 1);
        if (strcmp(key, "JobId") == 0)
            j->found = true;
    }
    free(copy);
    j->time_limit_s = slurm_parse_duration(j->time_limit);
    j->end_epoch = parse_time(j->end_time);
}

static enum rz_status job_query_text(const struct step_runner *r, const char *job,
                                     struct slurm_job *j, struct rz_err *err)
{
    static char out[65536];
    const char *argv[] = {"scontrol", "show", "job", "-o", job, NULL};
    memset(j, 0, sizeof *j);
    int rc = r->run(r, argv, out, sizeof out, err);
    if (rc != 0)
        return rc < 0 ? RZ_EHEALTH
                      : rz_fail(err, RZ_EHEALTH, "scontrol show job %s: status %d", job, rc);
    slurm_job_parse(out, j);
    return RZ_OK;
}

enum rz_status slurm_job_query(const struct step_runner *r, const char *job, struct slurm_job *j,
                               struct rz_err *err)
{
    if (slurm_reader_mode(r) == SLURM_READER_JSON) {
        enum rz_status st = slurm_job_query_json(r, job, j, err);
        if (st != RZ_EDATA)
            return st;
    }
    return job_query_text(r, job, j, err);
}

enum rz_status slurm_job_query_whole(const struct step_runner *r, const char *job,
                                     struct slurm_job *j, struct rz_err *err)
{
    struct slurm_job text;
    enum rz_status st = slurm_job_query(r, job, j, err);
    if (st != RZ_OK || !j->partial || job_query_text(r, job, &text, err) != RZ_OK || !text.found)
        return st;
    rz_fmt(j->mail_user, sizeof j->mail_user, "%s", text.mail_user);
    rz_fmt(j->mail_type, sizeof j->mail_type, "%s", text.mail_type);
    j->cpus_per_task = text.cpus_per_task;
    j->partial = false;
    return RZ_OK;
}

/* In text, squeue --me prints the job's id when it is pending; a job Slurm has forgotten makes
 * squeue fail. */
bool slurm_job_pending_ours(const struct step_runner *r, const char *job)
{
    char out[256];
    bool pending = false;
    struct rz_err err;
    if (slurm_reader_mode(r) == SLURM_READER_JSON &&
        slurm_pending_query_json(r, job, &pending, &err) != RZ_EDATA)
        return pending;
    const char *argv[] = {"squeue", "--me", "--noheader", "--states=PENDING", "--format=%i",
                          "--jobs", job, NULL};
    return r->run(r, argv, out, sizeof out, &err) == 0 && strncmp(out, job, strlen(job)) == 0;
}

/* ---- scontrol show node -o ----------------------------------------------------------------------- */

/* One line: NodeName, State, NodeAddr, Port and Reason (the last field, with spaces: every token after "Reason="
 * that is not a field of its own). */
static void node_parse_line(char *line, struct slurm_node *n)
{
    char key[64] = "", *save = NULL;
    memset(n, 0, sizeof *n);
    for (char *tok = strtok_r(line, " ", &save); tok != NULL; tok = strtok_r(NULL, " ", &save)) {
        size_t klen = key_length(tok);
        if (klen == 0) {
            if (strcmp(key, "Reason") == 0) {
                size_t used = strlen(n->reason);
                rz_fmt(n->reason + used, sizeof n->reason - used, " %s", tok);
            }
            continue;
        }
        rz_fmt(key, sizeof key, "%.*s", (int)klen, tok);
        const char *v = tok + klen + 1;
        if (strcmp(key, "NodeName") == 0)
            rz_fmt(n->name, sizeof n->name, "%s", v);
        else if (strcmp(key, "State") == 0)
            rz_fmt(n->state, sizeof n->state, "%s", v);
        else if (strcmp(key, "Reason") == 0)
            rz_fmt(n->reason, sizeof n->reason, "%s", slurm_empty_value(v) ? "" : v);
        else if (strcmp(key, "NodeAddr") == 0)
            rz_fmt(n->addr, sizeof n->addr, "%s", slurm_empty_value(v) ? "" : v);
        else if (strcmp(key, "Port") == 0)
            n->port = strtol(v, NULL, 10);
    }
    if (n->addr[0] == '\0') /* Slurm's default: the node's name */
        rz_fmt(n->addr, sizeof n->addr, "%s", n->name);
}

int slurm_node_parse(const char *text, struct slurm_node *out, int max)
{
    char *copy = strdup(text), *save = NULL;
    int n = 0;
    if (copy == NULL)
        return 0;
    for (char *line = strtok_r(copy, "\n", &save); line != NULL && n < max;
         line = strtok_r(NULL, "\n", &save)) {
        node_parse_line(line, &out[n]);
        if (out[n].name[0] != '\0')
            n++;
    }
    free(copy);
    return n;
}

bool slurm_node_unreachable(const struct slurm_node *n)
{
    return strstr(n->state, "NOT_RESPONDING") != NULL || strncmp(n->state, "DOWN", 4) == 0;
}

enum rz_status slurm_nodes_query(const struct step_runner *r, const char *names,
                                 struct slurm_node *out, int max, int *n, struct rz_err *err)
{
    static char text[65536];
    if (slurm_reader_mode(r) == SLURM_READER_JSON) {
        enum rz_status st = slurm_nodes_query_json(r, names, out, max, n, err);
        if (st != RZ_EDATA)
            return st;
    }
    const char *argv[] = {"scontrol", "show", "node", "-o", names, NULL};
    *n = 0;
    int rc = r->run(r, argv, text, sizeof text, err);
    if (rc != 0)
        return rc < 0 ? RZ_EHEALTH
                      : rz_fail(err, RZ_EHEALTH, "scontrol show node %s: status %d", names, rc);
    *n = slurm_node_parse(text, out, max);
    return RZ_OK;
}

long slurm_usable_parse(const char *text, const char *excluded)
{
    char *copy = strdup(text), seen[4096] = "";
    long usable = 0;
    if (copy == NULL)
        return 0;
    for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        char name[64] = "", state[32] = "";
        if (sscanf(line, "%63s %31s", name, state) != 2 || rz_list_has(seen, name))
            continue;
        rz_list_add(seen, sizeof seen, name);
        bool down = strncmp(state, "down", 4) == 0 || strncmp(state, "drain", 5) == 0 ||
                    strncmp(state, "fail", 4) == 0;
        usable += !down && !rz_list_has(excluded, name);
    }
    free(copy);
    return usable;
}

enum rz_status slurm_partition_usable(const struct step_runner *r, const char *partition,
                                      const char *excluded, long *usable, struct rz_err *err)
{
    static char text[65536];
    const char *argv[] = {"sinfo", "-h", "-N", "-p", partition, "-o", "%N %t", NULL};
    *usable = 0;
    if (slurm_reader_mode(r) == SLURM_READER_JSON) {
        enum rz_status st = slurm_partition_usable_json(r, partition, excluded, usable, err);
        if (st != RZ_EDATA)
            return st;
    }
    int rc = r->run(r, argv, text, sizeof text, err);
    if (rc != 0)
        return rc < 0 ? RZ_EHEALTH
                      : rz_fail(err, RZ_EHEALTH, "sinfo -p %s: status %d", partition, rc);
    *usable = slurm_usable_parse(text, excluded);
    return RZ_OK;
}

/* ---- the job's own flags ------------------------------------------------------------------------ */

static enum rz_status flag(struct step_argv *v, const char *name, const char *value,
                           struct rz_err *err)
{
    if (value == NULL || value[0] == '\0')
        return RZ_OK;
    char buf[STEP_PATH_MAX];
    rz_fmt(buf, sizeof buf, "--%s=%s", name, value);
    return step_argv_add(v, buf, err);
}

/* MinMemoryNode=0 means "no --mem". */
static const char *memory(const char *m)
{
    return m[0] != '\0' && atol(m) > 0 ? m : NULL;
}

enum rz_status slurm_job_flags(const struct slurm_job *j, const char *signal_flag,
                               struct step_argv *v, struct rz_err *err)
{
    char cpus[32] = "";
    if (j->cpus_per_task > 0)
        rz_fmt(cpus, sizeof cpus, "%ld", j->cpus_per_task);
    enum rz_status st = flag(v, "partition", j->partition, err);
    if (st == RZ_OK) st = flag(v, "account", j->account, err);
    if (st == RZ_OK) st = flag(v, "qos", j->qos, err);
    if (st == RZ_OK && j->time_limit_s > 0) st = flag(v, "time", j->time_limit, err);
    if (st == RZ_OK) st = flag(v, "mem", memory(j->min_mem_node), err);
    if (st == RZ_OK && memory(j->min_mem_node) == NULL)
        st = flag(v, "mem-per-cpu", memory(j->min_mem_cpu), err);
    if (st == RZ_OK) st = flag(v, "cpus-per-task", cpus, err);
    if (st == RZ_OK) st = flag(v, "reservation", j->reservation, err);
    if (st == RZ_OK) st = flag(v, "constraint", j->features, err);
    if (st == RZ_OK) st = flag(v, "exclude", j->exc_nodes, err);
    if (st == RZ_OK) st = flag(v, "mail-type", j->mail_type, err);
    if (st == RZ_OK) st = flag(v, "mail-user", j->mail_user, err);
    if (st == RZ_OK && signal_flag != NULL && signal_flag[0] != '\0')
        st = step_argv_add(v, signal_flag, err);
    return st;
}

/* ---- --signal ----------------------------------------------------------------------------------------- */

static const struct { const char *name; int signo; } sigs[] = {
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM}, {"INT", SIGINT},
    {"HUP", SIGHUP}, {"URG", SIGURG}, {"CONT", SIGCONT}, {"KILL", SIGKILL}};

const char *slurm_signal_name(int signo)
{
    for (size_t i = 0; i < RZ_ARRAY_LEN(sigs); i++)
        if (sigs[i].signo == signo)
            return sigs[i].name;
    return "?";
}

static int signal_number(const char *name)
{
    if (strncmp(name, "SIG", 3) == 0)
        name += 3;
    for (size_t i = 0; i < RZ_ARRAY_LEN(sigs); i++)
        if (strcmp(name, sigs[i].name) == 0)
            return sigs[i].signo;
    char *end = NULL;
    long n = strtol(name, &end, 10);
    return end != name && *end == '\0' && n > 0 && n < 65 ? (int)n : 0;
}

bool slurm_signal_parse(const char *text, struct slurm_signal *s)
{
    memset(s, 0, sizeof *s);
    rz_fmt(s->text, sizeof s->text, "%s", text);
    const char *p = text;
    if (strncmp(p, "B:", 2) == 0 || strncmp(p, "R:", 2) == 0) {
        s->batch = p[0] == 'B';
        p += 2;
    } else if (strncmp(p, "RB:", 3) == 0 || strncmp(p, "BR:", 3) == 0) {
        s->batch = true;
        p += 3;
    }
    char name[32];
    size_t n = strcspn(p, "@");
    rz_fmt(name, sizeof name, "%.*s", (int)n, p);
    s->signo = signal_number(name);
    s->lead_s = 60; /* sbatch's default lead */
    if (p[n] == '@') {
        char *end = NULL;
        s->lead_s = strtol(p + n + 1, &end, 10);
        if (end == p + n + 1 || *end != '\0' || s->lead_s < 0)
            return false;
    }
    s->found = s->signo != 0;
    return s->found;
}

/* The value of --signal in the arguments of a command line, up to the script. */
static bool signal_in_words(char *words, const char *script, char *out, size_t len)
{
    char *save = NULL;
    bool next = false;
    for (char *w = strtok_r(words, " \t\n", &save); w != NULL; w = strtok_r(NULL, " \t\n", &save)) {
        const char *base = strrchr(w, '/');
        if (script[0] != '\0' && strcmp(base != NULL ? base + 1 : w, script) == 0)
            break; /* the script's own arguments follow */
        if (next) {
            rz_fmt(out, len, "%s", w);
            return true;
        }
        if (strncmp(w, "--signal=", 9) == 0) {
            rz_fmt(out, len, "%s", w + 9);
            return true;
        }
        next = strcmp(w, "--signal") == 0;
    }
    return false;
}

/* sacct's SubmitLine; accounting fills it about a second into the job, so an empty answer is
 * asked again for a few seconds (a failing sacct means no accounting: no retry). */
static bool from_submit_line(const struct step_runner *r, const char *job, const char *script,
                             char *out, size_t len)
{
    static char text[8192];
    const char *argv[] = {"sacct", "-n", "-P", "-X", "-j", job, "-o", "SubmitLine", NULL};
    struct rz_err ignored;
    for (int tries = 0;; tries++) {
        if (r->run(r, argv, text, sizeof text, &ignored) != 0)
            return false;
        text[strcspn(text, "\n")] = '\0';
        if (text[0] != '\0')
            return signal_in_words(text, script, out, len);
        if (tries == 10)
            return false;
        r->sleep(r, 0.5);
    }
}

static bool from_script(const struct step_runner *r, const char *job, char *out, size_t len)
{
    static char text[65536];
    const char *argv[] = {"scontrol", "write", "batch_script", job, "-", NULL};
    struct rz_err ignored;
    if (r->run(r, argv, text, sizeof text, &ignored) != 0)
        return false;
    bool found = false;
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "#SBATCH", 7) != 0)
            continue;
        char words[1024];
        rz_fmt(words, sizeof words, "%s", line + 7);
        found = signal_in_words(words, "", out, len) || found; /* the last one wins */
    }
    return found;
}

void slurm_job_signal(const struct step_runner *r, const char *job, const struct slurm_job *j,
                      const char *sbatch_env, struct slurm_signal *s)
{
    char text[64] = "", script[512];
    const char *base = strrchr(j->command, '/');
    rz_fmt(script, sizeof script, "%s", base != NULL ? base + 1 : j->command);
    const char *source = NULL;
    if (from_submit_line(r, job, script, text, sizeof text))
        source = "command line";
    else if (sbatch_env[0] != '\0') {
        rz_fmt(text, sizeof text, "%s", sbatch_env);
        source = "SBATCH_SIGNAL";
    } else if (from_script(r, job, text, sizeof text))
        source = "batch script";
    memset(s, 0, sizeof *s);
    if (source != NULL && slurm_signal_parse(text, s))
        rz_fmt(s->source, sizeof s->source, "%s", source);
    else if (source != NULL)
        rz_fmt(s->source, sizeof s->source, "%s (unreadable: %s)", source, text);
}

long slurm_script_nodes(const char *text)
{
    long nodes = 0;
    const char *line = text;
    while (line != NULL && *line != '\0') {
        const char *end = strchr(line, '\n');
        size_t n = end != NULL ? (size_t)(end - line) : strlen(line);
        char buf[512];
        rz_fmt(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), line);
        if (buf[0] != '#' && buf[0] != '\0')
            break; /* sbatch reads #SBATCH lines only up to the first command */
        char *save = NULL;
        bool sb = strncmp(buf, "#SBATCH", 7) == 0;
        char *w = sb ? strtok_r(buf + 7, " \t=", &save) : NULL;
        for (; w != NULL; w = strtok_r(NULL, " \t=", &save)) {
            const char *v = NULL;
            if (strcmp(w, "--nodes") == 0 || strcmp(w, "-N") == 0)
                v = strtok_r(NULL, " \t=", &save);
            else if (strncmp(w, "-N", 2) == 0 && w[2] >= '0' && w[2] <= '9')
                v = w + 2;
            char *stop = NULL;
            long k = v != NULL ? strtol(v, &stop, 10) : 0;
            if (k > 0 && stop != NULL && (*stop == '\0' || *stop == '-'))
                nodes = k; /* "N-M": the least it runs on */
        }
        line = end != NULL ? end + 1 : NULL;
    }
    return nodes;
}

long slurm_template_nodes(const char *path)
{
    char *text = NULL;
    if (rz_read_file(path, &text, NULL, NULL) != RZ_OK)
        return 0;
    long nodes = slurm_script_nodes(text);
    free(text);
    return nodes;
}

/* ---- scontrol ------------------------------------------------------------------------------------------ */

int slurm_control(const struct step_runner *r, const char *verb, const char *job, const char *arg,
                  struct rz_err *err)
{
    char id[160];
    rz_fmt(id, sizeof id, "JobId=%s", job);
    const char *update[] = {"scontrol", "update", id, arg, NULL};
    const char *plain[] = {"scontrol", verb, job, NULL};
    static char discard[4096];
    return r->run(r, strcmp(verb, "update") == 0 ? update : plain, discard, sizeof discard, err);
}
