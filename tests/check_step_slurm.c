/* check_step_slurm: Slurm read two ways (src/step/slurm_json.c and slurm.c).  The recorded output
 * of this machine's Slurm (tests/fixtures/slurm/, see its README) is read as squeue/sinfo --json
 * and as scontrol -o text, and the two readings must agree field by field, values with spaces and
 * commas included; which reader a run uses; hostlists; and JSON that is cut short, lacks a key or
 * has a value of the wrong type, refused with a message that names it. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "step/step_internal.h"
#include "testutil.h"

#include "step_world.h"



/* The fixture file NAME (tests/fixtures/slurm/), read whole; the caller frees it. */
static char *fixture(const char *name)
{
    const char *top = getenv("top_srcdir");
    char path[4096], *text = NULL;
    snprintf(path, sizeof path, "%s/tests/fixtures/slurm/%s", top != NULL ? top : ".", name);
    ck_assert_msg(rz_read_file(path, &text, NULL, NULL) == RZ_OK, "cannot read %s", path);
    return text;
}

/* The fixture with the first `from` after `after` (NULL: the start) replaced by `to` (a damaged
 * copy); the caller frees it. */
static char *damaged(const char *name, const char *after, const char *from, const char *to)
{
    char *text = fixture(name), *start = after != NULL ? strstr(text, after) : text;
    ck_assert_ptr_nonnull(start);
    char *at = strstr(start, from);
    ck_assert_msg(at != NULL, "%s has no %s", name, from);
    size_t head = (size_t)(at - text), len = strlen(text) - strlen(from) + strlen(to) + 1;
    char *out = malloc(len);
    ck_assert_ptr_nonnull(out);
    snprintf(out, len, "%.*s%s%s", (int)head, text, to, at + strlen(from));
    free(text);
    return out;
}

/* The recording was made with TZ unset on a UTC machine: scontrol's times are UTC. */
static void setup(void)
{
    setenv("TZ", "UTC", 1);
    tzset();
    slurm_reader_set(SLURM_READER_UNKNOWN, NULL);
}

static void same_job(const struct slurm_job *t, const struct slurm_job *j, bool whole)
{
#define SAME(f) ck_assert_str_eq(j->f, t->f)
    ck_assert(t->found && j->found);
    SAME(state); SAME(reason); SAME(partition); SAME(account); SAME(qos); SAME(time_limit);
    SAME(reservation); SAME(features); SAME(exc_nodes); SAME(min_mem_node); SAME(min_mem_cpu);
    SAME(command); SAME(node_list); SAME(batch_host); SAME(comment); SAME(preempt_time);
    SAME(end_time); SAME(start_time);
    ck_assert_int_eq(j->restarts, t->restarts);
    ck_assert_int_eq(j->time_limit_s, t->time_limit_s);
    ck_assert(j->end_epoch == t->end_epoch);
    if (whole) {
        SAME(mail_user); SAME(mail_type);
        ck_assert_int_eq(j->cpus_per_task, t->cpus_per_task);
    }
#undef SAME
}

/* Job `id` read from the text fixture and from squeue.json, compared. */
static void both_readings(const char *text_name, const char *id, struct slurm_job *t,
                          struct slurm_job *j)
{
    char *text = fixture(text_name), *json = fixture("squeue.json");
    struct rz_err err;
    slurm_job_parse(text, t);
    ck_assert_msg(slurm_job_parse_json(json, id, (double)time(NULL), j, &err) == RZ_OK, "%s",
                  err.msg);
    same_job(t, j, false);
    /* what 22.05's JSON lacks: cpus_per_task null, no mail fields */
    ck_assert(j->partial);
    ck_assert_str_eq(j->mail_user, "");
    ck_assert_int_eq(j->cpus_per_task, 0);
    free(text);
    free(json);
}

/* ---- core --------------------------------------------------------------------------------------- */

START_TEST(a_running_job_reads_the_same_both_ways)
{
    struct slurm_job t, j;
    both_readings("job_running.txt", "1902", &t, &j);
    ck_assert_str_eq(j.comment, "p1: GO, loss 2.31, step 200 of 400");
    ck_assert_str_eq(j.command, "/var/tmp/rz-sjson/tiny.sh arg one");
    ck_assert_str_eq(j.state, "RUNNING");
    ck_assert_str_eq(j.reason, "");          /* Reason=None */
    ck_assert_str_eq(j.time_limit, "1-02:03:00");
    ck_assert_int_eq(j.time_limit_s, ((24 + 2) * 60 + 3) * 60);
    ck_assert_str_eq(j.min_mem_node, "1G");
    ck_assert_str_eq(j.preempt_time, "");    /* PreemptTime=None */
    ck_assert_str_eq(j.node_list, "n1");
    ck_assert(j.end_epoch > 0.0);
    ck_assert_str_eq(t.mail_type, "END,FAIL"); /* only the text has it */
    ck_assert_int_eq(t.cpus_per_task, 2);
}
END_TEST

START_TEST(a_pending_job_reads_the_same_both_ways)
{
    struct slurm_job t, j;
    both_readings("job_pending.txt", "1903", &t, &j);
    ck_assert_str_eq(j.comment, "p2: waiting, after p1");
    ck_assert_str_eq(j.state, "PENDING");
    ck_assert_str_eq(j.reason, "JobHeldUser");
    ck_assert_str_eq(j.time_limit, "UNLIMITED");
    ck_assert_int_eq(j.time_limit_s, -1);
    ck_assert_str_eq(j.min_mem_cpu, "300M");
    ck_assert_str_eq(j.min_mem_node, "");
    ck_assert_str_eq(j.exc_nodes, "n3");
    ck_assert_str_eq(j.features, "ryzen");
    ck_assert_str_eq(j.start_time, "");      /* StartTime=Unknown */
    ck_assert(j.end_epoch == 0.0);
    struct rz_err err;
    char *json = fixture("squeue.json");
    ck_assert_int_eq(slurm_job_parse_json(json, "4242", 0, &j, &err), RZ_OK);
    ck_assert(!j.found);
    free(json);
}
END_TEST

START_TEST(nodes_read_the_same_both_ways)
{
    char *text = fixture("nodes.txt"), *json = fixture("sinfo.json");
    struct slurm_node t[8], j[8];
    struct rz_err err;
    int nt = slurm_node_parse(text, t, 8), nj = 0;
    ck_assert_msg(slurm_node_parse_json(json, "n[1-4]", j, 8, &nj, &err) == RZ_OK, "%s", err.msg);
    ck_assert_int_eq(nt, 4);
    ck_assert_int_eq(nj, nt);
    for (int i = 0; i < nt; i++) {
        ck_assert_str_eq(j[i].name, t[i].name);
        ck_assert_str_eq(j[i].state, t[i].state);
        ck_assert_str_eq(j[i].reason, t[i].reason);
        ck_assert_str_eq(j[i].addr, t[i].addr);
        ck_assert_int_eq(j[i].port, t[i].port);
        ck_assert(slurm_node_unreachable(&j[i]) == slurm_node_unreachable(&t[i]));
    }
    ck_assert_str_eq(j[0].state, "MIXED");
    ck_assert_str_eq(j[1].state, "IDLE+DRAIN");
    ck_assert_str_eq(j[1].reason, "maint: fan, PSU swap [root@2026-11-28T11:15:59]");
    ck_assert_str_eq(j[2].state, "DOWN");
    ck_assert_str_eq(j[2].reason, "cable, port 7 down [root@2026-11-28T11:15:59]");
    ck_assert_str_eq(j[3].state, "DOWN+NOT_RESPONDING");
    ck_assert(slurm_node_unreachable(&j[3]) && !slurm_node_unreachable(&j[1]));
    /* the partition's usable nodes: n1 only (n2 drained, n3 down, n4 not responding) */
    char *usable = fixture("sinfo.txt");
    long uj = -1;
    ck_assert_int_eq(slurm_usable_parse(usable, ""), 1);
    ck_assert_int_eq(slurm_usable_parse_json(json, "batch", "", &uj, &err), RZ_OK);
    ck_assert_int_eq(uj, 1);
    ck_assert_int_eq(slurm_usable_parse(usable, "n1"), 0);
    ck_assert_int_eq(slurm_usable_parse_json(json, "batch", "n1", &uj, &err), RZ_OK);
    ck_assert_int_eq(uj, 0);
    ck_assert_int_eq(slurm_usable_parse_json(json, "gpu", "", &uj, &err), RZ_OK);
    ck_assert_int_eq(uj, 0); /* a partition none of them is in */
    free(usable);
    /* only the nodes asked for (22.05 ignores sinfo -n with --json) */
    ck_assert_int_eq(slurm_node_parse_json(json, "n2,n4", j, 8, &nj, &err), RZ_OK);
    ck_assert_int_eq(nj, 2);
    ck_assert_str_eq(j[0].name, "n2");
    ck_assert_str_eq(j[1].name, "n4");
    free(text);
    free(json);
}
END_TEST

START_TEST(pending_and_ours_reads_the_same_both_ways)
{
    char *json = fixture("squeue.json"), *text = fixture("squeue_pending.txt");
    struct rz_err err;
    bool p = false;
    /* the text: squeue --me --states=PENDING --jobs 1903 printed it, as rzuser (uid 1001) */
    ck_assert(strncmp(text, "1903", 4) == 0);
    ck_assert_int_eq(slurm_pending_parse_json(json, "1903", 1001, &p, &err), RZ_OK);
    ck_assert(p);
    ck_assert_int_eq(slurm_pending_parse_json(json, "1903", 1002, &p, &err), RZ_OK);
    ck_assert(!p); /* another user's */
    ck_assert_int_eq(slurm_pending_parse_json(json, "1902", 1001, &p, &err), RZ_OK);
    ck_assert(!p); /* running */
    ck_assert_int_eq(slurm_pending_parse_json(json, "1901", 1001, &p, &err), RZ_OK);
    ck_assert(!p); /* cancelled */
    ck_assert_int_eq(slurm_pending_parse_json(json, "4242", 1001, &p, &err), RZ_OK);
    ck_assert(!p); /* forgotten */
    free(json);
    free(text);
}
END_TEST

START_TEST(hostlists_expand)
{
    char out[256];
    ck_assert(slurm_hostlist_expand("n[1-4]", out, sizeof out));
    ck_assert_str_eq(out, "n1,n2,n3,n4");
    ck_assert(slurm_hostlist_expand("gpu[08-10],x1", out, sizeof out));
    ck_assert_str_eq(out, "gpu08,gpu09,gpu10,x1");
    ck_assert(slurm_hostlist_expand("n[1,3-4]-ib", out, sizeof out));
    ck_assert_str_eq(out, "n1-ib,n3-ib,n4-ib");
    ck_assert(slurm_hostlist_expand("n2", out, sizeof out));
    ck_assert_str_eq(out, "n2");
}
END_TEST

/* A fake Slurm 22.05 that answers from the fixtures. */
static void fake_slurm(struct fake *f, const char *version, char **json, char **text)
{
    fake_init(f);
    *json = fixture("squeue.json");
    *text = fixture("job_running.txt");
    rule(f, "squeue --version", 0, version, 0);
    rule(f, "squeue --json", 0, *json, 0);
    rule(f, "scontrol show job -o 1902", 0, *text, 0);
}

START_TEST(the_reader_is_json_on_22_05_and_the_gaps_come_from_scontrol)
{
    struct fake f;
    char *json, *text;
    struct slurm_job t, j;
    struct rz_err err;
    fake_slurm(&f, "slurm-wlm 22.05.8\n", &json, &text);
    ck_assert_int_eq(slurm_reader_mode(&f.r), SLURM_READER_JSON);
    ck_assert_msg(slurm_job_query_whole(&f.r, "1902", &j, &err) == RZ_OK, "%s", err.msg);
    slurm_job_parse(text, &t);
    same_job(&t, &j, true); /* mail and CPUs per task filled from scontrol */
    ck_assert(!j.partial);
    ck_assert_int_eq(count_calls(&f, "squeue --json --jobs 1902"), 1);
    ck_assert_int_eq(count_calls(&f, "scontrol show job -o 1902"), 1);
    ck_assert_int_eq(count_calls(&f, "squeue --version"), 1); /* decided once */
    ck_assert_str_eq(slurm_reader_describe(), "squeue/sinfo --json (slurm-wlm 22.05.8)");
    ck_assert_int_eq(slurm_job_query(&f.r, "1902", &j, &err), RZ_OK);
    ck_assert_int_eq(count_calls(&f, "scontrol show job"), 1);   /* the plain query: JSON only */
    ck_assert_int_eq(slurm_job_query(&f.r, "4242", &j, &err), RZ_EHEALTH);
    ck_assert(strstr(err.msg, "4242 is not known") != NULL);
    /* pending and ours: 1903 is rzuser's, so only rzuser sees it as its own */
    ck_assert(slurm_job_pending_ours(&f.r, "1903") == (getuid() == 1001));
    ck_assert(!slurm_job_pending_ours(&f.r, "1902"));
    ck_assert_int_eq(count_calls(&f, "squeue --me"), 0);
    free(json);
    free(text);
}
END_TEST

START_TEST(older_slurm_and_a_failing_first_answer_read_text)
{
    struct fake f;
    char *json, *text;
    struct slurm_job t, j;
    struct rz_err err;
    fake_slurm(&f, "slurm 21.08.8\n", &json, &text);
    ck_assert_int_eq(slurm_reader_mode(&f.r), SLURM_READER_TEXT);
    ck_assert(strstr(slurm_reader_describe(), "slurm 21.08.8: --json is read from Slurm 22.05 on"));
    free(json);
    free(text);
    /* 22.05 without its openapi plugins: the first --json answer fails, text from then on */
    fake_init(&f);
    text = fixture("job_running.txt");
    rule(&f, "squeue --version", 0, "slurm 22.05.8\n", 0);
    rule(&f, "squeue --json", 1, "", 0);
    rule(&f, "scontrol show job -o 1902", 0, text, 0);
    ck_assert_int_eq(slurm_job_query(&f.r, "1902", &j, &err), RZ_OK);
    slurm_job_parse(text, &t);
    same_job(&t, &j, true);
    ck_assert_int_eq(slurm_reader_mode(&f.r), SLURM_READER_TEXT);
    ck_assert(strstr(slurm_reader_describe(), "squeue --json: status 1") != NULL);
    ck_assert_int_eq(slurm_job_query(&f.r, "1902", &j, &err), RZ_OK);
    ck_assert_int_eq(count_calls(&f, "squeue --json"), 1);
    /* RYZEN_SLURM_JSON=0 is read once, by main */
    char id[] = "SLURM_JOB_ID=7", off[] = "RYZEN_SLURM_JSON=0";
    char *envp[] = {id, off, NULL};
    struct step_env e;
    step_env_parse(&e, envp);
    ck_assert_str_eq(e.slurm_json, "0");
    free(text);
}
END_TEST

/* ---- errors -------------------------------------------------------------------------------------- */

static void job_refused(const char *json, const char *why)
{
    struct slurm_job j;
    struct rz_err err;
    ck_assert_int_eq(slurm_job_parse_json(json, "1902", 0, &j, &err), RZ_EDATA);
    ck_assert_msg(strstr(err.msg, why) != NULL, "\"%s\" does not say \"%s\"", err.msg, why);
    ck_assert(!j.found);
}

START_TEST(bad_json_is_refused_with_a_reason)
{
    char *json = fixture("squeue.json");
    json[strlen(json) / 2] = '\0'; /* cut short */
    job_refused(json, "squeue --json:");
    free(json);
    json = damaged("squeue.json", "\"job_id\": 1902,", "\"restart_cnt\"", "\"restart_count\"");
    job_refused(json, "job 1902: no \"restart_cnt\"");
    free(json);
    json = damaged("squeue.json", NULL, "\"comment\": \"p1: GO, loss 2.31, step 200 of 400\"",
                   "\"comment\": 7");
    job_refused(json, "\"comment\" is not a string");
    free(json);
    json = damaged("squeue.json", NULL, "\"time_limit\": 1563", "\"time_limit\": \"1563\"");
    job_refused(json, "\"time_limit\" is not an integer");
    free(json);
    json = damaged("squeue.json", NULL, "openapi\\/v0.0.38", "openapi\\/v0.0.39");
    job_refused(json, "only Slurm 22.05's");
    free(json);
    job_refused("{\"meta\": {\"plugin\": {\"type\": \"openapi/v0.0.38\"}}, \"jobs\": {}}",
                "no \"jobs\" array");
    job_refused("", "squeue --json:1:1");
    struct slurm_job j;
    struct rz_err err;
    ck_assert_int_eq(slurm_job_parse_json("{}", "123+0", 0, &j, &err), RZ_EDATA);
    ck_assert(strstr(err.msg, "123+0") != NULL);
}
END_TEST

START_TEST(bad_node_json_and_hostlists_are_refused)
{
    struct slurm_node n[8];
    int k = 0;
    struct rz_err err;
    char *json = damaged("sinfo.json", NULL, "\"state_flags\": [\n      ]", "\"state_flags\": \"\"");
    ck_assert_int_eq(slurm_node_parse_json(json, "n1", n, 8, &k, &err), RZ_EDATA);
    ck_assert(strstr(err.msg, "node n1: \"state_flags\" is not an array") != NULL);
    free(json);
    json = damaged("sinfo.json", NULL, "\"port\": 16818", "\"port\": null,\"x\": 1");
    ck_assert_int_eq(slurm_node_parse_json(json, "n1", n, 8, &k, &err), RZ_OK);
    ck_assert_int_eq(n[0].port, 0); /* null: the site's SlurmdPort, as when scontrol omits it */
    free(json);
    json = fixture("sinfo.json");
    ck_assert_int_eq(slurm_node_parse_json(json, "n[1-2]x[3]", n, 8, &k, &err), RZ_EDATA);
    ck_assert(strstr(err.msg, "n[1-2]x[3]") != NULL);
    free(json);
    char out[16];
    const char *bad[] = {"n[4-2]", "n[", "n[a]", "n]1[", "", "n[1-99999999]"};
    for (size_t i = 0; i < RZ_ARRAY_LEN(bad); i++)
        ck_assert_msg(!slurm_hostlist_expand(bad[i], out, sizeof out), "%s expanded", bad[i]);
    ck_assert(!slurm_hostlist_expand("n[1-9]", out, sizeof out)); /* does not fit */
}
END_TEST

START_TEST(a_json_answer_that_does_not_read_turns_the_run_to_text)
{
    struct fake f;
    char *text = fixture("job_running.txt"), *json = fixture("squeue.json");
    struct slurm_job t, j;
    struct rz_err err;
    json[strlen(json) / 3] = '\0';
    fake_init(&f);
    rule(&f, "squeue --version", 0, "slurm 22.05.8\n", 0);
    rule(&f, "squeue --json", 0, json, 0);
    rule(&f, "scontrol show job -o 1902", 0, text, 0);
    ck_assert_int_eq(slurm_job_query(&f.r, "1902", &j, &err), RZ_OK);
    slurm_job_parse(text, &t);
    same_job(&t, &j, true);
    ck_assert_int_eq(slurm_reader_mode(&f.r), SLURM_READER_TEXT);
    ck_assert(strstr(slurm_reader_describe(), "scontrol/squeue text (squeue --json:") != NULL);
    /* once the reader is confirmed, a failing squeue is Slurm saying no, as scontrol's would be */
    free(json);
    json = fixture("squeue.json");
    fake_init(&f);
    rule(&f, "squeue --version", 0, "slurm 22.05.8\n", 0);
    rule(&f, "squeue --json", 0, json, 1);
    rule(&f, "squeue --json", 1, "", 0);
    ck_assert_int_eq(slurm_job_query(&f.r, "1902", &j, &err), RZ_OK);
    ck_assert_int_eq(slurm_job_query(&f.r, "1902", &j, &err), RZ_EHEALTH);
    ck_assert_int_eq(slurm_reader_mode(&f.r), SLURM_READER_JSON);
    ck_assert_int_eq(count_calls(&f, "scontrol"), 0);
    free(json);
    free(text);
}
END_TEST

static Suite *step_slurm_suite(void)
{
    Suite *s = suite_create("step_slurm");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, NULL);
    tcase_add_test(core, a_running_job_reads_the_same_both_ways);
    tcase_add_test(core, a_pending_job_reads_the_same_both_ways);
    tcase_add_test(core, nodes_read_the_same_both_ways);
    tcase_add_test(core, pending_and_ours_reads_the_same_both_ways);
    tcase_add_test(core, hostlists_expand);
    tcase_add_test(core, the_reader_is_json_on_22_05_and_the_gaps_come_from_scontrol);
    tcase_add_test(core, older_slurm_and_a_failing_first_answer_read_text);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_checked_fixture(errors, setup, NULL);
    tcase_add_test(errors, bad_json_is_refused_with_a_reason);
    tcase_add_test(errors, bad_node_json_and_hostlists_are_refused);
    tcase_add_test(errors, a_json_answer_that_does_not_read_turns_the_run_to_text);
    suite_add_tcase(s, errors);
    return s;
}

int main(void) { return rz_test_main(step_slurm_suite()); }
