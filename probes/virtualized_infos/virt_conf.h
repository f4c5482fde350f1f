/* virt_conf.h - virtualized_infos' configuration (command line, then live). */
#ifndef GG_VIRT_CONF_H
#define GG_VIRT_CONF_H

struct virt_conf {
	unsigned int period_s;
};

#endif
