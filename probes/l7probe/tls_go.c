/* tls_go.c - Go's crypto/tls: Go programs do not use libssl. A process of the scope whose executable
 * has a .go.buildinfo section built by go >= 1.17 (register ABI) and the symbols
 * crypto/tls.(*Conn).Read and .Write gets uprobes at each function's entry (the first instruction the
 * kernel emulates, the stack check's jbe, before any argument register is touched) and at each ret
 * instruction of Read (decoded with capstone: no uretprobe on Go, which moves goroutine stacks), for that
 * process only when the scope is a short list, else for every process running the file. Programs no
 * scanned process runs any more are unprobed. Stripped binaries (no .symtab) are not followed. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "l7_user.h"
#include "l7probe.skel.h"
#include "tls_elf.h"
#include "tls_files.h"
#include "tls_go.h"

#define GO_BINS_MAX  64
#define GO_RETS_MAX  48 /* ret sites per function */
#define GO_LINKS_MAX (2 * (1 + GO_RETS_MAX))
#define GO_NOTGO_MAX 4096 /* executables known not to be (probeable) Go programs */
#define GO_CODE_MAX  (256u << 10)
#define GO_MIN_MINOR 17 /* register ABI */

struct l7_gotls {
	struct l7probe *skel;
	struct tls_files bins; /* the Go programs probed */
	unsigned int nnotgo, notgo_next;
	struct {
		uint64_t dev, ino;
	} notgo[GO_NOTGO_MAX];
};

struct l7_gotls *l7_gotls__new(struct l7probe *skel)
{
	struct l7_gotls *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->skel = skel;
	if (tls_files__init(&g->bins, GO_BINS_MAX, GO_LINKS_MAX)) {
		free(g);
		return NULL;
	}
	return g;
}

void l7_gotls__clear(struct l7_gotls *g)
{
	tls_files__clear(&g->bins);
}

void l7_gotls__free(struct l7_gotls *g)
{
	if (!g)
		return;
	tls_files__fini(&g->bins);
	free(g);
}

static int notgo_has(const struct l7_gotls *g, const struct stat *st)
{
	for (unsigned int i = 0; i < g->nnotgo; i++)
		if (g->notgo[i].dev == (uint64_t)st->st_dev && g->notgo[i].ino == (uint64_t)st->st_ino)
			return 1;
	return 0;
}

static void notgo_add(struct l7_gotls *g, const struct stat *st)
{
	unsigned int i = g->nnotgo < GO_NOTGO_MAX ? g->nnotgo++ : g->notgo_next++ % GO_NOTGO_MAX;

	g->notgo[i].dev = (uint64_t)st->st_dev;
	g->notgo[i].ino = (uint64_t)st->st_ino;
}

/* Unsigned LEB128 (Go's uvarint) from p (n bytes); 0 when it does not fit. */
static size_t uvarint(const uint8_t *p, size_t n, uint64_t *ret_v)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n && i < 10; i++) {
		v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*ret_v = v;
			return i + 1;
		}
	}
	return 0;
}

/* The Go version the binary was built with ("go1.19.8") from .go.buildinfo: inline since go 1.18
 * (flags & 2: varint-prefixed strings at 32), through pointers to a string header before. */
static int go_version(struct elf_bin *b, char *ver, size_t len)
{
	static const char magic[] = "\xff Go buildinf:";
	uint8_t bi[64 + 256];
	size_t n = 0, m;
	uint64_t slen = 0;

	if (elf_bin__section(b, ".go.buildinfo", bi, sizeof(bi), &n) || n < 32 || memcmp(bi, magic, 14))
		return -ENOENT;
	if (bi[15] & 2) {
		m = uvarint(bi + 32, n - 32, &slen);
		if (!m || slen >= len || 32 + m + slen > n)
			return -EINVAL;
		memcpy(ver, bi + 32 + m, slen);
	} else {
		uint64_t hdr[2] = {0, 0}, addr = 0;

		if (bi[14] != 8)
			return -EINVAL; /* 32-bit */
		memcpy(&addr, bi + 16, 8);
		if (elf_bin__read(b, addr, hdr, sizeof(hdr)) || hdr[1] >= len || elf_bin__read(b, hdr[0], ver, hdr[1]))
			return -EINVAL;
		slen = hdr[1];
	}
	ver[slen] = '\0';
	return 0;
}

/* Attach prog at the entry site of fn and ret_prog (unless NULL) at its rets. */
static int attach_fn(struct tls_file *gb, struct elf_bin *b, const char *path, int pid, const struct elf_fn *fn,
		     struct bpf_program *prog, struct bpf_program *ret_prog, unsigned int *ret_nrets)
{
	uint64_t rets[GO_RETS_MAX], entry, off;
	unsigned int nrets = 0;
	uint8_t *code;
	int err;

	if (!fn->size || fn->size > GO_CODE_MAX)
		return -EINVAL;
	code = malloc(fn->size);
	if (!code)
		return -ENOMEM;
	err = elf_bin__read(b, fn->vaddr, code, fn->size);
	if (!err)
		err = x86_entry_site(code, fn->size, fn->vaddr, 4, &entry);
	if (!err && ret_prog)
		err = x86_ret_sites(code, fn->size, fn->vaddr, rets, GO_RETS_MAX, &nrets);
	free(code);
	if (!err && ret_prog && !nrets)
		err = -ENOENT;
	for (unsigned int i = 0; !err && i <= nrets; i++) {
		struct bpf_uprobe_opts opts;
		struct bpf_link *l;

		memset(&opts, 0, sizeof(opts));
		opts.sz = sizeof(opts);
		err = elf_bin__off(b, i == 0 ? entry : rets[i - 1], &off);
		if (err)
			break;
		l = bpf_program__attach_uprobe_opts(i == 0 ? prog : ret_prog, pid, path, (size_t)off, &opts);
		err = l ? tls_file__link(gb, l) : errno ? -errno : -EINVAL;
	}
	*ret_nrets = nrets;
	return err;
}

/* Read's end without a probe on a ret: the entry site of its deferred closure (func1) and the attach
 * cookie of l7_go_defer (see there), from Read's code (the result's slot in its frame) and func1's. */
static int defer_site(struct elf_bin *b, const struct elf_fn *rd, const struct elf_fn *df, uint64_t *ret_site,
		      uint64_t *ret_cookie)
{
	uint8_t *code = NULL;
	int64_t disp = 0, delta;
	uint64_t site = 0;
	int err;

	if (!rd->size || rd->size > 0xffff || !df->size || df->size > GO_CODE_MAX)
		return -EINVAL;
	code = malloc(rd->size > df->size ? rd->size : df->size);
	if (!code)
		return -ENOMEM;
	err = elf_bin__read(b, rd->vaddr, code, rd->size);
	if (!err)
		err = x86_defer_result_slot(code, rd->size, rd->vaddr, &disp);
	if (!err && (disp < 0 || disp > 0xffff))
		err = -ERANGE;
	if (!err)
		err = elf_bin__read(b, df->vaddr, code, df->size);
	if (!err)
		err = x86_entry_site(code, df->size, df->vaddr, 4, &site);
	free(code);
	if (err)
		return err;
	delta = (int64_t)rd->vaddr - (int64_t)site;
	if (delta < INT32_MIN || delta > INT32_MAX)
		return -ERANGE;
	*ret_site = site;
	*ret_cookie = (uint64_t)(uint32_t)(int32_t)delta << 32 | (uint64_t)rd->size << 16 | (uint64_t)disp;
	return 0;
}

/* l7_go_defer at site with cookie. */
static int attach_defer(struct tls_file *gb, struct elf_bin *b, struct bpf_program *prog, const char *path, int pid,
			uint64_t site, uint64_t cookie)
{
	struct bpf_uprobe_opts opts;
	struct bpf_link *l;
	uint64_t off;
	int err = elf_bin__off(b, site, &off);

	if (err)
		return err;
	if (gb->nlinks >= gb->cap)
		return -E2BIG;
	memset(&opts, 0, sizeof(opts));
	opts.sz = sizeof(opts);
	opts.bpf_cookie = cookie;
	l = bpf_program__attach_uprobe_opts(prog, pid, path, (size_t)off, &opts);
	return l ? tls_file__link(gb, l) : errno ? -errno : -EINVAL;
}

/* Probe the Go program at path (pid's executable) for pid (or every process: -1). */
static int bin_attach(struct l7_gotls *g, const char *path, const struct stat *st, int pid, int *ret_notgo)
{
	struct l7probe *s = g->skel;
	struct elf_fn rd, wr, df;
	struct elf_bin *b = NULL;
	uint64_t dsite = 0, cookie = 0;
	int deferred = 0;
	char how[96];
	struct tls_file *gb;
	unsigned int nr = 0, nw = 0, major = 0, minor = 0; /* nw: Write has no ret probes */
	char ver[64];
	int err;

	*ret_notgo = 1;
	err = elf_bin__open(path, &b);
	if (err)
		return err;
	if (!elf_bin__has_section(b, ".go.buildinfo")) {
		elf_bin__close(b);
		return -ENOENT;
	}
	err = go_version(b, ver, sizeof(ver));
	if (!err && (sscanf(ver, "go%u.%u", &major, &minor) != 2 || major != 1 || minor < GO_MIN_MINOR)) {
		probe_log(PLOG_INFO, "Go TLS: %s built by %s, before go1.%d's register ABI: not followed", path, ver,
			  GO_MIN_MINOR);
		err = -ENOTSUP;
	}
	if (!err &&
	    (elf_bin__find(b, "crypto/tls.(*Conn).Read", &rd) || elf_bin__find(b, "crypto/tls.(*Conn).Write", &wr)))
		err = -ENOENT; /* no TLS, or stripped */
	if (err) {
		elf_bin__close(b);
		return err;
	}
	*ret_notgo = 0;
	gb = tls_files__next(&g->bins);
	if (!gb) {
		elf_bin__close(b);
		return -E2BIG;
	}
	/* Read's end: at its deferred closure's entry (emulated, ~2 us a hit) when the code has the
	 * expected shape, else at its rets (single-stepped, 20 - 30 us a hit under a hypervisor) */
	if (!elf_bin__find(b, "crypto/tls.(*Conn).Read.func1", &df) && !defer_site(b, &rd, &df, &dsite, &cookie)) {
		err = attach_fn(gb, b, path, pid, &rd, s->progs.l7_go_read, NULL, &nr);
		if (!err)
			err = attach_defer(gb, b, s->progs.l7_go_defer, path, pid, dsite, cookie);
		deferred = 1;
	} else {
		err = attach_fn(gb, b, path, pid, &rd, s->progs.l7_go_read, s->progs.l7_go_ret, &nr);
	}
	if (!err) /* a Write is complete at its entry (see l7_go_write): no ret probes */
		err = attach_fn(gb, b, path, pid, &wr, s->progs.l7_go_write, NULL, &nw);
	elf_bin__close(b);
	if (err) {
		tls_file__detach(gb);
		return err;
	}
	tls_files__add(&g->bins, gb, st, pid);
	if (deferred)
		snprintf(how, sizeof(how), "entry, its deferred closure's entry (result at %llu in its frame)",
			 (unsigned long long)(cookie & 0xffff));
	else
		snprintf(how, sizeof(how), "entry, %u rets", nr);
	if (pid >= 0)
		probe_log(PLOG_INFO,
			  "Go TLS (%s): uprobes on crypto/tls.(*Conn).Read (%s) and Write (entry) of %s for process %d",
			  ver, how, path, pid);
	else
		probe_log(PLOG_INFO,
			  "Go TLS (%s): uprobes on crypto/tls.(*Conn).Read (%s) and Write (entry) of %s for every "
			  "process",
			  ver, how, path);
	return 0;
}

void l7_gotls__begin_scan(struct l7_gotls *g)
{
	tls_files__begin_scan(&g->bins);
}

void l7_gotls__scan_pid(struct l7_gotls *g, int pid, int per_pid)
{
	char path[64];
	struct stat st;
	int notgo = 0, err;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || notgo_has(g, &st) ||
	    tls_files__mark(&g->bins, &st, per_pid ? pid : -1))
		return;
	err = bin_attach(g, path, &st, per_pid ? pid : -1, &notgo);
	if (err && !notgo)
		probe_log(PLOG_WARN, "Go TLS: cannot probe %s (process %d): %s", path, pid, strerror(-err));
	if (err) /* not tried again (a Go program that failed is said once) */
		notgo_add(g, &st);
}

int l7_gotls__end_scan(struct l7_gotls *g)
{
	return (int)tls_files__end_scan(&g->bins);
}
