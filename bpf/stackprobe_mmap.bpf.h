/* stackprobe_mmap.bpf.h - mem_live's second half, included by stackprobe.bpf.c after stackprobe_live.h:
 * anonymous mmap regions and brk growth as live bytes of the stack that made them, given back by munmap
 * (whole or partial), mremap, a brk shrink, MAP_FIXED over them and exec. Syscall tracepoints only.
 *
 * The allocator's own mmap/brk/mremap (glibc's malloc maps large blocks and grows its heap with them)
 * are not counted: the blocks it hands out are, at malloc & co (stackprobe_live.h), and counting the
 * mappings under them too would count the same bytes twice in one graph. A thread is inside the
 * allocator while live_pend holds its call (entry uprobe to uretprobe); its mmap and brk growth are
 * counted in SP_ST_LIVE_MAP_INNER instead. Releases are always applied: whoever unmaps a range, it is
 * no longer held. */
#ifndef GG_STACKPROBE_MMAP_BPF_H
#define GG_STACKPROBE_MMAP_BPF_H

#define MM_PAGE	       4096ull
#define MM_MAP_SHARED  0x01
#define MM_MAP_PRIVATE 0x02
#define MM_MAP_FIXED   0x10
#define MM_MAP_ANON    0x20
#define MM_DONTUNMAP   4 /* MREMAP_DONTUNMAP */
#define MM_ERR_MAX     4095ull
#define MM_STEPS       (SP_MM_REGIONS + 1)

/* key: tgid */
GG_MAP(mm_procs, BPF_MAP_TYPE_HASH, __u32, struct sp_mm_proc, SP_MM_PROCS, BPF_F_NO_PREALLOC);

/* Never written: the zeroed value a new process's table starts from (too large for the BPF stack). */
GG_MAP(mm_zero, BPF_MAP_TYPE_ARRAY, __u32, struct sp_mm_proc, 1, 0);

/* key: pid_tgid */
GG_MAP(mm_pend, BPF_MAP_TYPE_HASH, __u64, struct sp_mm_pend, SP_MM_PENDING, 0);

/* User stacks of mmap/brk sites unwound with the .eh_frame tables (key: (uw << 32) | ustack). Not
 * generational like ustacks0/1: a site lives as long as its memory; user space deletes the unused. */
GG_MAP(live_ustacks, BPF_MAP_TYPE_HASH, __u64, struct sp_ustack, SP_LIVE_STACKS, BPF_F_NO_PREALLOC);

static __always_inline __u64 mm_page_up(__u64 len)
{
	return (len + MM_PAGE - 1) & ~(MM_PAGE - 1);
}

/* mem_live is on and the current process is one to record. */
static __always_inline int mm_on(__u32 tgid)
{
	return (alloc_mode & SP_ALLOC_LIVE) && tgid != self_tgid && gg_scope_current();
}

static __always_inline void mm_site_add(__u32 tgid, __s32 ustack, __u32 uw, __u64 ret_ip, __s64 bytes, __s64 regions)
{
	struct sp_live_key k = {.tgid = tgid, .ustack = ustack, .ret_ip = ret_ip, .uw = uw};
	struct sp_live_val *v = bpf_map_lookup_elem(&live_sites, &k);

	if (!v)
		return; /* deleted with its process */
	__sync_fetch_and_add(&v->bytes, bytes);
	__sync_fetch_and_add(&v->allocs, regions);
}

/* A range given back: the regions it covers lose those bytes. At most one region can hold the range
 * strictly inside it (regions do not overlap): its upper part is re-added after the scan. */
struct mm_release {
	struct sp_mm_proc *p;
	__u64 a, b;
	__u32 tgid;
	__u32 split; /* 1: [split_s, split_e) of split_r's site goes to a new slot */
	__u64 split_s, split_e;
	struct sp_mm_region split_r;
};

static long mm_release_step(__u32 i, void *arg)
{
	struct mm_release *q = arg;
	struct sp_mm_region *r, site;
	__u64 s, e, lo, hi;
	__s64 regions = 0;

	if (!q->p || i >= SP_MM_REGIONS || i >= q->p->hi)
		return 1;
	r = &q->p->r[i];
	e = r->end;
	if (e <= 1)
		return 0;
	s = r->start;
	if (s >= q->b || e <= q->a || s >= e)
		return 0;
	site = *r; /* before the slot can be taken by another thread */
	lo = s > q->a ? s : q->a;
	hi = e < q->b ? e : q->b;
	if (q->a <= s && q->b >= e) { /* the whole region */
		if (__sync_val_compare_and_swap(&r->end, e, 0) != e)
			return 0;
		regions = -1;
	} else if (q->a <= s) { /* its head */
		r->start = q->b;
	} else { /* its tail, or its middle: the part above is re-added */
		if (__sync_val_compare_and_swap(&r->end, e, q->a) != e)
			return 0;
		if (q->b < e) {
			q->split = 1;
			q->split_s = q->b;
			q->split_e = e;
			q->split_r = site;
			hi = e; /* the upper part too: mm_add puts it back */
		}
	}
	mm_site_add(q->tgid, site.ustack, site.uw, site.ret_ip, -(__s64)(hi - lo), regions);
	return 0;
}

/* A free slot for [s, e) of site, or the site's region ending at s, extended (brk growth, regions
 * mapped back to back). */
struct mm_claim {
	struct sp_mm_proc *p;
	__u64 s, e;
	struct sp_mm_region *site;
	__s32 idx; /* claimed slot, -1 none */
	__u32 merged;
};

static long mm_claim_step(__u32 i, void *arg)
{
	struct mm_claim *q = arg;
	struct sp_mm_region *r;
	__u64 end;

	if (!q->p || !q->site || i >= SP_MM_REGIONS || i >= q->p->hi)
		return 1;
	r = &q->p->r[i];
	end = r->end;
	if (end == q->s && r->start < end && r->ustack == q->site->ustack && r->uw == q->site->uw &&
	    r->ret_ip == q->site->ret_ip) {
		if (__sync_val_compare_and_swap(&r->end, end, q->e) == end) {
			q->merged = 1;
			return 1;
		}
	}
	if (end == 0 && __sync_val_compare_and_swap(&r->end, 0, 1) == 0) {
		q->idx = (__s32)i;
		return 1;
	}
	return 0;
}

/* Record [s, e) as held by site (its ustack/uw/ret_ip; the site must exist in live_sites). */
static __always_inline void mm_add(struct sp_mm_proc *p, __u32 tgid, __u64 s, __u64 e, struct sp_mm_region *site)
{
	struct mm_claim q = {.p = p, .s = s, .e = e, .site = site, .idx = -1};
	struct sp_mm_region *r;
	__u32 idx;

	if (e <= s)
		return;
	bpf_loop(MM_STEPS, mm_claim_step, &q, 0);
	if (q.merged) {
		mm_site_add(tgid, site->ustack, site->uw, site->ret_ip, (__s64)(e - s), 0);
		stat_inc(SP_ST_LIVE_MAPS);
		return;
	}
	if (q.idx < 0) {
		if (p->hi >= SP_MM_REGIONS) {
			stat_inc(SP_ST_LIVE_LOST);
			return;
		}
		idx = __sync_fetch_and_add(&p->hi, 1);
		if (idx >= SP_MM_REGIONS || __sync_val_compare_and_swap(&p->r[idx & (SP_MM_REGIONS - 1)].end, 0, 1)) {
			stat_inc(SP_ST_LIVE_LOST);
			return;
		}
	} else {
		idx = (__u32)q.idx;
	}
	r = &p->r[idx & (SP_MM_REGIONS - 1)];
	r->start = s;
	r->ustack = site->ustack;
	r->uw = site->uw;
	r->ret_ip = site->ret_ip;
	/* the region is whole before its end makes it visible (x86 keeps stores in order; the compiler
	 * must too) */
	asm volatile("" ::: "memory");
	r->end = e;
	mm_site_add(tgid, site->ustack, site->uw, site->ret_ip, (__s64)(e - s), 1);
	stat_inc(SP_ST_LIVE_MAPS);
}

static __always_inline void mm_release(struct sp_mm_proc *p, __u32 tgid, __u64 a, __u64 b)
{
	struct mm_release q = {.p = p, .a = a, .b = b, .tgid = tgid};

	if (b <= a)
		return;
	bpf_loop(MM_STEPS, mm_release_step, &q, 0);
	if (q.split) {
		/* the bytes above the hole stay held: taken off above, put back in their own slot */
		mm_add(p, tgid, q.split_s, q.split_e, &q.split_r);
	}
}

/* The current user stack as a site of the current process, created in live_sites: by the .eh_frame
 * tables when the process has them (exact through libc's wrappers, which have no frame pointers), else
 * the kernel's frame-pointer walk plus the word at the user sp (a syscall wrapper's return address, which
 * that walk skips; inserted by user space as for malloc). -1 when it could not be recorded. */
static __always_inline int mm_site(void *ctx, __u32 tgid, struct sp_mm_region *ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct sp_live_key k = {.tgid = tgid};
	struct uw_scratch *sc;
	struct pt_regs *regs;
	__u64 mk, sp;
	long err;

	if (uw_walk(tgid) > 0 && (sc = gg_map_elem0(&uw_scratch))) {
		k.ustack = (__s32)(sc->hash & 0x7fffffff);
		k.uw = (__u32)(sc->hash >> 32) | 1;
		mk = ((__u64)k.uw << 32) | (__u32)k.ustack;
		err = bpf_map_update_elem(&live_ustacks, &mk, sc, BPF_NOEXIST);
		if (err && err != -17 /* EEXIST: the same stack */) {
			stat_inc(SP_ST_LIVE_LOST);
			return -1;
		}
	} else {
		err = bpf_get_stackid(ctx, &live_stacks, BPF_F_USER_STACK);
		if (err < 0) {
			stat_inc(SP_ST_LIVE_LOST);
			return -1;
		}
		k.ustack = (__s32)err;
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		sp = regs ? BPF_CORE_READ(regs, sp) : 0;
		if (!sp || bpf_probe_read_user(&k.ret_ip, sizeof(k.ret_ip), (void *)sp) || !k.ret_ip)
			k.ret_ip = 1;
	}
	if (!live_site(&k))
		return -1;
	ret->ustack = k.ustack;
	ret->uw = k.uw;
	ret->ret_ip = k.ret_ip;
	return 0;
}

/* The process's table, created when absent (NULL: the map is full, counted). */
static __always_inline struct sp_mm_proc *mm_proc(__u32 tgid, int create)
{
	struct sp_mm_proc *p = bpf_map_lookup_elem(&mm_procs, &tgid), *zero;

	if (p || !create)
		return p;
	zero = gg_map_elem0(&mm_zero);
	if (!zero)
		return NULL;
	(void)bpf_map_update_elem(&mm_procs, &tgid, zero, BPF_NOEXIST);
	p = bpf_map_lookup_elem(&mm_procs, &tgid);
	if (!p)
		stat_inc(SP_ST_LIVE_LOST);
	return p;
}

/* New memory [s, e) made by the current thread: counted on its stack unless the allocator made it. */
static __always_inline void mm_grow(void *ctx, __u32 tgid, __u64 s, __u64 e)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_mm_region site = {};
	struct sp_mm_proc *p;

	if (bpf_map_lookup_elem(&live_pend, &id)) {
		stat_inc(SP_ST_LIVE_MAP_INNER);
		return;
	}
	p = mm_proc(tgid, 1);
	if (!p || mm_site(ctx, tgid, &site))
		return;
	mm_add(p, tgid, s, e, &site);
}

static __always_inline void mm_pend_put(__u32 op, __u64 a, __u64 b, __u64 c, __u32 flags)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_mm_pend pd = {.a = a, .b = b, .c = c, .op = op, .flags = flags};

	if (bpf_map_update_elem(&mm_pend, &id, &pd, BPF_ANY))
		stat_inc(SP_ST_LIVE_LOST);
}

/* The thread's pending call of op, taken out of the map (0), or -1. */
static __always_inline int mm_pend_take(__u32 op, struct sp_mm_pend *ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_mm_pend *pd = bpf_map_lookup_elem(&mm_pend, &id);

	if (!pd)
		return -1;
	*ret = *pd;
	bpf_map_delete_elem(&mm_pend, &id);
	return ret->op == op ? 0 : -1;
}

SEC("tp/syscalls/sys_enter_mmap")
int sp_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 flags = ctx->args[3];

	/* anonymous memory is recorded; MAP_FIXED replaces whatever was mapped there */
	if (!(flags & (MM_MAP_ANON | MM_MAP_FIXED)) || !mm_on((__u32)(bpf_get_current_pid_tgid() >> 32)))
		return 0;
	mm_pend_put(SP_MM_MMAP, ctx->args[1], flags, ctx->args[2], 0);
	return 0;
}

SEC("tp/syscalls/sys_exit_mmap")
int sp_mmap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	__u64 addr = (__u64)ctx->ret, len;
	struct sp_mm_pend pd;
	struct sp_mm_proc *p;

	if (mm_pend_take(SP_MM_MMAP, &pd) || addr >= -MM_ERR_MAX)
		return 0;
	len = mm_page_up(pd.a);
	if ((pd.b & MM_MAP_FIXED) && (p = mm_proc(tgid, 0)))
		mm_release(p, tgid, addr, addr + len);
	/* PROT_NONE is a reservation (guard pages, arenas reserved ahead), not memory */
	if ((pd.b & MM_MAP_ANON) && pd.c)
		mm_grow(ctx, tgid, addr, addr + len);
	return 0;
}

/* munmap at the entry: the range is still mapped, so no other thread can be handed it meanwhile. */
SEC("tp/syscalls/sys_enter_munmap")
int sp_munmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	__u64 addr = ctx->args[0];
	struct sp_mm_proc *p;

	if (!(alloc_mode & SP_ALLOC_LIVE) || !(p = mm_proc(tgid, 0)))
		return 0; /* no table: nothing of this process is recorded */
	mm_release(p, tgid, addr & ~(MM_PAGE - 1), addr + mm_page_up(ctx->args[1]));
	return 0;
}

SEC("tp/syscalls/sys_enter_mremap")
int sp_mremap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);

	if (!(alloc_mode & SP_ALLOC_LIVE) || !mm_proc(tgid, 0))
		return 0;
	mm_pend_put(SP_MM_MREMAP, ctx->args[0], ctx->args[1], ctx->args[2], (__u32)ctx->args[3]);
	return 0;
}

/* The region holding the old address, if any, is moved (or resized) with its site. */
struct mm_find {
	struct sp_mm_proc *p;
	__u64 addr;
	struct sp_mm_region hit;
	__u32 found;
};

static long mm_find_step(__u32 i, void *arg)
{
	struct mm_find *q = arg;
	struct sp_mm_region *r;

	if (!q->p || i >= SP_MM_REGIONS || i >= q->p->hi)
		return 1;
	r = &q->p->r[i];
	if (r->end > 1 && r->start <= q->addr && q->addr < r->end) {
		q->hit = *r;
		q->found = 1;
		return 1;
	}
	return 0;
}

SEC("tp/syscalls/sys_exit_mremap")
int sp_mremap_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	__u64 addr = (__u64)ctx->ret;
	struct mm_find q = {};
	struct sp_mm_pend pd;

	if (mm_pend_take(SP_MM_MREMAP, &pd) || addr >= -MM_ERR_MAX)
		return 0;
	q.p = mm_proc(tgid, 0);
	q.addr = pd.a;
	if (!q.p)
		return 0;
	bpf_loop(MM_STEPS, mm_find_step, &q, 0);
	if (!q.found)
		return 0; /* not a region we recorded (the allocator's own, or older than the probe) */
	if (!(pd.flags & MM_DONTUNMAP) && pd.b)
		mm_release(q.p, tgid, pd.a, pd.a + mm_page_up(pd.b));
	/* MREMAP_FIXED replaces whatever was mapped at the new place */
	mm_release(q.p, tgid, addr, addr + mm_page_up(pd.c));
	mm_add(q.p, tgid, addr, addr + mm_page_up(pd.c), &q.hit);
	return 0;
}

SEC("tp/syscalls/sys_enter_brk")
int sp_brk_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();

	if (!mm_on((__u32)(bpf_get_current_pid_tgid() >> 32)) || !task->mm)
		return 0;
	mm_pend_put(SP_MM_BRK, BPF_CORE_READ(task, mm, brk), 0, 0, 0);
	return 0;
}

/* brk returns the new break (the old one when it failed): growth is held by the caller's stack, a
 * shrink gives back the top of the heap. */
SEC("tp/syscalls/sys_exit_brk")
int sp_brk_exit(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	__u64 now = (__u64)ctx->ret;
	struct sp_mm_pend pd;
	struct sp_mm_proc *p;

	if (mm_pend_take(SP_MM_BRK, &pd) || !pd.a || now >= -MM_ERR_MAX)
		return 0;
	if (now > pd.a)
		mm_grow(ctx, tgid, pd.a, now);
	else if (now < pd.a && (p = mm_proc(tgid, 0)))
		mm_release(p, tgid, now, pd.a);
	return 0;
}

/* exec replaces the address space: everything the process had recorded is given back. */
SEC("tp/sched/sched_process_exec")
int sp_mm_exec(void *ctx)
{
	__u32 tgid = (__u32)(bpf_get_current_pid_tgid() >> 32);
	struct sp_mm_proc *p = mm_proc(tgid, 0);

	if (!p)
		return 0;
	mm_release(p, tgid, 0, ~0ull);
	bpf_map_delete_elem(&mm_procs, &tgid);
	return 0;
}

#endif
