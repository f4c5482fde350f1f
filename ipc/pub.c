/* pub.c - probe side of the data plane: batches record lines into NNG messages and publishes them. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/pubsub0/pub.h>

#include "ipc.h"
#include "ipc_impl.h"

/* Subscribers we can tell apart; more than this many at once only means "connected" stays true. */
#define PIPE_SLOTS	16
#define DEFAULT_PENDING 64u
/* While batches wait for a subscriber, look again this often (there is no fd for "connected"). */
#define PENDING_RETRY_MS 50

/* One probe's publisher: the open batch, the queue kept while nobody listens, and counters. */
struct ipc_pub {
	struct ipc__ep ep;
	char probe[IPC_PROBE_NAME_MAX];
	uint32_t pid;
	size_t max_payload;
	size_t reserve; /* capacity of a batch message: header + the largest payload it can reach */
	unsigned int flush_ms;

	/* Open batch: an nng_msg whose first IPC_BATCH_HDR_LEN bytes are the header, written at flush,
	 * so the records are copied once, from the caller into the message NNG sends. */
	nng_msg *cur;
	uint32_t cur_nrec;
	uint64_t cur_start_ms;

	uint64_t next_seq;
	uint64_t rec_total; /* records in all batches assigned a seq so far */
	uint64_t config_version;

	/* Finished batches waiting for a subscriber, oldest first (ring). */
	nng_msg **pending;
	unsigned int pending_max, pending_head, pending_len;

	uint64_t batches_discarded, records_discarded;
	/* Atomic because the pipe callback snapshots it (see pipe_base). */
	_Atomic uint64_t batches_sent;

	/* Written by NNG's threads in the pipe callbacks: pipe ids of connected subscribers. Tracking
	 * ids rather than a bare counter because NNG reports a removal for pipes whose addition it never
	 * reported (closed during setup), which would make a counter drift. pipe_base is batches_sent
	 * when the pipe joined: the pipe owes us everything sent after that (see linger). */
	_Atomic uint32_t pipes[PIPE_SLOTS];
	_Atomic uint64_t pipe_base[PIPE_SLOTS];
	atomic_int npipes;
};

static void pipe_added(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct ipc_pub *pub = arg;
	uint32_t id = (uint32_t)nng_pipe_id(p);

	(void)ev;
	for (int i = 0; i < PIPE_SLOTS; i++) {
		uint32_t expect = 0;

		if (atomic_compare_exchange_strong(&pub->pipes[i], &expect, id)) {
			atomic_store(&pub->pipe_base[i], atomic_load(&pub->batches_sent));
			atomic_fetch_add(&pub->npipes, 1);
			return;
		}
	}
}

static void pipe_removed(nng_pipe p, nng_pipe_ev ev, void *arg)
{
	struct ipc_pub *pub = arg;
	uint32_t id = (uint32_t)nng_pipe_id(p);

	(void)ev;
	for (int i = 0; i < PIPE_SLOTS; i++) {
		uint32_t expect = id;

		if (atomic_compare_exchange_strong(&pub->pipes[i], &expect, 0)) {
			atomic_fetch_sub(&pub->npipes, 1);
			return;
		}
	}
}

int ipc_pub__connected(const struct ipc_pub *pub)
{
	return pub && atomic_load(&((struct ipc_pub *)pub)->npipes) > 0;
}

static uint32_t msg_nrecords(nng_msg *m)
{
	const uint8_t *b = nng_msg_body(m);

	/* Offset 44 of the header: record count, little-endian (see ipc.h). */
	return (uint32_t)b[44] | (uint32_t)b[45] << 8 | (uint32_t)b[46] << 16 | (uint32_t)b[47] << 24;
}

static void discard(struct ipc_pub *pub, nng_msg *m)
{
	pub->batches_discarded++;
	pub->records_discarded += msg_nrecords(m);
	nng_msg_free(m);
}

static int send_msg(struct ipc_pub *pub, nng_msg *m)
{
	/* PUB never blocks: with no room NNG drops the oldest queued message for that pipe, which the
	 * receiver sees as a seq gap. */
	int rv = nng_sendmsg(pub->ep.sock, m, NNG_FLAG_NONBLOCK);

	if (rv != 0) {
		discard(pub, m);
		return ipc__nng_err(rv);
	}
	atomic_fetch_add(&pub->batches_sent, 1);
	return 0;
}

/* Send what waited for a subscriber, in order, once one is there. */
static int drain_pending(struct ipc_pub *pub)
{
	int rc = 0;

	while (pub->pending_len > 0 && ipc_pub__connected(pub)) {
		nng_msg *m = pub->pending[pub->pending_head];
		int r;

		pub->pending[pub->pending_head] = NULL;
		pub->pending_head = (pub->pending_head + 1) % pub->pending_max;
		pub->pending_len--;
		r = send_msg(pub, m);
		if (r < 0 && rc == 0)
			rc = r;
	}
	return rc;
}

static void enqueue_pending(struct ipc_pub *pub, nng_msg *m)
{
	if (pub->pending_len == pub->pending_max) {
		/* Keep the newest: the supervisor wants current values, and the dropped batch's seq is
		 * already spent, so the gap is counted on arrival of the next one. */
		nng_msg *old = pub->pending[pub->pending_head];

		pub->pending[pub->pending_head] = NULL;
		pub->pending_head = (pub->pending_head + 1) % pub->pending_max;
		pub->pending_len--;
		discard(pub, old);
	}
	pub->pending[(pub->pending_head + pub->pending_len) % pub->pending_max] = m;
	pub->pending_len++;
}

static int open_batch(struct ipc_pub *pub)
{
	nng_msg *m;
	int rv;

	rv = nng_msg_alloc(&m, IPC_BATCH_HDR_LEN);
	if (rv != 0)
		return ipc__nng_err(rv);
	rv = nng_msg_reserve(m, pub->reserve);
	if (rv != 0) {
		nng_msg_free(m);
		return ipc__nng_err(rv);
	}
	memset(nng_msg_body(m), 0, IPC_BATCH_HDR_LEN);
	pub->cur = m;
	pub->cur_nrec = 0;
	pub->cur_start_ms = ipc__now_ms();
	return 0;
}

/* Close the open batch: number it, then send it or keep it for later. */
static int finish_batch(struct ipc_pub *pub)
{
	struct ipc_batch_hdr h;
	nng_msg *m = pub->cur;

	memset(&h, 0, sizeof(h));
	memcpy(h.probe, pub->probe, sizeof(h.probe));
	h.pid = pub->pid;
	h.nrecords = pub->cur_nrec;
	h.seq = pub->next_seq++;
	h.rec_offset = pub->rec_total;
	h.config_version = pub->config_version;
	h.payload_len = (uint32_t)(nng_msg_len(m) - IPC_BATCH_HDR_LEN);
	ipc_batch_hdr__encode(&h, nng_msg_body(m));
	pub->rec_total += pub->cur_nrec;
	pub->cur = NULL;
	pub->cur_nrec = 0;

	if (pub->pending_len > 0 || !ipc_pub__connected(pub)) {
		enqueue_pending(pub, m);
		return drain_pending(pub);
	}
	return send_msg(pub, m);
}

struct ipc_pub *ipc_pub__new(const struct ipc_pub_opts *opts)
{
	struct ipc__ep_conf conf = {
		.open = nng_pub0_open,
		.notify = {{NNG_PIPE_EV_ADD_POST, pipe_added}, {NNG_PIPE_EV_REM_POST, pipe_removed}},
	};
	struct ipc_pub *pub = NULL;
	size_t nlen;
	int err;

	if (!opts || !opts->url || !opts->probe_name) {
		errno = EINVAL;
		return NULL;
	}
	nlen = strlen(opts->probe_name);
	if (nlen == 0 || nlen >= IPC_PROBE_NAME_MAX || opts->max_payload > IPC_BATCH_MAX_PAYLOAD ||
	    opts->pending_max > IPC_PENDING_MAX_LIMIT || opts->sendbuf < 0 || opts->sendbuf > 8192) {
		errno = EINVAL;
		return NULL;
	}

	pub = ipc__alloc(1, sizeof(*pub));
	if (!pub)
		return NULL;
	memcpy(pub->probe, opts->probe_name, nlen);
	pub->pid = (uint32_t)getpid();
	pub->max_payload = opts->max_payload ? opts->max_payload : IPC_BATCH_DEFAULT_PAYLOAD;
	/* A single record larger than max_payload still travels, alone in its batch. */
	pub->reserve = IPC_BATCH_HDR_LEN +
		       (pub->max_payload > IPC_RECORD_MAX_LEN + 1 ? pub->max_payload : IPC_RECORD_MAX_LEN + 1);
	pub->flush_ms = opts->flush_ms ? opts->flush_ms : IPC_FLUSH_INTERVAL_MS;
	pub->pending_max = opts->pending_max ? opts->pending_max : DEFAULT_PENDING;
	pub->pending = calloc(pub->pending_max, sizeof(*pub->pending));
	if (!pub->pending) {
		err = -ENOMEM;
		goto err_out;
	}

	conf.sendbuf = opts->sendbuf ? opts->sendbuf : IPC_PUB_DEFAULT_SENDBUF;
	/* Dialed, not listened: the supervisor may not listen yet; NNG keeps redialing in the background. */
	conf.url = opts->url;
	err = ipc__ep_start(&pub->ep, &conf, pub);
	if (err < 0)
		goto err_out;
	return pub;

err_out:
	ipc_pub__free(pub);
	errno = -err;
	return NULL;
}

static int check_line(const char *line, size_t len)
{
	if (!line || len == 0 || len > IPC_RECORD_MAX_LEN)
		return -EINVAL;
	/* Either byte would split or truncate the record on the receiving side. */
	if (memchr(line, '\n', len) || memchr(line, '\0', len))
		return -EINVAL;
	return 0;
}

int ipc_pub__append(struct ipc_pub *pub, const char *line, size_t len)
{
	nng_msg *m;
	size_t before;
	int rc;

	if (!pub)
		return -EINVAL;
	rc = check_line(line, len);
	if (rc < 0)
		return rc;

	if (pub->cur && pub->cur_nrec > 0 && nng_msg_len(pub->cur) - IPC_BATCH_HDR_LEN + len + 1 > pub->max_payload)
		(void)finish_batch(pub); /* a send failure is counted as discarded, the record still goes */
	if (!pub->cur) {
		rc = open_batch(pub);
		if (rc < 0)
			return rc;
	}
	m = pub->cur;
	before = nng_msg_len(m);
	/* Within the reserved capacity, so neither append reallocates. */
	if (nng_msg_append(m, line, len) != 0 || nng_msg_append(m, "\n", 1) != 0) {
		/* Only possible on allocation failure; do not leave half a record behind. */
		(void)nng_msg_realloc(m, before);
		return -ENOMEM;
	}
	pub->cur_nrec++;

	if (ipc__now_ms() - pub->cur_start_ms >= pub->flush_ms ||
	    nng_msg_len(m) - IPC_BATCH_HDR_LEN >= pub->max_payload)
		(void)finish_batch(pub);
	else if (pub->pending_len > 0)
		(void)drain_pending(pub);
	return 0;
}

int ipc_pub__flush(struct ipc_pub *pub, int force_empty)
{
	int rc;

	if (!pub)
		return -EINVAL;
	if (!pub->cur && force_empty) {
		rc = open_batch(pub);
		if (rc < 0)
			return rc;
	}
	if (pub->cur && (pub->cur_nrec > 0 || force_empty))
		return finish_batch(pub);
	return drain_pending(pub);
}

int ipc_pub__tick(struct ipc_pub *pub)
{
	if (!pub)
		return -EINVAL;
	if (pub->cur && pub->cur_nrec > 0 && ipc__now_ms() - pub->cur_start_ms >= pub->flush_ms)
		return finish_batch(pub);
	return drain_pending(pub);
}

int ipc_pub__timeout_ms(const struct ipc_pub *pub)
{
	int t = -1;

	if (!pub)
		return -1;
	if (pub->cur && pub->cur_nrec > 0) {
		uint64_t age = ipc__now_ms() - pub->cur_start_ms;

		t = age >= pub->flush_ms ? 0 : (int)(pub->flush_ms - age);
	}
	if (pub->pending_len > 0 && (t < 0 || t > PENDING_RETRY_MS))
		t = PENDING_RETRY_MS;
	return t;
}

void ipc_pub__set_config_version(struct ipc_pub *pub, uint64_t version)
{
	if (pub)
		pub->config_version = version;
}

uint64_t ipc_pub__batches_sent(const struct ipc_pub *pub)
{
	return pub ? atomic_load(&((struct ipc_pub *)pub)->batches_sent) : 0;
}

uint64_t ipc_pub__batches_discarded(const struct ipc_pub *pub)
{
	return pub ? pub->batches_discarded : 0;
}

uint64_t ipc_pub__records_discarded(const struct ipc_pub *pub)
{
	return pub ? pub->records_discarded : 0;
}

/* Messages NNG has written out on pipe `id` (per-pipe statistics; NNG 1.5 keeps no socket total). */
static int64_t pipe_tx(nng_stat *root, int sock_id, uint32_t id)
{
	for (nng_stat *st = nng_stat_child(root); st; st = nng_stat_next(st)) {
		nng_stat *sock, *tx;

		if (strcmp(nng_stat_name(st), "pipe") != 0 || nng_stat_value(st) != id)
			continue;
		sock = nng_stat_find(st, "socket");
		tx = nng_stat_find(st, "tx_msgs");
		if (sock && tx && nng_stat_value(sock) == (uint64_t)sock_id)
			return (int64_t)nng_stat_value(tx);
	}
	return -1;
}

/* 1 when every connected subscriber has been written every batch sent since it joined. */
static int all_written(struct ipc_pub *pub)
{
	uint64_t sent = atomic_load(&pub->batches_sent);
	int sock_id = nng_socket_id(pub->ep.sock);
	nng_stat *root;
	int done = 1;

	if (nng_stats_get(&root) != 0)
		return 0;
	for (int i = 0; i < PIPE_SLOTS && done; i++) {
		uint32_t id = atomic_load(&pub->pipes[i]);
		int64_t tx;

		if (id == 0)
			continue;
		tx = pipe_tx(root, sock_id, id);
		if (tx < 0 || (uint64_t)tx < sent - atomic_load(&pub->pipe_base[i]))
			done = 0;
	}
	nng_stats_free(root);
	return done;
}

/*
 * NNG 1.5 has no linger: nng_close drops messages still queued for a pipe, and losing the last
 * batches of a probe is a loss the receiver cannot see (no later seq reveals the gap). So poll,
 * bounded, until each pipe's tx counter shows our batches written to the kernel socket, from where
 * the peer still reads them after we close. There is no event for this, hence the short sleeps.
 */
static int linger(struct ipc_pub *pub, unsigned int timeout_ms)
{
	uint64_t deadline = ipc__now_ms() + timeout_ms;

	for (;;) {
		(void)drain_pending(pub);
		if (pub->pending_len == 0 && (!ipc_pub__connected(pub) || all_written(pub)))
			return 0;
		if (ipc__now_ms() >= deadline)
			return -ETIMEDOUT;
		nanosleep(&(struct timespec){.tv_nsec = 2 * 1000 * 1000}, NULL);
	}
}

int ipc_pub__drain(struct ipc_pub *pub, unsigned int timeout_ms)
{
	if (!pub)
		return -EINVAL;
	if (pub->cur && pub->cur_nrec > 0)
		(void)finish_batch(pub);
	if (linger(pub, timeout_ms) < 0)
		return -ETIMEDOUT;
	/* Connected-and-written, or nobody there: only the latter leaves batches behind. */
	return pub->pending_len > 0 ? -ENOTCONN : 0;
}

void ipc_pub__free(struct ipc_pub *pub)
{
	if (!pub)
		return;
	if (pub->ep.sock_open) {
		(void)ipc_pub__drain(pub, IPC_PUB_LINGER_MS);
		/* nng_close returns once every pipe is gone, so no callback can touch pub afterwards. */
		ipc__ep_close(&pub->ep);
	}
	if (pub->cur)
		nng_msg_free(pub->cur);
	while (pub->pending && pub->pending_len > 0) {
		discard(pub, pub->pending[pub->pending_head]);
		pub->pending_head = (pub->pending_head + 1) % pub->pending_max;
		pub->pending_len--;
	}
	free(pub->pending);
	free(pub);
}
