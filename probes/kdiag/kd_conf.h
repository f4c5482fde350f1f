/* kd_conf.h - kdiag's configuration (command line, then live) and its sub-probe bits (bpf/kdiag.h). */
#ifndef GG_KD_CONF_H
#define GG_KD_CONF_H

#include <linux/types.h>

#include "kdiag.h"

struct kd_uconf {
	unsigned int period_s;
	unsigned int subprobes;
	unsigned int events_per_sec;	   /* events (ring buffer records) per second, all kinds */
	unsigned int flow_max;		   /* rows of kdiag_drop_flow and kdiag_recv_lat each (then an overflow row) */
	unsigned int port;		   /* filter: a port of the flow (0: any) */
	char addr[64];			   /* filter: an address of the flow ("": any) */
	char drop_reason[64];		   /* filter: only this drop reason ("": any) */
	unsigned int irq_thr_us;	   /* event: a hardirq or softirq ran this long */
	unsigned int softirq_delay_thr_us; /* event: a softirq waited this long after its raise */
	unsigned int recv_lat_thr_ms;	   /* event: a packet waited this long for its read */
};

#endif
