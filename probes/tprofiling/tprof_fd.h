/* tprof_fd.h - file.path and sock.conn of a process's descriptor (fdname.c). */
#ifndef GG_TPROF_FD_H
#define GG_TPROF_FD_H

#include <stddef.h>
#include <stdint.h>

#include "probe.h"

/* path: the descriptor's link ("/tmp/x", "pipe:[123]", "socket:[456]"); conn: for a TCP or UDP socket
 * "tcp <local> -> <remote>", else "". 0, or negative errno (gone: both ""). b is a scratch buffer. */
int tp_fd_name(struct probe_buf *b, uint32_t tgid, int64_t fd, char *path, size_t plen, char *conn, size_t clen);

#endif
