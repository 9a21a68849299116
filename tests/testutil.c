/* testutil.c: the shared test helpers (see testutil.h). */
#include "config.h"

#include "testutil.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int rz_test_main(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* See rz_test_tcase: 13 times the slowest test measured here under the sanitizers (44 s). */
#define RZ_TEST_TIMEOUT_S 600

TCase *rz_test_tcase(const char *name)
{
    TCase *tc = tcase_create(name);
    tcase_set_timeout(tc, RZ_TEST_TIMEOUT_S);
    return tc;
}

void rz_test_tmpdir(char *out, size_t len, const char *tag)
{
    int n = snprintf(out, len, "/tmp/rz-%s-XXXXXX", tag);
    ck_assert_msg(n > 0 && (size_t)n < len, "scratch directory name too long");
    ck_assert_msg(mkdtemp(out) != NULL, "mkdtemp %s failed", out);
}

void rz_test_rmtree(const char *path)
{
    struct stat sb;
    if (lstat(path, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        DIR *d = opendir(path);
        struct dirent *de;
        while (d != NULL && (de = readdir(d)) != NULL) {
            char sub[4096];
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
            rz_test_rmtree(sub);
        }
        if (d != NULL)
            closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}
