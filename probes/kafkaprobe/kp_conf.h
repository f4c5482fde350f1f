/* kp_conf.h - kafkaprobe's configuration (command line, then live). */
#ifndef GG_KP_CONF_H
#define GG_KP_CONF_H

struct kp_conf {
	unsigned int period_s;
	unsigned int port;
	unsigned int idle_s; /* keys not seen this long are forgotten */
	char dev_name[64];
	unsigned int subprobes; /* none: the runner's place for them */
};

#endif
