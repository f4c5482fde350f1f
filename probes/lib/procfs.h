/* procfs.h - small parsers of /proc files' text that several probes read. */
#ifndef GG_PROCFS_H
#define GG_PROCFS_H

#include <stdint.h>

/* The pid in the innermost pid namespace: the last number of the "NSpid:" line of a /proc/<pid>/status
 * text (NUL-terminated). 0 and *ret_nspid, or -ENOENT without such a line or number. */
int procfs_status_nspid(const char *status, uint32_t *ret_nspid);

#endif
