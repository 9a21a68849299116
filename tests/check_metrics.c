/* check_metrics: the per-step JSONL line, summary.json, the ETA format, the live metrics
 * (windows, the straggler, the node textfile) and I/O errors. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"
#include "metrics/live_series.h"
#include "metrics/metrics.h"
#include "record/rank_log.h"
#include "record/summary.h"
#include "testutil.h"

static char dir[64];

static void setup(void)
{
    rz_test_tmpdir(dir, sizeof dir, "metrics");
}

static void teardown(void)
{
    rz_test_rmtree(dir);
}

START_TEST(step_line_has_every_field)
{
    struct rank_log *log;
    ck_assert_int_eq(rank_log_open(&log, dir, "77", 3, NULL), RZ_OK);
    struct rank_step s = {.step = 5, .samples_seen = 80, .run_step = 2, .loss = 0.5,
                         .lr = 1e-3, .grad_norm = 2, .step_time_s = 0.25,
                         .comm_time_s = 0.125, .samples_per_sec = 64, .tokens_per_sec = 8192,
                         .mfu = 0.5, .rss_bytes = 1000, .allreduce_s = 1e-5, .world_size = 4,
                         .grad_allreduce_s = 0.375,
                         .has_sync = 1, .sync_ok = 1, .has_val = 1, .val_loss = 0.75};
    ck_assert_int_eq(rank_log_write(log, &s, NULL), RZ_OK);
    char path[256];
    snprintf(path, sizeof path, "%s", rank_log_path(log));
    rank_log_close(log);
    char want[256];
    snprintf(want, sizeof want, "%s/metrics/77/rank-00003.jsonl", dir);
    ck_assert_str_eq(path, want);
    char *text = NULL;
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_str_eq(text, "{\"step\":5,\"samples_seen\":80,\"run_step\":2,\"loss\":0.5,"
                           "\"loss_hex\":\"0x1p-1\",\"lr\":0.001,\"grad_norm\":2,"
                           "\"step_time_s\":0.25,\"comm_time_s\":0.125,\"samples_per_sec\":64,"
                           "\"tokens_per_sec\":8192,\"mfu\":0.5,\"rss_bytes\":1000,"
                           "\"allreduce_s\":1e-05,\"compute_time_s\":0,\"grad_allreduce_s\":0.375,\"world_size\":4,"
                           "\"val_loss\":0.75,\"val_loss_hex\":\"0x1.8p-1\",\"sync_ok\":true,"
                           "\"param_spread\":0,\"gnorm_pre_min\":0,\"gnorm_pre_max\":0,"
                           "\"gnorm_post_spread\":0}\n");
    free(text);
}
END_TEST

START_TEST(summary_in_the_seed_format)
{
    struct summary_rank ranks[2] = {
        {.rank = 0, .host = "n1", .steps = 10, .avg_loss = 2, .samples_per_sec = 50},
        {.rank = 1, .host = "n2", .steps = 10, .avg_loss = 2, .samples_per_sec = 49}};
    struct summary_doc s = {.num_processes = 2, .avg_loss = 2.5, .total_duration_sec = 12,
                            .samples_per_sec = 99, .steps = 10, .entropy_floor = -1,
                            .ranks = ranks};
    ck_assert_int_eq(summary_write(dir, &s, NULL), RZ_OK);
    char path[256], *text = NULL;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"num_processes\":2,\"aggregated_metrics\":{\"avg_loss\":"
                                       "2.5,\"total_duration_sec\":12,\"samples_per_sec\":99,"));
    ck_assert_ptr_null(strstr(text, "entropy_floor")); /* unknown: left out */
    ck_assert_ptr_null(strstr(text, "val_loss"));      /* no validation: left out */
    ck_assert_ptr_nonnull(strstr(text, "{\"rank\":1,\"host\":\"n2\",\"steps\":10,"));
    ck_assert_ptr_null(strstr(text, "\"network\"")); /* no rank read the counters */
    free(text);
    ranks[0].has_net = 1; /* the node's lowest rank */
    ranks[0].net_seconds = 2.5;
    ranks[0].net = (struct netstat){.tcp_out_segs = 900, .tcp_retrans_segs = 9, .tx_bytes = 1e6,
                                    .rx_bytes = 2e6, .drops = 1, .errors = 0};
    ranks[0].n_peers = 1;
    ranks[0].peers[0] = (struct summary_peer){.host = "n2", .segs_out = 800, .retrans = 8,
                                              .data_segs_out = 700, .dsack_dups = 3,
                                              .data_segs_in = 650, .conns = 2};
    ranks[0].net_settle_s = 0.5;
    ranks[0].net_late_dsacks = 1;
    ck_assert_int_eq(summary_write(dir, &s, NULL), RZ_OK);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"network\":{\"seconds\":2.5,\"tcp_segments_sent\":900,"
                                       "\"tcp_retransmitted\":9,\"tx_bytes\":1000000,\"rx_bytes\":"
                                       "2000000,\"drops\":1,\"errors\":0,\"peers\":[{\"host\":"
                                       "\"n2\",\"connections\":2,\"tcp_segments_sent\":800,"
                                       "\"tcp_data_segments_sent\":700,\"tcp_retransmitted\":8,"
                                       "\"tcp_spurious_retransmits\":3,"
                                       "\"tcp_data_segments_received\":650}],"
                                       "\"end_settle_seconds\":0.5,\"resends_proven_at_end\":1}}"));
    ck_assert_int_eq(strstr(strstr(text, "\"network\"") + 1, "\"network\"") == NULL, 1);
    free(text);
    snprintf(path, sizeof path, "%s/summary.json.tmp", dir);
    ck_assert_int_ne(access(path, F_OK), 0); /* renamed into place */
    s.has_val = 1;
    s.val_loss = 1.5;
    s.val_step = 10;
    s.val_samples = 64;
    ck_assert_int_eq(summary_write(dir, &s, NULL), RZ_OK);
    snprintf(path, sizeof path, "%s/summary.json", dir);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_nonnull(strstr(text, "\"val_loss\":1.5,\"val_loss_hex\":\"0x1.8p+0\","
                                       "\"val_step\":10,\"val_samples\":64}"));
    free(text);
}
END_TEST

START_TEST(eta_format)
{
    char b[32];
    metrics_format_eta(b, sizeof b, 59.4);
    ck_assert_str_eq(b, "0:59");
    metrics_format_eta(b, sizeof b, 3725);
    ck_assert_str_eq(b, "1:02:05");
    metrics_format_eta(b, sizeof b, -1);
    ck_assert_str_eq(b, "?");
}
END_TEST

START_TEST(window_means_and_quantiles)
{
    static struct metrics_window w;
    memset(&w, 0, sizeof w);
    for (int i = 1; i <= 100; i++) /* only the last 64 remain: 37..100 */
        metrics_window_add(&w, 0.01 * i, 0.005 * i, 0.001 * i, 1e-4 * i, 0.002 * i);
    struct metrics_rank_live l;
    metrics_window_summary(&w, 0.25, 1e6, &l);
    ck_assert_int_eq(w.n, METRICS_WINDOW);
    ck_assert_double_eq_tol(l.step_mean_s, 0.01 * 68.5, 1e-12);
    ck_assert_double_eq_tol(l.compute_mean_s, 0.005 * 68.5, 1e-12);
    ck_assert_double_eq_tol(l.comm_mean_s, 0.001 * 68.5, 1e-12);
    ck_assert_double_eq_tol(l.allreduce_p50_s, 1e-4 * 68.5, 1e-12);
    ck_assert_double_eq_tol(l.allreduce_p99_s, 1e-4 * (99 + 0.37 * 1), 1e-12); /* 37 + 62.37 */
    ck_assert_double_eq_tol(l.grad_p50_s, 0.002 * 68.5, 1e-12);
    ck_assert_double_eq_tol(l.grad_p99_s, 0.002 * 99.37, 1e-12);
    ck_assert_double_eq_tol(l.exposed_p50_s, 0.001 * 68.5, 1e-12);
    ck_assert_double_eq_tol(l.exposed_p99_s, 0.001 * 99.37, 1e-12);
    ck_assert_double_eq(l.compute_s, 0.25);
    ck_assert_double_eq(l.rss_bytes, 1e6);
    ck_assert_int_eq(METRICS_LIVE_DOUBLES, 11);
}
END_TEST

/* Three ranks on n1 (0, 1) and n2 (2); rank 2 computes twice as long as the median. */
static struct metrics_rank_live live3[3] = {
    {.compute_s = 0.1, .step_mean_s = 0.5, .compute_mean_s = 0.25, .comm_mean_s = 0.125,
     .allreduce_p50_s = 1e-3, .allreduce_p99_s = 4e-3, .rss_bytes = 1048576},
    {.compute_s = 0.1, .step_mean_s = 0.5, .compute_mean_s = 0.25, .comm_mean_s = 0.25,
     .allreduce_p50_s = 1e-3, .allreduce_p99_s = 4e-3, .rss_bytes = 2097152},
    {.compute_s = 0.2, .step_mean_s = 0.5, .compute_mean_s = 0.5, .comm_mean_s = 0,
     .allreduce_p50_s = 1e-3, .allreduce_p99_s = 4e-3, .rss_bytes = 3145728},
};
static const char *const hosts3[3] = {"n1", "n1", "n2"};

static struct metrics_prom_doc doc3(const char *node)
{
    struct metrics_prom_doc d = {
        .job = "77", .phase = "phase1_4proc", .node = node, .now_unix = 1800000000.5,
        .running = true, .world = 3, .ranks = live3, .hosts = hosts3, .step = 40,
        .samples_seen = 480, .loss = NAN, .lr = 5e-4, .rank_samples_per_step = 4, .restarts = 1,
        .skipped_steps = 2, .last_ckpt_unix = 1800000000, .ckpt_interval_steps = 10,
        .useful_train_s = 123.5,
        .update_interval_steps = 20, .memory_limit_bytes = 4294967296.0,
        .throughput_no_go = 200, .straggler_no_go = 1.5};
    return d;
}

START_TEST(straggler_against_the_median)
{
    struct metrics_straggler s;
    metrics_straggler(live3, 3, &s);
    ck_assert_int_eq(s.rank, 2);
    ck_assert_double_eq(s.median_s, 0.25);
    ck_assert_double_eq(s.ratio, 2.0);
    metrics_straggler(live3, 1, &s);
    ck_assert_double_eq(s.ratio, 1.0);
}
END_TEST

static char *format3(const char *node)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct metrics_prom_doc d = doc3(node);
    metrics_prom_format(f, &d);
    fclose(f);
    return text;
}

START_TEST(node_textfile_series)
{
    char *n1 = format3("n1"), *n2 = format3("n2");
    const char *want1[] = {
        "ryzen_last_update_timestamp_seconds{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 1800000000.500\n",
        "ryzen_train_running{slurm_job_id=\"77\",phase=\"phase1_4proc\",node=\"n1\"} 1\n",
        "ryzen_train_update_interval_seconds{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 10\n",
        "ryzen_train_checkpoint_interval_seconds{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 5\n",
        "# TYPE ryzen_train_useful_seconds gauge\n",
        "ryzen_train_useful_seconds{slurm_job_id=\"77\",phase=\"phase1_4proc\",node=\"n1\"} "
        "123.5\n",
        "# TYPE ryzen_train_loss gauge\n",
        "ryzen_train_loss{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"1\",node=\"n1\"} NaN\n",
        "ryzen_train_samples_per_second{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"0\","
        "node=\"n1\"} 8\n",
        "ryzen_train_comm_exposed_ratio{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"1\","
        "node=\"n1\"} 0.5\n",
        "ryzen_train_compute_slowdown_ratio{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"0\","
        "node=\"n1\"} 1\n",
        "ryzen_train_memory_limit_bytes{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"0\","
        "node=\"n1\"} 4294967296\n",
        "ryzen_train_checkpoint_age_seconds{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"0\","
        "node=\"n1\"} 0.5\n",
        "# TYPE ryzen_train_skipped_steps_total counter\n",
        "ryzen_train_skipped_steps_total{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"1\","
        "node=\"n1\"} 2\n",
        "ryzen_train_throughput_samples_per_second{slurm_job_id=\"77\",phase=\"phase1_4proc\"} 24\n",
        "ryzen_train_straggler_ratio{slurm_job_id=\"77\",phase=\"phase1_4proc\",rank=\"2\","
        "node=\"n2\"} 2\n",
    };
    for (size_t i = 0; i < sizeof want1 / sizeof want1[0]; i++)
        ck_assert_msg(strstr(n1, want1[i]) != NULL, "n1 lacks: %s", want1[i]);
    ck_assert_ptr_null(strstr(n1, "rank=\"2\",node=\"n1\""));
    ck_assert_ptr_null(strstr(n1, "ryzen_train_validation_loss{")); /* no validation: no sample */
    /* n2: its own rank only, no job-wide series */
    ck_assert_ptr_nonnull(strstr(n2, "ryzen_train_compute_slowdown_ratio{slurm_job_id=\"77\","
                                     "phase=\"phase1_4proc\",rank=\"2\",node=\"n2\"} 2\n"));
    ck_assert_ptr_null(strstr(n2, "rank=\"0\""));
    ck_assert_ptr_null(strstr(n2, "ryzen_train_straggler_ratio{"));
    ck_assert_ptr_null(strstr(n2, "ryzen_train_world_size"));
    /* every sample's family has HELP and TYPE */
    char *whole = format3("n1");
    for (char *save = NULL, *line = strtok_r(n1, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if (line[0] == '#')
            continue;
        char name[128], help[160];
        snprintf(name, sizeof name, "%.*s", (int)strcspn(line, "{"), line);
        snprintf(help, sizeof help, "# HELP %s ", name);
        ck_assert_msg(strstr(whole, help) != NULL, "no HELP for %s", name);
    }
    free(whole);
    free(n1);
    free(n2);
    /* with a validation: its loss, on every rank's series */
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    struct metrics_prom_doc d = doc3("n1");
    d.has_val = true;
    d.val_loss = 3.25;
    metrics_prom_format(f, &d);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "ryzen_train_validation_loss{slurm_job_id=\"77\","
                                       "phase=\"phase1_4proc\",rank=\"1\",node=\"n1\"} 3.25\n"));
    ck_assert_ptr_null(strstr(text, "ryzen_train_net_")); /* no counters: no network series */
    free(text);
    /* with the node's network counters: one sample per family, labelled with the node */
    f = open_memstream(&text, &len);
    d.has_net = true;
    d.net = (struct netstat){.tcp_out_segs = 20000, .tcp_retrans_segs = 40, .tx_bytes = 3e9,
                             .rx_bytes = 2e6, .drops = 3, .errors = 1};
    metrics_prom_format(f, &d);
    fclose(f);
    const char *want_net[] = {
        "# TYPE ryzen_train_net_tcp_segments_sent_total counter\n",
        "ryzen_train_net_tcp_segments_sent_total{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 20000\n",
        "ryzen_train_net_tcp_retransmitted_segments_total{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 40\n",
        "ryzen_train_net_tcp_retransmit_ratio{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 0.002\n",
        "ryzen_train_net_transmit_bytes_total{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 3000000000\n",
        "ryzen_train_net_drops_total{slurm_job_id=\"77\",phase=\"phase1_4proc\",node=\"n1\"} 3\n",
        "ryzen_train_net_errors_total{slurm_job_id=\"77\",phase=\"phase1_4proc\",node=\"n1\"} 1\n",
    };
    for (size_t i = 0; i < sizeof want_net / sizeof want_net[0]; i++)
        ck_assert_msg(strstr(text, want_net[i]) != NULL, "lacks: %s", want_net[i]);
    ck_assert_ptr_null(strstr(text, "ryzen_train_net_mpi_")); /* no sockets read: none */
    ck_assert_ptr_null(strstr(text, "ryzen_train_net_packet_loss_ratio{"));
    free(text);
    /* with the job's MPI connections: the gate's sample, apart from the host's 40 of 20000 */
    f = open_memstream(&text, &len);
    d.has_mpi = true;
    d.mpi_data_segs = 8000;
    d.mpi_lost = 4;
    metrics_prom_format(f, &d);
    fclose(f);
    const char *want_mpi[] = {
        "# TYPE ryzen_train_net_mpi_data_segments_sent_total counter\n",
        "ryzen_train_net_mpi_data_segments_sent_total{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 8000\n",
        "# TYPE ryzen_train_net_mpi_lost_segments_total counter\n",
        "ryzen_train_net_mpi_lost_segments_total{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 4\n",
        "# TYPE ryzen_train_net_packet_loss_ratio gauge\n",
        "ryzen_train_net_packet_loss_ratio{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 0.0005\n",
        "ryzen_train_net_tcp_retransmit_ratio{slurm_job_id=\"77\",phase=\"phase1_4proc\","
        "node=\"n1\"} 0.002\n",
    };
    for (size_t i = 0; i < sizeof want_mpi / sizeof want_mpi[0]; i++)
        ck_assert_msg(strstr(text, want_mpi[i]) != NULL, "lacks: %s", want_mpi[i]);
    free(text);
    /* one node: no connection to another, a share of 0, not NaN */
    f = open_memstream(&text, &len);
    d.mpi_data_segs = d.mpi_lost = 0.0;
    metrics_prom_format(f, &d);
    fclose(f);
    ck_assert_ptr_nonnull(strstr(text, "ryzen_train_net_packet_loss_ratio{slurm_job_id=\"77\","
                                       "phase=\"phase1_4proc\",node=\"n1\"} 0\n"));
    free(text);
}
END_TEST

START_TEST(textfile_is_written_durably)
{
    struct metrics_prom_doc d = doc3("n1");
    d.job = "a/b";
    char path[512], want[512], *text = NULL;
    ck_assert_int_eq(metrics_prom_write(dir, &d, path, sizeof path, NULL), RZ_OK);
    snprintf(want, sizeof want, "%s/ryzen-a_b-n1.prom", dir);
    ck_assert_str_eq(path, want);
    ck_assert_int_eq(rz_read_file(path, &text, NULL, NULL), RZ_OK);
    ck_assert_ptr_nonnull(strstr(text, "slurm_job_id=\"a/b\""));
    free(text);
    ck_assert_double_gt(metrics_memory_limit_bytes(), 1e6);
}
END_TEST

START_TEST(unwritable_directory_is_an_io_error)
{
    struct rank_log *log = NULL;
    struct rz_err e;
    ck_assert_int_eq(rank_log_open(&log, "/proc/self/rz-no", "1", 0, &e), RZ_EIO);
    ck_assert_ptr_null(log);
    ck_assert_ptr_nonnull(strstr(e.msg, "/proc/self/rz-no"));
    struct summary_doc s = {.num_processes = 0};
    ck_assert_int_eq(summary_write("/proc/self/rz-no", &s, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "summary.json"));
    struct metrics_prom_doc d = doc3("n1");
    ck_assert_int_eq(metrics_prom_write("/proc/self/rz-no", &d, NULL, 0, &e), RZ_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/proc/self/rz-no"));
}
END_TEST

static Suite *metrics_suite(void)
{
    Suite *s = suite_create("metrics");
    TCase *core = rz_test_tcase("core");
    tcase_add_checked_fixture(core, setup, teardown);
    tcase_add_test(core, step_line_has_every_field);
    tcase_add_test(core, summary_in_the_seed_format);
    tcase_add_test(core, eta_format);
    tcase_add_test(core, window_means_and_quantiles);
    tcase_add_test(core, straggler_against_the_median);
    tcase_add_test(core, node_textfile_series);
    tcase_add_test(core, textfile_is_written_durably);
    suite_add_tcase(s, core);
    TCase *errors = rz_test_tcase("errors");
    tcase_add_test(errors, unwritable_directory_is_an_io_error);
    suite_add_tcase(s, errors);
    return s;
}

int main(void)
{
    return rz_test_main(metrics_suite());
}
