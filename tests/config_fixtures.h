/* config_fixtures.h: what the files of check_config share (config_fixtures.c): paths under
 * $top_srcdir, a key of the table by name, lines counted, and the "errors" test case that
 * check_config.c adds to its suite from check_config_errors.c.  Test code only. */
#ifndef RZ_TESTS_CONFIG_FIXTURES_H
#define RZ_TESTS_CONFIG_FIXTURES_H

#include <check.h>

#include "config/keys.h"

/* $top_srcdir/rel in a rotating static buffer (two live at a time is enough here). */
const char *src_path(const char *rel);

/* The entry of the key table named name (the test fails if there is none). */
const struct cfg_key *key(const char *name);

/* How many lines s has (a last line without its newline counts). */
int count_lines(const char *s);

/* The "errors" test case: malformed files, bad overrides, cross-key problems, missing files,
 * garbage and huge inputs (check_config_errors.c). */
TCase *config_errors_tcase(void);

#endif
