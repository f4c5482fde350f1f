/* ipc.h - record batches and the NNG transport shared by the supervisor and every probe. */
#ifndef GG_IPC_H
#define GG_IPC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Wire format of one data-plane message (a "batch"), all integers little-endian:
 *
 *   off  size  field
 *   0    4     magic           IPC_BATCH_MAGIC ("GGB1")
 *   4    2     header length   IPC_BATCH_HDR_LEN (lets a later version grow the header)
 *   6    2     flags           0 for now
 *   8    32    probe name      NUL-padded, at most IPC_PROBE_NAME_MAX-1 bytes used
 *   40   4     pid             sender's pid
 *   44   4     record count    number of '\n'-terminated record lines in the payload
 *   48   8     seq             per-probe batch sequence number, starts at 0, +1 per batch sent
 *   56   8     record offset   records the probe sent in all batches before this one
 *   64   8     config version  last configuration version the probe applied (0 = command line only)
 *   72   4     payload length  bytes of payload that follow the header
 *   76   4     reserved        0
 *   80   ...   payload         record lines "|table|v1|...|vN|\n"
 *
 * seq lets the receiver count lost batches, record offset lets it count lost records exactly.
 */
#define IPC_BATCH_MAGIC		  0x31424747u /* "GGB1" read as little-endian u32 */
#define IPC_BATCH_HDR_LEN	  80u
#define IPC_PROBE_NAME_MAX	  32u
#define IPC_BATCH_MAX_PAYLOAD	  (1u << 20)	/* hard upper bound a receiver accepts */
#define IPC_BATCH_DEFAULT_PAYLOAD (64u * 1024u) /* publisher flushes when this is reached */
#define IPC_FLUSH_INTERVAL_MS	  100u
#define IPC_RECORD_MAX_LEN	  8192u /* longest single record line, '\n' not counted */
#define IPC_PENDING_MAX_LIMIT	  4096u /* upper bound for ipc_pub_opts.pending_max */
#define IPC_PUB_DEFAULT_SENDBUF	  1024	/* NNG_OPT_SENDBUF of the data PUB socket, in messages */
/* NNG_OPT_RECVBUF of the data SUB socket, in messages: what may wait while the supervisor is busy. At the
 * default batch size (64 KiB) 32 MiB; beyond it NNG drops and the sequence numbers count the loss. */
#define IPC_SUB_DEFAULT_RECVBUF 1024
#define IPC_PUB_LINGER_MS	200u	   /* ipc_pub__free waits at most this long for queued batches to leave */
#define IPC_CTRL_MAX_PAYLOAD	(1u << 20) /* largest control payload (JSON) sent or accepted */

/* Decoded batch header. */
struct ipc_batch_hdr {
	char probe[IPC_PROBE_NAME_MAX];
	uint32_t pid;
	uint32_t nrecords;
	uint64_t seq;
	uint64_t rec_offset;
	uint64_t config_version;
	uint32_t payload_len;
};

/* Serialise hdr into buf (IPC_BATCH_HDR_LEN bytes). */
void ipc_batch_hdr__encode(const struct ipc_batch_hdr *hdr, uint8_t buf[IPC_BATCH_HDR_LEN]);

/*
 * Parse and check a received message. On success *ret_hdr is filled, *ret_payload points into msg
 * and 0 is returned. -EBADMSG: bad magic, short message, payload length disagreeing with the
 * message size, record count disagreeing with the number of lines, unterminated probe name, last
 * line not ending in '\n'. -E2BIG: payload over IPC_BATCH_MAX_PAYLOAD.
 * Also -EBADMSG: header length field below IPC_BATCH_HDR_LEN (a larger one is accepted and the
 * extra header bytes skipped), nonzero flags, empty probe name, a NUL byte in the payload, an empty
 * line, a line longer than IPC_RECORD_MAX_LEN. The payload is not NUL-terminated: it is
 * ret_hdr->payload_len bytes of '\n'-terminated lines. Nothing is written on failure.
 */
int ipc_batch__decode(const void *msg, size_t len, struct ipc_batch_hdr *ret_hdr, const char **ret_payload);
/*
 * Walk the lines of a decoded payload: start with *cursor = payload, end = payload + payload_len.
 * Returns 1 with the line (without its '\n') in *ret_line and *ret_len and *cursor advanced, 0 at the
 * end (or on a last line without '\n', which ipc_batch__decode has already rejected).
 */
int ipc_batch__next_record(const char **cursor, const char *end, const char **ret_line, size_t *ret_len);

/* ---------------------------------------------------------------------------------------------
 * Data plane, probe side: NNG PUB socket that dials the supervisor and batches record lines.
 * --------------------------------------------------------------------------------------------- */
struct ipc_pub;

struct ipc_pub_opts {
	const char *url;	/* e.g. "ipc:///run/gala-gopher/data" */
	const char *probe_name; /* copied into every header */
	size_t max_payload;	/* flush threshold; 0 = IPC_BATCH_DEFAULT_PAYLOAD */
	unsigned int flush_ms;	/* 0 = IPC_FLUSH_INTERVAL_MS */
	/* Batches kept while no subscriber is connected yet (sent once it connects); 0 = 64. When the
	 * queue is full the oldest batch is discarded: its seq is never sent, so the receiver counts it. */
	unsigned int pending_max;
	/* NNG_OPT_SENDBUF in messages (1..8192); 0 = IPC_PUB_DEFAULT_SENDBUF. */
	int sendbuf;
};

/* Dial (non-blocking: the probe may start before the supervisor listens). NULL + errno on error:
 * EINVAL for a missing url, an empty probe name or one of IPC_PROBE_NAME_MAX bytes or more,
 * max_payload over IPC_BATCH_MAX_PAYLOAD, pending_max over IPC_PENDING_MAX_LIMIT. */
struct ipc_pub *ipc_pub__new(const struct ipc_pub_opts *opts);
/* Append one record line (no trailing newline needed; one is added). Flushes when the batch is
 * full or older than flush_ms. -EINVAL for an empty line, one containing '\n' or NUL, or longer than
 * IPC_RECORD_MAX_LEN; -ENOMEM. 0 means the record is in a batch; a batch that NNG then fails to
 * take is counted in ipc_pub__batches_discarded (and seen as a gap by the receiver). */
int ipc_pub__append(struct ipc_pub *pub, const char *line, size_t len);
/* Send the current batch now (no-op when empty, unless force_empty: a heartbeat batch carrying the
 * config version). */
int ipc_pub__flush(struct ipc_pub *pub, int force_empty);
/* Flush if the open batch is older than flush_ms, and send batches kept while disconnected once a
 * subscriber is there. Call from the probe's loop, at the latest after ipc_pub__timeout_ms. */
int ipc_pub__tick(struct ipc_pub *pub);
/* How long the caller may sleep before ipc_pub__tick is due: ms, or -1 when nothing is waiting. */
int ipc_pub__timeout_ms(const struct ipc_pub *pub);
/* 1 when at least one subscriber is connected, else 0. */
int ipc_pub__connected(const struct ipc_pub *pub);
void ipc_pub__set_config_version(struct ipc_pub *pub, uint64_t version);
/* Statistics: batches sent, batches discarded while disconnected. */
uint64_t ipc_pub__batches_sent(const struct ipc_pub *pub);
uint64_t ipc_pub__batches_discarded(const struct ipc_pub *pub);
uint64_t ipc_pub__records_discarded(const struct ipc_pub *pub);
/*
 * Flush, then wait up to timeout_ms until every batch has been written to the subscriber(s): call
 * before ipc_pub__free when exiting, to learn whether the last batches left (a lost tail batch is
 * the one loss the receiver cannot see, as no later seq reveals it). 0 when all were written,
 * -ETIMEDOUT when some were still queued in NNG (slow subscriber), -ENOTCONN when batches are still
 * waiting for a subscriber. Polls every 2 ms: NNG offers no event for this.
 */
int ipc_pub__drain(struct ipc_pub *pub, unsigned int timeout_ms);
/* Flush and close; accepts NULL. Waits up to IPC_PUB_LINGER_MS for queued batches to be written to
 * the subscriber (NNG 1.5 has no linger option: closing drops what is still queued). */
void ipc_pub__free(struct ipc_pub *pub);

/* ---------------------------------------------------------------------------------------------
 * Data plane, supervisor side: NNG SUB socket listening on the url, subscribed to everything.
 * --------------------------------------------------------------------------------------------- */
struct ipc_sub;

/* Listen on url (removes a stale ipc:// socket file first; EADDRINUSE when a live process still
 * listens on it). Receive buffer IPC_SUB_DEFAULT_RECVBUF messages. NULL + errno on error. */
struct ipc_sub *ipc_sub__new(const char *url);
/* From now on accept only publishers running as uid whose process group leader is a child of
 * parent (spawned by it); others are disconnected before they can send and counted. Call before any
 * publisher may connect (right after ipc_sub__new). */
/* Listen again on url (its socket file was removed, e.g. run_dir deleted): the old listener is closed,
 * connected peers stay. 0 or negative errno. */
int ipc_sub__relisten(struct ipc_sub *sub, const char *url);
int ipc_sub__restrict_peers(struct ipc_sub *sub, uid_t uid, pid_t parent);
/* Connections refused by ipc_sub__restrict_peers. */
uint64_t ipc_sub__refused(const struct ipc_sub *sub);
/* Change NNG_OPT_RECVBUF (1..8192 messages). */
int ipc_sub__set_recvbuf(struct ipc_sub *sub, int nmsgs);
/* File descriptor that becomes readable when a message may be waiting (NNG_OPT_RECVFD). */
int ipc_sub__fd(const struct ipc_sub *sub);
/*
 * Receive one message without blocking. Returns 1 and fills *ret_msg and *ret_len (release with
 * ipc_msg__free) when one was waiting, 0 when none, negative errno on error.
 * *ret_msg points at the message bytes themselves (pass it and *ret_len to ipc_batch__decode); it is
 * not a copy, so it stays valid until ipc_msg__free(*ret_msg). Call in a loop until it returns 0:
 * the fd stays readable while messages are waiting.
 */
int ipc_sub__recv(struct ipc_sub *sub, void **ret_msg, size_t *ret_len);
/* Release a message from ipc_sub__recv (the pointer it returned); accepts NULL. */
void ipc_msg__free(void *msg);
void ipc_sub__free(struct ipc_sub *sub);

/* Per-probe gap accounting on the receiving side. */
struct ipc_seq_tracker {
	int started;
	uint32_t pid; /* a new pid is a new probe instance: sequence restarts */
	uint64_t next_seq;
	uint64_t next_rec;
	uint64_t lost_batches;
	uint64_t lost_records;
	uint64_t batches;
	uint64_t records;
};
/*
 * Account a received header; returns the number of batches found missing before it. Start with a
 * zeroed tracker. The first batch from a pid counts hdr->seq batches and hdr->rec_offset records as
 * lost (the instance sent them before we saw it). A different pid, or a seq lower than expected from
 * the same pid, is a new probe instance and is counted the same way. Never underflows.
 */
uint64_t ipc_seq_tracker__update(struct ipc_seq_tracker *t, const struct ipc_batch_hdr *hdr);

/* ---------------------------------------------------------------------------------------------
 * Control plane: supervisor PUB (listen) -> probe SUB (dial), topic = probe name.
 * Message: "<probe>\n<version>\n<payload>" where payload is JSON text.
 * --------------------------------------------------------------------------------------------- */
struct ipc_ctrl_pub;
struct ipc_ctrl_sub;

/* Listen on url (stale ipc:// file removed as for ipc_sub__new). NULL + errno on error. */
struct ipc_ctrl_pub *ipc_ctrl_pub__new(const char *url);
/* Lossy like all pub/sub: a probe not connected yet misses the update. The probe reports the version
 * it applied in every batch header (config_version), so resend while it lags behind.
 * -EINVAL: probe name empty, IPC_PROBE_NAME_MAX bytes or longer, or containing '\n'; payload
 * containing NUL. -E2BIG: len over IPC_CTRL_MAX_PAYLOAD. payload may be NULL when len is 0. */
int ipc_ctrl_pub__send(struct ipc_ctrl_pub *cp, const char *probe, uint64_t version, const char *payload, size_t len);
void ipc_ctrl_pub__free(struct ipc_ctrl_pub *cp);
/* As ipc_sub__relisten, for the control socket. */
int ipc_ctrl_pub__relisten(struct ipc_ctrl_pub *cp, const char *url);

/* Dial url (non-blocking, redials) and subscribe to "<probe>\n". NULL + errno on error. */
struct ipc_ctrl_sub *ipc_ctrl_sub__new(const char *url, const char *probe);
int ipc_ctrl_sub__fd(const struct ipc_ctrl_sub *cs);
/* Non-blocking: 1 and *ret_version, *ret_payload (malloc'd, NUL-terminated, caller frees) when an
 * update was waiting; 0 when none; negative errno on error or malformed message (-EBADMSG: not
 * "<probe>\n<1-20 decimal digits, no overflow>\n<payload without NUL>"; the message is consumed,
 * so keep calling until 0). */
int ipc_ctrl_sub__recv(struct ipc_ctrl_sub *cs, uint64_t *ret_version, char **ret_payload);
void ipc_ctrl_sub__free(struct ipc_ctrl_sub *cs);

#endif
