/* io_conf.h - ioprobe's configuration (command line, then live) and its sub-probe bits. */
#ifndef GG_IO_CONF_H
#define GG_IO_CONF_H

#define SP_TRACE     0x1u
#define SP_ERR	     0x2u
#define SP_COUNT     0x4u
#define SP_PAGECACHE 0x8u
#define SP_ALL	     0xfu
#define SP_BLOCK     (SP_TRACE | SP_ERR | SP_COUNT)

struct io_conf {
	unsigned int period_s;
	unsigned int subprobes;
	unsigned int latency_thr; /* ms, 0 = off */
	char dev_name[32];	  /* only this disk when set */
};

#endif
