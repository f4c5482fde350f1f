/* pgs_owner.c - which process of this host listens on the server's address: LISTEN sockets from
 * /proc/net/tcp and tcp6, their owner from the socket:[inode] links in /proc/<pid>/fd. */
#include "pgs_owner.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "fsutil.h"

#define INODES_MAX  8u
#define NET_TCP_MAX (8u << 20)

/* The address as /proc/net/tcp{,6} prints it: 32-bit words in host order, each %08X. */
static int addr_eq(const uint32_t *words, unsigned int nwords, const uint8_t *addr)
{
	for (unsigned int i = 0; i < nwords; i++) {
		uint32_t w;

		memcpy(&w, addr + 4 * i, 4);
		if (words[i] != w)
			return 0;
	}
	return 1;
}

static int addr_any(const uint32_t *words, unsigned int nwords)
{
	for (unsigned int i = 0; i < nwords; i++)
		if (words[i])
			return 0;
	return 1;
}

/* A tcp6 listener also takes IPv4 connections on "::" (dual stack) and on ::ffff:a.b.c.d. */
static int listener_takes(int family, const uint32_t *words, unsigned int nwords, int peer_family,
			  const uint8_t *peer)
{
	if (addr_any(words, nwords))
		return family == peer_family || (family == AF_INET6 && peer_family == AF_INET);
	if (family == peer_family)
		return addr_eq(words, nwords, peer);
	if (family == AF_INET6 && peer_family == AF_INET) {
		uint32_t mapped = htonl(0xffff), w;

		memcpy(&w, peer, 4);
		return !words[0] && !words[1] && words[2] == mapped && words[3] == w;
	}
	return 0;
}

static unsigned int parse_table(const char *text, int family, int peer_family, const uint8_t *peer,
				unsigned int port, uint64_t *inodes, unsigned int max)
{
	unsigned int n = 0, nwords = family == AF_INET6 ? 4 : 1;
	const char *p = strchr(text, '\n'); /* the header */

	while (p && *++p && n < max) {
		char hex[33];
		uint32_t words[4];
		unsigned int lport, st;
		unsigned long long ino;
		const char *line = p;

		p = strchr(p, '\n');
		/* "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode" */
		if (sscanf(line, " %*u: %32[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %*u %*u %llu", hex, &lport,
			   &st, &ino) != 4)
			continue;
		if (st != 0x0A || lport != port || strlen(hex) != 8u * nwords || !ino)
			continue;
		for (unsigned int i = 0; i < nwords; i++) {
			char w[9];

			memcpy(w, hex + 8 * i, 8);
			w[8] = 0;
			words[i] = (uint32_t)strtoul(w, NULL, 16);
		}
		if (listener_takes(family, words, nwords, peer_family, peer))
			inodes[n++] = ino;
	}
	return n;
}

unsigned int pgs_owner__parse(const char *text, int family, const uint8_t *addr, unsigned int port, uint64_t *inodes,
			      unsigned int max)
{
	return parse_table(text, family, family, addr, port, inodes, max);
}

/* The first process holding one of the inodes (a socket:[inode] link in its fd directory). */
static uint32_t owner_of(const uint64_t *inodes, unsigned int n)
{
	DIR *proc = opendir("/proc");
	struct dirent *e;
	uint32_t found = 0;

	if (!proc)
		return 0;
	while (!found && (e = readdir(proc))) {
		char path[64], link[64];
		char *end;
		unsigned long pid = strtoul(e->d_name, &end, 10);
		struct dirent *f;
		DIR *fds;

		if (*end || !pid || pid > UINT32_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%lu/fd", pid);
		fds = opendir(path);
		if (!fds)
			continue;
		while (!found && (f = readdir(fds))) {
			unsigned long long ino;
			ssize_t len;

			if (f->d_name[0] == '.')
				continue;
			len = readlinkat(dirfd(fds), f->d_name, link, sizeof(link) - 1);
			if (len <= 0)
				continue;
			link[len] = 0;
			if (sscanf(link, "socket:[%llu]", &ino) != 1)
				continue;
			for (unsigned int i = 0; i < n; i++)
				if (inodes[i] == ino)
					found = (uint32_t)pid;
		}
		closedir(fds);
	}
	closedir(proc);
	return found;
}

int pgs_owner__listener(int fd, uint32_t *ret_pid)
{
	struct sockaddr_storage peer, self;
	socklen_t plen = sizeof(peer), slen = sizeof(self);
	const uint8_t *paddr, *saddr;
	uint64_t inodes[INODES_MAX];
	unsigned int n = 0, port, alen;
	char *text;
	int family, local;

	*ret_pid = 0;
	if (getpeername(fd, (struct sockaddr *)&peer, &plen) || getsockname(fd, (struct sockaddr *)&self, &slen))
		return -errno;
	family = peer.ss_family;
	if (family == AF_INET) {
		const struct sockaddr_in *p = (const void *)&peer, *s = (const void *)&self;

		paddr = (const uint8_t *)&p->sin_addr;
		saddr = (const uint8_t *)&s->sin_addr;
		port = ntohs(p->sin_port);
		alen = 4;
		local = paddr[0] == 127;
	} else if (family == AF_INET6) {
		const struct sockaddr_in6 *p = (const void *)&peer, *s = (const void *)&self;

		paddr = (const uint8_t *)&p->sin6_addr;
		saddr = (const uint8_t *)&s->sin6_addr;
		port = ntohs(p->sin6_port);
		alen = 16;
		local = IN6_IS_ADDR_LOOPBACK(&p->sin6_addr);
	} else {
		return -EAFNOSUPPORT;
	}
	/* a connection to one of the host's own addresses has that address at both ends */
	if (!local && memcmp(paddr, saddr, alen))
		return 0;
	if (!gg_read_file("/proc/net/tcp", 0, NET_TCP_MAX, &text, NULL)) {
		n += parse_table(text, AF_INET, family, paddr, port, inodes + n, INODES_MAX - n);
		free(text);
	}
	if (!gg_read_file("/proc/net/tcp6", 0, NET_TCP_MAX, &text, NULL)) {
		n += parse_table(text, AF_INET6, family, paddr, port, inodes + n, INODES_MAX - n);
		free(text);
	}
	if (n)
		*ret_pid = owner_of(inodes, n);
	return 0;
}
