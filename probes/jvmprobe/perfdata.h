/* perfdata.h - HotSpot's performance-counter memory (the hsperfdata_<user>/<pid> file): a bounded parser
 * of its binary format and the counters jvmprobe reports, taken out of it. No allocation, no I/O. */
#ifndef GG_PERFDATA_H
#define GG_PERFDATA_H

#include <stddef.h>
#include <stdint.h>

#define PD_MAGIC	  0xcafec0c0u /* the first 4 bytes, always big-endian */
#define PD_PROLOGUE_LEN	  32u
#define PD_ENTRY_HDR_LEN  20u
#define PD_ENTRIES_MAX	  8192u	     /* a JDK 17 VM has about 200; more is not a VM's file */
#define PD_FILE_MAX	  (4u << 20) /* -XX:PerfDataMemorySize defaults to 64 KiB; bigger is refused */
#define PD_STR_MAX	  128u	     /* strings are cut to this (NUL included) */
#define PD_COLLECTORS_MAX 8u
#define PD_GENS_MAX	  4u
#define PD_SPACES_MAX	  4u

/* One counter of the file, pointing into the buffer. */
struct pd_entry {
	const char *name;    /* NUL-terminated inside the entry */
	char type;	     /* 'J' (jlong) or 'B' (jbyte vector: a string); others are skipped by users */
	uint8_t units;	     /* 1 none, 2 bytes, 3 ticks, 4 events, 5 string, 6 hertz */
	uint8_t variability; /* 1 constant, 2 monotonic, 3 variable */
	uint32_t vector_len; /* 0 for a scalar */
	const unsigned char *data;
	uint32_t data_len;
	int little; /* byte order of the data */
};

/* Walks a buffer's entries. */
struct pd_iter {
	const unsigned char *buf;
	size_t len;    /* bytes that may be read: min(buffer, prologue's "used") */
	uint32_t off;  /* next entry */
	uint32_t left; /* entries not yet walked */
	int little;
};

/*
 * Check the prologue (magic, byte order, major version 2, accessible) and start a walk.
 * 0; -EINVAL not a perf data buffer (or too short); -EAGAIN the VM has not finished creating it
 * (accessible = 0); -ENOTSUP another major version.
 */
int pd_iter__init(struct pd_iter *it, const void *buf, size_t len);
/* The next entry into *ret: 1, 0 at the end, -EINVAL for an entry that does not fit its buffer (the
 * walk stops there). Every pointer in *ret is inside the buffer and every length checked. */
int pd_iter__next(struct pd_iter *it, struct pd_entry *ret);
/* A scalar jlong entry's value (0 when the entry is not one). */
int64_t pd_entry__long(const struct pd_entry *e);
/* A 'B' entry's bytes as a string (up to its first NUL, cut to len - 1) into buf. */
void pd_entry__str(const struct pd_entry *e, char *buf, size_t len);

/* A memory pool: a GC generation's space, metaspace or the compressed class space (bytes). */
struct pd_pool {
	char name[PD_STR_MAX];
	int64_t used, capacity, max, init;
	int present;
};

/* The counters jvmprobe reports, as HotSpot names them (sun.*, java.*); absent ones stay 0. */
struct pd_jvm {
	char vm_name[PD_STR_MAX], vm_vendor[PD_STR_MAX], vm_version[PD_STR_MAX];
	char command[PD_STR_MAX];   /* sun.rt.javaCommand: main class (or -jar file) and arguments */
	char gc_policy[PD_STR_MAX]; /* sun.gc.policy.name: "GarbageFirst", "Copy:MSC", "ParScav:MSC" ... */
	int64_t hrt_frequency;	    /* ticks per second of the *Time counters */
	int64_t vm_begin_ms;	    /* sun.rt.createVmBeginTime: wall clock ms */
	int64_t cls_loaded, cls_unloaded, cls_shared_loaded, cls_shared_unloaded;
	int64_t threads_live, threads_daemon, threads_peak, threads_started;
	int64_t safepoints, safepoint_ticks, safepoint_sync_ticks;
	int64_t jit_ticks, jit_compiles;
	unsigned int ncollectors; /* 1 + the highest collector index seen */
	struct pd_collector {
		char name[PD_STR_MAX];
		int64_t invocations, ticks;
		int present;
	} collectors[PD_COLLECTORS_MAX];
	unsigned int ngens;
	struct pd_gen {
		char name[PD_STR_MAX];
		int64_t capacity, max, min;
		int present;
		unsigned int nspaces;
		struct pd_pool spaces[PD_SPACES_MAX];
	} gens[PD_GENS_MAX];
	struct pd_pool metaspace, class_space;
	unsigned int nentries; /* entries walked */
};

/* Fill *ret from a buffer (zeroed first). pd_iter__init's errors, or 0 (also when an entry in the middle
 * is malformed: what came before it is kept; ret->nentries says how far the walk went). */
int pd_jvm__parse(const void *buf, size_t len, struct pd_jvm *ret);

#endif
