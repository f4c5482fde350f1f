/* machine_id.c - the DMI uuid + host IP machine id of gala-gopher, read without running commands. */
#include "machine_id.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int gg_machine_id__host_ipv4(char *buf, size_t len)
{
	struct ifaddrs *ifs, *i;
	int err = -ENOENT;

	if (getifaddrs(&ifs))
		return -errno;
	/* getifaddrs lists addresses by interface index, the order of `ip a` (gala-gopher took the first
	 * "inet" line other than 127.0.0.1) */
	for (i = ifs; i; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)i->ifa_addr;

		if (!sin || sin->sin_family != AF_INET || (ntohl(sin->sin_addr.s_addr) >> 24) == 127)
			continue;
		err = inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)len) ? 0 : -ENAMETOOLONG;
		break;
	}
	freeifaddrs(ifs);
	return err;
}

int gg_machine_id__dmi_ip(const char *uuid_file, char *buf, size_t len)
{
	char uuid[128], ip[INET_ADDRSTRLEN];
	size_t n = 0;
	ssize_t got;
	int fd = open(uuid_file, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	got = read(fd, uuid, sizeof(uuid) - 1);
	close(fd);
	if (got < 0)
		return -EIO;
	/* the file's text without its newline (gala-gopher used it as cat prints it) */
	for (ssize_t k = 0; k < got && uuid[k] != '\n'; k++) {
		if (isxdigit((unsigned char)uuid[k]) || uuid[k] == '-')
			uuid[n++] = uuid[k];
	}
	uuid[n] = '\0';
	if (!n)
		return -ENOENT;
	err = gg_machine_id__host_ipv4(ip, sizeof(ip));
	if (err)
		return err;
	if ((size_t)snprintf(buf, len, "%s-%s", uuid, ip) >= len)
		return -ENAMETOOLONG;
	return 0;
}
