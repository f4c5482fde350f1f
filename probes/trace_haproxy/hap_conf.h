/* hap_conf.h - trace_haproxy's configuration (command line, then live). */
#ifndef GG_HAP_CONF_H
#define GG_HAP_CONF_H

#include "ctrl_msg.h"

struct hap_conf {
	unsigned int period_s;
	char elf_path[256]; /* "": every process named haproxy */
	struct gg_scope scope;
};

#endif
