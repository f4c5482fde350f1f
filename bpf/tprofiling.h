/* tprofiling.h - types shared by tprofiling's kernel half (bpf/tprofiling.bpf.c) and user half
 * (probes/tprofiling/): one finished thread event (a syscall, an on-CPU run, a pthread lock wait) as
 * the ring buffer carries it. */
#ifndef GG_TPROFILING_H
#define GG_TPROFILING_H

/* Event kinds (gala-gopher's event.type). */
enum tp_type {
	TP_TYPE_ONCPU = 0,
	TP_TYPE_FILE,
	TP_TYPE_NET,
	TP_TYPE_LOCK,
	TP_TYPE_SCHED,
	TP_TYPE_PTHREAD,
	TP_TYPE_MEM,
	TP_TYPE_PYGC,
	TP_TYPE_NR,
};

/* The syscalls watched, X(sc, event name, event type, argument kept: 0 the fd, 1 futex's op, -1 none) each:
 * the kernel half's tracepoint programs and user space's syscall table come from this one list. */
#define TP_SYSCALLS(X)                                            \
	X(read, TP_READ, TP_TYPE_FILE, 0)                         \
	X(write, TP_WRITE, TP_TYPE_FILE, 0)                       \
	X(readv, TP_READV, TP_TYPE_FILE, 0)                       \
	X(writev, TP_WRITEV, TP_TYPE_FILE, 0)                     \
	X(pread64, TP_PREAD64, TP_TYPE_FILE, 0)                   \
	X(pwrite64, TP_PWRITE64, TP_TYPE_FILE, 0)                 \
	X(preadv, TP_PREADV, TP_TYPE_FILE, 0)                     \
	X(pwritev, TP_PWRITEV, TP_TYPE_FILE, 0)                   \
	X(sync, TP_SYNC, TP_TYPE_FILE, -1)                        \
	X(fsync, TP_FSYNC, TP_TYPE_FILE, 0)                       \
	X(fdatasync, TP_FDATASYNC, TP_TYPE_FILE, 0)               \
	X(sendto, TP_SENDTO, TP_TYPE_NET, 0)                      \
	X(recvfrom, TP_RECVFROM, TP_TYPE_NET, 0)                  \
	X(sendmsg, TP_SENDMSG, TP_TYPE_NET, 0)                    \
	X(recvmsg, TP_RECVMSG, TP_TYPE_NET, 0)                    \
	X(sendmmsg, TP_SENDMMSG, TP_TYPE_NET, 0)                  \
	X(recvmmsg, TP_RECVMMSG, TP_TYPE_NET, 0)                  \
	X(futex, TP_FUTEX, TP_TYPE_LOCK, 1)                       \
	X(sched_yield, TP_SCHED_YIELD, TP_TYPE_SCHED, -1)         \
	X(nanosleep, TP_NANOSLEEP, TP_TYPE_SCHED, -1)             \
	X(clock_nanosleep, TP_CLOCK_NANOSLEEP, TP_TYPE_SCHED, -1) \
	X(wait4, TP_WAIT4, TP_TYPE_SCHED, 0)                      \
	X(waitid, TP_WAITID, TP_TYPE_SCHED, -1)                   \
	X(select, TP_SELECT, TP_TYPE_SCHED, -1)                   \
	X(pselect6, TP_PSELECT6, TP_TYPE_SCHED, -1)               \
	X(poll, TP_POLL, TP_TYPE_SCHED, -1)                       \
	X(ppoll, TP_PPOLL, TP_TYPE_SCHED, -1)                     \
	X(epoll_wait, TP_EPOLL_WAIT, TP_TYPE_SCHED, 0)            \
	X(epoll_pwait, TP_EPOLL_PWAIT, TP_TYPE_SCHED, 0)
#define TP_SC_NAME(sc, name, type, argi) name,

/* Event names: the syscalls watched (tp_sc_tab), the on-CPU
 * run, the pthread functions and the allocator's (uprobe + uretprobe). The order is user space's name
 * table's. */
enum tp_name {
	TP_ONCPU = 0,
	/* the syscalls watched, in TP_SYSCALLS's order: file, net, lock, sched */
	TP_SYSCALLS(TP_SC_NAME)
	/* pthread_sync (uprobes in libc) */
	TP_PTHREAD_MUTEX_LOCK,
	TP_PTHREAD_MUTEX_TIMEDLOCK,
	TP_PTHREAD_RWLOCK_RDLOCK,
	TP_PTHREAD_RWLOCK_WRLOCK,
	TP_PTHREAD_SPIN_LOCK,
	TP_SEM_WAIT,
	TP_SEM_TIMEDWAIT,
	/* mem_glibc (uprobes in libc) */
	TP_MALLOC,
	TP_CALLOC,
	TP_REALLOC,
	TP_FREE,
	/* python_gc (USDT gc__start / gc__done of CPython) */
	TP_PYTHON_GC,
	TP_NAME_NR,
};

#define TP_STACK_DEPTH 16
#define TP_PATH_DEPTH  8	  /* path components of a file event's descriptor, innermost first */
#define TP_PATH_NAME   32	  /* bytes of each (longer names are cut) */
#define TP_RB_BYTES    (8u << 20) /* the ring buffer */
#define TP_RB_WAKE     (2u << 20) /* user space is woken when this much waits (else it drains on its timer) */

/* The syscall table (tp_sc_tab, by x86-64 syscall number): what an entry's syscall is reported as. */
#define TP_SC_MAX 512
struct tp_sc {
	unsigned short name; /* enum tp_name; 0: not watched */
	unsigned short type; /* enum tp_type */
	signed char argi;    /* the argument kept (0: the first, the fd; 1: futex's op), -1 none */
	unsigned char pad;
	unsigned short bit; /* the sub-probe (TP_SP_*): sc_on says whether it is on */
};

/* Kernel-side counters (one per CPU, summed by user space). */
enum tp_stat {
	TP_ST_EVENTS = 0,    /* events put in the ring buffer */
	TP_ST_DROPPED,	     /* events the ring buffer had no room for */
	TP_ST_SHORT,	     /* events shorter than min_exec_dur, not sent */
	TP_ST_INFLIGHT_FULL, /* starts not recorded: no task storage could be made */
	TP_ST_UNSEEN_IN,     /* on-CPU runs whose switch-in the tracepoint never showed, start inferred */
	TP_ST_NR,
};

/* One finished event. Times are CLOCK_MONOTONIC ns (bpf_ktime_get_ns). */
struct tp_event {
	unsigned long long start_ns;
	unsigned long long end_ns;
	long long arg;	     /* fd (file, net), futex op, 0 */
	long long ret;	     /* the syscall's return value, or the function's */
	unsigned int pid;    /* thread */
	unsigned int tgid;   /* process */
	unsigned short name; /* enum tp_name */
	unsigned short type; /* enum tp_type */
	unsigned int nstack; /* user frames in stack */
	char comm[16];	     /* thread name */
	unsigned long long stack[TP_STACK_DEPTH];
	/* file events: the descriptor's dentry names up to its mount's root, read as the syscall returned
	 * (the descriptor may be closed by the time user space looks); "" beyond the last */
	char path[TP_PATH_DEPTH][TP_PATH_NAME];
};

#endif
