/* jvm_conf.h - jvmprobe's configuration (command line, then live). */
#ifndef GG_JVM_CONF_H
#define GG_JVM_CONF_H

#include "ctrl_msg.h"

struct jvm_conf {
	unsigned int period_s;
	struct gg_scope scope;
};

#endif
