/* tp_conf.h - tprofiling's configuration (command line, then live) and its sub-probe bits. */
#ifndef GG_TP_CONF_H
#define GG_TP_CONF_H

#include <limits.h>

#define TP_SP_ONCPU	   0x01u /* on-CPU runs (sched_switch) */
#define TP_SP_FILE	   0x02u /* read, write, ..., fsync */
#define TP_SP_NET	   0x04u /* sendto, recvfrom, sendmsg, recvmsg, sendmmsg, recvmmsg */
#define TP_SP_LOCK	   0x08u /* futex */
#define TP_SP_SCHED	   0x10u /* sleeps, waits, poll/select/epoll */
#define TP_SP_PTHREAD_SYNC 0x20u /* uprobes on libc's lock functions */
#define TP_SP_MEM_GLIBC	   0x40u /* uprobes on libc's malloc, calloc, realloc, free */
#define TP_SP_PYTHON_GC	   0x80u /* CPython's gc__start / gc__done USDT probes */

#define TP_CHANNEL_MAX 32u

struct tp_conf {
	unsigned int subprobes;
	unsigned int period_s;	      /* tprofiling_stats records and the timeline files */
	unsigned int min_exec_us;     /* events shorter than this are not sent (in the kernel) */
	unsigned int min_aggr_ms;     /* same-name events of a thread within this window are one event */
	int func_stack;		      /* func.stack: user stacks with syscall and lock events */
	unsigned int output_max_mb;   /* the local files' byte budget (event file + timeline files) */
	char syscall_hooks[16];	      /* "tracepoints" (one pair per syscall) or "raw" (sys_enter/sys_exit) */
	char channel[TP_CHANNEL_MAX]; /* "kafka", "local" or both, comma separated */
	char output_dir[PATH_MAX];
};

#endif
