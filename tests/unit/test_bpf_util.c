/* test_bpf_util.c - the user-side helpers of BPF probes (probes/lib/bpf_util.c): log2 histograms into
 * records, scope and sub-probe parsing, params, event labels, and the kernel feature checks. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"

#include "bpf_util.h"

static const char *const h_fields[] = {"k", "h"};
static const unsigned char h_kinds[] = {PROBE_F_KEY, PROBE_F_HISTOGRAM};
static const struct probe_table TBL_h = {"t_h", 2, h_fields, h_kinds};

GG_TEST(test_hist_slot)
{
	assert_int_equal(gg_hist_slot(0), 0);
	assert_int_equal(gg_hist_slot(1), 0);
	assert_int_equal(gg_hist_slot(2), 1);
	assert_int_equal(gg_hist_slot(3), 1);
	assert_int_equal(gg_hist_slot(4), 2);
	assert_int_equal(gg_hist_slot(1023), 9);
	assert_int_equal(gg_hist_slot(1024), 10);
	assert_int_equal(gg_hist_slot(UINT64_MAX), GG_LOG2_SLOTS - 1);
}

GG_TEST(test_hist_rec)
{
	static struct probe_rec r;
	__u64 slots[GG_LOG2_SLOTS] = {0};

	slots[0] = 1; /* 0..1 */
	slots[2] = 2; /* 4..7 */
	slots[3] = 3; /* 8..15 */
	slots[5] = 4; /* 32..63: past 3 buckets from first=1 -> overflow */
	probe_rec__begin(&r, &TBL_h);
	probe_rec__str(&r, "x");
	/* buckets: slots 0..1 (< 4), slot 2 (< 8), slot 3 (< 16); bounds in ms from us */
	gg_hist_rec(&r, slots, 1, 3, 0.001, 123.0);
	assert_int_equal(probe_rec__finish(&r), 0);
	assert_string_equal(r.buf, "|t_h|x|3 0.004 1 0.008 3 0.016 6 123 10|");
	assert_int_equal(gg_hist_count(slots), 10);
	assert_int_equal(gg_hist_quantile(slots, 0.5), 16);
	assert_int_equal(gg_hist_quantile(slots, 1.0), 64);

	probe_rec__begin(&r, &TBL_h);
	probe_rec__str(&r, "x");
	gg_hist_rec(&r, slots, 30, 3, 1.0, 0); /* first + n past the slots: the record is invalid */
	assert_int_equal(probe_rec__finish(&r), -EINVAL);
}

GG_TEST(test_scope_pids)
{
	static struct gg_scope s;

	gg_scope__init(&s);
	assert_int_equal(gg_scope__add_pids(&s, "10,20,30"), 0);
	assert_int_equal(s.all, 0);
	assert_int_equal(s.ntgid, 3);
	assert_int_equal(s.tgid[1], 20);
	for (const char **bad = (const char *[]){"", "1,,2", "x", "0", "1,", "-1", "3000000000", NULL}; *bad; bad++) {
		gg_scope__init(&s);
		assert_int_equal(gg_scope__add_pids(&s, *bad), -EINVAL);
	}
}

GG_TEST(test_scope_comm)
{
	static struct gg_scope s;
	char comm[32] = {0};
	FILE *f = fopen("/proc/self/comm", "r");
	int n;

	assert_non_null(f);
	assert_non_null(fgets(comm, sizeof(comm), f));
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	gg_scope__init(&s);
	n = gg_scope__add_comm(&s, comm);
	assert_true(n >= 1);
	for (uint32_t i = 0; i < s.ntgid; i++)
		if (s.tgid[i] == (uint32_t)getpid())
			return;
	fail_msg("own pid not found by comm '%s'", comm);
}

static const struct gg_subprobe subs[] = {{"a", 1, 1, 0}, {"b", 2, 0, 0}, {"later", 0, 0, 0}};

GG_TEST(test_subprobes)
{
	unsigned int bits = 77;
	char bad[8], buf[32];

	assert_int_equal(gg_subprobes_parse("a,b,later", subs, 3, &bits, bad, sizeof(bad)), 0);
	assert_int_equal(bits, 3);
	assert_int_equal(gg_subprobes_parse("a,nosuchthing", subs, 3, &bits, bad, sizeof(bad)), -EINVAL);
	assert_string_equal(bad, "nosucht"); /* cut to the buffer */
	assert_int_equal(bits, 3);
	assert_int_equal(gg_subprobes_parse("", subs, 3, &bits, bad, sizeof(bad)), -EINVAL);

	gg_subprobes_str(3, subs, 3, buf, sizeof(buf));
	assert_string_equal(buf, "a,b");
	gg_subprobes_str(0, subs, 3, buf, sizeof(buf));
	assert_string_equal(buf, "none");
}

GG_TEST(test_event_label)
{
	char buf[40];
	size_t used = 0;

	gg_event_label(buf, sizeof(buf), &used, "comm", "a b&c");
	gg_event_label(buf, sizeof(buf), &used, "ip", "10.0.0.1");
	assert_string_equal(buf, "comm=a%20b%26c&ip=10.0.0.1");
	gg_event_label(buf, sizeof(buf), &used, "long", "0123456789abcdef");
	assert_string_equal(buf, "comm=a%20b%26c&ip=10.0.0.1"); /* did not fit: left out whole */
	assert_int_equal(used, strlen(buf));
}

GG_TEST(test_kernel_features)
{
	char name[64];

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		skip();
		return;
	}
	assert_int_equal(gg_bpf_has_tp_btf("inet_sock_set_state"), 1);
	assert_int_equal(gg_bpf_has_tp_btf("no_such_tracepoint_gg"), 0);
	assert_true(gg_bpf_tp_btf_nargs("inet_sock_set_state") == 3);
	assert_int_equal(gg_bpf_tp_btf_nargs("no_such_tracepoint_gg"), -ENOENT);
	assert_int_equal(gg_btf_enum_name("skb_drop_reason", 3, "SKB_DROP_REASON_", name, sizeof(name)), 0);
	assert_string_equal(name, "NO_SOCKET");
	assert_int_equal(gg_btf_enum_name("skb_drop_reason", 100000, NULL, name, sizeof(name)), -ENOENT);
	assert_string_equal(name, "100000");
}

/* gg_opt_common: the options most probes share, applied or refused; the others left to the probe. */
GG_TEST(test_opt_common)
{
	static struct gg_scope scope;
	unsigned int period = 5;
	enum probe_log_level level = PLOG_INFO;
	const char *comm = NULL;
	int stats = 0;
	struct gg_opts o = {.period_s = &period,
			    .period_min = 1,
			    .period_max = 600,
			    .level = &level,
			    .scope = &scope,
			    .comm = &comm,
			    .bpf_stats = &stats};

	gg_scope__init(&scope);
	assert_int_equal(gg_opt_common("p", 't', "30", &o), 1);
	assert_int_equal(period, 30);
	assert_int_equal(gg_opt_common("p", 't', "601", &o), 2);
	assert_int_equal(gg_opt_common("p", 't', "0", &o), 2);
	assert_int_equal(gg_opt_common("p", 't', "3x", &o), 2);
	assert_int_equal(period, 30);
	assert_int_equal(gg_opt_common("p", 'l', "debug", &o), 1);
	assert_int_equal(level, PLOG_DEBUG);
	assert_int_equal(gg_opt_common("p", 'l', "loud", &o), 2);
	assert_int_equal(gg_opt_common("p", GG_OPT_PID, "12,34", &o), 1);
	assert_int_equal(scope.ntgid, 2);
	assert_int_equal(scope.all, 0);
	assert_int_equal(gg_opt_common("p", GG_OPT_PID, "12,x", &o), 2);
	assert_int_equal(gg_opt_common("p", GG_OPT_COMM, "nginx", &o), 1);
	assert_string_equal(comm, "nginx");
	assert_int_equal(gg_opt_common("p", GG_OPT_COMM, "", &o), 2);
	assert_int_equal(gg_opt_common("p", GG_OPT_COMM, "0123456789abcdef", &o), 2);
	assert_string_equal(comm, "nginx");
	assert_int_equal(gg_opt_common("p", GG_OPT_BPF_STATS, NULL, &o), 1);
	assert_int_equal(stats, 1);
	/* Not one of them: the probe's own. */
	assert_int_equal(gg_opt_common("p", 'P', "x", &o), 0);
	assert_int_equal(gg_opt_common("p", 'h', NULL, &o), 0);
	/* One of them that this probe does not take: refused like an unknown option. */
	o.scope = NULL;
	o.bpf_stats = NULL;
	assert_int_equal(gg_opt_common("p", GG_OPT_PID, "1", &o), 2);
	assert_int_equal(gg_opt_common("p", GG_OPT_COMM, "a", &o), 2);
	assert_int_equal(gg_opt_common("p", GG_OPT_BPF_STATS, NULL, &o), 2);
}
