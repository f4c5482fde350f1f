/* dns.c - getaddrinfo uprobes: libc files are found in /proc/<pid>/maps (ours and those of the
 * processes in scope, through /proc/<pid>/root for containers) and probed once each. */
#include "tp_user.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "taskprobe.skel.h"

/* The path of the libc mapped by pid ("self" when pid is 0), or -ENOENT. */
static int libc_path(int pid, char *out, size_t len)
{
	struct probe_buf maps = {0};
	char path[64];
	const char *p, *end;
	int err = -ENOENT;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	if (probe_read_file(path, &maps, 64u << 20)) {
		probe_buf__free(&maps);
		return -ENOENT;
	}
	p = maps.data;
	end = p + maps.len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *file;

		if (!eol)
			eol = end;
		file = memchr(p, '/', (size_t)(eol - p));
		if (file) {
			const char *base = file;

			for (const char *q = file; q < eol; q++)
				if (*q == '/')
					base = q + 1;
			/* libc.so.6 (glibc 2.34+) or libc-2.xx.so */
			if ((eol - base >= 9 && !memcmp(base, "libc.so.6", 9)) ||
			    (eol - base > 5 && !memcmp(base, "libc-", 5) && !memcmp(eol - 3, ".so", 3))) {
				if (pid)
					snprintf(out, len, "/proc/%d/root%.*s", pid, (int)(eol - file), file);
				else
					snprintf(out, len, "%.*s", (int)(eol - file), file);
				err = 0;
				break;
			}
		}
		p = eol < end ? eol + 1 : end;
	}
	probe_buf__free(&maps);
	return err;
}

static int attach_libc(struct tp_ctx *ctx, const char *path)
{
	struct bpf_uprobe_opts opts;
	struct tp_libc *l;
	struct stat st;

	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.func_name = "getaddrinfo";
	if (stat(path, &st) < 0)
		return -errno;
	for (unsigned int i = 0; i < ctx->nlibc; i++)
		if (ctx->libc[i].dev == (uint64_t)st.st_dev && ctx->libc[i].ino == (uint64_t)st.st_ino)
			return 0;
	if (ctx->nlibc >= TP_LIBC_MAX)
		return -E2BIG;
	l = &ctx->libc[ctx->nlibc];
	opts.retprobe = false;
	l->enter = bpf_program__attach_uprobe_opts(ctx->skel->progs.tp_gai_enter, -1, path, 0, &opts);
	if (!l->enter)
		return errno ? -errno : -EINVAL;
	opts.retprobe = true;
	l->exit = bpf_program__attach_uprobe_opts(ctx->skel->progs.tp_gai_exit, -1, path, 0, &opts);
	if (!l->exit) {
		int err = errno ? -errno : -EINVAL;

		bpf_link__destroy(l->enter);
		l->enter = NULL;
		return err;
	}
	l->dev = (uint64_t)st.st_dev;
	l->ino = (uint64_t)st.st_ino;
	ctx->nlibc++;
	probe_log(PLOG_DEBUG, "getaddrinfo uprobes on %s", path);
	return 0;
}

int tp_dns_attach(struct tp_ctx *ctx)
{
	char path[PATH_MAX + 64];
	int err;

	if (!libc_path(0, path, sizeof(path))) {
		err = attach_libc(ctx, path);
		if (err)
			probe_log(PLOG_WARN, "cannot probe getaddrinfo in %s: %s", path, strerror(-err));
	}
	if (!ctx->applied.all) {
		for (uint32_t i = 0; i < ctx->applied.ntgid; i++) {
			if (libc_path((int)ctx->applied.tgid[i], path, sizeof(path)))
				continue;
			err = attach_libc(ctx, path);
			if (err && err != -ENOENT)
				probe_log(PLOG_WARN, "cannot probe getaddrinfo in %s: %s", path, strerror(-err));
		}
	}
	return (int)ctx->nlibc;
}

void tp_dns_detach(struct tp_ctx *ctx)
{
	for (unsigned int i = 0; i < ctx->nlibc; i++) {
		bpf_link__destroy(ctx->libc[i].enter);
		bpf_link__destroy(ctx->libc[i].exit);
	}
	memset(ctx->libc, 0, sizeof(ctx->libc));
	ctx->nlibc = 0;
}
