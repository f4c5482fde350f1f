/* tls.c - OpenSSL uprobes: every libssl mapped by a process of the scope (found in
 * /proc/<pid>/maps, opened through /proc/<pid>/root for containers) is probed, and unprobed when no
 * process scanned maps it any more. When the scope is a short list of processes, the uprobes are
 * attached for those processes only: a uprobe costs its trap (microseconds) in every process it is
 * installed in, whether BPF then filters it out or not, and the other processes mapping the same
 * libssl (a load generator, say) would pay it. Otherwise (scope all, or cgroups) once per distinct
 * file, for every process, and BPF filters by scope. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "l7_user.h"
#include "l7probe.skel.h"
#include "tls_elf.h"
#include "tls_files.h"
#include "tls_go.h"

#define TLS_LIBS_MAX	128
#define TLS_HOOKS	8
#define TLS_PER_PID_MAX 64 /* scopes of at most this many processes get per-process uprobes */

struct l7_tls {
	struct l7probe *skel;
	struct l7_gotls *go;   /* Go's crypto/tls (tls_go.c), scanned with the same processes */
	struct tls_files libs; /* the libssl files probed */
	struct probe_buf maps;
};

struct l7_tls *l7_tls__new(struct l7probe *skel)
{
	struct l7_tls *tls = calloc(1, sizeof(*tls));

	if (!tls)
		return NULL;
	tls->skel = skel;
	tls->go = l7_gotls__new(skel);
	if (!tls->go || tls_files__init(&tls->libs, TLS_LIBS_MAX, TLS_HOOKS)) {
		l7_gotls__free(tls->go);
		free(tls);
		return NULL;
	}
	return tls;
}

void l7_tls__clear(struct l7_tls *tls)
{
	tls_files__clear(&tls->libs);
	l7_gotls__clear(tls->go);
}

void l7_tls__free(struct l7_tls *tls)
{
	if (!tls)
		return;
	tls_files__fini(&tls->libs);
	l7_gotls__free(tls->go);
	probe_buf__free(&tls->maps);
	free(tls);
}

/*
 * OpenSSL's SSL_read and SSL_write start with instructions the kernel cannot emulate (sub $n,%rsp),
 * so a uprobe there costs a breakpoint trap and a single-step (a debug exception: under this VM's
 * hypervisor ~70 us, measured, bench/RESULTS.md), and the uretprobe needs that entry probe too. Both
 * are thin wrappers around one internal function each (ssl_read_internal, ssl_write_internal: the
 * same arguments plus a size_t *written, the _ex variants call them too) whose first instruction is
 * a push, which the kernel emulates: the probes go there, at the target of the wrapper's first call,
 * when that target starts with an emulated instruction. The file offsets of the two, or -ENOENT.
 */
/* The target of the first direct call of the function called name. */
static int first_call_of(struct elf_bin *b, const char *name, uint64_t *ret_target)
{
	uint8_t code[64];
	struct elf_fn fn;
	size_t n;
	int err = elf_bin__find(b, name, &fn);

	if (err)
		return err;
	n = fn.size && fn.size < sizeof(code) ? (size_t)fn.size : sizeof(code);
	err = elf_bin__read(b, fn.vaddr, code, n);
	if (!err)
		err = x86_first_call(code, n, fn.vaddr, 12, ret_target);
	return err;
}

static int ssl_internal(const char *path, uint64_t *ret_read, uint64_t *ret_write)
{
	/* the _ex variant must call the same function first: else (another build, inlined) it is not
	 * the internal function, and the exported ones are probed */
	static const char *const names[2][2] = {{"SSL_read", "SSL_read_ex"}, {"SSL_write", "SSL_write_ex"}};
	uint64_t offs[2];
	struct elf_bin *b = NULL;
	int err = elf_bin__open(path, &b);

	for (int i = 0; !err && i < 2; i++) {
		uint8_t first[2];
		uint64_t target, target_ex;

		err = first_call_of(b, names[i][0], &target);
		if (!err)
			err = first_call_of(b, names[i][1], &target_ex);
		if (!err && target != target_ex)
			err = -ENOENT;
		if (!err)
			err = elf_bin__read(b, target, first, sizeof(first));
		if (!err && !x86_uprobe_emulated(first, sizeof(first)))
			err = -ENOENT;
		if (!err)
			err = elf_bin__off(b, target, &offs[i]);
	}
	elf_bin__close(b);
	if (err)
		return err;
	*ret_read = offs[0];
	*ret_write = offs[1];
	return 0;
}

static int lib_attach_internal(struct l7_tls *tls, struct tls_file *l, const char *path, int pid)
{
	struct l7probe *s = tls->skel;
	struct bpf_program *progs[4] = {s->progs.l7_ssl_read_ex, s->progs.l7_ssl_read_ex_ret, s->progs.l7_ssl_write_ex,
					s->progs.l7_ssl_write_ex_ret};
	uint64_t off[2];
	int err = ssl_internal(path, &off[0], &off[1]);

	if (err)
		return err;
	for (int i = 0; i < 4 && !err; i++) {
		struct bpf_uprobe_opts opts;
		struct bpf_link *link;

		memset(&opts, 0, sizeof(opts));
		opts.sz = sizeof(opts);
		opts.retprobe = i & 1;
		link = bpf_program__attach_uprobe_opts(progs[i], pid, path, off[i / 2], &opts);
		err = link ? tls_file__link(l, link) : errno ? -errno : -EINVAL;
	}
	if (err)
		tls_file__detach(l);
	return err;
}

static int lib_attach(struct l7_tls *tls, const char *path, const struct stat *st, int pid)
{
	struct l7probe *s = tls->skel;
	const struct {
		struct bpf_program *prog;
		const char *func;
		int ret;
		int optional;
	} hooks[TLS_HOOKS] = {
		{s->progs.l7_ssl_read, "SSL_read", 0, 0},	  {s->progs.l7_ssl_read_ret, "SSL_read", 1, 0},
		{s->progs.l7_ssl_write, "SSL_write", 0, 0},	  {s->progs.l7_ssl_write_ret, "SSL_write", 1, 0},
		{s->progs.l7_ssl_read_ex, "SSL_read_ex", 0, 1},	  {s->progs.l7_ssl_read_ex_ret, "SSL_read_ex", 1, 1},
		{s->progs.l7_ssl_write_ex, "SSL_write_ex", 0, 1}, {s->progs.l7_ssl_write_ex_ret, "SSL_write_ex", 1, 1},
	};
	const char *hooks_desc = "SSL_read/SSL_write uprobes";
	struct tls_file *l = tls_files__next(&tls->libs);
	int err;

	if (!l)
		return -E2BIG;
	if (!lib_attach_internal(tls, l, path, pid)) {
		hooks_desc = "uprobes on SSL_read/SSL_write's internal functions";
		goto attached;
	}
	for (int i = 0; i < TLS_HOOKS; i++) {
		struct bpf_uprobe_opts opts;
		struct bpf_link *link;

		memset(&opts, 0, sizeof(opts));
		opts.sz = sizeof(opts);
		opts.func_name = hooks[i].func;
		opts.retprobe = hooks[i].ret;

		link = bpf_program__attach_uprobe_opts(hooks[i].prog, pid, path, 0, &opts);
		if (!link && hooks[i].optional)
			continue;
		err = link ? tls_file__link(l, link) : errno ? -errno : -EINVAL;
		if (err) {
			tls_file__detach(l);
			return err;
		}
	}
attached:
	tls_files__add(&tls->libs, l, st, pid);
	if (pid >= 0)
		probe_log(PLOG_INFO, "%s on %s for process %d", hooks_desc, path, pid);
	else
		probe_log(PLOG_INFO, "%s on %s", hooks_desc, path);
	return 0;
}

/* Probe the libssl files pid maps, for pid only when per_pid (marking those probed already as seen). */
static void scan_pid(struct l7_tls *tls, int pid, int per_pid)
{
	char path[64], lib[PATH_MAX + 64];
	const char *p, *end;
	struct stat st;

	l7_gotls__scan_pid(tls->go, pid, per_pid);
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	if (probe_read_file(path, &tls->maps, 64u << 20))
		return;
	p = tls->maps.data;
	end = p + tls->maps.len;
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *file, *base;

		if (!eol)
			eol = end;
		file = memchr(p, '/', (size_t)(eol - p));
		p = eol < end ? eol + 1 : end;
		if (!file)
			continue;
		base = file;
		for (const char *q = file; q < eol; q++)
			if (*q == '/')
				base = q + 1;
		if (eol - base < 9 || memcmp(base, "libssl.so", 9))
			continue;
		snprintf(lib, sizeof(lib), "/proc/%d/root%.*s", pid, (int)(eol - file), file);
		if (stat(lib, &st) < 0)
			continue;
		if (!tls_files__mark(&tls->libs, &st, per_pid ? pid : -1)) {
			int err = lib_attach(tls, lib, &st, per_pid ? pid : -1);

			if (err)
				probe_log(PLOG_WARN, "cannot probe SSL_read/SSL_write in %s: %s", lib, strerror(-err));
		}
	}
}

int l7_tls__scan(struct l7_tls *tls, const struct gg_scope *scope)
{
	unsigned int nlibs;

	tls_files__begin_scan(&tls->libs);
	l7_gotls__begin_scan(tls->go);
	if (scope->all || scope->ncgrp || scope->ntgid > TLS_PER_PID_MAX) {
		DIR *d = opendir("/proc");
		struct dirent *de;

		while (d && (de = readdir(d))) {
			if (isdigit((unsigned char)de->d_name[0]))
				scan_pid(tls, atoi(de->d_name), 0);
		}
		if (d)
			closedir(d);
	} else {
		for (unsigned int i = 0; i < scope->ntgid; i++)
			scan_pid(tls, (int)scope->tgid[i], 1);
	}
	nlibs = tls_files__end_scan(&tls->libs);
	return (int)nlibs + l7_gotls__end_scan(tls->go);
}
