/* gate_recover.c: the stops of a phase and the runs after them: how long from the last step
 * before a stop to the first step after it, how many steps were trained twice, and what the
 * job's events say stopped it (a lost node, a network fault between two nodes Slurm sees up, a
 * requeue and why, how the attempt ended); the
 * nodes the job lost and those excluded for the rest of the ladder; and the checkpoint interval
 * it trained with, and why (summary.json).  Read from
 * rank 0's metrics in the order they were written, where each run counts its steps from 1
 * again (run_step), and from events.jsonl. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "chart/chart.h"
#include "core/json.h"
#include "core/util.h"
#include "gate/gate.h"
#include "gate/gate_internal.h"

void gate_recoveries_scan(struct gate_input *in, const struct rank_row *rows, size_t n)
{
    in->n_recov = 0;
    for (size_t i = 1; i < n && in->n_recov < GATE_MAX_RECOVERIES; i++) {
        const struct rank_row *a = &rows[i - 1], *b = &rows[i];
        if (b->run_step > a->run_step)
            continue; /* the same run goes on */
        struct gate_recovery *r = &in->recov[in->n_recov++];
        memset(r, 0, sizeof *r);
        r->last_step = a->step;
        r->first_step = b->step;
        r->redone = a->step - (b->step - 1) > 0 ? a->step - (b->step - 1) : 0;
        r->last_t = a->time;
        r->first_t = b->time;
        r->seconds = b->time - a->time; /* NaN when either has no time */
    }
}

static void append(char *out, size_t len, const char *text)
{
    size_t used = strlen(out);
    rz_fmt(out + used, len - used, "%s%s", used ? "; " : "", text);
}

/* The time lost by kind of restart: seconds, stops and steps redone, in order of first sight
 * (in->lost, part of the document the writers below format). */
static void sum_lost_by_kind(struct gate_input *in)
{
    in->n_lost = 0;
    for (int k = 0; k < in->n_recov; k++) {
        const struct gate_recovery *r = &in->recov[k];
        int i = 0;
        while (i < in->n_lost && strcmp(in->lost[i].kind, r->kind) != 0)
            i++;
        struct gate_lost_kind *l = &in->lost[i];
        if (i == in->n_lost) {
            memset(l, 0, sizeof *l);
            rz_fmt(l->kind, sizeof l->kind, "%s", r->kind);
            in->n_lost++;
        }
        l->seconds += isnan(r->seconds) ? 0.0 : r->seconds;
        l->count++;
        l->redone += r->redone;
    }
}

/* The job's node_failed / nodes_lost and node_excluded events, as two sets of names. */
static void collect_nodes(struct gate_input *in)
{
    in->nodes_failed[0] = in->nodes_excluded[0] = '\0';
    for (size_t i = 0; i < in->n_job_events; i++) {
        const struct event_rec *e = &in->events[in->job_events[i]];
        bool failed = strcmp(e->event, "node_failed") == 0 || strcmp(e->event, "nodes_lost") == 0;
        char *set = failed ? in->nodes_failed
                    : strcmp(e->event, "node_excluded") == 0 ? in->nodes_excluded : NULL;
        size_t len = failed ? sizeof in->nodes_failed : sizeof in->nodes_excluded;
        if (set != NULL)
            rz_list_add(set, len, e->nodes);
    }
}

void gate_recoveries_causes(struct gate_input *in)
{
    collect_nodes(in);
    for (int k = 0; k < in->n_recov; k++) {
        struct gate_recovery *r = &in->recov[k];
        char text[GATE_NOTE_MAX];
        for (size_t i = 0; i < in->n_job_events; i++) {
            const struct event_rec *e = &in->events[in->job_events[i]];
            if (isnan(r->last_t) || e->t < r->last_t || e->t > r->first_t)
                continue;
            const char *why = e->reason[0] ? e->reason : "?";
            if (strcmp(e->event, "network_partition") == 0) {
                /* "network fault: n1 and n2 cannot reach each other (Slurm sees both up); ..." */
                rz_fmt(r->lost, sizeof r->lost, "%s", e->nodes);
                rz_fmt(text, sizeof text, "%.*s", (int)strcspn(e->summary, ";"), e->summary);
                rz_fmt(r->kind, sizeof r->kind, "network fault");
            } else if (strcmp(e->event, "nodes_lost") == 0 || strcmp(e->event, "node_failed") == 0) {
                rz_fmt(r->lost, sizeof r->lost, "%s", e->nodes);
                rz_fmt(text, sizeof text, "network fault: %s unreachable", e->nodes);
                rz_fmt(r->kind, sizeof r->kind, "lost node"); /* the stop's cause, above all */
            } else if (strcmp(e->event, "requeue") == 0) {
                rz_fmt(text, sizeof text, "requeued (%s)", why);
                if (r->lost[0] == '\0')
                    rz_fmt(r->kind, sizeof r->kind, "requeue (%s)", why);
            } else if (strcmp(e->event, "relaunch") == 0) {
                rz_fmt(text, sizeof text, "relaunched in the allocation (%s)", why);
                if (r->lost[0] == '\0')
                    rz_fmt(r->kind, sizeof r->kind, "relaunch (%s)", why);
            } else if (strcmp(e->event, "attempt_end") == 0) {
                const char *m = e->summary; /* "status S: CLASS (CAUSE); ...": up to the ";" */
                int len = (int)strcspn(m, ";");
                while (len > 0 && m[len - 1] == ' ')
                    len--;
                rz_fmt(text, sizeof text, "attempt ended: %.*s", len, m);
            } else {
                continue;
            }
            append(r->cause, sizeof r->cause, text);
        }
        if (r->cause[0] == '\0')
            rz_fmt(r->cause, sizeof r->cause, "%s", isnan(r->last_t) ? "unknown (no times in the "
                   "metrics)" : "no event between the two runs");
        if (r->kind[0] == '\0')
            rz_fmt(r->kind, sizeof r->kind, "other");
    }
    sum_lost_by_kind(in);
}

void gate_json_recoveries(struct rz_json *j, const struct gate_input *in)
{
    rz_json_key(j, "recoveries");
    rz_json_array_begin(j);
    for (int k = 0; k < in->n_recov; k++) {
        const struct gate_recovery *r = &in->recov[k];
        rz_json_object_begin(j);
        rz_json_kv_int(j, "last_step", r->last_step);
        rz_json_kv_int(j, "first_step", r->first_step);
        rz_json_kv_int(j, "steps_redone", r->redone);
        rz_json_kv_double(j, "seconds", r->seconds);
        rz_json_kv_string(j, "lost_nodes", r->lost);
        rz_json_kv_string(j, "cause", r->cause);
        rz_json_kv_string(j, "kind", r->kind);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_key(j, "time_lost_by_kind");
    rz_json_array_begin(j);
    for (int i = 0; i < in->n_lost; i++) {
        const struct gate_lost_kind *l = &in->lost[i];
        rz_json_object_begin(j);
        rz_json_kv_string(j, "kind", l->kind);
        rz_json_kv_double(j, "seconds", l->seconds);
        rz_json_kv_int(j, "stops", l->count);
        rz_json_kv_int(j, "steps_redone", l->redone);
        rz_json_object_end(j);
    }
    rz_json_array_end(j);
    rz_json_kv_string(j, "nodes_lost", in->nodes_failed);
    rz_json_kv_string(j, "nodes_excluded", in->nodes_excluded);
    const struct summary_ckpts *p = &in->ckpt_policy;
    rz_json_key(j, "checkpoint_interval");
    if (!p->known) {
        rz_json_null(j);
        return;
    }
    rz_json_object_begin(j);
    rz_json_kv_string(j, "mode", p->mode);
    rz_json_kv_string(j, "policy", p->policy);
    rz_json_kv_int(j, "steps", p->interval_steps);
    rz_json_kv_int(j, "failed", p->failed);
    rz_json_kv_string(j, "why", p->why);
    rz_json_kv_double(j, "stall_ms_mean", p->stall_ms_mean);
    rz_json_kv_double(j, "commit_ms_mean", p->commit_ms_mean);
    rz_json_object_end(j);
}

/* The lines the Markdown and HTML reports share: the interval and why; lost and excluded
 * nodes.  Each one sentence ("" none). */
static void reliability_lines(const struct gate_input *in, char *ckpt, size_t clen, char *nodes,
                              size_t nlen)
{
    const struct summary_ckpts *p = &in->ckpt_policy;
    ckpt[0] = nodes[0] = '\0';
    if (p->known)
        rz_fmt(ckpt, clen, "Checkpoints: %s, every %lld steps (%s); training waited %.3g ms per "
               "checkpoint on average, the write took %.3g ms.", p->mode,
               (long long)p->interval_steps, p->why[0] ? p->why : p->policy, p->stall_ms_mean,
               p->commit_ms_mean);
    if (p->known && p->failed > 0) {
        size_t used = strlen(ckpt);
        rz_fmt(ckpt + used, clen - used, " %lld periodic checkpoint(s) could not be written (a "
               "full disk, a quota, an I/O error: the job output says which); training went on "
               "from the last good one (checkpoint.failures_tolerated).", (long long)p->failed);
    }
    if (in->nodes_failed[0] != '\0' || in->nodes_excluded[0] != '\0')
        rz_fmt(nodes, nlen, "Nodes lost: %s. Excluded for the rest of the ladder (failed twice "
               "in this run root): %s.", in->nodes_failed[0] ? in->nodes_failed : "none",
               in->nodes_excluded[0] ? in->nodes_excluded : "none");
}

/* "Time lost by kind of restart: KIND S s in N stop(s), M step(s) redone; ...", the line the
 * Markdown and HTML reports share. */
static void lost_line(const struct gate_input *in, char *buf, size_t len)
{
    rz_fmt(buf, len, "Time lost by kind of restart:");
    for (int i = 0; i < in->n_lost; i++) {
        size_t used = strlen(buf);
        rz_fmt(buf + used, len - used, "%s %s %.1f s in %d stop(s), %lld step(s) redone",
               i ? ";" : "", in->lost[i].kind, in->lost[i].seconds, in->lost[i].count,
               (long long)in->lost[i].redone);
    }
    size_t used = strlen(buf);
    rz_fmt(buf + used, len - used, ".");
}

void gate_md_recoveries(FILE *f, const struct gate_input *in)
{
    char ckpt[GATE_NOTE_MAX + 200], nodes[700];
    reliability_lines(in, ckpt, sizeof ckpt, nodes, sizeof nodes);
    if (ckpt[0] != '\0' || nodes[0] != '\0')
        fprintf(f, "## Checkpoints and nodes\n\n%s%s%s\n\n", ckpt, ckpt[0] && nodes[0] ? "\n" : "",
                nodes);
    if (in->n_recov == 0)
        return;
    fputs("## Recoveries\n\nEach stop and the run after it: from the last step completed before "
          "the stop to the first step completed after it (the fault's detection, teardown, queue "
          "wait, start-up and restore, and one step), and what the events say stopped it.\n\n"
          "| last step | first step after | seconds | steps redone | cause |\n"
          "|---|---|---|---|---|\n", f);
    for (int k = 0; k < in->n_recov; k++) {
        const struct gate_recovery *r = &in->recov[k];
        fprintf(f, "| %lld | %lld | %.1f | %lld | %s |\n", (long long)r->last_step,
                (long long)r->first_step, r->seconds, (long long)r->redone, r->cause);
    }
    char lost[GATE_MAX_RECOVERIES * 128];
    lost_line(in, lost, sizeof lost);
    fprintf(f, "\n%s\n\n", lost);
}

void gate_html_recoveries(FILE *f, const struct gate_input *in)
{
    char ckpt[GATE_NOTE_MAX + 200], nodes[700];
    reliability_lines(in, ckpt, sizeof ckpt, nodes, sizeof nodes);
    if (ckpt[0] != '\0' || nodes[0] != '\0')
        fputs("<h2>Checkpoints and nodes</h2>\n", f);
    if (ckpt[0] != '\0') {
        fputs("<p id=\"checkpoint-interval\">", f);
        chart_html_text(f, ckpt);
        fputs("</p>\n", f);
    }
    if (nodes[0] != '\0') {
        fputs("<p id=\"nodes\">", f);
        chart_html_text(f, nodes);
        fputs("</p>\n", f);
    }
    if (in->n_recov == 0)
        return;
    fputs("<h2>Recoveries</h2>\n<p>Each stop and the run after it: from the last step completed "
          "before the stop to the first step completed after it.</p>\n<table id=\"recoveries\">"
          "<tr><th>last step</th><th>first step after</th><th>seconds</th><th>steps redone</th>"
          "<th>cause</th></tr>\n", f);
    for (int k = 0; k < in->n_recov; k++) {
        const struct gate_recovery *r = &in->recov[k];
        fprintf(f, "<tr><td>%lld</td><td>%lld</td><td>%.1f</td><td>%lld</td><td>",
                (long long)r->last_step, (long long)r->first_step, r->seconds,
                (long long)r->redone);
        chart_html_text(f, r->cause);
        fputs("</td></tr>\n", f);
    }
    char lost[GATE_MAX_RECOVERIES * 128];
    lost_line(in, lost, sizeof lost);
    fputs("</table>\n<p id=\"time-lost\">", f);
    chart_html_text(f, lost);
    fputs("</p>\n", f);
}
