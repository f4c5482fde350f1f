/* ep_conf.h - endpoint's configuration (command line, then live) and its sub-probe bits. */
#ifndef GG_EP_CONF_H
#define GG_EP_CONF_H

#define SP_TCP 0x1u
#define SP_UDP 0x2u
#define SP_ALL (SP_TCP | SP_UDP)

struct ep_conf {
	unsigned int period_s;
	unsigned int subprobes;
};

#endif
