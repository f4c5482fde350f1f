/* fsutil.h - small file-system helpers the supervisor and the probes share (one copy each). */
#ifndef GG_FSUTIL_H
#define GG_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* mkdir -p with mode for every directory created. 0, or negative errno (errno set too): -ENAMETOOLONG
 * for an empty path or one of 4096 bytes or more. */
int gg_mkdir_p(const char *path, mode_t mode);
/* Read a small file (/proc, /sys) into buf, NUL-terminated, at most len - 1 bytes (len >= 1): the number
 * of bytes read, or negative errno when it cannot be opened or read. Retries on EINTR. */
ssize_t gg_read_small(const char *path, char *buf, size_t len);
/* The whole of a regular file of at most max bytes into *ret (malloc'ed, NUL-terminated; free() it),
 * its length into *ret_len (may be NULL). flags are added to O_RDONLY | O_CLOEXEC (O_NOFOLLOW,
 * O_NOCTTY). 0, or negative errno: -EINVAL when not a regular file, -EFBIG when larger than max. A file
 * that shrinks while read gives what was there; one whose size says 0 (/proc, cgroupfs) is read to its
 * end (-EFBIG once max bytes or more are there). */
int gg_read_file(const char *path, int flags, size_t max, char **ret, size_t *ret_len);
/* The length of the one of the ':' separated absolute bases (trailing '/' aside) that path is below or
 * equal to, as both are spelled (no resolving), 0 when none: what a probe confines its writes to, and
 * what the REST validator checks first. */
size_t gg_path_base_len(const char *path, const char *bases);

#endif
