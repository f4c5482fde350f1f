/* sampler.c - stackprobe's BPF side from user space: load, attach per sub-probe, scope maps, and the
 * generation switch + drain of the aggregated stacks and the off-CPU ring buffer. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "stackprobe.h"
#include "stackprobe.skel.h"

#define MAX_CPUS 1024
/* After switching generations, BPF programs that read the old value may still be running: they
 * finish within microseconds; wait this long before reading the old maps. */
#define GEN_GRACE_NS 2000000L
/* Allocator uprobes are re-checked this often (exec, exit; new processes of an unfiltered scope). */
#define UALLOC_SYNC_MS 5000u

struct sp_sampler {
	struct stackprobe *skel;
	struct bpf_link *oncpu_links[MAX_CPUS];
	int perf_fds[MAX_CPUS];
	int ncpus;
	unsigned int perf_period_ms; /* of the open perf events, 0 when none */
	struct bpf_link *offcpu_link;
	struct bpf_link *mem_link;
	struct sp_ualloc *ualloc;
	int alloc_on;
	uint64_t alloc_synced_ms;
	struct gg_scope scope; /* the applied scope (the allocator uprobes follow it) */
	struct ring_buffer *rb;
	/* drain state */
	sp_sample_cb cb;
	void *cb_ctx;
	uint64_t drained[SP_EV_NR];
	struct sp_key *keys;
	size_t keys_cap;
};

static int on_offcpu(void *ctx, void *data, size_t size);

static int perf_open_clock(int cpu, unsigned int period_ms)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.size = sizeof(attr);
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = (uint64_t)period_ms * 1000000ull; /* CPU clock counts nanoseconds */
	attr.freq = 0;
	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void oncpu_detach(struct sp_sampler *s)
{
	for (int i = 0; i < s->ncpus; i++) {
		bpf_link__destroy(s->oncpu_links[i]);
		s->oncpu_links[i] = NULL;
		if (s->perf_fds[i] >= 0)
			close(s->perf_fds[i]);
		s->perf_fds[i] = -1;
	}
	s->perf_period_ms = 0;
}

static int oncpu_attach(struct sp_sampler *s, unsigned int period_ms)
{
	int attached = 0, err = 0;

	for (int cpu = 0; cpu < s->ncpus; cpu++) {
		int fd = perf_open_clock(cpu, period_ms);

		if (fd < 0) {
			if (errno == ENODEV)
				continue; /* offline CPU */
			err = -errno;
			break;
		}
		s->perf_fds[cpu] = fd;
		s->oncpu_links[cpu] = bpf_program__attach_perf_event(s->skel->progs.sp_oncpu, fd);
		if (!s->oncpu_links[cpu]) {
			err = -errno;
			break;
		}
		attached++;
	}
	if (err || !attached) {
		oncpu_detach(s);
		return err ? err : -ENODEV;
	}
	s->perf_period_ms = period_ms;
	return 0;
}

struct sp_sampler *sp_sampler__new(void)
{
	struct sp_sampler *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return NULL;
	for (int i = 0; i < MAX_CPUS; i++)
		s->perf_fds[i] = -1;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0 || s->ncpus > MAX_CPUS) {
		err = s->ncpus < 0 ? s->ncpus : -E2BIG;
		goto err_out;
	}
	err = gg_bpf_init();
	if (err)
		probe_log(PLOG_WARN, "tracefs: %s (the mem sub-probe needs it)", strerror(-err));
	s->skel = stackprobe__open();
	if (!s->skel) {
		err = -errno;
		goto err_out;
	}
	s->skel->bss->self_tgid = (uint32_t)getpid();
	err = stackprobe__load(s->skel);
	if (err)
		goto err_out;
	s->ualloc = sp_ualloc__new(s->skel->progs.sp_malloc, s->skel->progs.sp_calloc, s->skel->progs.sp_realloc,
				   s->skel->progs.sp_memalign, s->skel->progs.sp_posix_memalign);
	if (!s->ualloc) {
		err = -errno;
		goto err_out;
	}
	gg_scope__init(&s->scope);
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.offcpu_rb), on_offcpu, s, NULL);
	if (!s->rb) {
		err = -errno;
		goto err_out;
	}
	return s;
err_out:
	sp_sampler__free(s);
	errno = -err;
	return NULL;
}

void sp_sampler__free(struct sp_sampler *s)
{
	if (!s)
		return;
	oncpu_detach(s);
	bpf_link__destroy(s->offcpu_link);
	bpf_link__destroy(s->mem_link);
	sp_ualloc__free(s->ualloc);
	ring_buffer__free(s->rb);
	stackprobe__destroy(s->skel);
	free(s->keys);
	free(s);
}

int sp_sampler__apply(struct sp_sampler *s, unsigned int events, unsigned int perf_period_ms, unsigned int min_block_us)
{
	int err = 0, e;

	s->skel->data->min_block_ns = (uint64_t)min_block_us * 1000u;
	if (!(events & (1u << SP_EV_ONCPU)) || (s->perf_period_ms && s->perf_period_ms != perf_period_ms))
		oncpu_detach(s);
	if ((events & (1u << SP_EV_ONCPU)) && !s->perf_period_ms) {
		e = oncpu_attach(s, perf_period_ms);
		if (e) {
			probe_log(PLOG_ERROR, "oncpu: cannot attach to the CPU clock: %s", strerror(-e));
			err = err ? err : e;
		}
	}
	if ((events & (1u << SP_EV_OFFCPU)) && !s->offcpu_link) {
		s->offcpu_link = bpf_program__attach(s->skel->progs.sp_offcpu);
		if (!s->offcpu_link) {
			e = -errno;
			probe_log(PLOG_ERROR, "offcpu: cannot attach to sched_switch: %s", strerror(-e));
			err = err ? err : e;
		}
	} else if (!(events & (1u << SP_EV_OFFCPU)) && s->offcpu_link) {
		bpf_link__destroy(s->offcpu_link);
		s->offcpu_link = NULL;
	}
	if ((events & (1u << SP_EV_MEM)) && !s->mem_link) {
		s->mem_link = bpf_program__attach(s->skel->progs.sp_mem);
		if (!s->mem_link) {
			e = -errno;
			probe_log(PLOG_ERROR, "mem: cannot attach to exceptions:page_fault_user: %s", strerror(-e));
			err = err ? err : e;
		}
	} else if (!(events & (1u << SP_EV_MEM)) && s->mem_link) {
		bpf_link__destroy(s->mem_link);
		s->mem_link = NULL;
	}
	if (!!(events & (1u << SP_EV_MEM_ALLOC)) != s->alloc_on) {
		s->alloc_on = !!(events & (1u << SP_EV_MEM_ALLOC));
		(void)sp_ualloc__sync(s->ualloc, &s->scope, s->alloc_on);
		s->alloc_synced_ms = probe_now_mono_ms();
	}
	return err;
}

int sp_sampler__set_scope(struct sp_sampler *s, const struct gg_scope *scope)
{
	int err = gg_scope__apply(scope, s->skel->obj);

	if (err)
		return err;
	if (scope != &s->scope)
		s->scope = *scope;
	if (s->alloc_on) {
		(void)sp_ualloc__sync(s->ualloc, &s->scope, 1);
		s->alloc_synced_ms = probe_now_mono_ms();
	}
	return 0;
}

void sp_sampler__tick(struct sp_sampler *s, uint64_t now_ms)
{
	if (!s->alloc_on || now_ms - s->alloc_synced_ms < UALLOC_SYNC_MS)
		return;
	(void)sp_ualloc__sync(s->ualloc, &s->scope, 1);
	s->alloc_synced_ms = now_ms;
}

/* Read one stack from a stack map: frames innermost first, 0-terminated when shorter. */
static unsigned int read_stack(int fd, int id, uint64_t *ips)
{
	unsigned int n = 0;
	uint32_t key = (uint32_t)id;

	if (id < 0 || bpf_map_lookup_elem(fd, &key, ips))
		return 0;
	while (n < SP_MAX_DEPTH && ips[n])
		n++;
	return n;
}

static int drain_counts(struct sp_sampler *s, int counts_fd, int stacks_fd)
{
	uint64_t kips[SP_MAX_DEPTH], uips[SP_MAX_DEPTH + 1];
	struct sp_key key, *prev = NULL;
	size_t n = 0;
	int err = 0;

	/* collect the keys first: deleting while iterating a hash map restarts the walk */
	while (bpf_map_get_next_key(counts_fd, prev, &key) == 0) {
		if (n == s->keys_cap) {
			size_t cap = s->keys_cap ? s->keys_cap * 2 : 1024;
			struct sp_key *p = realloc(s->keys, cap * sizeof(*p));

			if (!p)
				return -ENOMEM;
			s->keys = p;
			s->keys_cap = cap;
		}
		s->keys[n++] = key;
		prev = &s->keys[n - 1];
		if (n > SP_COUNT_ENTRIES * 2u)
			break; /* the map is bounded; never loop forever on a changing map */
	}
	for (size_t i = 0; i < n; i++) {
		struct sp_key *k = &s->keys[i];
		struct sp_val val;
		struct sp_sample smp;

		if (bpf_map_lookup_elem(counts_fd, k, &val))
			continue;
		(void)bpf_map_delete_elem(counts_fd, k);
		if (k->event >= SP_EV_NR || !val.count)
			continue;
		k->comm[SP_COMM_LEN - 1] = '\0';
		k->pcomm[SP_COMM_LEN - 1] = '\0';
		memset(&smp, 0, sizeof(smp));
		smp.event = (enum sp_event)k->event;
		smp.tgid = k->tgid;
		smp.pid = k->pid;
		smp.comm = k->comm;
		smp.pcomm = k->pcomm;
		smp.kips = kips;
		smp.kn = read_stack(stacks_fd, k->kstack, kips);
		smp.uips = uips;
		smp.un = read_stack(stacks_fd, k->ustack, uips);
		/* mem_alloc: the allocator's caller, which the frame-pointer walk from its entry misses
		 * (the kernel adds it itself when the entry is push %rbp or endbr64) */
		if (k->ret_ip > 1 && smp.un >= 1 && (smp.un == 1 || uips[1] != k->ret_ip)) {
			memmove(&uips[2], &uips[1], (smp.un - 1) * sizeof(uips[0]));
			uips[1] = k->ret_ip;
			smp.un++;
		}
		smp.kstack_id = smp.kn ? k->kstack : -1;
		smp.ustack_id = smp.un ? k->ustack : -1;
		smp.value = val.count;
		s->drained[smp.event]++;
		if (!err)
			err = s->cb(s->cb_ctx, &smp);
	}
	/* empty the stack map for the generation after next */
	{
		uint32_t id, *pid = NULL;
		uint32_t ids[256];
		unsigned int nids;

		do {
			nids = 0;
			pid = NULL;
			while (nids < 256 && bpf_map_get_next_key(stacks_fd, pid, &id) == 0) {
				ids[nids++] = id;
				pid = &ids[nids - 1];
			}
			for (unsigned int i = 0; i < nids; i++)
				(void)bpf_map_delete_elem(stacks_fd, &ids[i]);
		} while (nids == 256);
	}
	return err;
}

static int on_offcpu(void *ctx, void *data, size_t size)
{
	struct sp_sampler *s = ctx;
	struct sp_offcpu ev;
	struct sp_sample smp;
	size_t hdr = offsetof(struct sp_offcpu, ips);

	if (size < hdr)
		return 0;
	memset(&ev, 0, sizeof(ev));
	memcpy(&ev, data, size < sizeof(ev) ? size : sizeof(ev));
	if (ev.kn > SP_MAX_DEPTH || ev.un > SP_MAX_DEPTH || hdr + (ev.kn + ev.un) * sizeof(uint64_t) > size)
		return 0;
	ev.comm[SP_COMM_LEN - 1] = '\0';
	ev.pcomm[SP_COMM_LEN - 1] = '\0';
	memset(&smp, 0, sizeof(smp));
	smp.event = SP_EV_OFFCPU;
	smp.tgid = ev.tgid;
	smp.pid = ev.pid;
	smp.comm = ev.comm;
	smp.pcomm = ev.pcomm;
	smp.kips = (const uint64_t *)ev.ips;
	smp.kn = ev.kn;
	smp.uips = (const uint64_t *)ev.ips + ev.kn;
	smp.un = ev.un;
	smp.kstack_id = smp.ustack_id = -1;
	smp.value = (ev.delta_ns + 500) / 1000;
	s->drained[SP_EV_OFFCPU]++;
	(void)s->cb(s->cb_ctx, &smp);
	return 0;
}

int sp_sampler__drain(struct sp_sampler *s, sp_sample_cb cb, void *ctx)
{
	unsigned int old = s->skel->bss->gen;
	struct timespec grace = {0, GEN_GRACE_NS};
	int err, e;

	s->cb = cb;
	s->cb_ctx = ctx;
	s->skel->bss->gen = old + 1;
	__sync_synchronize();
	(void)nanosleep(&grace, NULL);
	if (old & 1)
		err = drain_counts(s, bpf_map__fd(s->skel->maps.counts1), bpf_map__fd(s->skel->maps.stacks1));
	else
		err = drain_counts(s, bpf_map__fd(s->skel->maps.counts0), bpf_map__fd(s->skel->maps.stacks0));
	/* the ring buffer: what is there now (bounded by its size) */
	e = ring_buffer__consume(s->rb);
	if (e < 0 && !err)
		err = e;
	return err;
}

void sp_sampler__stats(struct sp_sampler *s, struct sp_sampler_stats *ret)
{
	int fd = bpf_map__fd(s->skel->maps.stats);
	uint64_t *vals = calloc((size_t)s->ncpus, sizeof(uint64_t));

	memset(ret, 0, sizeof(*ret));
	memcpy(ret->drained, s->drained, sizeof(ret->drained));
	sp_ualloc__stats(s->ualloc, &ret->ua);
	if (!vals)
		return;
	for (uint32_t i = 0; i < SP_ST_NR; i++) {
		if (bpf_map_lookup_elem(fd, &i, vals))
			continue;
		for (int c = 0; c < s->ncpus; c++)
			ret->st[i] += vals[c];
	}
	free(vals);
}
