/* hw_conf.h - hwprobe's configuration (command line, then live) and its sub-probe bits. */
#ifndef GG_HW_CONF_H
#define GG_HW_CONF_H

#define HW_SP_NIC 0x1u /* nic_failure: transmit timeouts, carrier counts */
#define HW_SP_MEM 0x2u /* mem_mc_event: memory controller errors */

struct hw_conf {
	unsigned int period_s;
	unsigned int subprobes;
};

#endif
