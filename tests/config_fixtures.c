/* config_fixtures.c: the fixtures of check_config (see config_fixtures.h), used by check_config.c
 * and check_config_errors.c. */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "config/keys.h"

#include "config_fixtures.h"

static const char *srcdir(void)
{
    const char *d = getenv("top_srcdir");
    return d != NULL && d[0] != '\0' ? d : ".";
}

const char *src_path(const char *rel)
{
    static char bufs[2][4096];
    static int which;
    char *b = bufs[which++ % 2];
    snprintf(b, sizeof bufs[0], "%s/%s", srcdir(), rel);
    return b;
}

const struct cfg_key *key(const char *name)
{
    int i = cfg_key_index(name);
    ck_assert_msg(i >= 0, "no key %s", name);
    return &cfg_keys[i];
}

int count_lines(const char *s)
{
    int n = s[0] != '\0';
    for (; *s != '\0'; s++)
        n += *s == '\n';
    return n;
}
