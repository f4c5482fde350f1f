/* stackprobe_py.h - Python frames of an on-CPU sample, included by stackprobe.bpf.c: for a CPython
 * process user space registered (py_procs: where _PyRuntime is, the version's offsets), the sampled
 * thread's PyThreadState is found by its pthread id (the thread's fs base), and its frame chain is
 * read: the code objects, innermost first, go to py_stacks under a hash of them, which the sample's key
 * carries. User space reads the names from the code objects. */
#ifndef GG_STACKPROBE_PY_H
#define GG_STACKPROBE_PY_H

/* key: tgid */
GG_MAP(py_procs, BPF_MAP_TYPE_HASH, __u32, struct sp_py_proc, SP_PY_PROCS, 0);

GG_MAP(py_stacks, BPF_MAP_TYPE_LRU_HASH, __u32, struct sp_py_stack, SP_PY_STACKS, 0);

GG_MAP(py_scratch, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct sp_py_stack, 1, 0);

static __always_inline __u64 py_read_ptr(__u64 addr)
{
	__u64 v = 0;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return 0;
	return v;
}

/* The current thread's Python stack id (0: not a registered Python process, or no frames). */
static __always_inline __u32 py_stack_id(__u32 tgid)
{
	struct sp_py_proc *pp = bpf_map_lookup_elem(&py_procs, &tgid);
	struct task_struct *task;
	struct sp_py_stack *st;
	__u64 fsbase, ts, frame, hash = 14695981039346656037ull;
	__u32 id, i;

	if (!pp)
		return 0;
	task = (struct task_struct *)bpf_get_current_task();
	fsbase = BPF_CORE_READ(task, thread.fsbase);
	if (!fsbase)
		return 0;
	/* the GIL holder is the thread on the CPU most of the time; else look through the list */
	ts = py_read_ptr(pp->runtime + pp->tstate_current);
	if (!ts || py_read_ptr(ts + pp->ts_thread_id) != fsbase) {
		__u64 interp = py_read_ptr(pp->runtime + pp->interp_head);

		ts = py_read_ptr(interp + pp->threads_head);
		for (i = 0; i < SP_PY_THREADS && ts; i++) {
			if (py_read_ptr(ts + pp->ts_thread_id) == fsbase)
				break;
			ts = py_read_ptr(ts + pp->ts_next);
		}
		if (i == SP_PY_THREADS)
			ts = 0;
	}
	if (!ts)
		return 0;
	frame = py_read_ptr(py_read_ptr(ts + pp->ts_cframe) + pp->cframe_current);
	st = gg_map_elem0(&py_scratch);
	if (!st || !frame)
		return 0;
	st->n = 0;
	st->tgid = tgid;
	for (i = 0; i < SP_PY_DEPTH && frame; i++) {
		__u64 code = py_read_ptr(frame + pp->frame_code);
		__u8 entry = 0;

		if (!code)
			break;
		(void)bpf_probe_read_user(&entry, sizeof(entry), (void *)(frame + pp->frame_is_entry));
		code |= entry ? SP_PY_ENTRY : 0;
		st->codes[i] = code;
		st->n = i + 1;
		hash = (hash ^ code) * 1099511628211ull;
		frame = py_read_ptr(frame + pp->frame_previous);
	}
	if (!st->n)
		return 0;
	hash ^= tgid;
	id = (__u32)(hash ^ (hash >> 32));
	if (!id)
		id = 1;
	if (bpf_map_update_elem(&py_stacks, &id, st, BPF_ANY))
		return 0;
	return id;
}

#endif
