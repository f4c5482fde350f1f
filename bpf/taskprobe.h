/* taskprobe.h - types shared by taskprobe's kernel half (taskprobe.bpf.c) and user half
 * (probes/taskprobe/): per-process counters, syscall classes, file-system kinds, sub-probe flags. */
#ifndef GG_TASKPROBE_H
#define GG_TASKPROBE_H

/* Processes tracked at once in the kernel (the tp_procs map). */
#define TP_PROCS_MAX 4096
/* Verdict bitmap: two bits per tgid below this (PID_MAX_LIMIT on 64-bit kernels). */
#define TP_VERDICT_PIDS (4u * 1024u * 1024u)

/* Syscall classes the per-class tables (gala-gopher's proc_syscall_*) are made of. */
enum tp_sc_class {
	TP_SC_OTHER = 0,
	TP_SC_READ,  /* read, pread64, readv, preadv, preadv2 */
	TP_SC_WRITE, /* write, pwrite64, writev, pwritev, pwritev2 */
	TP_SC_OPEN,  /* open, openat, openat2, creat */
	TP_SC_FSYNC, /* fsync, fdatasync */
	TP_SC_MOUNT,
	TP_SC_UMOUNT,
	TP_SC_SENDMSG, /* sendmsg, sendmmsg, sendto */
	TP_SC_RECVMSG, /* recvmsg, recvmmsg, recvfrom */
	TP_SC_SCHED_YIELD,
	TP_SC_FUTEX,
	TP_SC_EPOLL_WAIT,
	TP_SC_EPOLL_PWAIT, /* epoll_pwait, epoll_pwait2 */
	TP_SC_FORK,
	TP_SC_VFORK,
	TP_SC_CLONE, /* clone, clone3 */
	TP_SC__COUNT,
};

/* File-system operations measured at the syscall layer, on regular files only. */
enum tp_fs_op { TP_FS_READ = 0, TP_FS_WRITE, TP_FS_OPEN, TP_FS_FSYNC, TP_FS_OP__COUNT };
/* Which file system the file is on: any (every regular file), then the ones gala-gopher split out. */
enum tp_fs_kind { TP_FSK_ANY = 0, TP_FSK_EXT4, TP_FSK_OVERLAY, TP_FSK_TMPFS, TP_FSK__COUNT };

/* Sub-probe bits (the .bss `enabled` word): what the kernel half accounts. */
enum tp_sub {
	TP_SUB_BASE = 1u << 0,	    /* base_metrics: off-CPU, iowait, forks */
	TP_SUB_SYSCALL = 1u << 1,   /* proc_syscall */
	TP_SUB_FS = 1u << 2,	    /* proc_fs */
	TP_SUB_IO = 1u << 3,	    /* proc_io */
	TP_SUB_DNS = 1u << 4,	    /* proc_dns */
	TP_SUB_PAGECACHE = 1u << 5, /* proc_pagecache */
};
#define TP_SUB_ALL 0x3fu
/* Without -P (and when a live configuration names none): the sub-probes whose hooks cost the processes
 * outside the scope nothing measurable. proc_syscall and proc_fs need the syscall tracepoints, which
 * put every syscall of every process on the kernel's slow path (bench/RESULTS_task.md): opt-in. */
#define TP_SUB_DEFAULT (TP_SUB_BASE | TP_SUB_IO | TP_SUB_DNS)

struct tp_count_ns {
	unsigned long long count;
	unsigned long long ns;
};

/* Everything counted for one process (tgid) since it entered the scope; user space takes deltas. */
struct tp_proc {
	char comm[16]; /* the group leader's comm, updated at exec */
	unsigned long long syscall_failed;
	/* syscalls and the time in them, by class (the totals are the sums over the classes) */
	struct tp_count_ns sc[TP_SC__COUNT];
	/* slowest syscall of the current report period (.bss max_epoch): user space bumps the epoch after
	 * each report, the first syscall of a new epoch starts over */
	unsigned long long max_ns;
	long long max_ret;
	unsigned int max_nr;
	unsigned int max_epoch;
	struct tp_count_ns fs[TP_FS_OP__COUNT][TP_FSK__COUNT];
	/* block layer, attributed to the process that submitted the request */
	unsigned long long io_less4k[2]; /* requests below 4 KiB: [0] read, [1] write */
	unsigned long long io_more4k[2]; /* requests of 4 KiB or more */
	unsigned long long io_bytes[2];
	unsigned long long io_ns;   /* insert/issue to completion, summed */
	unsigned long long io_done; /* completed requests */
	unsigned long long io_err;
	/* scheduler */
	unsigned long long offcpu_ns; /* blocked (not runnable) */
	unsigned long long iowait_ns; /* blocked in IO wait */
	unsigned long long forks;     /* new processes (not threads) */
	/* page cache */
	unsigned long long pc_load;	    /* pages (folios) added to the page cache */
	unsigned long long pc_dirty;	    /* folios marked dirty */
	unsigned long long pc_buffer_dirty; /* buffer heads marked dirty */
	unsigned long long reclaim_ns;	    /* direct reclaim */
	/* getaddrinfo */
	unsigned long long dns_calls;
	unsigned long long dns_failed;
	unsigned long long dns_ns;
};

#endif
