/* main.c - virtualized_infos ("virt"): the host's qemu processes and their guests' names and uuids, from
 * libvirt's run directory (/run/libvirt/qemu/<domain>.pid and .xml) and each process's command line
 * (-name guest=..., -uuid). No virsh, no ps, no popen: files only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "probe.h"
#include "probe_runner.h"
#include "virt_conf.h"
#include "virt_parse.h"
#include "virtualized_infos.meta.h"

#define LIBVIRT_DIR	"/run/libvirt/qemu"
#define DOMAINS_MAX	1024u
#define XML_MAX		(1u << 20)
#define CMDLINE_MAX	(64u << 10)
#define OPT_LIBVIRT_DIR 1

extern const struct gg_contract gg_contract_virtualized_infos;
#define CONTRACT (&gg_contract_virtualized_infos)

/* A running libvirt domain: its qemu pid and what its status XML names. */
struct domain {
	int pid;
	struct virt_guest g;
};

struct virt_ctx {
	struct probe_rt *rt;
	struct virt_conf base, cur;
	const char *libvirt_dir;
	struct domain *doms; /* DOMAINS_MAX */
	unsigned int ndoms;
	struct probe_buf b; /* command lines */
	char *xml;	    /* XML_MAX + 1 */
	size_t xml_len;
	unsigned int warned;
};

static const char notes[] =
	"Table virt_proc: one row per qemu process (comm qemu*, executable qemu-system-* or qemu-kvm, not\n"
	"a kernel thread; or the pid of a running libvirt domain), labels uuid and vm_name: libvirt's domain\n"
	"name and uuid when its run directory has the process, else the command line's -name guest=... and\n"
	"-uuid.\n"
	"Live configuration: {\"params\": {\"report_period\": N}}\n";

static const struct probe_opt own_opts[] = {
	{"libvirt-dir", 0, required_argument, OPT_LIBVIRT_DIR, "DIR",
	 "libvirt's qemu run directory (default " LIBVIRT_DIR ")"},
};

static int own_cb(void *arg, int id, const char *val)
{
	struct virt_ctx *ctx = arg;

	if (id == OPT_LIBVIRT_DIR) {
		if (!val[0] || strlen(val) >= PATH_MAX - 64) {
			fprintf(stderr, "virtualized_infos: invalid --libvirt-dir\n");
			return 2;
		}
		ctx->libvirt_dir = val;
	}
	return 0;
}

/* Read dirfd/name (a regular file, no symlink, at most XML_MAX bytes) into ctx->xml. */
static int read_xml(struct virt_ctx *ctx, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	size_t got = 0;
	int err = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (size_t)st.st_size > XML_MAX) {
		err = -EINVAL;
		goto cleanup;
	}
	while (got < XML_MAX) {
		ssize_t n = read(fd, ctx->xml + got, XML_MAX - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	ctx->xml[got] = 0;
	ctx->xml_len = got;
cleanup:
	close(fd);
	return err;
}

/* The running domains libvirt's run directory lists: <name>.xml (its status, with the pid). */
static void scan_libvirt(struct virt_ctx *ctx)
{
	DIR *d;
	struct dirent *e;

	ctx->ndoms = 0;
	d = opendir(ctx->libvirt_dir);
	if (!d)
		return;
	while ((e = readdir(d)) && ctx->ndoms < DOMAINS_MAX) {
		size_t n = strlen(e->d_name);
		struct domain *dom = &ctx->doms[ctx->ndoms];
		int pid;

		if (n < 5 || strcmp(e->d_name + n - 4, ".xml") || read_xml(ctx, dirfd(d), e->d_name))
			continue;
		if (virt_parse_domstatus(ctx->xml, ctx->xml_len, &dom->g, &pid) || pid <= 0) {
			if (!ctx->warned++)
				probe_log(PLOG_DEBUG, "%s/%s: not a running domain's status", ctx->libvirt_dir,
					  e->d_name);
			continue;
		}
		dom->pid = pid;
		ctx->ndoms++;
	}
	closedir(d);
}

static const struct domain *domain_of(const struct virt_ctx *ctx, int pid)
{
	for (unsigned int i = 0; i < ctx->ndoms; i++)
		if (ctx->doms[i].pid == pid)
			return &ctx->doms[i];
	return NULL;
}

/* A qemu process by its name: comm "qemu-system-*", "qemu-kvm", or such an executable. */
static int looks_like_qemu(int pid)
{
	char path[64], buf[PATH_MAX], *base;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, 63);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* not "kvm*": kvm-pit/<pid> and the like are kernel threads */
	if (!strncmp(buf, "qemu", 4))
		return 1;
	/* -name ...,process=NAME renames the process: its executable still says what it is */
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	return !strncmp(base, "qemu-system-", 12) || !strncmp(base, "qemu-kvm", 8);
}

static void report(void *arg)
{
	struct virt_ctx *ctx = arg;
	static struct probe_rec r;
	struct dirent *e;
	DIR *proc;

	scan_libvirt(ctx);
	proc = opendir("/proc");
	if (!proc)
		return;
	while ((e = readdir(proc))) {
		const struct domain *dom;
		struct virt_guest g;
		char path[64];
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		int have;

		if (*end || pid <= 0 || pid > INT_MAX)
			continue;
		dom = domain_of(ctx, (int)pid);
		if (!dom && !looks_like_qemu((int)pid))
			continue;
		memset(&g, 0, sizeof(g));
		snprintf(path, sizeof(path), "/proc/%ld/cmdline", pid);
		/* a kernel thread (no command line) is no VM, whatever its name */
		have = probe_read_file(path, &ctx->b, CMDLINE_MAX) == 0 && ctx->b.len;
		if (!have && !dom)
			continue;
		if (have)
			(void)virt_parse_cmdline(ctx->b.data, ctx->b.len, &g);
		/* libvirt's names win: the command line is the process's to choose */
		if (dom) {
			memcpy(g.name, dom->g.name, sizeof(g.name));
			if (dom->g.uuid[0])
				memcpy(g.uuid, dom->g.uuid, sizeof(g.uuid));
		}
		probe_rec__begin(&r, &TBL_virt_proc);
		probe_rec__u64(&r, (uint64_t)pid);
		probe_rec__str(&r, g.uuid);
		probe_rec__str(&r, g.name);
		probe_rec__u64(&r, 1);
		(void)probe_rt__emit(ctx->rt, &r);
	}
	closedir(proc);
	(void)probe_rt__flush(ctx->rt);
}

static void describe(void *data, char *buf, size_t len)
{
	const struct virt_ctx *ctx = data;

	snprintf(buf, len, ", libvirt run directory %s", ctx->libvirt_dir);
}

static void init(void *arg)
{
	struct virt_ctx *ctx = arg;

	ctx->libvirt_dir = LIBVIRT_DIR;
}

static int setup(void *arg, struct probe_rt *rt)
{
	struct virt_ctx *ctx = arg;

	ctx->rt = rt;
	ctx->doms = calloc(DOMAINS_MAX, sizeof(*ctx->doms));
	ctx->xml = malloc(XML_MAX + 1);
	if (!ctx->doms || !ctx->xml) {
		probe_log(PLOG_ERROR, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

static void teardown(void *arg)
{
	struct virt_ctx *ctx = arg;

	free(ctx->doms);
	free(ctx->xml);
	probe_buf__free(&ctx->b);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct virt_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.own = own_opts, .nown = sizeof(own_opts) / sizeof(own_opts[0]), .own_cb = own_cb, .notes = notes},
	/* no check: every value the contract's ranges let through is fine */
	.conf = {.base = &g_ctx.base, .cur = &g_ctx.cur, .size = sizeof(g_ctx.cur)},
	.init = init,
	.setup = setup,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.describe = describe,
	.teardown = teardown,
};
