/* stackprobe.h - types shared by stackprobe's kernel half (stackprobe.bpf.c) and its user half. */
#ifndef GG_STACKPROBE_H
#define GG_STACKPROBE_H

/* Frames kept per stack (kernel and user each); the kernel's default perf_event_max_stack. */
#define SP_MAX_DEPTH 127
#define SP_COMM_LEN  16
/* Upper bounds of the maps' sizes; user space sizes them at load from the number of CPUs (one
 * generation holds one second of samples: SP_STACK_PER_CPU stacks, SP_COUNT_PER_CPU keys, SP_RB_PER_CPU
 * bytes of off-CPU records per CPU, at least the _MIN). A full map is counted (stack_lost, count_lost,
 * ringbuf_lost), never silent. */
#define SP_STACK_ENTRIES   8192	 /* stack-trace map entries per generation (oncpu and mem share it) */
#define SP_COUNT_ENTRIES   16384 /* distinct (thread, stacks, event) keys per generation */
#define SP_OFFCPU_RB_BYTES (4u << 20)
#define SP_STACK_PER_CPU   1024u
#define SP_STACK_MIN	   2048u
#define SP_COUNT_PER_CPU   2048u
#define SP_COUNT_MIN	   4096u
#define SP_RB_PER_CPU	   (512u << 10)
#define SP_RB_MIN	   (1u << 20)
/* CPUs the on-CPU sampler handles (possible CPUs beyond are not sampled). */
#define SP_MAX_CPUS 1024

/* Flame graph kinds, in gala-gopher's order. */
enum sp_event {
	SP_EV_ONCPU = 0,
	SP_EV_OFFCPU = 1,
	SP_EV_MEM = 2,
	SP_EV_MEM_ALLOC = 3, /* libc allocations (uprobes), weighted by bytes requested */
	SP_EV_MEM_LIVE = 4,  /* allocations not freed yet (uprobes + uretprobes, stackprobe_live.h), bytes */
	SP_EV_NR = 5,
};

/*
 * Aggregation key of the in-kernel counts maps (oncpu, mem): one thread, one pair of stacks. The
 * stack ids point into the stack map of the same generation; a negative id is "no stack" (-EFAULT:
 * a user-mode sample has no kernel stack, a kernel thread no user stack) or a lost one.
 */
struct sp_key {
	__u32 tgid;
	__u32 pid;
	__s32 kstack;
	__s32 ustack;
	__u32 event;   /* enum sp_event */
	__u32 pystack; /* oncpu: the Python frames (py_stacks map, stackprobe_py.h), 0 = none */
	/* mem_alloc: the return address at the allocator's entry ([sp]). The allocator has not pushed a
	 * frame yet, so a frame-pointer walk from there skips its immediate caller; user space inserts
	 * this address as the second user frame. 0 otherwise. */
	__u64 ret_ip;
	/* 0: ustack is an id in the stack map. Else the user stack was unwound in BPF with the .eh_frame
	 * tables (stackprobe_unwind.bpf.h) and is in ustacks<gen> under ((u64)uw << 32 | (u32)ustack). */
	__u32 uw;
	__u32 cpu;		 /* oncpu with cpu_keys set (autotrace's per-CPU ring): the sampled CPU; else 0 */
	char comm[SP_COMM_LEN];	 /* thread */
	char pcomm[SP_COMM_LEN]; /* process (group leader) */
};

/* value: samples (oncpu), faults (mem) or bytes (mem_alloc), summed. */
struct sp_val {
	__u64 count;
};

/*
 * Off-CPU: a thread's stacks taken when it is switched out, kept in task-local storage until it
 * runs again; when it was away at least min_block_ns the whole record goes to the ring buffer
 * (header + kn + un frames, kernel frames first, innermost first).
 */
struct sp_offcpu {
	__u64 start_ns; /* switch-out time; 0 while running */
	__u64 delta_ns; /* blocked time (set at switch-in) */
	__u64 rt_ns;	/* the scheduler's count of the task's run time at the switch-out */
	__u32 tgid;
	__u32 pid;
	__u32 kn;  /* kernel frames */
	__u32 un;  /* user frames */
	__u32 cpu; /* where it was switched in */
	__u32 cpu_pad;
	char comm[SP_COMM_LEN];
	char pcomm[SP_COMM_LEN];
	__u64 ips[2 * SP_MAX_DEPTH];
};

/* The most strata one on-CPU shot stands for: its own and two a late pacer skipped. A shot after a
 * longer gap (a pacer held off the CPU, a vCPU stalled by the host, an arming error) would put all of
 * the gap's CPU time on whatever one stack runs when it fires; the strata beyond are counted as
 * missed instead (SP_ST_ONCPU_MISSED, stackprobe_health.oncpu_missed). */
#define SP_SHOT_MAX_STRATA 3
/* A shot firing more than EARLY before its due time is not the armed one; one firing more than LATE
 * after it is not at its random point (stackprobe.bpf.c, pace_due). Shots fire 15-130 us after their
 * due time here (the two arming ioctls come after the time is taken). */
#define SP_SHOT_EARLY_NS 50000ull
#define SP_SHOT_LATE_NS	 2000000ull

/* Per-CPU counters the probe reports about itself. */
enum sp_stat {
	SP_ST_ONCPU_SAMPLES = 0, /* on-CPU shots taken (one per stratum and CPU) */
	SP_ST_MEM_FAULTS,	 /* page faults in scope */
	SP_ST_OFFCPU_SWITCHES,	 /* switch-outs recorded */
	SP_ST_OFFCPU_EVENTS,	 /* blocks >= threshold sent */
	SP_ST_OFFCPU_SHORT,	 /* blocks under the threshold (not sent) */
	SP_ST_STACK_LOST,	 /* stack map full or hash collision (-EEXIST/-ENOMEM) */
	SP_ST_COUNT_LOST,	 /* counts map full */
	SP_ST_RB_LOST,		 /* ring buffer full */
	SP_ST_STORAGE_LOST,	 /* task storage not available */
	SP_ST_ALLOC_CALLS,	 /* allocator calls in scope (mem_alloc) */
	SP_ST_ONCPU_MISSED,	 /* strata over SP_SHOT_MAX_STRATA a late shot did not stand for */
	SP_ST_LIVE_ALLOCS,	 /* allocations recorded as live (mem_live) */
	SP_ST_LIVE_FREES,	 /* frees of recorded allocations (mem_live) */
	SP_ST_LIVE_LOST,	 /* allocations not recorded: a mem_live map full or the stack lost */
	SP_ST_UW_STACKS,	 /* user stacks unwound with the .eh_frame tables */
	SP_ST_UW_FP_FRAMES,	 /* frames of those found by frame pointers (no table row for the pc) */
	SP_ST_UW_NO_TABLES,	 /* user stacks of processes without tables yet: frame pointers only */
	SP_ST_UW_LOST,		 /* unwound stacks lost: ustacks map full */
	SP_ST_ONCPU_EARLY,	 /* shots fired before their due time (stale re-fires), not counted */
	SP_ST_ONCPU_LATE,	 /* strata of shots fired more than SP_SHOT_LATE_NS after their due time */
	SP_ST_LIVE_MAPS,	 /* mmap/mremap/brk regions recorded (mem_live) */
	SP_ST_LIVE_MAP_INNER,	 /* mmap/brk growth made by the allocator inside malloc & co: not counted */
	SP_ST_OFFCPU_UNSEEN_IN,	 /* blocks whose switch-in was never seen, ended at the next switch-out */
	SP_ST_UW_STALE,		 /* unwound stacks through code mapped after their tables: refresh asked */
	SP_ST_NR,
};

/* ---- Python frames (stackprobe_py.h) ---- */
#define SP_PY_DEPTH   48   /* Python frames kept per sample, innermost first */
#define SP_PY_THREADS 64   /* thread states looked at to find the sampled thread's */
#define SP_PY_PROCS   1024 /* Python processes known at once */
#define SP_PY_STACKS  1024 /* distinct Python stacks kept (LRU; a sample's must last until its drain) */
#define SP_PY_ENTRY   1ull /* low bit of a frame's code pointer: the frame is an entry (is_entry) */

/* Where a CPython process keeps its frames: the address of _PyRuntime and the offsets of one
 * version's structures (user space fills them in from its table per version). */
struct sp_py_proc {
	__u64 runtime;
	__u16 interp_head;    /* _PyRuntimeState.interpreters.head */
	__u16 tstate_current; /* _PyRuntimeState.gilstate.tstate_current */
	__u16 threads_head;   /* PyInterpreterState.threads.head */
	__u16 ts_next;	      /* PyThreadState.next */
	__u16 ts_thread_id;   /* PyThreadState.thread_id (pthread_self(): the thread's fs base) */
	__u16 ts_cframe;      /* PyThreadState.cframe */
	__u16 cframe_current; /* _PyCFrame.current_frame */
	__u16 frame_code;     /* _PyInterpreterFrame.f_code */
	__u16 frame_previous; /* _PyInterpreterFrame.previous */
	__u16 frame_is_entry; /* _PyInterpreterFrame.is_entry */
	__u32 pad;
};

/* One sample's Python frames: code object addresses (| SP_PY_ENTRY), innermost first. */
struct sp_py_stack {
	__u32 n;
	__u32 tgid;
	__u64 codes[SP_PY_DEPTH];
};

/* ---- mem_live: live bytes per stack (stackprobe_live.h) ---- */
/* The maps are not generational: they hold the state of the heap. Live pointers are allocated on
 * demand (no preallocation) up to SP_LIVE_PTRS; a full map is counted (SP_ST_LIVE_LOST). The sizes are
 * paid whether mem_live is on or not (hash buckets, stack map): 16 B a block, 1 KiB a stack. */
#define SP_LIVE_STACKS	1024u
#define SP_LIVE_KEYS	8192u
#define SP_LIVE_PTRS	(1u << 17)
#define SP_LIVE_PENDING 2048u

/* One allocation site: process, user stack, caller of the allocator (see ret_ip). uw 0: ustack is an id
 * in live_stacks (the kernel's frame-pointer walk); else the stack was unwound with the .eh_frame tables
 * and is in live_ustacks under ((u64)uw << 32 | (u32)ustack) (mmap/brk sites, when the process has
 * tables). */
struct sp_live_key {
	__u32 tgid;
	__s32 ustack;
	__u64 ret_ip;
	__u32 uw;
	__u32 pad;
};

struct sp_live_val {
	__s64 bytes;  /* allocated and not freed */
	__s64 allocs; /* blocks allocated and not freed */
	char comm[SP_COMM_LEN];
	char pcomm[SP_COMM_LEN];
};

/* A live block: (process, address) -> its size and site. */
struct sp_live_ptr_key {
	__u32 tgid;
	__u32 pad;
	__u64 ptr;
};

struct sp_live_ptr {
	__u64 size;
	struct sp_live_key site;
};

/* An allocator call between its entry and its return, per thread. Its presence also says "this thread
 * is inside the allocator": the mmap/brk the allocator makes then are its own (not counted). */
struct sp_live_pend {
	__u64 size;
	__u64 memptr; /* posix_memalign: where the pointer is written; 0 otherwise */
	struct sp_live_key site;
	__u32 lost; /* the stack could not be taken: nothing is recorded at the return */
	__u32 pad;
};

/* ---- mem_live: anonymous mmap regions and brk growth (stackprobe_mmap.bpf.h) ---- */
/* Each process in scope that maps anonymous memory gets a table of regions, [start, end) per site, so
 * that a munmap (whole, head, tail or middle), mremap, brk shrink or MAP_FIXED over a region gives back
 * exactly the bytes it covered. The tables are allocated on demand (8 KiB each); a full table or map is
 * counted (SP_ST_LIVE_LOST) and its bytes are not recorded. */
#define SP_MM_REGIONS 256u
#define SP_MM_PROCS   1024u
#define SP_MM_PENDING 2048u

/* A region; its site is (the process, ustack, uw, ret_ip) in live_sites. */
struct sp_mm_region {
	__u64 start;
	__u64 end; /* 0: a free slot; 1: being filled (claimed with a compare-and-swap) */
	__s32 ustack;
	__u32 uw;
	__u64 ret_ip;
};

struct sp_mm_proc {
	__u32 hi; /* slots [0, hi) have been used: scans stop there */
	__u32 pad;
	struct sp_mm_region r[SP_MM_REGIONS];
};

/* BPF programs of the mmap/brk half (user space attaches them with mem_live) */
#define SP_MM_NPROGS 8

enum sp_mm_op {
	SP_MM_MMAP = 1,
	SP_MM_MREMAP = 2,
	SP_MM_BRK = 3,
};

/* A memory syscall between its entry and its exit, per thread. */
struct sp_mm_pend {
	__u64 a, b, c; /* mmap: len, flags, prot; mremap: addr, old_len, new_len; brk: the break before */
	__u32 op;      /* enum sp_mm_op */
	__u32 flags;   /* mremap's flags */
};

#endif
