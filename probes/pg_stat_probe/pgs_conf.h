/* pgs_conf.h - pg_stat_probe's configuration (command line, then live). */
#ifndef GG_PGS_CONF_H
#define GG_PGS_CONF_H

struct pgs_conf {
	unsigned int period_s;
	unsigned int timeout_s; /* connecting and each query */
};

#endif
