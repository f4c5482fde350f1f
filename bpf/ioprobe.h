/* ioprobe.h - types shared by ioprobe's kernel half (ioprobe.bpf.c) and user half (probes/ioprobe/):
 * per block device request statistics, per issuing process counts, page cache events. */
#ifndef GG_IOPROBE_H
#define GG_IOPROBE_H

#include "gg_common.h"

#define IO_DEVS_MAX	512
#define IO_INFLIGHT_MAX 65536 /* upper bound; sized at load from the devices' queue depths */
#define IO_INFLIGHT_MIN 4096
#define IO_PROCS_MAX	4096

/* Directions, as the kernel's diskstats groups: read, write, discard. */
#define IO_READ	   0
#define IO_WRITE   1
#define IO_DISCARD 2
#define IO_DIRS	   3

/* Device key: major << 20 | minor (the kernel's dev_t) of the whole disk. */

struct io_dir_stats {
	__u64 ios;	    /* completed requests, counted as /proc/diskstats does */
	__u64 bytes;	    /* bytes completed (partial completions included) */
	__u64 errors;	    /* completions with an error status */
	__u64 slow;	    /* requests whose total latency reached latency_thr */
	__u64 queue_sum_us; /* time from allocation to issue */
	__u64 dev_sum_us;   /* time from issue to completion */
	__u64 total_sum_us;
	__u64 max_us;	  /* largest total latency in the current period */
	__u64 max_period; /* period (io_period) max_us belongs to */
	__u32 last_error; /* blk_status_t of the last error */
	__u32 pad;
	__u64 queue_hist[GG_LOG2_SLOTS]; /* us */
	__u64 dev_hist[GG_LOG2_SLOTS];	 /* us */
};

struct io_dev_stats {
	char disk_name[32];
	struct io_dir_stats dir[IO_DIRS];
};

/* A request (key: its address). Request structures are recycled from each queue's pool, so an entry
 * is kept and rewritten in place for the next request at that address: no insert or delete per IO. */
struct io_req {
	__u64 issue_ns; /* 0: not issued since its last completion */
	__u32 tgid;	/* who submitted it (block_io_start) */
	__u32 started;	/* 1 between block_io_start and completion: tgid belongs to this request */
	char comm[16];	/* tgid's comm, copied when tgid changes */
};

struct io_proc_key {
	__u32 dev;
	__u32 tgid;
};

struct io_proc {
	char comm[16];
	__u64 ios[2]; /* read, write */
	__u64 bytes[2];
};

/* Page cache events per file system device (the super block's dev_t). */
struct io_pagecache {
	__u64 access;	    /* filemap_get_pages calls (buffered reads, splice) */
	__u64 add;	    /* pages added to the page cache (loaded) */
	__u64 remove;	    /* pages removed from it */
	__u64 dirty;	    /* folios marked dirty */
	__u64 buffer_dirty; /* buffer heads marked dirty */
};

#endif
