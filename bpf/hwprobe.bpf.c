/* hwprobe.bpf.c - hwprobe's kernel half: NIC transmit timeouts (net:net_dev_xmit_timeout) and memory
 * controller errors (ras:mc_event), each record copied raw into a ring buffer. Both are rare: user space
 * decodes and counts them by the tracepoints' tracefs formats, so the kernel half needs no layout. */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>

#include "hwprobe.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} hw_events SEC(".maps");

/* records the ring buffer had no room for */
__u64 hw_dropped = 0;

/* A tracepoint program's context is the record in the per-CPU perf trace buffer (8 KiB): reading
 * HW_RAW_MAX bytes from it stays inside that buffer whatever the record's own length. */
static __always_inline int copy_raw(void *ctx, unsigned int kind)
{
	struct hw_raw *r = bpf_ringbuf_reserve(&hw_events, sizeof(*r), 0);

	if (!r) {
		__sync_fetch_and_add(&hw_dropped, 1);
		return 0;
	}
	r->kind = kind;
	r->len = HW_RAW_MAX;
	if (bpf_probe_read_kernel(r->data, sizeof(r->data), ctx)) {
		bpf_ringbuf_discard(r, 0);
		__sync_fetch_and_add(&hw_dropped, 1);
		return 0;
	}
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("tp/net/net_dev_xmit_timeout")
int hw_xmit_timeout(void *ctx)
{
	return copy_raw(ctx, HW_EV_XMIT_TIMEOUT);
}

SEC("tp/ras/mc_event")
int hw_mc_event(void *ctx)
{
	return copy_raw(ctx, HW_EV_MC);
}
