/* hwprobe.h - types shared by hwprobe's kernel half (bpf/hwprobe.bpf.c) and user half (probes/hwprobe/):
 * a tracepoint's raw record as the kernel wrote it, decoded in user space by its tracefs format. */
#ifndef GG_HWPROBE_H
#define GG_HWPROBE_H

/* Which tracepoint a record comes from. */
enum hw_ev_kind {
	HW_EV_XMIT_TIMEOUT = 1, /* net:net_dev_xmit_timeout */
	HW_EV_MC = 2,		/* ras:mc_event */
};

/* Bytes of a raw record copied: fixed fields and the __data_loc strings after them (mc_event's label,
 * msg and driver_detail are short; a longer record is cut and its strings checked against this). */
#define HW_RAW_MAX 1024

struct hw_raw {
	unsigned int kind; /* enum hw_ev_kind */
	unsigned int len;  /* bytes of data */
	unsigned char data[HW_RAW_MAX];
};

#endif
