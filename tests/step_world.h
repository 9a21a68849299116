/* step_world.h: the scripted runner and the phase world of check_step and check_place
 * (step_world.c). */
#ifndef RZ_TESTS_STEP_WORLD_H
#define RZ_TESTS_STEP_WORLD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "step/step_internal.h"

#define NOW 1.8e9 /* the fake runner's clock */

extern char dir[64]; /* the test's scratch directory (each suite's setup makes it) */

struct rule {
    const char *match;           /* a prefix of the command line ("scontrol show job") */
    int status;
    const char *out;
    int times;                   /* 0: every time; else this many times */
};

/* One run of the job step (srun ...): what the ranks leave behind. */
struct fake_step {
    int status;
    int ranks_recorded;          /* exit records rank-0 .. rank-(n-1) */
    int record_status;           /* their status */
    const char *end_reason;
    const char *message;
    int64_t ckpt_step;           /* > 0: a checkpoint of this step appears */
    const char *health;          /* health.json written by a preflight (NULL: none) */
    int signal;                  /* a signal arrives at the wrapper meanwhile */
    bool hangs;                  /* it never ends by itself: wait's limit ends it */
    int up;                      /* heartbeat files written for ranks 0 .. up-1 (the ranks whose
                                  * watchdog started) */
};

struct fake {
    struct step_runner r;
    struct rule rules[48];
    int n_rules;
    char calls[160][2048];
    int n_calls;
    struct fake_step steps[8];
    int n_steps, next_step;
    char run_dir[1024];
    char launch_env[8][512];     /* each srun's added environment, but RYZEN_ATTEMPT_DIR */
};

struct world {
    struct fake f;
    struct step_env env;
    struct step_args args;
    char rd[512];
    FILE *out;
    char *log;
    size_t log_len;
};


bool has(const char *hay, const char *needle);
void write_file(const char *path, const char *text);
char *slurp(const char *path);
void save_checkpoint(const char *run_dir, int64_t step);
void fake_init(struct fake *f);
void rule(struct fake *f, const char *match, int status, const char *out, int times);
/* The same, matched before every rule added so far (world_init's included). */
void rule_first(struct fake *f, const char *match, int status, const char *out, int times);
const char *call(const struct fake *f, const char *prefix);
void assert_gate_ran_with(const struct fake *f, const char *args);
int count_calls(const struct fake *f, const char *prefix);
const char *job_line(const char *state, double end, const char *extra);
void world_init(struct world *w, const char *state);
void step(struct world *w, struct fake_step s);
struct fake_step ranks(int srun_status, int status, int64_t ckpt_step);
int run(struct world *w);
char *events_of(const struct world *w);
void world_free(struct world *w);
void p1_restart(const char *restart);
void p1_defaults(void);
void p1_health(const char *health);
void p1_sections(const char *restart, const char *health);
void p1_holds_when_stuck(void);
extern const struct fake_step preflight_ok;
#define JOB_LINE(state, extra) job_line(state, NOW + 3600, extra)

#endif
