/* scope.c - a probe's scope: --pid and --comm on its command line, and writing a scope into the
 * gg_scope_* filter maps of its BPF object. The scope type and its JSON are ipc/ctrl_msg.h's. */
#include "probe_scope.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bpf_util.h"
#include "fsutil.h"

static int scope_add_tgid(struct gg_scope *s, uint32_t tgid)
{
	for (uint32_t i = 0; i < s->ntgid; i++)
		if (s->tgid[i] == tgid)
			return 0;
	if (s->ntgid >= GG_SCOPE_TGID_MAX)
		return -E2BIG;
	s->tgid[s->ntgid++] = tgid;
	return 0;
}

int gg_scope__add_pids(struct gg_scope *s, const char *list)
{
	const char *p = list;

	s->all = 0;
	if (!*p)
		return -EINVAL;
	while (*p) {
		char *end;
		unsigned long v;
		int err;

		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v < 1 || v > INT32_MAX || (*end && *end != ',') || (*end == ',' && !end[1]))
			return -EINVAL;
		err = scope_add_tgid(s, (uint32_t)v);
		if (err)
			return err;
		p = *end ? end + 1 : end;
	}
	return 0;
}

int gg_scope__add_comm(struct gg_scope *s, const char *comm)
{
	struct dirent *de;
	DIR *d;
	int added = 0, err = 0;
	size_t clen = strnlen(comm, 15); /* TASK_COMM_LEN - 1 */

	s->all = 0;
	d = opendir("/proc");
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char path[300], buf[32];

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (gg_read_small(path, buf, sizeof(buf)) <= 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (strlen(buf) == clen && !strncmp(buf, comm, clen)) {
			err = scope_add_tgid(s, (uint32_t)strtoul(de->d_name, NULL, 10));
			added++;
		}
	}
	closedir(d);
	return err ? err : added;
}

static int scope_in_tgids(const struct gg_scope *s, uint32_t v)
{
	for (uint32_t i = 0; i < s->ntgid; i++)
		if (s->tgid[i] == v)
			return 1;
	return 0;
}

static int scope_in_cgrps(const struct gg_scope *s, uint64_t v)
{
	for (uint32_t i = 0; i < s->ncgrp; i++)
		if (s->cgrp[i] == v)
			return 1;
	return 0;
}

const char *gg_cgroup2_root(void)
{
	static char root[512];
	struct probe_buf b = {0};
	char *line, *save = NULL;

	if (root[0])
		return root;
	if (probe_read_file("/proc/self/mounts", &b, 1u << 20) == 0)
		for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char dev[64], mnt[512], type[32];

			if (sscanf(line, "%63s %511s %31s", dev, mnt, type) == 3 && !strcmp(type, "cgroup2")) {
				snprintf(root, sizeof(root), "%s", mnt);
				break;
			}
		}
	probe_buf__free(&b);
	if (!root[0])
		snprintf(root, sizeof(root), "/sys/fs/cgroup");
	return root;
}

static int comm_is(const char *proc_root, int pid, const char *comm)
{
	char path[PATH_MAX], c[64];

	snprintf(path, sizeof(path), "%s/%d/comm", proc_root, pid);
	if (gg_read_small(path, c, sizeof(c)) <= 0)
		return 0;
	c[strcspn(c, "\n")] = '\0';
	return !strcmp(c, comm);
}

/* pid's cgroup v2 ("0::/path" in its cgroup file), or one of its ancestors, is one of s's cgroups. */
static int cgroup_in(const struct gg_scope *s, const char *proc_root, int pid, struct probe_buf *buf)
{
	const char *root = gg_cgroup2_root(), *c, *e;
	size_t rootlen = strlen(root);
	char path[PATH_MAX];
	int n;

	snprintf(path, sizeof(path), "%s/%d/cgroup", proc_root, pid);
	if (probe_read_file(path, buf, 64u << 10))
		return 0;
	c = strstr(buf->data, "0::");
	if (!c || (c != buf->data && c[-1] != '\n'))
		return 0;
	c += 3;
	e = strchr(c, '\n');
	if (!e)
		e = c + strlen(c);
	n = snprintf(path, sizeof(path), "%s%.*s", root, (int)(e - c), c);
	if (n < 0 || (size_t)n >= sizeof(path))
		return 0;
	for (int depth = 0; depth <= GG_CGROUP_MAX_DEPTH + 1; depth++) {
		struct stat st;
		char *slash;

		if (stat(path, &st) == 0 && scope_in_cgrps(s, (uint64_t)st.st_ino))
			return 1;
		slash = strrchr(path, '/');
		if (!slash || (size_t)(slash - path) < rootlen)
			break;
		*slash = '\0';
	}
	return 0;
}

int gg_scope__has_process(const struct gg_scope *s, const char *comm, const char *proc_root, int pid,
			  struct probe_buf *buf)
{
	if (s->all || scope_in_tgids(s, (uint32_t)pid))
		return 1;
	if (comm && comm_is(proc_root, pid, comm))
		return 1;
	return s->ncgrp && cgroup_in(s, proc_root, pid, buf);
}

int gg_scope__apply(const struct gg_scope *s, struct bpf_object *obj)
{
	struct bpf_map *ctl_map = bpf_object__find_map_by_name(obj, GG_SCOPE_CTL_MAP);
	struct bpf_map *tg_map = bpf_object__find_map_by_name(obj, GG_SCOPE_TGID_MAP);
	struct bpf_map *cg_map = bpf_object__find_map_by_name(obj, GG_SCOPE_CGRP_MAP);
	struct gg_scope_ctl ctl = {.filter = s->all ? 0 : 1};
	uint32_t zero = 0, tg;
	uint64_t cg;
	uint8_t one = 1;
	int ctl_fd, tg_fd, cg_fd;

	if (!ctl_map || !tg_map || !cg_map)
		return -ENOENT;
	ctl_fd = bpf_map__fd(ctl_map);
	tg_fd = bpf_map__fd(tg_map);
	cg_fd = bpf_map__fd(cg_map);
	if (ctl_fd < 0 || tg_fd < 0 || cg_fd < 0)
		return -EBADF;
	if (!s->all) {
		for (uint32_t i = 0; i < s->ntgid; i++)
			if (bpf_map_update_elem(tg_fd, &s->tgid[i], &one, BPF_ANY) < 0)
				return -errno;
		for (uint32_t i = 0; i < s->ncgrp; i++)
			if (bpf_map_update_elem(cg_fd, &s->cgrp[i], &one, BPF_ANY) < 0)
				return -errno;
	}
	if (bpf_map_update_elem(ctl_fd, &zero, &ctl, BPF_ANY) < 0)
		return -errno;
	/* Remove what is no longer in scope: collect first, then delete (the maps are bounded). */
	{
		static uint32_t tg_del[GG_SCOPE_TGID_MAX];
		static uint64_t cg_del[GG_SCOPE_CGRP_MAX];
		uint32_t ntg = 0, ncg = 0;
		int have, err;

		for (have = bpf_map_get_next_key(tg_fd, NULL, &tg) == 0; have && ntg < GG_SCOPE_TGID_MAX;
		     have = bpf_map_get_next_key(tg_fd, &tg, &tg) == 0)
			if (s->all || !scope_in_tgids(s, tg))
				tg_del[ntg++] = tg;
		for (have = bpf_map_get_next_key(cg_fd, NULL, &cg) == 0; have && ncg < GG_SCOPE_CGRP_MAX;
		     have = bpf_map_get_next_key(cg_fd, &cg, &cg) == 0)
			if (s->all || !scope_in_cgrps(s, cg))
				cg_del[ncg++] = cg;
		err = gg_bpf_map_delete_keys(tg_fd, tg_del, sizeof(tg_del[0]), ntg);

		if (!err)
			err = gg_bpf_map_delete_keys(cg_fd, cg_del, sizeof(cg_del[0]), ncg);
		if (err)
			return err;
	}
	return 0;
}

int gg_scope__rescan_comm(const struct gg_scope *base, int keep_pids, const char *comm, const struct gg_scope *cur,
			  struct gg_scope *ret)
{
	int n;

	*ret = *base;
	if (!keep_pids)
		ret->ntgid = 0;
	n = gg_scope__add_comm(ret, comm);
	if (n < 0) {
		probe_log(PLOG_WARN, "--comm %s: %s", comm, strerror(-n));
		return n;
	}
	return !gg_scope__equal(ret, cur);
}

const struct gg_scope *gg_scope__comm_update(const struct gg_scope *base, const char *comm, int live,
					     const struct gg_scope *cur)
{
	static struct gg_scope s;

	return comm && !live && gg_scope__rescan_comm(base, 0, comm, cur, &s) > 0 ? &s : NULL;
}
