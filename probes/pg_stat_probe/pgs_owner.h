/* pgs_owner.h - the process of this host that listens on a TCP address (the server's tgid). */
#ifndef GG_PGS_OWNER_H
#define GG_PGS_OWNER_H

#include <stdint.h>
#include <sys/socket.h>

/*
 * Whether the peer of the connected TCP socket fd is this host (loopback, or the socket's own local
 * address), and if so the pid of the process holding a socket that listens on the peer's port (its
 * address the peer's or a wildcard), from /proc/net/tcp{,6} and /proc/<pid>/fd. 0 with *ret_pid
 * (0: the peer is another host, or no such process is visible from here), or a negative errno.
 */
int pgs_owner__listener(int fd, uint32_t *ret_pid);

/* The LISTEN sockets' inodes in one /proc/net/tcp or tcp6 text that match family/addr/port (addr: the
 * 4 or 16 bytes of the address in network order). Returns how many were put in inodes (at most max). */
unsigned int pgs_owner__parse(const char *text, int family, const uint8_t *addr, unsigned int port, uint64_t *inodes,
			      unsigned int max);

#endif
