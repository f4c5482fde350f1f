/* signals.h - autotrace's /proc readers (signals.c). Each returns 0 or a negative errno. */
#ifndef GG_AT_SIGNALS_H
#define GG_AT_SIGNALS_H

#include <stdint.h>

/* Host CPU time in clock ticks: busy (everything but idle and iowait) and the total. */
int at_read_host_cpu(uint64_t *ret_busy, uint64_t *ret_total);
/* TCP segments retransmitted since boot (/proc/net/snmp RetransSegs, this network namespace). */
int at_read_retrans(uint64_t *ret);

struct at_proc_sample {
	uint64_t cpu_ticks;   /* utime + stime of every thread */
	uint64_t start_ticks; /* start time: tells a reused pid */
	uint64_t rss_kb;
	char comm[16];
};
int at_read_proc(uint32_t tgid, struct at_proc_sample *ret);

#endif
