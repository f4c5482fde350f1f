/* util.c - small OS helpers of the supervisor: clocks, directories, machine id, tracefs, /proc. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "supervisor.h"

uint64_t gg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t gg_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int gg_read_machine_id(char *buf, size_t len)
{
	static const char *const paths[] = {"/etc/machine-id", "/var/lib/dbus/machine-id",
					    "/sys/class/dmi/id/product_uuid"};
	char tmp[128];

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		size_t n = 0;

		if (gg_read_small(paths[i], tmp, sizeof(tmp)) <= 0)
			continue;
		for (const char *c = tmp; *c && n + 1 < len; c++) {
			if ((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || (*c >= 'A' && *c <= 'F') ||
			    *c == '-')
				buf[n++] = *c;
		}
		buf[n] = 0;
		if (n)
			return 0;
	}
	return -ENOENT;
}

int gg_ensure_tracefs(void)
{
	struct stat st;

	if (stat("/sys/kernel/tracing/events", &st) == 0)
		return 0;
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL))
		return -errno;
	return 0;
}

int gg_ensure_bpffs(void)
{
	struct statfs sf;

	/* BPF_FS_MAGIC: already a bpf filesystem there */
	if (statfs("/sys/fs/bpf", &sf) == 0 && (unsigned long)sf.f_type == 0xcafe4a11UL)
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, NULL))
		return -errno;
	return 0;
}

int gg_proc_stat(pid_t pid, struct gg_proc_stat *ret)
{
	char path[64];
	const char *open_paren, *close_paren;
	int n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = gg_read_small(path, ret->buf, sizeof(ret->buf));
	if (n <= 0)
		return n ? n : -EIO;
	/* comm may contain spaces and parentheses: fields are counted after the last ')' */
	open_paren = strchr(ret->buf, '(');
	close_paren = strrchr(ret->buf, ')');
	if (!open_paren || !close_paren || close_paren < open_paren)
		return -EINVAL;
	ret->comm = open_paren + 1;
	ret->comm_len = (size_t)(close_paren - open_paren - 1);
	ret->rest = close_paren + 1;
	return 0;
}

int gg_proc_starttime(pid_t pid, unsigned long long *ret)
{
	struct gg_proc_stat ps;
	const char *c;
	int err = gg_proc_stat(pid, &ps);

	if (err)
		return err;
	c = ps.rest;
	for (int field = 2; field < 22 && *c; c++) {
		if (*c == ' ')
			field++;
		if (field == 22) {
			*ret = strtoull(c + 1, NULL, 10);
			return 0;
		}
	}
	return -EINVAL;
}

int gg_private_dir(const char *path, char *why, size_t whylen)
{
	struct stat st;

	/* lstat: a symlink is not the directory it names, and whoever made it chose where we write */
	if (lstat(path, &st)) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, whylen, "is not a directory");
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(why, whylen, "is owned by uid %u, not by root (uid %u): refusing it", (unsigned)st.st_uid,
			 (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, whylen, "is writable by %s (mode %04o): refusing it",
			 (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

void gg_http_opts_from_conf(const struct gg_http_conf *c, const char *name, struct gg_http_opts *ret)
{
	*ret = (struct gg_http_opts){
		.name = name,
		.bind_addr = c->bind_addr,
		.port = c->port,
		.tls = c->ssl_auth,
		.key_file = c->private_key,
		.cert_file = c->cert_file,
		.ca_file = c->ca_file[0] ? c->ca_file : NULL,
	};
}

int gg_run_dir_fd(const struct gg_sup *sup)
{
	struct stat st;
	int fd = open(sup->cfg.global.run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	/* Once the IPC sockets are made (run_ino set), only that directory: not one put in its place. */
	if (fstat(fd, &st) || (sup->run_ino && (st.st_ino != sup->run_ino || st.st_dev != sup->run_dev))) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}
