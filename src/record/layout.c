/* layout.c: the run-directory layout, built and parsed (see layout.h). */
#include "config.h"

#include "record/layout.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"

bool layout_run_dir(char *out, size_t len, const char *run_root, const char *phase,
                    const char *rollback_of, const char *array_task)
{
    int w = snprintf(out, len, "%s/%s", run_root, phase);
    /* A rollback starts a new lineage of this phase from another phase's checkpoint: it gets a
     * directory of its own, so its checkpoints never replace the first run's.  So does each
     * task of a job array. */
    if (w > 0 && (size_t)w < len && rollback_of != NULL && rollback_of[0] != '\0')
        w += snprintf(out + w, len - (size_t)w, "/rollback-%s", rollback_of);
    if (w > 0 && (size_t)w < len && array_task != NULL && array_task[0] != '\0')
        w += snprintf(out + w, len - (size_t)w, "/task-%s", array_task);
    return w > 0 && (size_t)w < len;
}

bool layout_is_task(const char *name)
{
    return strncmp(name, "task-", 5) == 0 && name[5] != '\0' &&
           strspn(name + 5, "0123456789") == strlen(name + 5);
}

bool layout_is_rollback(const char *name)
{
    return strncmp(name, "rollback-", 9) == 0 && name[9] != '\0';
}

/* The last component of a path without trailing slashes. */
static const char *last_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

/* Drop the last component: "/p" becomes "/", a bare name ".". */
static void parent(char *path, size_t len)
{
    char *slash = strrchr(path, '/');
    if (slash == path)
        slash[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
    else
        rz_fmt(path, len, ".");
}

void layout_run_root(const char *run_dir, char *root, size_t len)
{
    rz_fmt(root, len, "%s", run_dir);
    for (size_t n = strlen(root); n > 1 && root[n - 1] == '/'; n--)
        root[n - 1] = '\0';
    if (layout_is_task(last_name(root)))
        parent(root, len);
    if (layout_is_rollback(last_name(root)))
        parent(root, len);
    parent(root, len);
}
