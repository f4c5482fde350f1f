/* fdname.c - what a thread event's descriptor names: file.path (the /proc/<pid>/fd link) or, for a
 * socket, sock.conn ("tcp 10.0.0.1:5432 -> 10.0.0.2:40000" from /proc/<pid>/net/{tcp,tcp6,udp,udp6}).
 * Read when an aggregate is reported (the first event's descriptor), so a descriptor closed since then
 * has no name. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "tprof_fd.h"

#define NET_FILE_MAX (4u << 20)

/* "0100007F:1F90" (the kernel's hex form, host byte order words) as "127.0.0.1:8080". */
static int hex_addr(const char *s, int v6, char *buf, size_t len)
{
	unsigned char a[16];
	unsigned int port;
	char ip[INET6_ADDRSTRLEN];
	size_t n = v6 ? 32 : 8;

	for (size_t w = 0; w < n / 8; w++) {
		unsigned int word;
		char tmp[9];

		memcpy(tmp, s + w * 8, 8);
		tmp[8] = '\0';
		if (sscanf(tmp, "%8x", &word) != 1)
			return -EINVAL;
		memcpy(a + w * 4, &word, 4); /* the kernel printed each 32-bit word in host order */
	}
	if (s[n] != ':' || sscanf(s + n + 1, "%4x", &port) != 1)
		return -EINVAL;
	if (!inet_ntop(v6 ? AF_INET6 : AF_INET, a, ip, sizeof(ip)))
		return -EINVAL;
	snprintf(buf, len, v6 ? "[%s]:%u" : "%s:%u", ip, port);
	return 0;
}

/* The line of socket inode ino in one /proc/<pid>/net file: 0 and conn filled, or -ENOENT. */
static int find_sock(struct probe_buf *b, const char *path, const char *proto, int v6, unsigned long ino, char *conn,
		     size_t len)
{
	if (probe_read_file(path, b, NET_FILE_MAX))
		return -ENOENT;
	for (char *line = strchr(b->data, '\n'), *nl; line && *line; line = nl) {
		char local[64], remote[64], l[80], r[80];
		unsigned long inode;

		line++;
		nl = strchr(line, '\n');
		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, "%*s %63s %63s %*s %*s %*s %*s %*s %*s %lu", local, remote, &inode) != 3 ||
		    inode != ino)
			continue;
		if (hex_addr(local, v6, l, sizeof(l)) || hex_addr(remote, v6, r, sizeof(r)))
			return -EINVAL;
		snprintf(conn, len, "%s %s -> %s", proto, l, r);
		return 0;
	}
	return -ENOENT;
}

int tp_fd_name(struct probe_buf *b, uint32_t tgid, int64_t fd, char *path, size_t plen, char *conn, size_t clen)
{
	static const struct {
		const char *file, *proto;
		int v6;
	} nets[] = {{"tcp", "tcp", 0}, {"tcp6", "tcp", 1}, {"udp", "udp", 0}, {"udp6", "udp", 1}};
	char link[64];
	unsigned long ino;
	ssize_t n;

	path[0] = conn[0] = '\0';
	if (fd < 0 || fd > 0x7fffffff)
		return -EBADF;
	snprintf(link, sizeof(link), "/proc/%u/fd/%lld", tgid, (long long)fd);
	n = readlink(link, path, plen - 1);
	if (n < 0) {
		path[0] = '\0';
		return -errno;
	}
	path[n] = '\0';
	if (sscanf(path, "socket:[%lu]", &ino) != 1)
		return 0;
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++) {
		char net[64];

		snprintf(net, sizeof(net), "/proc/%u/net/%s", tgid, nets[i].file);
		if (!find_sock(b, net, nets[i].proto, nets[i].v6, ino, conn, clen))
			break;
	}
	return 0;
}
