/* gg_common.bpf.h - BPF-side helpers every probe's kernel half may use: log2 histogram slots, the
 * scope filter (tgid and cgroup v2 id sets filled by probes/lib/bpf_util.c), socket helpers.
 * Include after vmlinux.h; user-side counterparts are in probes/lib/bpf_util.h. */
#ifndef GG_COMMON_BPF_H
#define GG_COMMON_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "gg_common.h"

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef AF_INET6
#define AF_INET6 10
#endif

/* ---- map declarations ------------------------------------------------------------------------- */

/* Declares map _name: _type from _key to _value, at most _max entries, map_flags _flags (0: none).
 * The BTF-defined map every keyed map of the probes is, said once; a declaration then names only what
 * differs (ring buffers and stack trace maps, with no key / value types, are spelled out). */
#define GG_MAP(_name, _type, _key, _value, _max, _flags) \
	struct {                                         \
		__uint(type, _type);                     \
		__uint(max_entries, _max);               \
		__uint(map_flags, _flags);               \
		__type(key, _key);                       \
		__type(value, _value);                   \
	} _name SEC(".maps")

/* ---- log2 histograms ---------------------------------------------------------------------------- */

/* Slot of v in a GG_LOG2_SLOTS log2 histogram: floor(log2(v)) clamped to [0, GG_LOG2_SLOTS - 1]
 * (0 and 1 both go to slot 0). Branch-light so that it costs a few instructions. */
static __always_inline __u32 gg_log2_slot(__u64 v)
{
	__u32 r = 0, shift;

	/* Binary search over the bit position: halve the width looked at each step (unrolled). */
#pragma unroll
	for (__u32 w = 32; w >= 2; w >>= 1) {
		shift = ((v >> w) != 0) * w;
		v >>= shift;
		r |= shift;
	}
	r |= (v >> 1);
	return r < GG_LOG2_SLOTS ? r : GG_LOG2_SLOTS - 1;
}

/* Count v in slots[GG_LOG2_SLOTS] (a map value: racing updates from other CPUs are atomic). */
static __always_inline void gg_hist_add(__u64 *slots, __u64 v)
{
	__u32 s = gg_log2_slot(v);

	if (s < GG_LOG2_SLOTS)
		__sync_fetch_and_add(&slots[s], 1);
}

/* ---- one-entry maps and per-CPU counters ------------------------------------------------------ */

/* The only element of a one-entry array map (a per-CPU scratch or state slot, a zero value). */
static __always_inline void *gg_map_elem0(void *map)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(map, &zero);
}

/* Adds n to counter idx of a BPF_MAP_TYPE_PERCPU_ARRAY of __u64: a plain add on this CPU's slot, no atomic. */
static __always_inline void gg_counter_add(void *map, __u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(map, &idx);

	if (v)
		*v += n;
}

/* ---- scope filter ----------------------------------------------------------------------------- */

GG_MAP(gg_scope_ctl, BPF_MAP_TYPE_ARRAY, __u32, struct gg_scope_ctl, 1, 0);

GG_MAP(gg_scope_tgid, BPF_MAP_TYPE_HASH, __u32, __u8, GG_SCOPE_TGID_MAX, 0);

GG_MAP(gg_scope_cgrp, BPF_MAP_TYPE_HASH, __u64, __u8, GG_SCOPE_CGRP_MAX, 0);

/* 1 when a filter is set (only the tgid and cgroup sets are in scope), 0 when everything is. */
static __always_inline int gg_scope_filtering(void)
{
	__u32 zero = 0;
	struct gg_scope_ctl *ctl = bpf_map_lookup_elem(&gg_scope_ctl, &zero);

	return ctl && ctl->filter;
}

static __always_inline int gg_scope_has_tgid(__u32 tgid)
{
	return bpf_map_lookup_elem(&gg_scope_tgid, &tgid) != NULL;
}

static __always_inline int gg_scope_has_cgroup(__u64 cgid)
{
	return cgid && bpf_map_lookup_elem(&gg_scope_cgrp, &cgid) != NULL;
}

/* The current task's cgroup v2 or one of its ancestors (up to GG_CGROUP_MAX_DEPTH levels) is in the
 * cgroup set. For process context only. */
static __always_inline int gg_scope_current_cgroup(void)
{
	__u64 cgid = bpf_get_current_cgroup_id();

	if (gg_scope_has_cgroup(cgid))
		return 1;
	for (int lvl = 1; lvl <= GG_CGROUP_MAX_DEPTH; lvl++) {
		__u64 anc = bpf_get_current_ancestor_cgroup_id(lvl);

		if (!anc || anc == cgid)
			break;
		if (gg_scope_has_cgroup(anc))
			return 1;
	}
	return 0;
}

/* The current task is in scope: no filter, or its tgid, or its cgroup v2 (or one of its ancestors up
 * to GG_CGROUP_MAX_DEPTH levels) is in the sets. For process context only. */
static __always_inline int gg_scope_current(void)
{
	if (!gg_scope_filtering())
		return 1;
	if (gg_scope_has_tgid((__u32)(bpf_get_current_pid_tgid() >> 32)))
		return 1;
	return gg_scope_current_cgroup();
}

/* gg_scope_current() for the current task of process tgid, cached in a bitmap of 2-bit verdicts (0
 * unknown, 1 in, 2 out) over npids pids (a power of two; larger pids are not cached): the global
 * array verdict, of npids / 32 words. */
static __always_inline int gg_scope_current_cached(__u64 *verdict, __u32 npids, __u32 tgid)
{
	__u32 w, sh;
	__u64 bits;
	int in;

	if (tgid >= npids)
		return gg_scope_current();
	w = tgid >> 5;
	barrier_var(w); /* keep the mask below: it changes nothing but shows the verifier the bound */
	w &= npids / 32 - 1;
	sh = (tgid & 31) * 2;
	bits = (verdict[w] >> sh) & 3;
	if (bits)
		return bits == 1;
	in = gg_scope_current();
	__sync_fetch_and_or(&verdict[w], (__u64)(in ? 1 : 2) << sh);
	return in;
}

/* cgroup v2 id of the cgroup a socket was created in (0 when unknown). Usable in any context
 * (softirq included), unlike bpf_get_current_cgroup_id. */
static __always_inline __u64 gg_sk_cgroup_id(const struct sock *sk)
{
	return BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
}

/* The same for programs where sk is a BTF pointer (tp_btf, iterators): direct loads, no helper call
 * per pointer on the way. */
static __always_inline __u64 gg_sk_cgroup_id_btf(const struct sock *sk)
{
	const struct cgroup *cg = sk->sk_cgrp_data.cgroup;

	return cg ? cg->kn->id : 0;
}

/* One of the socket's addresses into dst (16 bytes; IPv4 in the first 4) by its family: v6 or v4, both
 * fields of sk, by direct loads (sk a BTF pointer). */
static __always_inline void gg_sk_addr_btf(const struct sock *sk, const __u8 *v6, const __u32 *v4, __u8 *dst)
{
	if (sk->__sk_common.skc_family == AF_INET6) {
		__builtin_memcpy(dst, v6, 16);
	} else {
		__u32 a = *v4;

		__builtin_memcpy(dst, &a, 4);
	}
}

/* The socket's local / remote address into dst (gg_sk_addr_btf). */
static __always_inline void gg_sk_laddr_btf(const struct sock *sk, __u8 *dst)
{
	gg_sk_addr_btf(sk, sk->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr8, &sk->__sk_common.skc_rcv_saddr, dst);
}

static __always_inline void gg_sk_raddr_btf(const struct sock *sk, __u8 *dst)
{
	gg_sk_addr_btf(sk, sk->__sk_common.skc_v6_daddr.in6_u.u6_addr8, &sk->__sk_common.skc_daddr, dst);
}

/* A cgroup v2 (NULL: none) or one of its ancestors is in the cgroup set. */
static __always_inline int gg_scope_cgroup_in(struct cgroup *cg)
{
	int level;

	if (!cg)
		return 0;
	if (gg_scope_has_cgroup(BPF_CORE_READ(cg, kn, id)))
		return 1;
	level = BPF_CORE_READ(cg, level);
	for (int i = 0; i < GG_CGROUP_MAX_DEPTH; i++) {
		struct cgroup *anc = NULL;

		if (--level < 1)
			break;
		bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level]);
		if (anc && gg_scope_has_cgroup(BPF_CORE_READ(anc, kn, id)))
			return 1;
	}
	return 0;
}

/* A socket is in scope: no filter, or the tgid given (0 = unknown) is in the tgid set, or the
 * socket's cgroup (or an ancestor) is in the cgroup set. */
static __always_inline int gg_scope_sock(const struct sock *sk, __u32 tgid)
{
	if (!gg_scope_filtering())
		return 1;
	if (tgid && gg_scope_has_tgid(tgid))
		return 1;
	return gg_scope_cgroup_in(BPF_CORE_READ(sk, sk_cgrp_data.cgroup));
}

/* ---- misc ------------------------------------------------------------------------------------- */

static __always_inline __u32 gg_current_tgid(void)
{
	return (__u32)(bpf_get_current_pid_tgid() >> 32);
}

#endif
