/* stackprobe_live.h - mem_live, included by stackprobe.bpf.c: live bytes per allocation site. The
 * allocator's entry (the mem_alloc uprobes) notes the size and the stack per thread, its return
 * (uretprobe) records the block (process, address) -> (size, site) and adds it to the site; free and
 * realloc's old pointer take it back. What is left per site is the memory still held. */
#ifndef GG_STACKPROBE_LIVE_H
#define GG_STACKPROBE_LIVE_H

/* bit 0: count bytes requested (mem_alloc), bit 1: live bytes (mem_live); written by user space */
volatile __u32 alloc_mode;

#define SP_ALLOC_VOLUME 1u
#define SP_ALLOC_LIVE	2u

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, SP_LIVE_STACKS);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, SP_MAX_DEPTH * sizeof(__u64));
} live_stacks SEC(".maps");

/* Sites are created on demand and deleted by user space when empty: without preallocation an element
 * deleted while a program still holds it is freed after an RCU grace period, never reused under it. */
GG_MAP(live_sites, BPF_MAP_TYPE_HASH, struct sp_live_key, struct sp_live_val, SP_LIVE_KEYS, BPF_F_NO_PREALLOC);

GG_MAP(live_ptrs, BPF_MAP_TYPE_HASH, struct sp_live_ptr_key, struct sp_live_ptr, SP_LIVE_PTRS, BPF_F_NO_PREALLOC);

/* key: pid_tgid */
GG_MAP(live_pend, BPF_MAP_TYPE_HASH, __u64, struct sp_live_pend, SP_LIVE_PENDING, 0);

/* The current process's site key, created when absent (NULL: the sites map is full, counted). */
static __always_inline struct sp_live_val *live_site(struct sp_live_key *key)
{
	struct sp_live_val *v = bpf_map_lookup_elem(&live_sites, key);

	if (!v) {
		struct sp_live_val zero = {};
		struct task_struct *task = (struct task_struct *)bpf_get_current_task();

		bpf_get_current_comm(zero.comm, sizeof(zero.comm));
		BPF_CORE_READ_STR_INTO(&zero.pcomm, task, group_leader, comm);
		bpf_map_update_elem(&live_sites, key, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&live_sites, key);
		if (!v)
			stat_inc(SP_ST_LIVE_LOST);
	}
	return v;
}

/* At an allocator's entry: size and site of the call, until its return. */
static __always_inline void live_enter(struct pt_regs *ctx, __u64 size, __u64 ret_ip, __u64 memptr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_live_pend p = {};
	long sid;

	if (!gg_scope_current())
		return;
	p.size = size;
	p.memptr = memptr;
	p.site.tgid = (__u32)(id >> 32);
	p.site.ret_ip = ret_ip;
	sid = bpf_get_stackid(ctx, &live_stacks, BPF_F_USER_STACK);
	if (sid < 0 && sid != -EFAULT_) {
		stat_inc(SP_ST_LIVE_LOST);
		p.lost = 1; /* still noted: the thread is inside the allocator (stackprobe_mmap.bpf.h) */
	}
	p.site.ustack = (__s32)sid;
	if (bpf_map_update_elem(&live_pend, &id, &p, BPF_ANY))
		stat_inc(SP_ST_LIVE_LOST);
}

/* Take a block back from its site (free, realloc's old pointer, an address allocated again). */
static __always_inline void live_release(__u32 tgid, __u64 ptr)
{
	struct sp_live_ptr_key pk = {.tgid = tgid, .ptr = ptr};
	struct sp_live_ptr *b = bpf_map_lookup_elem(&live_ptrs, &pk);
	struct sp_live_ptr blk;
	struct sp_live_val *v;

	if (!b)
		return; /* allocated before the probe looked, or not recorded */
	blk = *b;
	if (bpf_map_delete_elem(&live_ptrs, &pk))
		return; /* released meanwhile by another thread */
	stat_inc(SP_ST_LIVE_FREES);
	v = bpf_map_lookup_elem(&live_sites, &blk.site);
	if (v) {
		__sync_fetch_and_add(&v->bytes, -(__s64)blk.size);
		__sync_fetch_and_add(&v->allocs, -1);
	}
}

/* At an allocator's return: the block it handed out, if any. */
static __always_inline void live_return(__u64 ptr)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct sp_live_pend *pp = bpf_map_lookup_elem(&live_pend, &id);
	struct sp_live_ptr_key pk = {};
	struct sp_live_ptr blk = {};
	struct sp_live_pend p;
	struct sp_live_val *v;

	if (!pp)
		return; /* the inner call of a chain (realloc(NULL, n) jumps to malloc) took it */
	p = *pp;
	bpf_map_delete_elem(&live_pend, &id);
	if (p.lost)
		return;
	if (p.memptr) { /* posix_memalign: 0 on success, the block in *memptr */
		if (ptr || bpf_probe_read_user(&ptr, sizeof(ptr), (void *)p.memptr))
			return;
	}
	if (!ptr)
		return;
	pk.tgid = p.site.tgid;
	pk.ptr = ptr;
	live_release(pk.tgid, ptr); /* a free we did not see (e.g. inside the allocator) */
	v = live_site(&p.site);
	if (!v)
		return;
	blk.size = p.size;
	blk.site = p.site;
	if (bpf_map_update_elem(&live_ptrs, &pk, &blk, BPF_NOEXIST)) {
		stat_inc(SP_ST_LIVE_LOST);
		return;
	}
	__sync_fetch_and_add(&v->bytes, (__s64)p.size);
	__sync_fetch_and_add(&v->allocs, 1);
	stat_inc(SP_ST_LIVE_ALLOCS);
}

/* malloc & co return here (uretprobe) */
SEC("uretprobe")
int BPF_KRETPROBE(sp_alloc_ret, void *ret)
{
	live_return((__u64)ret);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sp_free, void *ptr)
{
	__u64 id = bpf_get_current_pid_tgid();

	if (ptr && (alloc_mode & SP_ALLOC_LIVE) && (__u32)(id >> 32) != self_tgid)
		live_release((__u32)(id >> 32), (__u64)ptr);
	return 0;
}

#endif
