/* stackprobe_unwind.bpf.h - stackprobe's user-stack unwinder in BPF: from the sampled task's user
 * registers, each frame's caller is found with the .eh_frame rows user space computed per ELF file
 * (probes/stackprobe/unwind.c), by frame pointers where a pc has no row. Include after stat_inc(). */
#ifndef GG_STACKPROBE_UNWIND_BPF_H
#define GG_STACKPROBE_UNWIND_BPF_H

#include "stackprobe_unwind.h"

/* Rows of every loaded file, each file's sorted by pc; user space writes them through mmap. */
GG_MAP(uw_rows, BPF_MAP_TYPE_ARRAY, __u32, struct sp_uw_row, SP_UW_ROWS, BPF_F_MMAPABLE);

/* key: tgid */
GG_MAP(uw_procs, BPF_MAP_TYPE_HASH, __u32, struct sp_uw_proc, SP_UW_PROCS, BPF_F_NO_PREALLOC);

/* tgid -> enum sp_uw_want: processes whose tables user space should build (or rebuild). */
GG_MAP(uw_want, BPF_MAP_TYPE_HASH, __u32, __u32, SP_UW_WANT, 0);

/* Unwound user stacks, one map per generation like the stack maps; user space sizes them alike. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, SP_STACK_ENTRIES);
	__type(key, __u64);
	__type(value, struct sp_ustack);
} ustacks0 SEC(".maps"), ustacks1 SEC(".maps");

/* The walk's state: too large for the BPF stack. ips first: it is the ustacks value as it stands. */
struct uw_scratch {
	__u64 ips[SP_MAX_DEPTH];
	__u64 pc, sp, bp, hash;
	__u32 n, fp_frames, table_frames, refresh;
	__u32 trusted;	/* pc came from a table row */
	__u32 last_map; /* the mapping of the previous frame */
};

GG_MAP(uw_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct uw_scratch, 1, 0);

/* Live knob (mmap'ed .bss): 1 = frame pointers only (the kernel's walk), no tables asked for. */
volatile __u32 uw_off;

struct uw_ctx {
	struct uw_scratch *s;
	struct sp_uw_proc *proc;
};

/* x86-64 user addresses are below this (47-bit address space, 57-bit with 5-level paging). */
#define UW_USER_TOP 0x0100000000000000ull

struct uw_msearch {
	struct sp_uw_proc *p;
	__u64 pc;
	__u32 lo, hi;
};

/* One step of the binary search over a process's mappings (bpf_loop callback). */
static long uw_msearch_step(__u32 i, void *arg)
{
	struct uw_msearch *q = arg;
	__u32 mid;

	if (q->lo >= q->hi || !q->p)
		return 1;
	mid = q->lo + (q->hi - q->lo) / 2;
	if (mid >= SP_UW_MAPS)
		return 1;
	if (q->pc < q->p->maps[mid].start)
		q->hi = mid;
	else
		q->lo = mid + 1;
	return 0;
}

/* The mapping holding pc: the last one starting at or below it (binary search over sorted starts),
 * tried first where the previous frame was (callers are mostly in the same file). */
static __always_inline struct sp_uw_map *uw_find_map(struct sp_uw_proc *p, struct uw_scratch *s, __u64 pc)
{
	struct uw_msearch q = {.p = p, .pc = pc, .lo = 0, .hi = p->n};
	__u32 mid = s->last_map;

	if (mid < SP_UW_MAPS && pc >= p->maps[mid].start && pc < p->maps[mid].end)
		return &p->maps[mid];
	if (q.hi > SP_UW_MAPS)
		q.hi = SP_UW_MAPS;
	bpf_loop(SP_UW_MAP_STEPS, uw_msearch_step, &q, 0);
	if (q.lo == 0 || q.lo < q.hi)
		return NULL;
	mid = q.lo - 1;
	if (mid >= SP_UW_MAPS || pc >= p->maps[mid].end)
		return NULL;
	s->last_map = mid;
	return &p->maps[mid];
}

struct uw_search {
	__u64 vaddr;
	__u32 start, lo, hi;
};

/* One step of the binary search over a file's rows (bpf_loop callback: verified once, not unrolled). */
static long uw_search_step(__u32 i, void *arg)
{
	struct uw_search *q = arg;
	struct sp_uw_row *r;
	__u32 mid, idx;

	if (q->lo >= q->hi)
		return 1;
	mid = q->lo + (q->hi - q->lo) / 2;
	idx = q->start + mid;
	r = bpf_map_lookup_elem(&uw_rows, &idx);
	if (!r)
		return 1;
	if (q->vaddr < r->pc)
		q->hi = mid;
	else
		q->lo = mid + 1;
	return 0;
}

/* The row covering vaddr in a file's rows: the last one whose pc is at or below it. */
static __always_inline struct sp_uw_row *uw_find_row(__u32 start, __u32 count, __u64 vaddr)
{
	struct uw_search q = {.vaddr = vaddr, .start = start, .lo = 0, .hi = count};
	__u32 idx;

	if (vaddr > 0xffffffffull || count > SP_UW_FILE_ROWS)
		return NULL;
	bpf_loop(SP_UW_FILE_STEPS + 1, uw_search_step, &q, 0);
	if (q.lo == 0 || q.lo < q.hi)
		return NULL;
	idx = start + q.lo - 1;
	return bpf_map_lookup_elem(&uw_rows, &idx);
}

/* One frame (bpf_loop callback): record pc, then find the caller's pc, sp and rbp. 1 stops the walk. */
static long uw_step(__u32 i, void *arg)
{
	struct uw_ctx *c = arg;
	struct uw_scratch *s = c->s;
	struct sp_uw_proc *p = c->proc;
	struct sp_uw_row *r = NULL;
	struct sp_uw_map *m;
	__u64 pc, cfa, ra = 0, bp, fr[2], idx;

	if (!s || !p || i >= SP_MAX_DEPTH)
		return 1;
	pc = s->pc;
	if (!pc || pc >= UW_USER_TOP)
		return 1;
	idx = i;
	barrier_var(idx); /* the bound check below must stay next to the store for the verifier */
	if (idx >= SP_MAX_DEPTH)
		return 1;
	s->ips[idx] = pc;
	s->n = i + 1;
	s->hash = (s->hash ^ pc) * 0x100000001b3ull;
	m = uw_find_map(p, s, pc);
	if (!m) {
		/* the current pc, or a return address found by a table row (not a guess of the frame-pointer
		 * walk), is in no mapping user space knows: an exec, a dlopen since the tables were built */
		if (i == 0 || s->trusted)
			s->refresh = 1;
	} else if (m->row_count) {
		/* a return address points after the call, maybe past the caller's last row */
		r = uw_find_row(m->row_start, m->row_count, (i ? pc - 1 : pc) - m->bias);
	}
	if (r && r->kind == SP_UW_END)
		return 1;
	if (r && (r->kind == SP_UW_CFA_RSP || r->kind == SP_UW_CFA_RBP || r->kind == SP_UW_PLT)) {
		if (r->kind == SP_UW_CFA_RBP)
			cfa = s->bp + r->cfa_off;
		else
			cfa = s->sp + r->cfa_off;
		if (r->kind == SP_UW_PLT && (pc & 15) >= (__u64)(__u8)r->rbp)
			cfa += 8;
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(cfa - 8)))
			return 1;
		if (r->kind != SP_UW_PLT && r->rbp < 0) {
			if (bpf_probe_read_user(&bp, sizeof(bp), (void *)(cfa + (__s64)r->rbp * 8)))
				return 1;
			s->bp = bp;
		}
		s->sp = cfa;
		s->pc = ra;
		s->table_frames++;
		s->trusted = 1;
		return 0;
	}
	/* no row: the frame-pointer chain, which must lie above the stack pointer */
	bp = s->bp;
	if (!bp || bp < s->sp || bpf_probe_read_user(fr, sizeof(fr), (void *)bp))
		return 1;
	s->sp = bp + 16;
	s->bp = fr[0];
	s->pc = fr[1];
	s->fp_frames++;
	s->trusted = 0;
	return 0;
}

/*
 * Walks the current task's user stack into the per-CPU scratch (ips, 0-terminated when shorter).
 * Returns the number of frames, or -1 when the process has no tables (yet: they are asked for), so
 * that the caller takes the kernel's frame-pointer stack instead. A global function: the verifier
 * checks it once per program, not once per call site.
 */
__noinline int uw_walk(__u32 tgid)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct uw_ctx c = {};
	struct uw_scratch *s;
	struct pt_regs *regs;
	__u32 w, n;
	__u64 idx;

	if (uw_off)
		return -1;
	c.proc = bpf_map_lookup_elem(&uw_procs, &tgid);
	if (!c.proc) {
		w = SP_UW_WANT_NEW;
		(void)bpf_map_update_elem(&uw_want, &tgid, &w, BPF_NOEXIST);
		if (task->mm)
			stat_inc(SP_ST_UW_NO_TABLES);
		return -1;
	}
	if (!c.proc->n || !task->mm)
		return -1;
	s = gg_map_elem0(&uw_scratch);
	if (!s)
		return -1;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs || (BPF_CORE_READ(regs, cs) & 3) != 3)
		return -1; /* no user registers saved (a kernel thread) */
	s->pc = BPF_CORE_READ(regs, ip);
	s->sp = BPF_CORE_READ(regs, sp);
	s->bp = BPF_CORE_READ(regs, bp);
	s->hash = 0xcbf29ce484222325ull;
	s->n = s->fp_frames = s->table_frames = s->refresh = s->trusted = 0;
	s->last_map = SP_UW_MAPS;
	c.s = s;
	bpf_loop(SP_MAX_DEPTH, uw_step, &c, 0);
	if (s->refresh) {
		w = SP_UW_WANT_REFRESH;
		(void)bpf_map_update_elem(&uw_want, &tgid, &w, BPF_NOEXIST);
		stat_inc(SP_ST_UW_STALE);
	}
	n = s->n;
	if (!n)
		return -1;
	idx = n;
	barrier_var(idx);
	if (idx < SP_MAX_DEPTH)
		s->ips[idx] = 0;
	stat_inc(SP_ST_UW_STACKS);
	if (s->fp_frames)
		stat_add(SP_ST_UW_FP_FRAMES, s->fp_frames);
	return (int)n;
}

/* The current task's user stack into ustacks<g & 1> (the generation's map), its key into
 * key->ustack/uw; -1: take the kernel's frame-pointer stack instead (uw_walk). */
__noinline int uw_user_stack(struct sp_key *key, __u32 g)
{
	struct uw_scratch *s;
	__u64 h, mk;
	long err;

	if (!key || uw_walk(key->tgid) <= 0)
		return -1;
	s = gg_map_elem0(&uw_scratch);
	if (!s)
		return -1;
	h = s->hash;
	key->ustack = (__s32)(h & 0x7fffffff);
	key->uw = (__u32)(h >> 32) | 1;
	mk = ((__u64)key->uw << 32) | (__u32)key->ustack;
	if (g & 1)
		err = bpf_map_update_elem(&ustacks1, &mk, s, BPF_NOEXIST);
	else
		err = bpf_map_update_elem(&ustacks0, &mk, s, BPF_NOEXIST);
	if (err && err != -17 /* EEXIST: the same stack again */) {
		stat_inc(SP_ST_UW_LOST);
		key->ustack = -12; /* ENOMEM: a lost stack */
		key->uw = 0;
	}
	return 0;
}

#endif
