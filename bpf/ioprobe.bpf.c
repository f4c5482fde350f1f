// SPDX-License-Identifier: GPL-2.0
/* ioprobe.bpf.c - ioprobe's kernel half: block requests from submission (block_io_start) through
 * issue to completion, counted per disk as /proc/diskstats counts them, with queue and device
 * latency histograms; per process counts; page cache events. Tracepoints (tp_btf) only. */
#include "vmlinux.h"

#include "gg_common.bpf.h"
#include "ioprobe.h"

char LICENSE[] SEC("license") = "GPL";

#define REQ_OP_MASK	    0xff
#define REQ_OP_DISCARD	    3
#define REQ_OP_SECURE_ERASE 5
#define MINORBITS	    20

/* Requests reaching latency_thr_ns (0 = off) are counted as slow; io_period tells periods apart
 * for the per-period maximum. Both written by user space. */
volatile __u64 latency_thr_ns;
volatile __u64 io_period;
/* In-flight requests not tracked because io_inflight was full. */
__u64 io_inflight_lost;

/* Devices appear rarely: entries allocated as they come, not 512 up front (1 MiB). */
GG_MAP(io_devs, BPF_MAP_TYPE_HASH, __u32, struct io_dev_stats, IO_DEVS_MAX, BPF_F_NO_PREALLOC);

/* LRU: a request that never completes through a traced path ages out instead of leaking. */
GG_MAP(io_inflight, BPF_MAP_TYPE_LRU_HASH, __u64, struct io_req, IO_INFLIGHT_MAX, 0);

GG_MAP(io_procs, BPF_MAP_TYPE_HASH, struct io_proc_key, struct io_proc, IO_PROCS_MAX, 0);

/* Per CPU: page cache events are frequent, and counting them must not bounce a cache line. */
GG_MAP(io_pc, BPF_MAP_TYPE_PERCPU_HASH, __u32, struct io_pagecache, IO_DEVS_MAX, 0);

/* Never written: the zero value new devices start from (too large for the BPF stack). */
GG_MAP(io_zero, BPF_MAP_TYPE_ARRAY, __u32, struct io_dev_stats, 1, 0);

static __always_inline __u32 rq_dev(const struct request *rq)
{
	const struct gendisk *disk = rq->q->disk;

	if (!disk)
		return 0;
	return ((__u32)disk->major << MINORBITS) | (__u32)disk->first_minor;
}

static __always_inline int rq_dir(const struct request *rq)
{
	__u32 op = rq->cmd_flags & REQ_OP_MASK;

	if (op == REQ_OP_DISCARD || op == REQ_OP_SECURE_ERASE)
		return IO_DISCARD;
	return op & 1 ? IO_WRITE : IO_READ;
}

static __always_inline int rq_accounted(const struct request *rq)
{
	__u32 f = rq->rq_flags;
	__u32 io_stat = 1u << bpf_core_enum_value(enum rqf_flags, __RQF_IO_STAT);

	return (f & io_stat) != 0;
}

static __always_inline int rq_flush_seq(const struct request *rq)
{
	return (rq->rq_flags & (1u << bpf_core_enum_value(enum rqf_flags, __RQF_FLUSH_SEQ))) != 0;
}

static __always_inline struct io_dev_stats *dev_stats(const struct request *rq, __u32 dev)
{
	struct io_dev_stats *d = bpf_map_lookup_elem(&io_devs, &dev);

	if (d)
		return d;
	d = gg_map_elem0(&io_zero);
	if (!d)
		return NULL;
	if (bpf_map_update_elem(&io_devs, &dev, d, BPF_NOEXIST) == 0) {
		d = bpf_map_lookup_elem(&io_devs, &dev);
		if (d)
			bpf_probe_read_kernel_str(d->disk_name, sizeof(d->disk_name), rq->q->disk->disk_name);
		return d;
	}
	return bpf_map_lookup_elem(&io_devs, &dev);
}

/* The entry of request rq (created zeroed the first time this address is seen; NULL when the map is
 * full: counted). */
static __always_inline struct io_req *req_of(__u64 key)
{
	struct io_req *r = bpf_map_lookup_elem(&io_inflight, &key);
	struct io_req zero = {};

	if (r)
		return r;
	/* BPF_NOEXIST: another CPU may have created it meanwhile. */
	bpf_map_update_elem(&io_inflight, &key, &zero, BPF_NOEXIST);
	r = bpf_map_lookup_elem(&io_inflight, &key);
	if (!r)
		__sync_fetch_and_add(&io_inflight_lost, 1);
	return r;
}

/* Submission, in the submitter's context (6.5+): who issued the request. In place: a lookup and a few
 * stores (an LRU insert here and a delete at completion were 70 % and 30 % of io_start/io_complete). */
SEC("tp_btf/block_io_start")
int BPF_PROG(io_start, struct request *rq)
{
	struct io_req *r;
	__u32 tgid;

	if (!gg_scope_current())
		return 0;
	r = req_of((__u64)rq);
	if (!r)
		return 0;
	tgid = gg_current_tgid();
	if (r->tgid != tgid) {
		r->tgid = tgid;
		bpf_get_current_comm(r->comm, sizeof(r->comm));
	}
	r->started = 1;
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(io_issue, struct request *rq)
{
	struct io_req *r = req_of((__u64)rq);

	if (r)
		r->issue_ns = bpf_ktime_get_ns();
	return 0;
}

/* Freed without completing through block_rq_complete (merged away, requeued): forget it. */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(io_merge, struct request *rq)
{
	__u64 key = (__u64)rq;
	struct io_req *r = bpf_map_lookup_elem(&io_inflight, &key);

	if (r) {
		r->issue_ns = 0;
		r->started = 0;
	}
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(io_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), start;
	__u32 dev = rq_dev(rq), thr_hit;
	struct io_dev_stats *d;
	struct io_dir_stats *s;
	struct io_req *r;
	int dir = rq_dir(rq), final = nr_bytes >= rq->__data_len;

	if (!dev)
		return 0;
	d = dev_stats(rq, dev);
	if (!d)
		return 0;
	if (dir == IO_READ)
		s = &d->dir[IO_READ];
	else if (dir == IO_WRITE)
		s = &d->dir[IO_WRITE];
	else
		s = &d->dir[IO_DISCARD];
	if (error) {
		__sync_fetch_and_add(&s->errors, 1);
		s->last_error = error;
	}
	if (rq_accounted(rq))
		__sync_fetch_and_add(&s->bytes, nr_bytes);
	if (!final)
		return 0;
	if (rq_accounted(rq) && !rq_flush_seq(rq))
		__sync_fetch_and_add(&s->ios, 1);

	r = bpf_map_lookup_elem(&io_inflight, &key);
	if (!r)
		return 0;
	if (r->issue_ns) {
		__u64 dev_us = (now - r->issue_ns) / 1000, total_us;

		gg_hist_add(s->dev_hist, dev_us);
		__sync_fetch_and_add(&s->dev_sum_us, dev_us);
		start = rq->start_time_ns;
		if (start && start <= r->issue_ns) {
			__u64 q_us = (r->issue_ns - start) / 1000;

			gg_hist_add(s->queue_hist, q_us);
			__sync_fetch_and_add(&s->queue_sum_us, q_us);
		}
		total_us = (now - (start && start <= r->issue_ns ? start : r->issue_ns)) / 1000;
		__sync_fetch_and_add(&s->total_sum_us, total_us);
		if (s->max_period != io_period) {
			s->max_period = io_period;
			s->max_us = 0;
		}
		if (total_us > s->max_us)
			s->max_us = total_us;
		thr_hit = latency_thr_ns && total_us * 1000 >= latency_thr_ns;
		if (thr_hit)
			__sync_fetch_and_add(&s->slow, 1);
	}
	if (r->started && r->tgid && dir != IO_DISCARD) {
		struct io_proc_key pk = {.dev = dev, .tgid = r->tgid};
		struct io_proc *p = bpf_map_lookup_elem(&io_procs, &pk);

		if (!p) {
			struct io_proc n = {};

			__builtin_memcpy(n.comm, r->comm, sizeof(n.comm));
			bpf_map_update_elem(&io_procs, &pk, &n, BPF_NOEXIST);
			p = bpf_map_lookup_elem(&io_procs, &pk);
		}
		if (p) {
			__sync_fetch_and_add(&p->ios[dir & 1], 1);
			__sync_fetch_and_add(&p->bytes[dir & 1], rq->__data_len);
		}
	}
	/* Done: the entry waits for the next request at this address. */
	r->issue_ns = 0;
	r->started = 0;
	return 0;
}

/* ---- page cache ------------------------------------------------------------------------------ */

static __always_inline struct io_pagecache *pc_of_dev(__u32 dev)
{
	struct io_pagecache *p, zero = {};

	if (!dev)
		return NULL;
	p = bpf_map_lookup_elem(&io_pc, &dev);
	if (p)
		return p;
	bpf_map_update_elem(&io_pc, &dev, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&io_pc, &dev);
}

/* The device of the file system a page cache belongs to (direct loads: tp_btf pointers). */
static __always_inline struct io_pagecache *pc_of(const struct address_space *mapping)
{
	const struct inode *host;
	const struct super_block *sb;

	if (!mapping)
		return NULL;
	host = mapping->host;
	if (!host)
		return NULL;
	sb = host->i_sb;
	if (!sb)
		return NULL;
	return pc_of_dev(sb->s_dev);
}

/* Counts one event in the counter at byte offset off of p (NULL: not counted); the body of every page
 * cache program below. */
static __always_inline int pc_count(struct io_pagecache *p, unsigned long off)
{
	if (p)
		(*(__u64 *)((char *)p + off))++;
	return 0;
}

SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(io_pc_access, struct address_space *mapping, unsigned long index, unsigned long last_index)
{
	return pc_count(pc_of(mapping), offsetof(struct io_pagecache, access));
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(io_pc_add, struct folio *folio)
{
	return pc_count(pc_of(folio->mapping), offsetof(struct io_pagecache, add));
}

SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(io_pc_del, struct folio *folio)
{
	return pc_count(pc_of(folio->mapping), offsetof(struct io_pagecache, remove));
}

SEC("tp_btf/writeback_dirty_folio")
int BPF_PROG(io_pc_dirty, struct folio *folio, struct address_space *mapping)
{
	return pc_count(pc_of(mapping), offsetof(struct io_pagecache, dirty));
}

SEC("tp_btf/block_dirty_buffer")
int BPF_PROG(io_pc_bh_dirty, struct buffer_head *bh)
{
	struct block_device *bdev = bh->b_bdev;

	return pc_count(bdev ? pc_of_dev(bdev->bd_dev) : NULL, offsetof(struct io_pagecache, buffer_dirty));
}
