/* test_ipc.c - unit tests for ipc/: batch codec, gap accounting, data and control plane over real ipc:// sockets. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"
#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>

#include "ipc.h"

/* Generous: only reached when something is broken, never waited out on success. */
#define DEADLINE_MS 5000

static char g_dir[64];
static int g_url_seq;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* A fresh ipc:// url per use, so tests never see each other's sockets. */
static const char *new_url(char *buf, size_t len)
{
	snprintf(buf, len, "ipc://%s/s%d", g_dir, g_url_seq++);
	return buf;
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(g_dir, sizeof(g_dir), "/tmp/test_ipc.XXXXXX");
	return mkdtemp(g_dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	DIR *d = opendir(g_dir);
	struct dirent *e;
	char path[512];

	(void)state;
	if (d) {
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", g_dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(g_dir);
	return 0;
}

/* Build a valid batch message in buf; returns its length. */
static size_t make_batch(uint8_t *buf, const char *probe, uint32_t nrec, uint64_t seq, const char *payload)
{
	struct ipc_batch_hdr h;
	size_t plen = strlen(payload);

	memset(&h, 0, sizeof(h));
	snprintf(h.probe, sizeof(h.probe), "%s", probe);
	h.pid = 1234;
	h.nrecords = nrec;
	h.seq = seq;
	h.rec_offset = 77;
	h.config_version = 5;
	h.payload_len = (uint32_t)plen;
	ipc_batch_hdr__encode(&h, buf);
	memcpy(buf + IPC_BATCH_HDR_LEN, payload, plen);
	return IPC_BATCH_HDR_LEN + plen;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Every field of a batch header but the pid. */
static void expect_hdr(const struct ipc_batch_hdr *h, const char *probe, uint32_t nrecords, uint64_t seq,
		       uint64_t rec_offset, uint64_t config_version, uint32_t payload_len)
{
	assert_string_equal(h->probe, probe);
	assert_int_equal(h->nrecords, nrecords);
	assert_int_equal(h->seq, seq);
	assert_int_equal(h->rec_offset, rec_offset);
	assert_int_equal(h->config_version, config_version);
	assert_int_equal(h->payload_len, payload_len);
}

GG_TEST(test_codec_roundtrip)
{
	uint8_t buf[256];
	struct ipc_batch_hdr h;
	const char *payload, *cur, *line;
	size_t len, llen;

	len = make_batch(buf, "tcp", 2, 42, "|t|1|\n|t|22|\n");
	/* Little-endian on the wire regardless of host order. */
	assert_memory_equal(buf, "GGB1", 4);
	assert_int_equal(buf[4], IPC_BATCH_HDR_LEN);
	assert_int_equal(buf[48], 42);

	assert_int_equal(ipc_batch__decode(buf, len, &h, &payload), 0);
	expect_hdr(&h, "tcp", 2, 42, 77, 5, 13);
	assert_int_equal(h.pid, 1234);
	assert_ptr_equal(payload, (const char *)buf + IPC_BATCH_HDR_LEN);

	cur = payload;
	assert_int_equal(ipc_batch__next_record(&cur, payload + h.payload_len, &line, &llen), 1);
	assert_int_equal(llen, 5);
	assert_memory_equal(line, "|t|1|", 5);
	assert_int_equal(ipc_batch__next_record(&cur, payload + h.payload_len, &line, &llen), 1);
	assert_int_equal(llen, 6);
	assert_memory_equal(line, "|t|22|", 6);
	assert_int_equal(ipc_batch__next_record(&cur, payload + h.payload_len, &line, &llen), 0);

	/* Empty batch (heartbeat). */
	len = make_batch(buf, "tcp", 0, 0, "");
	assert_int_equal(ipc_batch__decode(buf, len, &h, &payload), 0);
	assert_int_equal(h.payload_len, 0);

	/* A longer header from a later version: extra bytes skipped. */
	len = make_batch(buf, "x", 1, 0, "");
	buf[4] = IPC_BATCH_HDR_LEN + 8;
	memset(buf + IPC_BATCH_HDR_LEN, 0xee, 8);
	memcpy(buf + IPC_BATCH_HDR_LEN + 8, "|a|\n", 4);
	put_le32(buf + 72, 4);
	assert_int_equal(ipc_batch__decode(buf, IPC_BATCH_HDR_LEN + 12, &h, &payload), 0);
	assert_memory_equal(payload, "|a|\n", 4);

	/* Longest name that fits; encode truncates a longer one rather than dropping the NUL. */
	memset(&h, 0, sizeof(h));
	memset(h.probe, 'n', sizeof(h.probe)); /* not NUL-terminated on purpose */
	ipc_batch_hdr__encode(&h, buf);
	assert_int_equal(ipc_batch__decode(buf, IPC_BATCH_HDR_LEN, &h, &payload), 0);
	assert_int_equal(strlen(h.probe), IPC_PROBE_NAME_MAX - 1);
}

static void expect_reject(const uint8_t *buf, size_t len, int err)
{
	struct ipc_batch_hdr h;
	const char *payload = (const char *)0x1;

	memset(&h, 0xab, sizeof(h));
	assert_int_equal(ipc_batch__decode(buf, len, &h, &payload), err);
	/* Out-parameters untouched on failure. */
	assert_ptr_equal(payload, (const char *)0x1);
	assert_int_equal(h.pid, 0xabababab);
}

GG_TEST(test_decode_rejects)
{
	static uint8_t buf[IPC_BATCH_HDR_LEN + IPC_RECORD_MAX_LEN + 16];
	size_t len;

	expect_reject(NULL, 0, -EBADMSG);

	len = make_batch(buf, "tcp", 1, 0, "|a|\n");
	expect_reject(buf, IPC_BATCH_HDR_LEN - 1, -EBADMSG); /* short */
	expect_reject(buf, len - 1, -EBADMSG);		     /* length mismatch: message shorter than payload_len */
	buf[len] = '\n';
	expect_reject(buf, len + 1, -EBADMSG); /* longer */

	buf[0] ^= 1; /* bad magic */
	expect_reject(buf, len, -EBADMSG);
	buf[0] ^= 1;

	buf[6] = 1; /* flags */
	expect_reject(buf, len, -EBADMSG);
	buf[6] = 0;

	buf[4] = IPC_BATCH_HDR_LEN - 1; /* header length below ours */
	expect_reject(buf, len, -EBADMSG);
	buf[4] = 0xff; /* header length beyond the message */
	expect_reject(buf, len, -EBADMSG);
	buf[4] = IPC_BATCH_HDR_LEN;

	put_le32(buf + 44, 2); /* count mismatch */
	expect_reject(buf, len, -EBADMSG);
	put_le32(buf + 44, 0);
	expect_reject(buf, len, -EBADMSG);

	len = make_batch(buf, "tcp", 2, 0, "|a|\n|b|"); /* missing final newline */
	expect_reject(buf, len, -EBADMSG);
	len = make_batch(buf, "tcp", 1, 0, "|b|"); /* one line, no newline */
	expect_reject(buf, len, -EBADMSG);

	len = make_batch(buf, "tcp", 1, 0, "|a|\n");
	memset(buf + 8, 'p', IPC_PROBE_NAME_MAX); /* unterminated name */
	expect_reject(buf, len, -EBADMSG);
	memset(buf + 8, 0, IPC_PROBE_NAME_MAX); /* empty name */
	expect_reject(buf, len, -EBADMSG);

	len = make_batch(buf, "tcp", 1, 0, "|a|\n");
	put_le32(buf + 72, IPC_BATCH_MAX_PAYLOAD + 1); /* E2BIG wins over the length mismatch */
	expect_reject(buf, len, -E2BIG);
	put_le32(buf + 72, UINT32_MAX);
	expect_reject(buf, len, -E2BIG);

	len = make_batch(buf, "tcp", 2, 0, "|a|\n\n"); /* empty line */
	expect_reject(buf, len, -EBADMSG);
	len = make_batch(buf, "tcp", 1, 0, "|a|x\n");
	buf[IPC_BATCH_HDR_LEN + 3] = '\0'; /* NUL inside a record */
	expect_reject(buf, len, -EBADMSG);

	/* Line length limit: IPC_RECORD_MAX_LEN passes, one more does not. */
	{
		struct ipc_batch_hdr h;
		const char *payload;
		char *p = (char *)buf + IPC_BATCH_HDR_LEN;

		len = make_batch(buf, "tcp", 1, 0, "");
		memset(p, 'r', IPC_RECORD_MAX_LEN);
		p[IPC_RECORD_MAX_LEN] = '\n';
		put_le32(buf + 72, IPC_RECORD_MAX_LEN + 1);
		put_le32(buf + 44, 1);
		assert_int_equal(ipc_batch__decode(buf, len + IPC_RECORD_MAX_LEN + 1, &h, &payload), 0);
		p[IPC_RECORD_MAX_LEN] = 'r';
		p[IPC_RECORD_MAX_LEN + 1] = '\n';
		put_le32(buf + 72, IPC_RECORD_MAX_LEN + 2);
		expect_reject(buf, len + IPC_RECORD_MAX_LEN + 2, -EBADMSG);
	}
}

/* One batch header given to the sequence tracker, the count of batches it says were lost, and the tracker
 * after it. */
struct seq_step {
	const char *what;
	int fresh; /* a tracker that has seen nothing yet */
	uint32_t pid;
	uint64_t seq, rec_offset;
	uint32_t nrecords;
	int lost; /* what ipc_seq_tracker__update returns */
	uint64_t lost_batches, lost_records, batches, records, next_seq, next_rec;
};

GG_TEST(test_seq_tracker)
{
	/* what, fresh; pid, seq, rec_offset, nrecords; lost; the tracker's lost batches, lost records,
	 * batches, records, next seq, next record */
	static const struct seq_step steps[] = {
		{"first batch", 1, 10, 0, 0, 5, 0, 0, 0, 1, 5, 1, 5},
		{"in order", 0, 10, 1, 5, 5, 0, 0, 0, 2, 10, 2, 10},
		{"gap: seq 2 and 3 (records 10..19) never arrived", 0, 10, 4, 20, 5, 2, 2, 10, 3, 15, 5, 25},
		{"new pid: a restarted probe, its first 3 batches (7 records) lost", 0, 11, 3, 7, 1, 3, 5, 17, 4, 16, 4,
		 8},
		{"the restarted probe in order", 0, 11, 4, 8, 1, 0, 5, 17, 5, 17, 5, 9},
		{"same pid, seq backwards (pid reused): reset, no underflow", 0, 11, 0, 0, 2, 0, 5, 17, 6, 19, 1, 2},
		{"lost seq 1 (2 records)", 0, 11, 2, 4, 2, 1, 6, 19, 7, 21, 3, 6},
		{"rec_offset backwards with seq forward (broken sender): no wrap-around", 0, 11, 3, 0, 1, 0, 6, 19, 8,
		 22, 4, 1},
		{"a first batch that is not seq 0", 1, 99, 7, 70, 10, 7, 7, 70, 1, 10, 8, 80},
	};
	struct ipc_seq_tracker t;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct seq_step *w = &steps[i];
		struct ipc_batch_hdr h;
		int lost;

		if (w->fresh)
			memset(&t, 0, sizeof(t));
		memset(&h, 0, sizeof(h));
		strcpy(h.probe, "tcp");
		h.pid = w->pid;
		h.seq = w->seq;
		h.rec_offset = w->rec_offset;
		h.nrecords = w->nrecords;
		lost = ipc_seq_tracker__update(&t, &h);
		if (lost != w->lost || t.pid != w->pid || t.lost_batches != w->lost_batches ||
		    t.lost_records != w->lost_records || t.batches != w->batches || t.records != w->records ||
		    t.next_seq != w->next_seq || t.next_rec != w->next_rec)
			fail_msg("step %zu (%s): lost %d, tracker pid %u lost %llu batches %llu records, seen %llu "
				 "batches "
				 "%llu records, next seq %llu rec %llu",
				 i, w->what, lost, t.pid, (unsigned long long)t.lost_batches,
				 (unsigned long long)t.lost_records, (unsigned long long)t.batches,
				 (unsigned long long)t.records, (unsigned long long)t.next_seq,
				 (unsigned long long)t.next_rec);
	}
}

/* Wait for one message, ticking pub (if any) so its pending batches and timed flushes go out. */
static int wait_msg(struct ipc_sub *sub, struct ipc_pub *pub, int timeout_ms, void **msg, size_t *len)
{
	uint64_t deadline = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct pollfd pfd = {.fd = ipc_sub__fd(sub), .events = POLLIN};
		uint64_t now;
		int rc, t;

		rc = ipc_sub__recv(sub, msg, len);
		if (rc != 0)
			return rc;
		if (pub)
			assert_true(ipc_pub__tick(pub) >= 0);
		now = now_ms();
		if (now >= deadline)
			return 0;
		t = (int)(deadline - now);
		if (pub) {
			int pt = ipc_pub__timeout_ms(pub);

			if (pt >= 0 && pt < t)
				t = pt;
		}
		poll(&pfd, 1, t);
	}
}

/* The header of the next message (which must come and decode); ret_len (if not NULL) gets its size. */
static struct ipc_batch_hdr next_batch(struct ipc_sub *sub, struct ipc_pub *pub, size_t *ret_len)
{
	struct ipc_batch_hdr h;
	const char *payload;
	size_t len;
	void *msg;

	assert_int_equal(wait_msg(sub, pub, DEADLINE_MS, &msg, &len), 1);
	assert_int_equal(ipc_batch__decode(msg, len, &h, &payload), 0);
	ipc_msg__free(msg);
	if (ret_len)
		*ret_len = len;
	return h;
}

/* Receive until want records arrived; checks every line is "|t|<i>|" in order. */
static void recv_records(struct ipc_sub *sub, struct ipc_pub *pub, struct ipc_seq_tracker *t, uint64_t want,
			 uint64_t first, size_t max_payload)
{
	uint64_t got = 0;

	while (got < want) {
		struct ipc_batch_hdr h;
		const char *payload, *cur, *line;
		size_t len, llen;
		void *msg;

		assert_int_equal(wait_msg(sub, pub, DEADLINE_MS, &msg, &len), 1);
		assert_int_equal(ipc_batch__decode(msg, len, &h, &payload), 0);
		assert_int_equal(h.pid, (uint32_t)getpid());
		if (max_payload)
			assert_true(h.payload_len <= max_payload);
		ipc_seq_tracker__update(t, &h);
		cur = payload;
		while (ipc_batch__next_record(&cur, payload + h.payload_len, &line, &llen) == 1) {
			char expect[64];

			snprintf(expect, sizeof(expect), "|t|%llu|", (unsigned long long)(first + got));
			assert_int_equal(llen, strlen(expect));
			assert_memory_equal(line, expect, llen);
			got++;
		}
		ipc_msg__free(msg);
	}
	assert_int_equal(got, want);
}

static void append_records(struct ipc_pub *pub, uint64_t from, uint64_t n)
{
	for (uint64_t i = from; i < from + n; i++) {
		char line[64];
		int len = snprintf(line, sizeof(line), "|t|%llu|", (unsigned long long)i);

		assert_int_equal(ipc_pub__append(pub, line, (size_t)len), 0);
	}
}

/* One test's two ends on a fresh url: the supervisor's subscriber and a probe's publisher, each made by
 * the test when it needs it; what is left is freed after the test, whether it passed or not. */
struct ends {
	char url[128];
	struct ipc_sub *sub;
	struct ipc_pub *pub;
};

static int ends_setup(void **state)
{
	struct ends *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	new_url(e->url, sizeof(e->url));
	*state = e;
	return 0;
}

static int ends_teardown(void **state)
{
	struct ends *e = *state;

	ipc_pub__free(e->pub);
	ipc_sub__free(e->sub);
	free(e);
	return 0;
}

/* A test run with struct ends in its state. */
#define ENDS_TEST(f) GG_TEST_SETUP_TEARDOWN(f, ends_setup, ends_teardown)

static struct ipc_sub *ends_sub(struct ends *e)
{
	e->sub = ipc_sub__new(e->url);
	assert_non_null(e->sub);
	return e->sub;
}

/* A publisher with o (its url is the test's). */
static struct ipc_pub *ends_pub(struct ends *e, struct ipc_pub_opts o)
{
	o.url = e->url;
	e->pub = ipc_pub__new(&o);
	assert_non_null(e->pub);
	return e->pub;
}

ENDS_TEST(test_pubsub_roundtrip)
{
	struct ends *e = *state;
	struct ipc_seq_tracker t = {0};
	struct ipc_sub *sub = ends_sub(e);
	struct ipc_pub *pub;

	assert_true(ipc_sub__fd(sub) >= 0);
	pub = ends_pub(e, (struct ipc_pub_opts){.probe_name = "tcp"});

	append_records(pub, 0, 100);
	assert_int_equal(ipc_pub__flush(pub, 0), 0);
	recv_records(sub, pub, &t, 100, 0, 0);
	assert_int_equal(t.batches, 1);
	assert_int_equal(t.lost_batches, 0);

	append_records(pub, 100, 50);
	assert_int_equal(ipc_pub__flush(pub, 0), 0);
	recv_records(sub, pub, &t, 50, 100, 0);
	assert_int_equal(t.next_seq, 2);
	assert_int_equal(t.next_rec, 150);
	assert_int_equal(t.lost_records, 0);
	assert_int_equal(ipc_pub__batches_sent(pub), 2);
	assert_int_equal(ipc_pub__batches_discarded(pub), 0);
}

/* The probe starts first: batches wait in the pending queue and arrive once the supervisor listens. */
ENDS_TEST(test_pub_before_sub)
{
	struct ends *e = *state;
	struct ipc_seq_tracker t = {0};
	struct ipc_pub *pub = ends_pub(e, (struct ipc_pub_opts){.probe_name = "tcp", .max_payload = 1024});
	struct ipc_sub *sub;

	append_records(pub, 0, 1000); /* ~11 batches of <= 1024 bytes */
	assert_int_equal(ipc_pub__flush(pub, 0), 0);
	assert_int_equal(ipc_pub__batches_sent(pub), 0);
	assert_int_equal(ipc_pub__connected(pub), 0);
	assert_int_equal(ipc_pub__timeout_ms(pub), 50); /* retry while batches wait */

	sub = ends_sub(e);
	recv_records(sub, pub, &t, 1000, 0, 1024);
	assert_int_equal(t.lost_batches, 0);
	assert_int_equal(t.lost_records, 0);
	assert_true(t.batches > 5);
	assert_int_equal(ipc_pub__batches_discarded(pub), 0);
	assert_int_equal(ipc_pub__batches_sent(pub), t.batches);
	assert_int_equal(ipc_pub__timeout_ms(pub), -1);
}

/* More batches than pending_max while disconnected: the oldest go, and the receiver counts them. */
ENDS_TEST(test_pending_overflow)
{
	struct ends *e = *state;
	struct ipc_seq_tracker t = {0};
	struct ipc_pub *pub = ends_pub(e, (struct ipc_pub_opts){.probe_name = "tcp", .pending_max = 2});
	struct ipc_sub *sub;

	for (int b = 0; b < 5; b++) {
		append_records(pub, (uint64_t)b * 10, 10);
		assert_int_equal(ipc_pub__flush(pub, 0), 0);
	}
	assert_int_equal(ipc_pub__batches_discarded(pub), 3);
	assert_int_equal(ipc_pub__records_discarded(pub), 30);

	sub = ends_sub(e);
	recv_records(sub, pub, &t, 20, 30, 0);
	assert_int_equal(t.batches, 2);
	assert_int_equal(t.lost_batches, 3);
	assert_int_equal(t.lost_records, 30);
}

ENDS_TEST(test_flush_on_size)
{
	struct ends *e = *state;
	char big[IPC_RECORD_MAX_LEN];
	struct ipc_seq_tracker t = {0};
	struct ipc_batch_hdr h;
	struct ipc_sub *sub = ends_sub(e);
	struct ipc_pub *pub;

	/* flush_ms large so only size can trigger a flush. "|t|N|" is 5 bytes + '\n' = 6. */
	pub = ends_pub(e, (struct ipc_pub_opts){.probe_name = "tcp", .max_payload = 20, .flush_ms = 100000});
	append_records(pub, 0, 4); /* 3 fit (18 bytes), the 4th overflows and flushes the 3 first */
	recv_records(sub, pub, &t, 3, 0, 20);
	assert_int_equal(t.batches, 1);
	append_records(pub, 4, 2); /* 6 + 6 + 6 = 18: no flush yet; 24 would exceed */
	assert_int_equal(ipc_pub__batches_sent(pub), 1);

	/* A record larger than max_payload travels alone, after flushing what was open. */
	memset(big, 'x', sizeof(big));
	big[0] = '|';
	big[sizeof(big) - 1] = '|';
	assert_int_equal(ipc_pub__append(pub, big, sizeof(big)), 0);
	recv_records(sub, pub, &t, 3, 3, 20);
	h = next_batch(sub, NULL, NULL);
	expect_hdr(&h, "tcp", 1, 2, 6, 0, IPC_RECORD_MAX_LEN + 1);
}

ENDS_TEST(test_flush_on_time)
{
	struct ends *e = *state;
	struct ipc_seq_tracker t = {0};
	struct ipc_sub *sub = ends_sub(e);
	struct ipc_pub *pub = ends_pub(e, (struct ipc_pub_opts){.probe_name = "tcp", .flush_ms = 30});
	uint64_t t0;
	int to;

	assert_int_equal(ipc_pub__timeout_ms(pub), -1);

	t0 = now_ms();
	append_records(pub, 0, 1);
	to = ipc_pub__timeout_ms(pub);
	assert_true(to > 0 && to <= 30);
	/* Nothing goes out before the batch is 30 ms old, then tick (called by wait_msg) sends it. */
	recv_records(sub, pub, &t, 1, 0, 0);
	assert_true(now_ms() - t0 >= 30);
	assert_int_equal(ipc_pub__batches_sent(pub), 1);
}

ENDS_TEST(test_heartbeat)
{
	struct ends *e = *state;
	struct ipc_batch_hdr h;
	struct ipc_sub *sub = ends_sub(e);
	struct ipc_pub *pub = ends_pub(e, (struct ipc_pub_opts){.probe_name = "hb"});
	size_t len;

	assert_int_equal(ipc_pub__flush(pub, 0), 0); /* nothing open: no-op */
	assert_int_equal(ipc_pub__batches_sent(pub) + ipc_pub__batches_discarded(pub), 0);

	ipc_pub__set_config_version(pub, 7);
	assert_int_equal(ipc_pub__flush(pub, 1), 0);
	h = next_batch(sub, pub, &len);
	assert_int_equal(len, IPC_BATCH_HDR_LEN);
	expect_hdr(&h, "hb", 0, 0, 0, 7, 0);

	/* A record batch after it carries the same version and the next seq. */
	append_records(pub, 0, 1);
	assert_int_equal(ipc_pub__flush(pub, 1), 0);
	h = next_batch(sub, pub, NULL);
	expect_hdr(&h, "hb", 1, 1, 0, 7, 6); /* "|t|0|" and its newline */
}

/* ipc_pub__free flushes the open batch and lingers until it is written, so nothing is lost at exit. */
ENDS_TEST(test_free_flushes)
{
	struct ends *e = *state;
	struct ipc_seq_tracker t = {0};
	struct ipc_sub *sub = ends_sub(e);
	struct ipc_pub *pub = ends_pub(e, (struct ipc_pub_opts){.probe_name = "tcp", .max_payload = 256});
	uint64_t deadline;

	/* No event tells us the dial completed; poll the flag with a deadline. */
	deadline = now_ms() + DEADLINE_MS;
	while (!ipc_pub__connected(pub) && now_ms() < deadline)
		poll(NULL, 0, 1);
	assert_int_equal(ipc_pub__connected(pub), 1);
	append_records(pub, 0, 500);
	ipc_pub__free(pub);
	e->pub = NULL;
	recv_records(sub, NULL, &t, 500, 0, 256);
	assert_int_equal(t.lost_batches, 0);
}

GG_TEST(test_pub_invalid)
{
	char url[128], name[IPC_PROBE_NAME_MAX + 1], line[IPC_RECORD_MAX_LEN + 1];
	struct ipc_pub *pub;

	new_url(url, sizeof(url));
	errno = 0;
	assert_null(ipc_pub__new(NULL));
	assert_int_equal(errno, EINVAL);
	assert_null(ipc_pub__new(&(struct ipc_pub_opts){.url = url, .probe_name = ""}));
	assert_int_equal(errno, EINVAL);
	memset(name, 'n', IPC_PROBE_NAME_MAX);
	name[IPC_PROBE_NAME_MAX] = '\0';
	assert_null(ipc_pub__new(&(struct ipc_pub_opts){.url = url, .probe_name = name}));
	assert_null(ipc_pub__new(
		&(struct ipc_pub_opts){.url = url, .probe_name = "a", .max_payload = IPC_BATCH_MAX_PAYLOAD + 1}));
	assert_null(ipc_pub__new(
		&(struct ipc_pub_opts){.url = url, .probe_name = "a", .pending_max = IPC_PENDING_MAX_LIMIT + 1}));
	assert_null(ipc_pub__new(&(struct ipc_pub_opts){.url = "nope://x", .probe_name = "a"}));
	assert_int_not_equal(errno, 0);

	name[IPC_PROBE_NAME_MAX - 1] = '\0'; /* 31 bytes: fits */
	pub = ipc_pub__new(&(struct ipc_pub_opts){.url = url, .probe_name = name});
	assert_non_null(pub);
	assert_int_equal(ipc_pub__append(pub, "", 0), -EINVAL);
	assert_int_equal(ipc_pub__append(pub, NULL, 3), -EINVAL);
	assert_int_equal(ipc_pub__append(pub, "a\nb", 3), -EINVAL);
	assert_int_equal(ipc_pub__append(pub, "a\0b", 3), -EINVAL);
	memset(line, 'x', sizeof(line));
	assert_int_equal(ipc_pub__append(pub, line, IPC_RECORD_MAX_LEN + 1), -EINVAL);
	assert_int_equal(ipc_pub__append(pub, line, IPC_RECORD_MAX_LEN), 0);
	assert_int_equal(ipc_pub__append(NULL, "x", 1), -EINVAL);
	assert_int_equal(ipc_pub__flush(NULL, 0), -EINVAL);
	ipc_pub__free(pub); /* never connected: the open batch is counted as discarded */
	ipc_pub__free(NULL);
	ipc_sub__free(NULL);
	ipc_msg__free(NULL);
	ipc_ctrl_pub__free(NULL);
	ipc_ctrl_sub__free(NULL);
}

/* A socket file left by a dead listener is replaced; a live listener's is not stolen. */
GG_TEST(test_sub_stale_socket)
{
	char url[128];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct ipc_sub *sub, *sub2;
	int fd;

	new_url(url, sizeof(url));
	assert_true(strlen(url + strlen("ipc://")) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, url + strlen("ipc://"), strlen(url + strlen("ipc://")) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd); /* the file stays, nobody listens */

	sub = ipc_sub__new(url);
	assert_non_null(sub);
	sub2 = ipc_sub__new(url);
	assert_null(sub2);
	assert_int_equal(errno, EADDRINUSE);
	assert_int_equal(ipc_sub__set_recvbuf(sub, 0), -EINVAL);
	assert_int_equal(ipc_sub__set_recvbuf(sub, 8192), 0);
	ipc_sub__free(sub);
}

/* Wait for one control message, resending `resend` (when set) so the dial has time to complete. */
static int wait_ctrl(struct ipc_ctrl_sub *cs, struct ipc_ctrl_pub *cp, const char *resend, uint64_t *ret_v,
		     char **ret_p)
{
	uint64_t deadline = now_ms() + DEADLINE_MS;

	for (;;) {
		struct pollfd pfd = {.fd = ipc_ctrl_sub__fd(cs), .events = POLLIN};
		int rc = ipc_ctrl_sub__recv(cs, ret_v, ret_p);

		if (rc != 0)
			return rc;
		if (now_ms() >= deadline)
			return 0;
		if (resend)
			assert_int_equal(ipc_ctrl_pub__send(cp, "tcp", 1, resend, strlen(resend)), 0);
		poll(&pfd, 1, 20);
	}
}

GG_TEST(test_ctrl_roundtrip)
{
	char url[128], name[IPC_PROBE_NAME_MAX + 1];
	struct ipc_ctrl_pub *cp;
	struct ipc_ctrl_sub *cs;
	uint64_t v = 0;
	char *p = NULL;
	int rc;

	new_url(url, sizeof(url));
	/* The probe may start first, as on the data plane. */
	cs = ipc_ctrl_sub__new(url, "tcp");
	assert_non_null(cs);
	assert_true(ipc_ctrl_sub__fd(cs) >= 0);
	assert_int_equal(ipc_ctrl_sub__recv(cs, &v, &p), 0);
	cp = ipc_ctrl_pub__new(url);
	assert_non_null(cp);

	/* Pub/sub drops what is sent before the connection is up: resend until it arrives. */
	assert_int_equal(wait_ctrl(cs, cp, "{\"a\":1}", &v, &p), 1);
	assert_int_equal(v, 1);
	assert_string_equal(p, "{\"a\":1}");
	free(p);

	/* Another probe's topic, even one sharing our prefix, is not delivered to us. */
	assert_int_equal(ipc_ctrl_pub__send(cp, "tcp2", 2, "{}", 2), 0);
	assert_int_equal(ipc_ctrl_pub__send(cp, "tcp", UINT64_MAX, NULL, 0), 0);
	for (;;) {
		rc = wait_ctrl(cs, cp, NULL, &v, &p);
		assert_int_equal(rc, 1);
		assert_int_not_equal(v, 2);
		if (v == UINT64_MAX)
			break;
		free(p); /* an extra copy of the resent version 1 */
	}
	assert_string_equal(p, "");
	free(p);

	assert_int_equal(ipc_ctrl_pub__send(cp, "", 1, "{}", 2), -EINVAL);
	assert_int_equal(ipc_ctrl_pub__send(cp, "a\nb", 1, "{}", 2), -EINVAL);
	assert_int_equal(ipc_ctrl_pub__send(cp, NULL, 1, "{}", 2), -EINVAL);
	assert_int_equal(ipc_ctrl_pub__send(cp, "tcp", 1, "{\0}", 3), -EINVAL);
	assert_int_equal(ipc_ctrl_pub__send(cp, "tcp", 1, NULL, 3), -EINVAL);
	memset(name, 'n', IPC_PROBE_NAME_MAX);
	name[IPC_PROBE_NAME_MAX] = '\0';
	assert_int_equal(ipc_ctrl_pub__send(cp, name, 1, "{}", 2), -EINVAL);
	assert_int_equal(ipc_ctrl_pub__send(cp, "tcp", 1, "{}", IPC_CTRL_MAX_PAYLOAD + 1), -E2BIG);
	assert_null(ipc_ctrl_sub__new(url, "a\nb"));
	assert_int_equal(errno, EINVAL);
	assert_null(ipc_ctrl_sub__new(url, ""));

	ipc_ctrl_sub__free(cs);
	ipc_ctrl_pub__free(cp);
}

static void raw_send(nng_socket s, const char *data, size_t len)
{
	assert_int_equal(nng_send(s, (void *)data, len, 0), 0);
}

/* A peer that is not our ctrl_pub sends garbage: every malformed message is -EBADMSG and consumed. */
GG_TEST(test_ctrl_malformed)
{
	static const struct {
		const char *data;
		size_t len;
	} bad[] = {
#define M(s) {s, sizeof(s) - 1}
		M("tcp\nabc\n{}"),		   /* version not a number */
		M("tcp\n12"),			   /* no newline after the version */
		M("tcp\n\n{}"),			   /* empty version */
		M("tcp\n-1\n{}"),		   /* sign */
		M("tcp\n"),			   /* nothing after the topic */
		M("tcp\n123456789012345678901\n"), /* 21 digits */
		M("tcp\n18446744073709551616\n"),  /* UINT64_MAX + 1 */
		M("tcp\n5\n{\0}"),		   /* NUL in the payload */
#undef M
	};
	char url[128];
	struct ipc_ctrl_sub *cs;
	nng_socket raw;
	uint64_t v = 0;
	char *p = NULL;
	uint64_t deadline;
	size_t nbad = 0;
	int rc;

	new_url(url, sizeof(url));
	assert_int_equal(nng_pub0_open(&raw), 0);
	assert_int_equal(nng_listen(raw, url, NULL, 0), 0);
	cs = ipc_ctrl_sub__new(url, "tcp");
	assert_non_null(cs);

	/* Synchronise: resend a valid message until the subscriber has one. */
	deadline = now_ms() + DEADLINE_MS;
	while ((rc = ipc_ctrl_sub__recv(cs, &v, &p)) == 0 && now_ms() < deadline) {
		struct pollfd pfd = {.fd = ipc_ctrl_sub__fd(cs), .events = POLLIN};

		raw_send(raw, "tcp\n1\nsync", 10);
		poll(&pfd, 1, 20);
	}
	assert_int_equal(rc, 1);
	assert_string_equal(p, "sync");
	free(p);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		raw_send(raw, bad[i].data, bad[i].len);
	raw_send(raw, "tcp\n18446744073709551615\nend", 28);

	deadline = now_ms() + DEADLINE_MS;
	for (;;) {
		struct pollfd pfd = {.fd = ipc_ctrl_sub__fd(cs), .events = POLLIN};

		p = NULL;
		rc = ipc_ctrl_sub__recv(cs, &v, &p);
		if (rc == -EBADMSG) {
			assert_null(p);
			nbad++;
			continue;
		}
		if (rc == 1 && v == 1) { /* late sync copies */
			free(p);
			continue;
		}
		if (rc == 1)
			break;
		assert_int_equal(rc, 0);
		assert_true(now_ms() < deadline);
		poll(&pfd, 1, 100);
	}
	assert_int_equal(nbad, sizeof(bad) / sizeof(bad[0]));
	assert_int_equal(v, UINT64_MAX);
	assert_string_equal(p, "end");
	free(p);

	ipc_ctrl_sub__free(cs);
	nng_close(raw);
}

GG_TEST_GROUP(group_setup, group_teardown);
