/* sampler.c - stackprobe's BPF side from user space: load, attach per sub-probe, scope maps, the
 * on-CPU pacer (stratified sampling), and the generation switch + drain of the aggregated stacks and the
 * off-CPU ring buffer. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "probe.h"
#include "stackprobe.h"
#include "stackprobe.skel.h"

#define MAX_CPUS SP_MAX_CPUS
/* After switching generations, BPF programs that read the old value may still be running. Perf-event
 * programs finish within microseconds, but allocator uprobes run preemptible (migrate_disable only): on
 * a loaded host one can be off the CPU for milliseconds between reading gen and counting. Wait this long
 * before reading the old maps; a writer later still lands in them after the read and is drained with
 * that generation next time (entries are taken with lookup-and-delete, so no increment is lost). */
#define GEN_GRACE_NS 20000000L
/* Allocator uprobes are re-checked this often (exec, exit; new processes of an unfiltered scope). */
#define UALLOC_SYNC_MS 5000u
/* CPython processes in scope are looked for this often (on-CPU only). */
#define PY_SYNC_MS 2000u
/* The period the CPU-clock events are opened with: they fire only when the pacer arms them. */
#define IDLE_PERIOD_NS 1000000000000ull

/*
 * The on-CPU pacer. A CPU-clock event firing every period P runs in lockstep with any program whose
 * own period divides or is a multiple of P (10 ms ticks, 1 ms timers, 60 Hz frames): every sample lands
 * at the same phase of its cycle, and a 70 % function comes out anywhere from 0 to 100 %. Instead, time
 * on each CPU is cut into strata of exactly P (on the monotonic clock) and each stratum gets one
 * sample at a uniformly random point of it (stratified sampling): unbiased for any workload, periodic or
 * not, no more variance than independent samples, and still exactly one sample per P per CPU, each
 * standing for P of CPU time, so the configured rate and every output's unit stay what they were.
 *
 * A sample is a one-shot CPU-clock event: PERF_EVENT_IOC_PERIOD restarts the event's timer to fire
 * after the given delay, PERF_EVENT_IOC_REFRESH 1 lets it fire once, then the kernel disables it. A
 * pacer thread arms stratum k+1 while stratum k runs, on the other of two events per CPU (shot parity),
 * so it only has to run once per stratum, anywhere in it. There is one pacer per CPU, pinned to it: an
 * ioctl on another CPU's event is an IPI to that CPU and a wait for it (~17 us each in the test VM),
 * the same ioctl on the CPU itself a function call. CPUs a thread cannot be pinned to (outside the
 * process's cpuset) are armed from one unpinned pacer. When a pacer runs late and skips strata, the
 * next shot stands for them too (pace_armed in stackprobe.bpf.c), up to SP_SHOT_MAX_STRATA: the total
 * stays exact over short delays, and a long gap is counted as missed rather than put on the one stack
 * that happens to run when the shot fires (seen in CI: 1.5 s of CPU time on one sample). A fire with
 * nothing armed (a shot firing twice: seen on idle CPUs, about one shot in eight there) counts for
 * nothing.
 */
struct sp_pacer {
	struct sp_sampler *s;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* CLOCK_MONOTONIC */
	int stop;
	int cpu; /* the CPU it is pinned to and arms; -1: the unpinned one, arming the CPUs in s->remote */
	uint64_t t0, period_ns, rng;
	/* counters, read by the main thread after the join (unfired also while it runs) */
	uint64_t strata, skipped, arm_errors, unfired;
};

#define ENOTSUPP_ 524 /* the kernel's ENOTSUPP, which BPF syscalls return to user space */

struct sp_sampler {
	struct stackprobe *skel;
	int no_lookup_and_delete; /* kernel without it for hash maps: lookup, then delete */
	struct bpf_link *oncpu_links[2][MAX_CPUS];
	int perf_fds[2][MAX_CPUS]; /* per shot parity and CPU */
	int ncpus;
	unsigned int perf_period_ms; /* of the open perf events, 0 when none */
	struct sp_pacer *pacers;     /* running pacer threads */
	int npacers;
	unsigned char remote[MAX_CPUS]; /* armed by the unpinned pacer */
	uint64_t unfired_done;		/* strata of shots that never fired, of pacers stopped */
	int pacer_no_rt_logged;
	struct bpf_link *offcpu_link;
	struct bpf_link *mem_link;
	struct sp_ualloc *ualloc;
	struct sp_live *live;
	struct bpf_link *mm_links[SP_MM_NPROGS]; /* mem_live: mmap, munmap, mremap, brk, exec */
	struct sp_py *py;
	uint64_t py_synced_ms;
	char pynames[SP_PY_DEPTH][SP_PY_NAME_MAX];
	unsigned char pyentry[SP_PY_DEPTH];
	unsigned int alloc_on;	  /* SP_UALLOC_* */
	struct sp_unwind *unwind; /* .eh_frame tables for the BPF unwinder */
	uint64_t alloc_synced_ms;
	struct gg_scope scope; /* the applied scope (the allocator uprobes follow it) */
	struct ring_buffer *rb;
	/* drain state */
	sp_sample_cb cb;
	void *cb_ctx;
	uint64_t drained[SP_EV_NR];
	struct sp_key *keys;
	size_t keys_cap;
	unsigned int count_entries; /* max_entries of counts0/1 as loaded */
};

/* n rounded up to a power of two within [lo, hi] (both powers of two). */
static unsigned int pow2_within(unsigned long n, unsigned int lo, unsigned int hi)
{
	unsigned int v = lo;

	while (v < n && v < hi)
		v <<= 1;
	return v;
}

/* Maps sized to what one second of samples on this machine's CPUs needs (bpf/stackprobe.h): the
 * stack maps alone are 1 KiB an entry and were 16.6 MiB at their upper bound. */
static int size_maps(struct sp_sampler *s)
{
	unsigned int stacks = pow2_within((unsigned long)s->ncpus * SP_STACK_PER_CPU, SP_STACK_MIN, SP_STACK_ENTRIES);
	unsigned int counts = pow2_within((unsigned long)s->ncpus * SP_COUNT_PER_CPU, SP_COUNT_MIN, SP_COUNT_ENTRIES);
	unsigned int rb = pow2_within((unsigned long)s->ncpus * SP_RB_PER_CPU, SP_RB_MIN, SP_OFFCPU_RB_BYTES);
	struct bpf_map *const smaps[] = {s->skel->maps.stacks0, s->skel->maps.stacks1, s->skel->maps.ustacks0,
					 s->skel->maps.ustacks1};
	struct bpf_map *const cmaps[] = {s->skel->maps.counts0, s->skel->maps.counts1};
	int err = 0;

	for (int i = 0; i < 4 && !err; i++)
		err = bpf_map__set_max_entries(smaps[i], stacks);
	for (int i = 0; i < 2 && !err; i++)
		err = bpf_map__set_max_entries(cmaps[i], counts);
	if (!err)
		err = bpf_map__set_max_entries(s->skel->maps.offcpu_rb, rb);
	s->count_entries = counts;
	return err;
}

static int on_offcpu(void *ctx, void *data, size_t size);

/* mem_live's memory syscalls (bpf/stackprobe_mmap.bpf.h): attached while mem_live is on. */
static struct bpf_program *mm_prog(struct sp_sampler *s, int i)
{
	struct bpf_program *const progs[SP_MM_NPROGS] = {
		s->skel->progs.sp_mmap_enter,	s->skel->progs.sp_mmap_exit,   s->skel->progs.sp_munmap_enter,
		s->skel->progs.sp_mremap_enter, s->skel->progs.sp_mremap_exit, s->skel->progs.sp_brk_enter,
		s->skel->progs.sp_brk_exit,	s->skel->progs.sp_mm_exec,
	};

	return progs[i];
}

static void mm_detach(struct sp_sampler *s)
{
	for (int i = 0; i < SP_MM_NPROGS; i++) {
		bpf_link__destroy(s->mm_links[i]);
		s->mm_links[i] = NULL;
	}
}

static int mm_attach(struct sp_sampler *s)
{
	for (int i = 0; i < SP_MM_NPROGS; i++) {
		if (s->mm_links[i])
			continue;
		s->mm_links[i] = bpf_program__attach(mm_prog(s, i));
		if (!s->mm_links[i]) {
			int err = -errno;

			probe_log(PLOG_ERROR, "mem_live: cannot attach %s: %s", bpf_program__name(mm_prog(s, i)),
				  strerror(-err));
			return err;
		}
	}
	return 0;
}

static uint64_t pacer_rand(struct sp_pacer *p)
{
	/* xorshift64*: uniform enough for sample placement, no lock, no system call */
	p->rng ^= p->rng >> 12;
	p->rng ^= p->rng << 25;
	p->rng ^= p->rng >> 27;
	return p->rng * 2685821657736338717ull;
}

/* Arm the shot of stratum k on cpu: at a uniformly random point of [t0 + k P, t0 + (k+1) P), weighing
 * `strata` strata. */
static void pacer_arm_cpu(struct sp_pacer *p, int cpu, uint64_t k, uint64_t strata)
{
	unsigned int par = (unsigned int)(k & 1);
	int fd = p->s->perf_fds[par][cpu];
	volatile __u64 *armed = &p->s->skel->bss->pace_armed[cpu * 2 + par];
	__u64 *used = &p->s->skel->bss->pace_used[cpu * 2 + par];
	uint64_t at, now, delay, a, u;

	if (fd < 0)
		return;
	/* The last shot of this parity (stratum k-2) had until now, the middle of stratum k-1, to fire. If
	 * it has not, its strata are dropped (counted in oncpu_late), not carried to this one: carried, they
	 * ended on whatever ran when a shot finally fired. On this test VM's second vCPU the CPU-clock
	 * timer does not fire while the vCPU is idle, so its shots fired only when a task ran, each
	 * carrying ~8 strata (capped at 3), and a 10 % task came out at 20-30 %. The pacer is on the
	 * shot's CPU: a fire between the load and the exchange makes the exchange fail, as it should (the
	 * unpinned pacer's CPUs can race for real: then a shot can be counted both ways, rarely). */
	a = *armed;
	u = __atomic_load_n(used, __ATOMIC_ACQUIRE);
	if (a != u && __atomic_compare_exchange_n(used, &u, a, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		__atomic_fetch_add(&p->unfired, a - u, __ATOMIC_RELAXED);
	at = p->t0 + k * p->period_ns + pacer_rand(p) % p->period_ns;
	now = gg_mono_ns();
	delay = at > now ? at - now : 1;
	/* the due time and the weight first: the shot may fire as soon as the timer is set; a fire before
	 * the due time is a stale re-fire of this parity's last shot (stackprobe.bpf.c) */
	__atomic_store_n(&p->s->skel->bss->pace_due[cpu * 2 + par], now + delay, __ATOMIC_RELEASE);
	__atomic_store_n(armed, *armed + strata, __ATOMIC_RELEASE);
	if (ioctl(fd, PERF_EVENT_IOC_PERIOD, &delay) < 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) < 0)
		p->arm_errors++; /* its strata stay armed: the next shot of this parity takes them */
}

static void *pacer_main(void *arg)
{
	struct sp_pacer *p = arg;
	uint64_t armed = 0; /* strata 1..armed are armed; stratum 0 is not sampled */

	pthread_mutex_lock(&p->mu);
	while (!p->stop) {
		uint64_t now = gg_mono_ns(), k = (now - p->t0) / p->period_ns + 1,
			 wake = p->t0 + k * p->period_ns + p->period_ns / 2;
		struct timespec ts = {(time_t)(wake / 1000000000ull), (long)(wake % 1000000000ull)};

		/* stratum k-1 runs now; k's events are free (their last shot was in stratum k-2, or earlier) */
		if (k > armed) {
			uint64_t strata = armed ? k - armed : 1;

			p->skipped += strata - 1;
			p->strata += strata;
			for (int cpu = 0; cpu < p->s->ncpus; cpu++)
				if (p->cpu == cpu || (p->cpu < 0 && p->s->remote[cpu]))
					pacer_arm_cpu(p, cpu, k, strata);
			armed = k;
		}
		/* the middle of stratum k: arm k+1 from there */
		while (!p->stop && pthread_cond_timedwait(&p->cv, &p->mu, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* A pacer thread for cpu (-1: unpinned). Real-time priority (the lowest) when allowed: a pacer runs
 * for microseconds per stratum, but a late one skips strata (their time then rides on the next shot
 * instead of being sampled). Returns 0, or a positive error of pthread_create (EINVAL: cpu is not one
 * this process may run on). */
static int pacer_spawn(struct sp_sampler *s, struct sp_pacer *p, int cpu, uint64_t t0, uint64_t period_ns)
{
	struct sched_param sp = {.sched_priority = 1};
	pthread_condattr_t ca;
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	memset(p, 0, sizeof(*p));
	p->s = s;
	p->cpu = cpu;
	p->t0 = t0;
	p->period_ns = period_ns;
	if (getrandom(&p->rng, sizeof(p->rng), GRND_NONBLOCK) != (ssize_t)sizeof(p->rng))
		p->rng = gg_mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(cpu + 1) << 48;
	p->rng |= 1; /* xorshift never leaves 0 */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	if (cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
	pthread_attr_setschedparam(&attr, &sp);
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	err = pthread_create(&p->thread, &attr, pacer_main, p);
	if (err == EPERM) { /* no real-time priority here (privilege, or a cgroup without RT runtime) */
		pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED);
		err = pthread_create(&p->thread, &attr, pacer_main, p);
		if (!err && !s->pacer_no_rt_logged) {
			s->pacer_no_rt_logged = 1;
			probe_log(PLOG_INFO, "oncpu: no real-time priority for the pacer threads (a cgroup without "
					     "real-time runtime?): under load their shots may be late "
					     "(stackprobe_health.oncpu_late, oncpu_missed)");
		}
	}
	pthread_attr_destroy(&attr);
	if (err) {
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
	}
	return err;
}

static void pacer_stop(struct sp_sampler *s)
{
	uint64_t strata = 0, skipped = 0, errors = 0, armed = 0, used = 0;

	if (!s->pacers)
		return;
	for (int i = 0; i < s->npacers; i++) {
		struct sp_pacer *p = &s->pacers[i];

		pthread_mutex_lock(&p->mu);
		p->stop = 1;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		strata = p->strata > strata ? p->strata : strata;
		skipped += p->skipped;
		errors += p->arm_errors;
		s->unfired_done += p->unfired;
	}
	free(s->pacers);
	s->pacers = NULL;
	s->npacers = 0;
	for (int i = 0; i < 2 * s->ncpus; i++) {
		armed += s->skel->bss->pace_armed[i];
		used += s->skel->bss->pace_used[i];
	}
	/* at most the two pending shots per CPU are not taken */
	probe_log(PLOG_DEBUG,
		  "oncpu: %llu strata per CPU, %llu armed in all, %llu taken, %llu unarmed fires, "
		  "%llu early fires, %llu late fires",
		  (unsigned long long)strata, (unsigned long long)armed, (unsigned long long)used,
		  (unsigned long long)s->skel->bss->pace_unarmed, (unsigned long long)s->skel->bss->pace_early,
		  (unsigned long long)s->skel->bss->pace_late);
	if (skipped || errors)
		probe_log(PLOG_WARN, "oncpu: %llu strata skipped (a pacer ran late), %llu arming errors",
			  (unsigned long long)skipped, (unsigned long long)errors);
}

static int pacer_start(struct sp_sampler *s, unsigned int period_ms)
{
	uint64_t t0 = gg_mono_ns(), period_ns = (uint64_t)period_ms * 1000000ull;
	sigset_t all, old;
	int err = 0, nremote = 0;

	s->pacers = calloc((size_t)s->ncpus + 1, sizeof(*s->pacers));
	if (!s->pacers)
		return -ENOMEM;
	s->npacers = 0;
	/* signals are the main thread's business (probe_rt's SIGTERM handler) */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int cpu = 0; cpu < s->ncpus && !err; cpu++) {
		s->remote[cpu] = 0;
		if (s->perf_fds[0][cpu] < 0)
			continue;
		err = pacer_spawn(s, &s->pacers[s->npacers], cpu, t0, period_ns);
		if (!err) {
			s->npacers++;
		} else if (err == EINVAL) {
			s->remote[cpu] = 1;
			nremote++;
			err = 0;
		}
	}
	if (!err && nremote) {
		err = pacer_spawn(s, &s->pacers[s->npacers], -1, t0, period_ns);
		if (!err)
			s->npacers++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		pacer_stop(s);
		return -err;
	}
	if (nremote)
		probe_log(PLOG_INFO, "oncpu: %d CPUs outside this process's cpuset are armed from another CPU",
			  nremote);
	return 0;
}

static int perf_open_clock(int cpu)
{
	struct perf_event_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.size = sizeof(attr);
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = IDLE_PERIOD_NS; /* CPU clock counts nanoseconds; the pacer sets each shot's */
	attr.freq = 0;
	return (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

static void oncpu_detach(struct sp_sampler *s)
{
	pacer_stop(s);
	for (int par = 0; par < 2; par++) {
		for (int i = 0; i < s->ncpus; i++) {
			bpf_link__destroy(s->oncpu_links[par][i]);
			s->oncpu_links[par][i] = NULL;
			if (s->perf_fds[par][i] >= 0)
				close(s->perf_fds[par][i]);
			s->perf_fds[par][i] = -1;
		}
	}
	s->perf_period_ms = 0;
}

static int oncpu_attach(struct sp_sampler *s, unsigned int period_ms)
{
	struct bpf_program *progs[2] = {s->skel->progs.sp_oncpu0, s->skel->progs.sp_oncpu1};
	int attached = 0, err = 0;

	for (int cpu = 0; cpu < s->ncpus && !err; cpu++) {
		for (int par = 0; par < 2; par++) {
			int fd = perf_open_clock(cpu);

			if (fd < 0) {
				if (errno != ENODEV) /* ENODEV: an offline CPU */
					err = -errno;
				break;
			}
			s->perf_fds[par][cpu] = fd;
			s->oncpu_links[par][cpu] = bpf_program__attach_perf_event(progs[par], fd);
			if (!s->oncpu_links[par][cpu]) {
				err = -errno;
				break;
			}
			attached++;
		}
	}
	/* strata left armed by a previous pacer (its pending shots) were of its period: drop them */
	for (int i = 0; i < 2 * s->ncpus; i++)
		s->skel->bss->pace_used[i] = s->skel->bss->pace_armed[i];
	if (!err && attached)
		err = pacer_start(s, period_ms);
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
		s->perf_fds[0][i] = s->perf_fds[1][i] = -1;
	s->ncpus = libbpf_num_possible_cpus();
	if (s->ncpus <= 0 || s->ncpus > MAX_CPUS) {
		err = s->ncpus < 0 ? s->ncpus : -E2BIG;
		s->ncpus = 0; /* nothing opened: free() must not walk the per-CPU arrays past their end */
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
	err = size_maps(s);
	if (err)
		goto err_out;
	{
		struct bpf_program *const ua[] = {
			s->skel->progs.sp_malloc,   s->skel->progs.sp_calloc,	      s->skel->progs.sp_realloc,
			s->skel->progs.sp_memalign, s->skel->progs.sp_posix_memalign, s->skel->progs.sp_alloc_ret,
			s->skel->progs.sp_free};

		err = sp_ualloc__prepare(ua, sizeof(ua) / sizeof(ua[0]));
		if (err)
			goto err_out;
	}
	err = stackprobe__load(s->skel);
	if (err)
		goto err_out;
	gg_bpf_setup_done(); /* the load's vmlinux BTF copy is freed: return the heap it used */
	s->ualloc = sp_ualloc__new(s->skel->progs.sp_malloc, s->skel->progs.sp_calloc, s->skel->progs.sp_realloc,
				   s->skel->progs.sp_memalign, s->skel->progs.sp_posix_memalign,
				   s->skel->progs.sp_alloc_ret, s->skel->progs.sp_free);
	s->live = sp_live__new(&(struct sp_live_fds){.sites = bpf_map__fd(s->skel->maps.live_sites),
						     .ptrs = bpf_map__fd(s->skel->maps.live_ptrs),
						     .stacks = bpf_map__fd(s->skel->maps.live_stacks),
						     .ustacks = bpf_map__fd(s->skel->maps.live_ustacks),
						     .mm_procs = bpf_map__fd(s->skel->maps.mm_procs),
						     .mm_pend = bpf_map__fd(s->skel->maps.mm_pend)});
	s->py = sp_py__new(bpf_map__fd(s->skel->maps.py_procs), bpf_map__fd(s->skel->maps.py_stacks));
	if (!s->ualloc || !s->live || !s->py) {
		err = -errno;
		goto err_out;
	}
	s->unwind = sp_unwind__new(bpf_map__fd(s->skel->maps.uw_rows), bpf_map__fd(s->skel->maps.uw_procs),
				   bpf_map__fd(s->skel->maps.uw_want));
	if (!s->unwind) {
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

int sp_sampler__config_scope(struct sp_sampler *s, uint64_t version, const struct gg_ctrl_msg *msg,
			     struct gg_scope *ret_scope)
{
	int err;

	if (!msg->has_scope)
		return 0;
	err = sp_sampler__set_scope(s, &msg->scope);
	if (err) {
		probe_log(PLOG_WARN, "configuration %llu: cannot apply the scope: %s", (unsigned long long)version,
			  strerror(-err));
		return err;
	}
	*ret_scope = msg->scope;
	return 1;
}

void sp_sampler__free(struct sp_sampler *s)
{
	if (!s)
		return;
	oncpu_detach(s);
	bpf_link__destroy(s->offcpu_link);
	bpf_link__destroy(s->mem_link);
	mm_detach(s);
	sp_ualloc__free(s->ualloc);
	sp_live__free(s->live);
	sp_py__free(s->py);
	sp_unwind__free(s->unwind);
	ring_buffer__free(s->rb);
	stackprobe__destroy(s->skel);
	free(s->keys);
	free(s);
}

/* prog attached into *link when on (a failure logged as "<what>: <error>"), else detached. 0 or negative
 * errno. */
static int link_set(struct bpf_program *prog, struct bpf_link **link, unsigned int on, const char *what)
{
	int err;

	if (!on) {
		bpf_link__destroy(*link);
		*link = NULL;
		return 0;
	}
	if (*link)
		return 0;
	*link = bpf_program__attach(prog);
	if (*link)
		return 0;
	err = -errno;
	probe_log(PLOG_ERROR, "%s: %s", what, strerror(-err));
	return err;
}

int sp_sampler__apply(struct sp_sampler *s, unsigned int events, unsigned int perf_period_ms, unsigned int min_block_us,
		      int dwarf_unwind)
{
	unsigned int mode;
	int err = 0, e;

	s->skel->bss->uw_off = !dwarf_unwind;

	s->skel->data->min_block_ns = (uint64_t)min_block_us * 1000u;
	if (!(events & (1u << SP_EV_ONCPU)) || (s->perf_period_ms && s->perf_period_ms != perf_period_ms))
		oncpu_detach(s);
	if ((events & (1u << SP_EV_ONCPU)) && !s->perf_period_ms) {
		e = oncpu_attach(s, perf_period_ms);
		if (e) {
			probe_log(PLOG_ERROR, "oncpu: cannot attach to the CPU clock: %s", strerror(-e));
			err = err ? err : e;
		} else {
			sp_py__sync(s->py, &s->scope);
			s->py_synced_ms = probe_now_mono_ms();
		}
	}
	e = link_set(s->skel->progs.sp_offcpu, &s->offcpu_link, events & (1u << SP_EV_OFFCPU),
		     "offcpu: cannot attach to sched_switch");
	err = err ? err : e;
	e = link_set(s->skel->progs.sp_mem, &s->mem_link, events & (1u << SP_EV_MEM),
		     "mem: cannot attach to exceptions:page_fault_user");
	err = err ? err : e;
	mode = (events & (1u << SP_EV_MEM_ALLOC) ? SP_UALLOC_VOLUME : 0) |
	       (events & (1u << SP_EV_MEM_LIVE) ? SP_UALLOC_LIVE : 0);
	if (mode != s->alloc_on) {
		s->skel->bss->alloc_mode = mode;
		if ((s->alloc_on & SP_UALLOC_LIVE) && !(mode & SP_UALLOC_LIVE)) {
			mm_detach(s);
			sp_live__reset(s->live); /* frees are no longer seen: what the maps hold goes stale */
		}
		if (mode & SP_UALLOC_LIVE) {
			e = mm_attach(s);
			if (e) {
				mm_detach(s);
				err = err ? err : e;
			}
		}
		s->alloc_on = mode;
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
	if (s->perf_period_ms) {
		sp_py__sync(s->py, &s->scope);
		s->py_synced_ms = probe_now_mono_ms();
	}
	if (!scope->all && !s->skel->bss->uw_off)
		sp_unwind__prepare(s->unwind, scope->tgid, scope->ntgid, probe_now_mono_ms());
	if (s->alloc_on) {
		(void)sp_ualloc__sync(s->ualloc, &s->scope, s->alloc_on);
		s->alloc_synced_ms = probe_now_mono_ms();
	}
	return 0;
}

void sp_sampler__unwind_tick(struct sp_sampler *s, uint64_t now_ms)
{
	if (!s->skel->bss->uw_off)
		sp_unwind__tick(s->unwind, now_ms);
}

void sp_sampler__tick(struct sp_sampler *s, uint64_t now_ms)
{
	if (s->perf_period_ms && now_ms - s->py_synced_ms >= PY_SYNC_MS) {
		sp_py__sync(s->py, &s->scope);
		s->py_synced_ms = now_ms;
	}
	sp_sampler__unwind_tick(s, now_ms);
	if (!s->alloc_on || now_ms - s->alloc_synced_ms < UALLOC_SYNC_MS)
		return;
	(void)sp_ualloc__sync(s->ualloc, &s->scope, s->alloc_on);
	s->alloc_synced_ms = now_ms;
}

/* Read one stack from a stack map (uw 0) or an unwound one from ustacks: frames innermost first,
 * 0-terminated when shorter. */
static unsigned int read_stack(int fd, int ufd, int id, uint32_t uw, uint64_t *ips)
{
	unsigned int n = 0;
	uint32_t key = (uint32_t)id;
	uint64_t ukey = ((uint64_t)uw << 32) | (uint32_t)id;

	if (id < 0 || (uw ? bpf_map_lookup_elem(ufd, &ukey, ips) : bpf_map_lookup_elem(fd, &key, ips)))
		return 0;
	while (n < SP_MAX_DEPTH && ips[n])
		n++;
	return n;
}

/* Empty a stack map (u32 or u64 keys) for the generation after next. */
static void clear_map(int fd)
{
	uint64_t ids[256];
	unsigned int nids;

	do {
		void *prev = NULL;

		nids = 0;
		while (nids < 256 && bpf_map_get_next_key(fd, prev, &ids[nids]) == 0) {
			prev = &ids[nids];
			nids++;
		}
		for (unsigned int i = 0; i < nids; i++)
			(void)bpf_map_delete_elem(fd, &ids[i]);
	} while (nids == 256);
}

static int drain_counts(struct sp_sampler *s, int counts_fd, int stacks_fd, int ustacks_fd)
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
		if (n > s->count_entries * 2u)
			break; /* the map is bounded; never loop forever on a changing map */
	}
	for (size_t i = 0; i < n; i++) {
		struct sp_key *k = &s->keys[i];
		struct sp_val val;
		struct sp_sample smp;

		/* atomically: an increment between a lookup and a delete would be lost (hash maps, >= 5.14) */
		if (s->no_lookup_and_delete || bpf_map_lookup_and_delete_elem(counts_fd, k, &val)) {
			if (!s->no_lookup_and_delete && errno != EINVAL && errno != ENOTSUPP_ && errno != EOPNOTSUPP)
				continue; /* gone meanwhile */
			s->no_lookup_and_delete = 1;
			if (bpf_map_lookup_elem(counts_fd, k, &val))
				continue;
			(void)bpf_map_delete_elem(counts_fd, k);
		}
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
		smp.kn = read_stack(stacks_fd, -1, k->kstack, 0, kips);
		smp.uips = uips;
		smp.un = read_stack(stacks_fd, ustacks_fd, k->ustack, k->uw, uips);
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
		smp.cpu = k->cpu;
		if (k->pystack && k->event == SP_EV_ONCPU) {
			smp.pyn = sp_py__frames(s->py, k->tgid, k->pystack, s->pynames, s->pyentry, SP_PY_DEPTH);
			smp.py = (const char(*)[SP_PY_NAME_MAX])s->pynames;
			smp.py_entry = s->pyentry;
		}
		s->drained[smp.event]++;
		if (!err)
			err = s->cb(s->cb_ctx, &smp);
	}
	/* empty the stack maps for the generation after next */
	clear_map(stacks_fd);
	clear_map(ustacks_fd);
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
	smp.cpu = ev.cpu;
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
		err = drain_counts(s, bpf_map__fd(s->skel->maps.counts1), bpf_map__fd(s->skel->maps.stacks1),
				   bpf_map__fd(s->skel->maps.ustacks1));
	else
		err = drain_counts(s, bpf_map__fd(s->skel->maps.counts0), bpf_map__fd(s->skel->maps.stacks0),
				   bpf_map__fd(s->skel->maps.ustacks0));
	/* the ring buffer: what is there now (bounded by its size) */
	e = ring_buffer__consume(s->rb);
	if (e < 0 && !err)
		err = e;
	if (s->alloc_on & SP_UALLOC_LIVE) {
		e = sp_live__drain(s->live, cb, ctx, &s->drained[SP_EV_MEM_LIVE]);
		if (e < 0 && !err)
			err = e;
	}
	return err;
}

void sp_sampler__stats(struct sp_sampler *s, struct sp_sampler_stats *ret)
{
	int fd = bpf_map__fd(s->skel->maps.stats);
	uint64_t *vals = calloc((size_t)s->ncpus, sizeof(uint64_t));

	memset(ret, 0, sizeof(*ret));
	memcpy(ret->drained, s->drained, sizeof(ret->drained));
	/* shots that never fired are counted with the late ones (their strata are not in any sample) */
	ret->st[SP_ST_ONCPU_LATE] = s->unfired_done;
	for (int i = 0; i < s->npacers; i++)
		ret->st[SP_ST_ONCPU_LATE] += __atomic_load_n(&s->pacers[i].unfired, __ATOMIC_RELAXED);
	sp_ualloc__stats(s->ualloc, &ret->ua);
	sp_unwind__stats(s->unwind, &ret->uw);
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

void sp_sampler__set_cpu_keys(struct sp_sampler *s, int on)
{
	s->skel->bss->cpu_keys = on ? 1 : 0;
}
