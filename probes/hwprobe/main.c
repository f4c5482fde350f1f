/* main.c - hwprobe ("hw"): NIC transmit timeouts (net:net_dev_xmit_timeout) and carrier changes
 * (/sys/class/net/<dev>/carrier_{up,down}_count, and rtnetlink link messages for events as they happen),
 * memory controller errors (ras:mc_event); counts as tables, each fault also as an event. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <linux/ethtool.h>
#include <linux/if_arp.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>

#include "bpf_util.h"
#include "hw_conf.h"
#include "hw_decode.h"
#include "hwprobe.h"
#include "hwprobe.meta.h"
#include "hwprobe.skel.h"
#include "probe.h"
#include "probe_runner.h"

#define TICK_MS 1000u

extern const struct gg_contract gg_contract_hwprobe;
#define CONTRACT (&gg_contract_hwprobe)

struct hw_ctx {
	struct probe_rt *rt;
	struct hw_conf base, cur;
	struct hwprobe *skel;
	struct ring_buffer *rb;
	int nl_fd, ep_fd, eth_fd;
	int bpf_stats;
	struct gg_bpf_stats_prev stats_prev[4];
	struct hw_agg agg;
	struct probe_buf b;
	uint64_t dropped_seen;
};

static const char notes[] =
	"Sub-probes: hw_nic (table nic_failure: transmit timeouts, carrier up/down counts of the host's\n"
	"network devices) and hw_mem (table mem_mc_event: EDAC memory controller errors). Events (event_v2,\n"
	"entity hw): a carrier that went down, a transmit timeout, a memory error (CE: WARN, UE/Deferred:\n"
	"ERROR, Fatal: FATAL), as they happen.\n"
	"Live configuration: {\"probe\": [\"hw_nic\", \"hw_mem\"], \"params\": {\"report_period\": N}}\n";

/* ---- events ------------------------------------------------------------------------------------- */

static void nic_event(struct hw_ctx *ctx, struct hw_nic *n, const char *metric, const char *body)
{
	char labels[128];
	size_t used = 0;

	labels[0] = 0;
	gg_event_label(labels, sizeof(labels), &used, "dev_name", n->dev);
	(void)gg_event_emit(ctx->rt, "hw", n->dev, metric, "WARN", body, NULL, labels);
}

/* An event when the device's carrier went down since the last one said. */
static void carrier_check(struct hw_ctx *ctx, struct hw_nic *n)
{
	char body[160];

	if (n->carrier_down <= n->reported_down)
		return;
	snprintf(body, sizeof(body), "%s: carrier went down %llu time%s (carrier_down_count %llu, up %llu)", n->dev,
		 (unsigned long long)(n->carrier_down - n->reported_down),
		 n->carrier_down - n->reported_down > 1 ? "s" : "", (unsigned long long)n->carrier_down,
		 (unsigned long long)n->carrier_up);
	n->reported_down = n->carrier_down;
	nic_event(ctx, n, "carrier_down_count", body);
}

static void mc_event(struct hw_ctx *ctx, const struct hw_mc_rec *r, const struct hw_mc *m)
{
	const char *sev = r->error_type == 0   ? "WARN"
			  : r->error_type == 3 ? "FATAL"
			  : r->error_type == 4 ? "INFO"
					       : "ERROR";
	char id[160], body[512], labels[256];
	size_t used = 0;

	snprintf(id, sizeof(id), "mc%u/%s", r->mc_index, r->label);
	snprintf(body, sizeof(body),
		 "%u %s error%s%s%s on %s (mc %u, location %d:%d:%d, address 0x%llx, grain %llu, "
		 "syndrome 0x%llx%s%s); %llu so far",
		 r->error_count, r->err_type, r->error_count > 1 ? "s" : "", r->msg[0] ? ": " : "", r->msg, r->label,
		 r->mc_index, r->top, r->mid, r->low, (unsigned long long)r->address,
		 r->grain_bits < 64 ? 1ull << r->grain_bits : 0, (unsigned long long)r->syndrome,
		 r->detail[0] ? " " : "", r->detail, (unsigned long long)(m ? m->errors : 0));
	labels[0] = 0;
	gg_event_label(labels, sizeof(labels), &used, "err_type", r->err_type);
	gg_event_label(labels, sizeof(labels), &used, "label", r->label);
	(void)gg_event_emit(ctx->rt, "hw", id, "error_count", sev, body, NULL, labels);
}

/* ---- the ring buffer (tracepoint records) ------------------------------------------------------- */

static int on_record(void *data, void *rec, size_t size)
{
	struct hw_ctx *ctx = data;
	const struct hw_raw *r = rec;
	size_t len;

	if (size < offsetof(struct hw_raw, data))
		return 0;
	len = r->len < size - offsetof(struct hw_raw, data) ? r->len : size - offsetof(struct hw_raw, data);
	if (r->kind == HW_EV_XMIT_TIMEOUT) {
		struct hw_nic *n;
		char body[160];

		if (hw_agg__xmit_timeout(&ctx->agg, r->data, len, &n) == 0 && n) {
			snprintf(body, sizeof(body), "%s: transmit timeout on queue %d (driver %s); %llu so far",
				 n->dev, n->queue, n->driver[0] ? n->driver : "?", (unsigned long long)n->timeouts);
			nic_event(ctx, n, "xmit_timeout_count", body);
		}
	} else if (r->kind == HW_EV_MC) {
		struct hw_mc_rec mr;
		struct hw_mc *m;

		if (hw_agg__mc_event(&ctx->agg, r->data, len, &mr, &m) == 0)
			mc_event(ctx, &mr, m);
	}
	return 0;
}

/* ---- rtnetlink: carrier counts as they change --------------------------------------------------- */

static void on_link(struct hw_ctx *ctx, const struct nlmsghdr *h)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	const struct rtattr *a;
	int alen = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof(*ifi));
	char name[IF_NAMESIZE] = "";
	uint32_t up = 0, down = 0;
	int have_counts = 0;
	struct hw_nic *n;

	if (alen < 0 || ifi->ifi_type == ARPHRD_LOOPBACK)
		return;
	for (a = IFLA_RTA(ifi); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
		size_t pl = RTA_PAYLOAD(a);

		if (a->rta_type == IFLA_IFNAME && pl > 0)
			snprintf(name, sizeof(name), "%.*s", (int)(pl < sizeof(name) ? pl : sizeof(name) - 1),
				 (const char *)RTA_DATA(a));
		else if (a->rta_type == IFLA_CARRIER_UP_COUNT && pl >= 4)
			memcpy(&up, RTA_DATA(a), 4), have_counts |= 1;
		else if (a->rta_type == IFLA_CARRIER_DOWN_COUNT && pl >= 4)
			memcpy(&down, RTA_DATA(a), 4), have_counts |= 2;
	}
	if (!name[0] || have_counts != 3 || !(n = hw_agg__nic(&ctx->agg, name)))
		return;
	n->present = 1;
	n->carrier_up = up;
	n->carrier_down = down;
	if (ctx->cur.subprobes & HW_SP_NIC)
		carrier_check(ctx, n);
}

static void drain_netlink(struct hw_ctx *ctx)
{
	static char buf[32768] __attribute__((aligned(NLMSG_ALIGNTO)));

	for (;;) {
		ssize_t n = recv(ctx->nl_fd, buf, sizeof(buf), MSG_DONTWAIT);
		const struct nlmsghdr *h;
		int len;

		if (n <= 0) {
			if (n < 0 && errno == ENOBUFS) /* lost messages: the next report's sysfs scan catches up */
				continue;
			return;
		}
		len = (int)n;
		for (h = (const struct nlmsghdr *)buf; NLMSG_OK(h, (unsigned int)len); h = NLMSG_NEXT(h, len))
			if (h->nlmsg_type == RTM_NEWLINK)
				on_link(ctx, h);
	}
}

static unsigned int tick(void *arg)
{
	struct hw_ctx *ctx = arg;

	if (ctx->rb)
		(void)ring_buffer__consume(ctx->rb);
	if (ctx->nl_fd >= 0)
		drain_netlink(ctx);
	(void)probe_rt__flush(ctx->rt);
	return TICK_MS;
}

/* ---- sysfs: every device's counts each report ---------------------------------------------------- */

static int read_u64(struct hw_ctx *ctx, const char *dev, const char *file, uint64_t *ret)
{
	char path[300];

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", dev, file);
	if (probe_read_file(path, &ctx->b, 256))
		return -ENOENT;
	*ret = strtoull(ctx->b.data, NULL, 10);
	return 0;
}

/* The driver name as `ethtool -i` shows it (veth, virtio_net, ...). */
static void driver_of(struct hw_ctx *ctx, const char *dev, char *buf, size_t len)
{
	struct ethtool_drvinfo info = {.cmd = ETHTOOL_GDRVINFO};
	struct ifreq ifr;

	if (ctx->eth_fd < 0)
		return;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev);
	ifr.ifr_data = (char *)&info;
	if (ioctl(ctx->eth_fd, SIOCETHTOOL, &ifr) == 0 && info.driver[0])
		snprintf(buf, len, "%.*s", (int)(len - 1), info.driver);
}

static void scan_sysfs(struct hw_ctx *ctx, int events)
{
	DIR *d = opendir("/sys/class/net");
	struct dirent *e;

	for (unsigned int i = 0; i < ctx->agg.nnics; i++)
		ctx->agg.nics[i].present = 0;
	if (!d)
		return;
	while ((e = readdir(d))) {
		uint64_t type = 0, up, down;
		struct hw_nic *n;

		if (e->d_name[0] == '.' || (read_u64(ctx, e->d_name, "type", &type) == 0 && type == ARPHRD_LOOPBACK))
			continue;
		if (read_u64(ctx, e->d_name, "carrier_up_count", &up) ||
		    read_u64(ctx, e->d_name, "carrier_down_count", &down) || !(n = hw_agg__nic(&ctx->agg, e->d_name)))
			continue;
		n->present = 1;
		n->carrier_up = up;
		n->carrier_down = down;
		if (!n->driver[0])
			driver_of(ctx, n->dev, n->driver, sizeof(n->driver));
		if (events)
			carrier_check(ctx, n);
		else
			n->reported_down = n->carrier_down; /* the start: only changes from now on are events */
	}
	closedir(d);
}

/* Devices gone (not in sysfs, no timeouts) leave the table, so that it does not fill with old veths. */
static void forget_gone(struct hw_agg *a)
{
	unsigned int k = 0;

	for (unsigned int i = 0; i < a->nnics; i++)
		if (a->nics[i].present || a->nics[i].timeouts)
			a->nics[k++] = a->nics[i];
	a->nnics = k;
}

static void report(void *arg)
{
	struct hw_ctx *ctx = arg;
	static struct probe_rec r;
	uint64_t dropped;

	tick(ctx);
	if (ctx->cur.subprobes & HW_SP_NIC) {
		scan_sysfs(ctx, 1);
		for (unsigned int i = 0; i < ctx->agg.nnics; i++) {
			const struct hw_nic *n = &ctx->agg.nics[i];

			probe_rec__begin(&r, &TBL_nic_failure);
			probe_rec__str(&r, n->dev);
			probe_rec__str(&r, n->dev);
			probe_rec__str(&r, n->driver);
			probe_rec__i64(&r, n->queue);
			probe_rec__u64(&r, n->timeouts);
			probe_rec__u64(&r, n->carrier_up);
			probe_rec__u64(&r, n->carrier_down);
			(void)probe_rt__emit(ctx->rt, &r);
		}
		forget_gone(&ctx->agg);
	}
	if (ctx->cur.subprobes & HW_SP_MEM)
		for (unsigned int i = 0; i < ctx->agg.nmcs; i++) {
			const struct hw_mc *m = &ctx->agg.mcs[i];
			char name[16];

			snprintf(name, sizeof(name), "mc%u", m->mc_index);
			probe_rec__begin(&r, &TBL_mem_mc_event);
			probe_rec__str(&r, name);
			probe_rec__str(&r, m->err_type);
			probe_rec__str(&r, m->label[0] ? m->label : "-");
			probe_rec__u64(&r, m->mc_index);
			probe_rec__i64(&r, m->top);
			probe_rec__i64(&r, m->mid);
			probe_rec__u64(&r, m->errors);
			(void)probe_rt__emit(ctx->rt, &r);
		}
	dropped = ctx->skel && ctx->skel->bss ? ctx->skel->bss->hw_dropped : 0;
	if (dropped != ctx->dropped_seen || ctx->agg.undecodable || ctx->agg.overflow)
		probe_log(PLOG_WARN, "records dropped by the kernel half %llu, undecodable %llu, no room %llu",
			  (unsigned long long)dropped, (unsigned long long)ctx->agg.undecodable,
			  (unsigned long long)ctx->agg.overflow);
	ctx->dropped_seen = dropped;
	(void)probe_rt__flush(ctx->rt);
	if (ctx->bpf_stats && ctx->skel)
		gg_bpf_stats_log(ctx->skel->obj, ctx->stats_prev, 4);
}

/* ---- configuration and setup --------------------------------------------------------------------- */

static void apply_conf(struct hw_ctx *ctx)
{
	struct hwprobe *s = ctx->skel;
	const struct gg_bpf_hook hooks[] = {
		{s->progs.hw_xmit_timeout, &s->links.hw_xmit_timeout, HW_SP_NIC},
		{s->progs.hw_mc_event, &s->links.hw_mc_event, HW_SP_MEM},
	};

	(void)gg_bpf_attach_hooks(hooks, sizeof(hooks) / sizeof(hooks[0]), ctx->cur.subprobes);
}

/* A live configuration next to the one in force: a sub-probe turned back on reports changes from now
 * on, not those made while it was off. */
static int check_conf(void *data, void *next, const struct gg_ctrl_msg *msg)
{
	struct hw_ctx *ctx = data;
	const struct hw_conf *conf = next;

	(void)msg;
	if ((conf->subprobes & HW_SP_NIC) && !(ctx->cur.subprobes & HW_SP_NIC))
		scan_sysfs(ctx, 0);
	return 0;
}

static void applied(void *data, uint64_t version, const struct gg_ctrl_msg *msg)
{
	struct hw_ctx *ctx = data;

	(void)version;
	(void)msg;
	if (ctx->skel)
		apply_conf(ctx);
}

/* A tracepoint's format from tracefs (the layout its raw records have on this kernel). */
static int load_format(struct hw_ctx *ctx, const char *tp, struct tp_format *ret)
{
	char path[160];
	int err;

	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/format", tp);
	err = probe_read_file(path, &ctx->b, 64u << 10);
	if (err) {
		snprintf(path, sizeof(path), "/sys/kernel/debug/tracing/events/%s/format", tp);
		err = probe_read_file(path, &ctx->b, 64u << 10);
	}
	if (err)
		return err;
	return tp_format__parse(ctx->b.data, ctx->b.len, ret);
}

static int open_netlink(void)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK, .nl_groups = RTMGRP_LINK};
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int setup(void *arg, struct probe_rt *rt)
{
	struct hw_ctx *ctx = arg;
	struct epoll_event ev = {.events = EPOLLIN};
	int err;

	ctx->rt = rt;
	ctx->nl_fd = ctx->ep_fd = ctx->eth_fd = -1;
	(void)probe_ensure_tracefs();
	ctx->agg.has_xmit_fmt = load_format(ctx, "net/net_dev_xmit_timeout", &ctx->agg.xmit_fmt) == 0;
	ctx->agg.has_mc_fmt = load_format(ctx, "ras/mc_event", &ctx->agg.mc_fmt) == 0;
	if (!ctx->agg.has_xmit_fmt)
		probe_log(PLOG_WARN, "no net:net_dev_xmit_timeout tracepoint: transmit timeouts not counted");
	if (!ctx->agg.has_mc_fmt)
		probe_log(PLOG_WARN, "no ras:mc_event tracepoint (CONFIG_RAS): memory errors not counted");

	gg_bpf_begin();
	ctx->skel = hwprobe__open();
	if (!ctx->skel)
		return gg_bpf_open_error();
	/* no rt: the loop watches an epoll fd of the ring buffer's and the netlink socket's (below) */
	err = gg_bpf_load_ringbuf(ctx->skel->skeleton, NULL, ctx->skel->maps.hw_events, on_record, ctx, &ctx->rb);
	if (err)
		return err;
	ctx->nl_fd = open_netlink();
	if (ctx->nl_fd < 0)
		probe_log(PLOG_WARN, "rtnetlink: %s: carrier changes only at reports", strerror(-ctx->nl_fd));
	ctx->eth_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* one fd for the loop to watch: the ring buffer's and the netlink socket's readiness */
	ctx->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->ep_fd >= 0) {
		ev.data.fd = ring_buffer__epoll_fd(ctx->rb);
		(void)epoll_ctl(ctx->ep_fd, EPOLL_CTL_ADD, ev.data.fd, &ev);
		if (ctx->nl_fd >= 0) {
			ev.data.fd = ctx->nl_fd;
			(void)epoll_ctl(ctx->ep_fd, EPOLL_CTL_ADD, ctx->nl_fd, &ev);
		}
		probe_rt__watch_fd(rt, ctx->ep_fd);
	}
	scan_sysfs(ctx, 0);
	apply_conf(ctx);
	return 0;
}

static void teardown(void *arg)
{
	struct hw_ctx *ctx = arg;

	ring_buffer__free(ctx->rb);
	hwprobe__destroy(ctx->skel);
	if (ctx->nl_fd >= 0)
		close(ctx->nl_fd);
	if (ctx->ep_fd >= 0)
		close(ctx->ep_fd);
	if (ctx->eth_fd >= 0)
		close(ctx->eth_fd);
	probe_buf__free(&ctx->b);
}

/* The probe: probes/lib/probe_main.c runs it (probe_runner.h). */
static struct hw_ctx g_ctx;

const struct probe_runner gg_probe_runner = {
	.contract = CONTRACT,
	.ctx = &g_ctx,
	.args = {.bpf_stats = &g_ctx.bpf_stats, .notes = notes},
	.conf = {&g_ctx.base, &g_ctx.cur, sizeof(g_ctx.cur), offsetof(struct hw_conf, subprobes), check_conf, applied},
	.setup = setup,
	.period_s = &g_ctx.cur.period_s,
	.report = report,
	.tick = tick,
	.teardown = teardown,
};
