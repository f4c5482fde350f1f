/* persist.h - REST-applied configuration on disk: one small JSON file per probe under a state
 * directory, replaced atomically (temp file, fsync, rename, fsync of the directory), so that the last
 * acknowledged configuration survives a crash or SIGKILL of the supervisor. */
#ifndef GG_PERSIST_H
#define GG_PERSIST_H

#include <stddef.h>

/* Write text as <dir>/<name>.json (dir created 0700 when missing). 0 or negative errno; on error the
 * previous file is intact. name: letters, digits, '_', '-' only (-EINVAL otherwise). */
int gg_persist__save(const char *dir, const char *name, const char *text);
/* Read <dir>/<name>.json (at most max bytes, -EFBIG beyond) into *ret (malloc'd, NUL-terminated).
 * -ENOENT when there is none. Stale temporary files of an interrupted save are removed. */
int gg_persist__load(const char *dir, const char *name, size_t max, char **ret);
/* Remove <dir>/<name>.json; 0 also when it did not exist. */
int gg_persist__remove(const char *dir, const char *name);

#endif
