/* sli_conf.h - sliprobe's configuration (command line, then live) and its sub-probe bits. */
#ifndef GG_SLI_CONF_H
#define GG_SLI_CONF_H

#define SLI_SP_CPU	 0x01u /* scheduler hooks: sli_cpu_* */
#define SLI_SP_MEM	 0x02u /* reclaim and compaction hooks: sli_mem_* */
#define SLI_SP_IO	 0x04u /* block hooks: sli_io_* */
#define SLI_SP_NODE	 0x08u /* report the node tables */
#define SLI_SP_CONTAINER 0x10u /* report the container tables */
#define SLI_SP_HISTOGRAM 0x20u /* report the *_histogram tables */
#define SLI_SP_HOOKS	 (SLI_SP_CPU | SLI_SP_MEM | SLI_SP_IO)

struct sli_conf {
	unsigned int period_s;
	unsigned int subprobes;
};

#endif
