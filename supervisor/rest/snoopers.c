/* snoopers.c - resolves REST monitoring targets to process ids and cgroup v2 ids: one bounded /proc
 * scan (comm, cmdline and cgroup files read directly) serves every probe at once. */
#include "snoopers.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

#define CGROUP_FILE_MAX	 8192
#define CMDLINE_READ_MAX 4096

static void lower_copy(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; src[i] && i + 1 < len; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

/* "pod" prefix dropped, '_' -> '-', lower case: the form gg_cgroup__pod_uid returns. */
static void normalize_pod(char *dst, size_t len, const char *src)
{
	size_t i;

	if (!strncasecmp(src, "pod", 3) && strlen(src) >= 3 + 8)
		src += 3;
	lower_copy(dst, len, src);
	for (i = 0; dst[i]; i++) {
		if (dst[i] == '_')
			dst[i] = '-';
	}
}

void gg_snoopers__from_json(const cJSON *sn, struct gg_snoopers *ret)
{
	const cJSON *e;

	memset(ret, 0, sizeof(*ret));
	if (!cJSON_IsObject(sn))
		return;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sn, "proc_id"))
	{
		if (ret->npids < GG_REST_PROC_IDS_MAX && cJSON_IsNumber(e) && e->valuedouble >= 1)
			ret->pids[ret->npids++] = (uint32_t)e->valuedouble;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sn, "proc_name"))
	{
		const char *comm = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "comm"));
		const char *cl = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "cmdline"));

		if (ret->nnames >= GG_REST_PROC_NAMES_MAX || !comm || !comm[0])
			continue;
		snprintf(ret->names[ret->nnames].comm, sizeof(ret->names[0].comm), "%s", comm);
		snprintf(ret->names[ret->nnames].cmdline, sizeof(ret->names[0].cmdline), "%s", cl ? cl : "");
		ret->nnames++;
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sn, "pod_id"))
	{
		const char *s = cJSON_GetStringValue(e);

		if (ret->npods < GG_REST_PODS_MAX && s && s[0])
			normalize_pod(ret->pods[ret->npods++], sizeof(ret->pods[0]), s);
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sn, "container_id"))
	{
		const char *s = cJSON_GetStringValue(e);

		if (ret->nconts < GG_REST_CONTAINERS_MAX && s && s[0])
			lower_copy(ret->conts[ret->nconts++], sizeof(ret->conts[0]), s);
	}
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(sn, "container_name"))
	{
		const char *s = cJSON_GetStringValue(e);

		if (ret->ncnames < GG_REST_CONTAINERS_MAX && s && s[0])
			snprintf(ret->cnames[ret->ncnames++], sizeof(ret->cnames[0]), "%s", s);
	}
}

int gg_snoopers__empty(const struct gg_snoopers *s)
{
	return !s->npids && !s->nnames && !s->npods && !s->nconts && !s->ncnames;
}

int gg_snoopers__needs_scan(const struct gg_snoopers *s)
{
	return !gg_snoopers__empty(s);
}

/* ---- proc_name.comm patterns ---------------------------------------------------------------------- */

/* Compiled once per pattern: the scan runs every GG_REST_SCAN_MS over every process, so compiling per
 * match would cost more than the match. Only the supervisor's loop thread scans: no lock. */
#define COMM_RE_CACHE 128u

static struct comm_re {
	char pat[GG_REST_COMM_RE_MAX + 1];
	regex_t re;
	int ok;	       /* compiled */
	uint64_t used; /* tick of the last use: the least recently used is replaced */
} comm_cache[COMM_RE_CACHE];
static unsigned int comm_cached;
static uint64_t comm_tick;

static const struct comm_re *comm_regex(const char *pat)
{
	struct comm_re *e = NULL;
	char why[160];

	for (unsigned int i = 0; i < comm_cached; i++) {
		if (!strcmp(comm_cache[i].pat, pat)) {
			comm_cache[i].used = ++comm_tick;
			return &comm_cache[i];
		}
	}
	if (comm_cached < COMM_RE_CACHE) {
		e = &comm_cache[comm_cached++];
	} else {
		e = &comm_cache[0];
		for (unsigned int i = 1; i < COMM_RE_CACHE; i++) {
			if (comm_cache[i].used < e->used)
				e = &comm_cache[i];
		}
		if (e->ok)
			regfree(&e->re);
	}
	snprintf(e->pat, sizeof(e->pat), "%s", pat);
	/* the same bounds as the REST validator: a pattern restored from an older state file is held to them too */
	e->ok = strlen(pat) <= GG_REST_COMM_RE_MAX && !gg_comm_pattern__check(pat, why, sizeof(why)) &&
		!regcomp(&e->re, pat, REG_EXTENDED | REG_NOSUB);
	e->used = ++comm_tick;
	return e;
}

int gg_comm__match(const char *pattern, const char *comm)
{
	const struct comm_re *e = comm_regex(pattern);

	return e->ok && regexec(&e->re, comm, 0, NULL, 0) == 0;
}

void gg_comm__cache_clear(void)
{
	for (unsigned int i = 0; i < comm_cached; i++) {
		if (comm_cache[i].ok)
			regfree(&comm_cache[i].re);
	}
	memset(comm_cache, 0, sizeof(comm_cache));
	comm_cached = 0;
}

/* ---- scopes (struct gg_scope: ipc/ctrl_msg.h) ----------------------------------------------------- */

/* A scope's lists are bounded: 1 when a list holding n of max has room for one more, else 0 with the
 * scope marked truncated (more matched than it holds, the rest left out). */
static int scope_room(struct gg_scope *s, unsigned int n, unsigned int max)
{
	if (n < max)
		return 1;
	s->truncated = 1;
	return 0;
}

static int add_pid(struct gg_scope *s, uint32_t pid)
{
	if (s->ntgid && s->tgid[s->ntgid - 1] == pid)
		return 0;
	if (scope_room(s, s->ntgid, GG_SCOPE_PIDS_MAX))
		s->tgid[s->ntgid++] = pid;
	return 0;
}

static int add_cgroup(struct gg_scope *s, uint64_t id)
{
	for (unsigned int i = 0; i < s->ncgrp; i++) {
		if (s->cgrp[i] == id)
			return 0;
	}
	if (scope_room(s, s->ncgrp, GG_SCOPE_CGROUPS_MAX))
		s->cgrp[s->ncgrp++] = id;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- the scan ------------------------------------------------------------------------------------- */

/* What we learned about one process, read lazily; everything before dir is reset per process. */
struct proc_info {
	int comm_read, cmdline_read, cgroup_read;
	int cg_ok, cg_v2;
	int cgid_state; /* 0 unknown, 1 known, -1 none */
	uint64_t cgid;
	int cname_read;
	char dir[64];
	char cname[GG_IDENT_VALUE_MAX + 1];
	char comm[32];
	char cont[68], pod[68];
	char cmdline[CMDLINE_READ_MAX];
	char cgpath[PATH_MAX];
};

/* The name of the container process pid is in (pi->cont set), asked once per process and scan. */
static const char *proc_cname(struct proc_info *pi, unsigned long pid, const struct gg_scan_opts *opts)
{
	if (!pi->cname_read) {
		const char *n = opts && opts->container_name ? opts->container_name(opts->ctx, (uint32_t)pid) : NULL;

		pi->cname_read = 1;
		snprintf(pi->cname, sizeof(pi->cname), "%s", n ? n : "");
	}
	return pi->cname;
}

/* /proc/<pid>/<name> into buf (counted as a file read): the bytes read, 0 when it cannot be read. */
static ssize_t read_proc_file(const struct proc_info *pi, struct gg_scan_stats *st, const char *name, char *buf,
			      size_t len)
{
	char path[96];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", pi->dir, name);
	n = gg_read_small(path, buf, len);
	st->files++;
	if (n < 0)
		buf[0] = '\0';
	return n < 0 ? 0 : n;
}

static const char *proc_comm(struct proc_info *pi, struct gg_scan_stats *st)
{
	if (!pi->comm_read) {
		ssize_t n = read_proc_file(pi, st, "comm", pi->comm, sizeof(pi->comm));

		pi->comm_read = 1;
		if (n > 0 && pi->comm[n - 1] == '\n')
			pi->comm[n - 1] = '\0';
	}
	return pi->comm;
}

static const char *proc_cmdline(struct proc_info *pi, struct gg_scan_stats *st)
{
	if (!pi->cmdline_read) {
		ssize_t n = read_proc_file(pi, st, "cmdline", pi->cmdline, sizeof(pi->cmdline));

		pi->cmdline_read = 1;
		/* arguments are NUL separated: join them with spaces */
		for (ssize_t i = 0; i < n; i++) {
			if (!pi->cmdline[i])
				pi->cmdline[i] = ' ';
		}
		while (n > 0 && pi->cmdline[n - 1] == ' ')
			n--;
		pi->cmdline[n] = '\0';
	}
	return pi->cmdline;
}

static void proc_cgroup(struct proc_info *pi, struct gg_scan_stats *st)
{
	char path[96], text[CGROUP_FILE_MAX];

	if (pi->cgroup_read)
		return;
	pi->cgroup_read = 1;
	pi->cont[0] = pi->pod[0] = '\0';
	snprintf(path, sizeof(path), "%s/cgroup", pi->dir);
	st->files++;
	if (gg_read_small(path, text, sizeof(text)) <= 0)
		return;
	if (gg_proc_cgroup__path(text, pi->cgpath, sizeof(pi->cgpath), &pi->cg_v2))
		return;
	pi->cg_ok = 1;
	if (gg_cgroup__container_id(pi->cgpath, pi->cont, sizeof(pi->cont)))
		pi->cont[0] = '\0';
	if (gg_cgroup__pod_uid(pi->cgpath, pi->pod, sizeof(pi->pod)))
		pi->pod[0] = '\0';
}

static int proc_cgid(struct proc_info *pi, const char *cgroup_root, uint64_t *ret)
{
	if (!pi->cgid_state) {
		char path[PATH_MAX + 64];
		struct stat s;

		pi->cgid_state = -1;
		if (pi->cg_ok && pi->cg_v2) {
			snprintf(path, sizeof(path), "%s%s", cgroup_root, pi->cgpath);
			if (stat(path, &s) == 0 && S_ISDIR(s.st_mode)) {
				pi->cgid = (uint64_t)s.st_ino;
				pi->cgid_state = 1;
			}
		}
	}
	*ret = pi->cgid;
	return pi->cgid_state == 1 ? 0 : -ENOENT;
}

/* 1 when the container id c (64 hex) is named by want: the full id or a prefix of at least 12. */
static int cont_match(const char *want, const char *c)
{
	size_t n = strlen(want);

	return c[0] && (!strcmp(want, c) || (n >= 12 && !strncmp(want, c, n)));
}

int gg_cgroup2_mount(char *ret, size_t len)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int err = -ENOENT;

	if (!f)
		return -errno;
	/* "id parent maj:min root mountpoint options [optional...] - fstype source superoptions" */
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - "), *mp;
		size_t n;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8))
			continue;
		mp = line;
		for (int i = 0; i < 4 && mp; i++) {
			mp = strchr(mp, ' ');
			if (mp)
				mp++;
		}
		if (!mp)
			continue;
		n = strcspn(mp, " ");
		if (n + 1 > len || memchr(mp, '\\', n)) /* escaped characters: not a path we can use */
			continue;
		memcpy(ret, mp, n);
		ret[n] = '\0';
		err = 0;
		break;
	}
	fclose(f);
	return err;
}

/* Whether process pid matches s: by itself (*ret_hit: proc_id, proc_name) or by its cgroup
 * (*ret_by_cgroup: container_id, pod_id, container_name). */
static void proc_match(const struct gg_snoopers *s, struct proc_info *pi, unsigned long pid,
		       const struct gg_scan_opts *opts, struct gg_scan_stats *st, int *ret_hit, int *ret_by_cgroup)
{
	int hit = 0, by_cgroup = 0;

	for (unsigned int k = 0; k < s->npids && !hit; k++)
		hit = s->pids[k] == pid;
	for (unsigned int k = 0; k < s->nnames && !hit; k++) {
		if (!gg_comm__match(s->names[k].comm, proc_comm(pi, st)))
			continue;
		hit = !s->names[k].cmdline[0] || strstr(proc_cmdline(pi, st), s->names[k].cmdline);
	}
	if (s->nconts || s->npods || s->ncnames) {
		proc_cgroup(pi, st);
		for (unsigned int k = 0; k < s->nconts && !by_cgroup; k++)
			by_cgroup = cont_match(s->conts[k], pi->cont);
		for (unsigned int k = 0; k < s->npods && !by_cgroup; k++)
			by_cgroup = pi->pod[0] && !strcmp(s->pods[k], pi->pod);
		if (s->ncnames && !by_cgroup && pi->cont[0]) {
			const char *name = proc_cname(pi, pid, opts);

			for (unsigned int k = 0; k < s->ncnames && !by_cgroup; k++)
				by_cgroup = name[0] && strstr(name, s->cnames[k]) != NULL;
		}
	}
	*ret_hit = hit;
	*ret_by_cgroup = by_cgroup;
}

/* Cgroup ids of blacklisted processes, per set. */
struct id_set {
	unsigned int n, cap;
	uint64_t *ids;
};

static int add_id(struct id_set *s, uint64_t id)
{
	for (unsigned int i = 0; i < s->n; i++) {
		if (s->ids[i] == id)
			return 0;
	}
	if (s->n == s->cap) {
		unsigned int cap = s->cap ? s->cap * 2 : 8;
		uint64_t *ids = realloc(s->ids, cap * sizeof(*ids));

		if (!ids)
			return -ENOMEM;
		s->ids = ids;
		s->cap = cap;
	}
	s->ids[s->n++] = id;
	return 0;
}

int gg_snoopers__resolve(const struct gg_snoopers *const *sets, unsigned int n, struct gg_scope *scopes,
			 const struct gg_scan_opts *opts, struct gg_scan_stats *ret_stats)
{
	static char cg2[PATH_MAX];
	const char *proc_root = opts && opts->proc_root ? opts->proc_root : "/proc";
	const char *cg_root = opts && opts->cgroup_root ? opts->cgroup_root : NULL;
	struct gg_scope *tmp;
	struct id_set *excl;
	struct gg_scan_stats st = {0};
	struct proc_info *pi = NULL;
	int need_scan = 0, err = 0;
	DIR *d = NULL;
	struct dirent *de;

	if (n > GG_SCAN_SETS_MAX)
		return -E2BIG;
	if (!cg_root) {
		/* the unified hierarchy: /sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems */
		if (!cg2[0] && gg_cgroup2_mount(cg2, sizeof(cg2)))
			snprintf(cg2, sizeof(cg2), "/sys/fs/cgroup");
		cg_root = cg2;
	}
	tmp = calloc(n ? n : 1, sizeof(*tmp));
	excl = calloc(n ? n : 1, sizeof(*excl));
	pi = malloc(sizeof(*pi));
	if (!tmp || !excl || !pi) {
		free(tmp);
		free(excl);
		free(pi);
		return -ENOMEM;
	}
	for (unsigned int i = 0; i < n; i++) {
		const struct gg_snoopers *bl = opts && opts->exclude ? opts->exclude[i] : NULL;

		gg_scope__init(&tmp[i]);
		tmp[i].all = gg_snoopers__empty(sets[i]) && (!bl || gg_snoopers__empty(bl));
		need_scan |= !tmp[i].all;
	}
	if (need_scan) {
		d = opendir(proc_root);
		if (!d) {
			err = -errno;
			goto out;
		}
	}
	while (d && (de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (!isdigit((unsigned char)de->d_name[0]) || *end || pid == 0 || pid > UINT32_MAX)
			continue;
		if (st.procs >= GG_SCAN_PROCS_MAX) {
			st.truncated = 1;
			break;
		}
		st.procs++;
		memset(pi, 0, offsetof(struct proc_info, dir));
		snprintf(pi->dir, sizeof(pi->dir), "%s/%lu", proc_root, pid);
		for (unsigned int i = 0; i < n && !err; i++) {
			const struct gg_snoopers *bl = opts && opts->exclude ? opts->exclude[i] : NULL;
			int hit = 0, by_cgroup = 0;

			if (tmp[i].all)
				continue;
			if (bl && !gg_snoopers__empty(bl)) {
				int bhit = 0, bcg = 0;

				proc_match(bl, pi, pid, opts, &st, &bhit, &bcg);
				if (bhit || bcg) {
					uint64_t id;

					/* its cgroup may not be watched as a whole: remember it, drop it at the end */
					proc_cgroup(pi, &st);
					if (proc_cgid(pi, cg_root, &id) == 0)
						err = add_id(&excl[i], id);
					continue;
				}
				if (gg_snoopers__empty(sets[i])) {
					err = add_pid(&tmp[i], (uint32_t)pid);
					continue;
				}
			}
			proc_match(sets[i], pi, pid, opts, &st, &hit, &by_cgroup);
			if (hit || by_cgroup)
				err = add_pid(&tmp[i], (uint32_t)pid);
			if (by_cgroup && !err) {
				uint64_t id;

				if (proc_cgid(pi, cg_root, &id) == 0)
					err = add_cgroup(&tmp[i], id);
			}
		}
		if (err)
			goto out;
	}
	for (unsigned int i = 0; i < n; i++) {
		unsigned int kept = 0;

		/* a cgroup with a blacklisted process is not watched as a whole (its others are listed by pid) */
		for (unsigned int k = 0; k < tmp[i].ncgrp; k++) {
			int drop = 0;

			for (unsigned int x = 0; x < excl[i].n && !drop; x++)
				drop = excl[i].ids[x] == tmp[i].cgrp[k];
			if (!drop)
				tmp[i].cgrp[kept++] = tmp[i].cgrp[k];
		}
		tmp[i].ncgrp = kept;
		if (tmp[i].ntgid)
			qsort(tmp[i].tgid, tmp[i].ntgid, sizeof(tmp[i].tgid[0]), cmp_u32);
		if (tmp[i].ncgrp)
			qsort(tmp[i].cgrp, tmp[i].ncgrp, sizeof(tmp[i].cgrp[0]), cmp_u64);
		scopes[i] = tmp[i];
	}
	if (ret_stats)
		*ret_stats = st;
out:
	if (d)
		closedir(d);
	for (unsigned int i = 0; i < n; i++)
		free(excl[i].ids);
	free(excl);
	free(tmp);
	free(pi);
	return err;
}
