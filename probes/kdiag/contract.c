/* contract.c - kdiag's contract: REST name "kdiag", sub-probes drop, irq and net_recv_lat, parameters. */
#include "contract.h"

#ifndef GG_CONTRACT_ONLY
#include "kd_conf.h"
#endif

/* clang-format off */
static const struct gg_subprobe subprobes[] = {
	{"drop", GG_BIT(KD_SP_DROP), 1, 0},
	{"irq", GG_BIT(KD_SP_IRQ), 1, 0},
	{"net_recv_lat", GG_BIT(KD_SP_RECVLAT), 0, 0},
};

static const struct gg_param_spec params[] = {
	GG_PARAM_REPORT_PERIOD(GG_STORE(struct kd_uconf, period_s)),
	{.name = "events_per_sec", .type = GG_PT_INT, .def = 100, .min = 0, .max = 100000, .unit = "events/s",
	 .flag = "--events-per-sec", .help = "events sent per second at most (drops, interrupts, receive latency "
	 "together); the rest are counted in kdiag_event_stat.capped", GG_STORE(struct kd_uconf, events_per_sec)},
	{.name = "flow_max", .type = GG_PT_INT, .def = 1024, .min = 1, .max = 65536, .unit = "rows",
	 .flag = "--flow-max", .help = "flows kept in kdiag_drop_flow and kdiag_recv_lat; later ones are summed "
	 "in an overflow row", GG_STORE(struct kd_uconf, flow_max)},
	{.name = "filter_port", .type = GG_PT_INT, .def = 0, .min = 1, .max = 65535, .zero_off = 1,
	 .flag = "--port", .help = "only packets with this source or destination port (drops, receive latency)",
	 GG_STORE(struct kd_uconf, port)},
	{.name = "filter_addr", .type = GG_PT_NAME, .def_str = "", .flag = "--addr",
	 .help = "only packets from or to this IPv4 or IPv6 address", GG_STORE(struct kd_uconf, addr)},
	{.name = "drop_reason", .type = GG_PT_NAME, .def_str = "", .flag = "--reason",
	 .help = "only drops of this reason (the kernel's enum skb_drop_reason, e.g. NETFILTER_DROP)",
	 GG_STORE(struct kd_uconf, drop_reason)},
	GG_PARAM_THR("irq_thr", "us", "--irq-thr", "an event with the kernel stack when a hard or soft interrupt runs this long",
		     GG_STORE(struct kd_uconf, irq_thr_us)),
	GG_PARAM_THR("softirq_delay_thr", "us", "--softirq-delay-thr",
		     "an event with the kernel stack when a softirq starts this long after it was raised",
		     GG_STORE(struct kd_uconf, softirq_delay_thr_us)),
	GG_PARAM_THR("recv_lat_thr", "ms", "--recv-lat-thr", "an event when a received packet waits this long for its read",
		     GG_STORE(struct kd_uconf, recv_lat_thr_ms)),
};
/* clang-format on */

GG_CONTRACT(kdiag, "kdiag", 0,
	    "kernel diagnosis: packet drops with reason, flow and stack; hard/soft interrupt time and softirq "
	    "delay; receive latency per flow; events");
