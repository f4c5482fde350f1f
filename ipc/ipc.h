/* ipc.h - record batches and the NNG transport shared by the supervisor and every probe. */
#ifndef GG_IPC_H
#define GG_IPC_H

#include <stddef.h>
#include <stdint.h>

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
#define IPC_BATCH_MAGIC 0x31424747u /* "GGB1" read as little-endian u32 */
#define IPC_BATCH_HDR_LEN 80u
#define IPC_PROBE_NAME_MAX 32u
#define IPC_BATCH_MAX_PAYLOAD (1u << 20) /* hard upper bound a receiver accepts */
#define IPC_BATCH_DEFAULT_PAYLOAD (64u * 1024u) /* publisher flushes when this is reached */
#define IPC_FLUSH_INTERVAL_MS 100u
#define IPC_RECORD_MAX_LEN 8192u /* longest single record line */

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
 */
int ipc_batch__decode(const void *msg, size_t len, struct ipc_batch_hdr *ret_hdr, const char **ret_payload);

/* ---------------------------------------------------------------------------------------------
 * Data plane, probe side: NNG PUB socket that dials the supervisor and batches record lines.
 * --------------------------------------------------------------------------------------------- */
struct ipc_pub;

struct ipc_pub_opts {
	const char *url; /* e.g. "ipc:///run/gala-gopher/data" */
	const char *probe_name; /* copied into every header */
	size_t max_payload; /* flush threshold; 0 = IPC_BATCH_DEFAULT_PAYLOAD */
	unsigned int flush_ms; /* 0 = IPC_FLUSH_INTERVAL_MS */
	/* Batches kept while no subscriber is connected yet (sent once it connects); 0 = 64. When the
	 * queue is full the oldest batch is discarded: its seq is never sent, so the receiver counts it. */
	unsigned int pending_max;
};

/* Dial (non-blocking: the probe may start before the supervisor listens). NULL + errno on error. */
struct ipc_pub *ipc_pub__new(const struct ipc_pub_opts *opts);
/* Append one record line (no trailing newline needed; one is added). Flushes when the batch is
 * full or older than flush_ms. -EINVAL for an empty line, one containing '\n', or longer than
 * IPC_RECORD_MAX_LEN. */
int ipc_pub__append(struct ipc_pub *pub, const char *line, size_t len);
/* Send the current batch now (no-op when empty, unless force_empty: a heartbeat batch carrying the
 * config version). */
int ipc_pub__flush(struct ipc_pub *pub, int force_empty);
/* Flush if the open batch is older than flush_ms. Call from the probe's loop. */
int ipc_pub__tick(struct ipc_pub *pub);
void ipc_pub__set_config_version(struct ipc_pub *pub, uint64_t version);
/* Statistics: batches sent, batches discarded while disconnected. */
uint64_t ipc_pub__batches_sent(const struct ipc_pub *pub);
uint64_t ipc_pub__batches_discarded(const struct ipc_pub *pub);
/* Flush and close; accepts NULL. */
void ipc_pub__free(struct ipc_pub *pub);

/* ---------------------------------------------------------------------------------------------
 * Data plane, supervisor side: NNG SUB socket listening on the url, subscribed to everything.
 * --------------------------------------------------------------------------------------------- */
struct ipc_sub;

/* Listen on url (removes a stale ipc:// socket file first). NULL + errno on error. */
struct ipc_sub *ipc_sub__new(const char *url);
/* File descriptor that becomes readable when a message may be waiting (NNG_OPT_RECVFD). */
int ipc_sub__fd(const struct ipc_sub *sub);
/*
 * Receive one message without blocking. Returns 1 and fills *ret_msg/*ret_len (release with
 * ipc_msg__free) when one was waiting, 0 when none, negative errno on error.
 */
int ipc_sub__recv(struct ipc_sub *sub, void **ret_msg, size_t *ret_len);
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
/* Account a received header; returns the number of batches found missing before it. */
uint64_t ipc_seq_tracker__update(struct ipc_seq_tracker *t, const struct ipc_batch_hdr *hdr);

/* ---------------------------------------------------------------------------------------------
 * Control plane: supervisor PUB (listen) -> probe SUB (dial), topic = probe name.
 * Message: "<probe>\n<version>\n<payload>" where payload is JSON text.
 * --------------------------------------------------------------------------------------------- */
struct ipc_ctrl_pub;
struct ipc_ctrl_sub;

struct ipc_ctrl_pub *ipc_ctrl_pub__new(const char *url);
int ipc_ctrl_pub__send(struct ipc_ctrl_pub *cp, const char *probe, uint64_t version, const char *payload,
		       size_t len);
void ipc_ctrl_pub__free(struct ipc_ctrl_pub *cp);

struct ipc_ctrl_sub *ipc_ctrl_sub__new(const char *url, const char *probe);
int ipc_ctrl_sub__fd(const struct ipc_ctrl_sub *cs);
/* Non-blocking: 1 and *ret_version, *ret_payload (malloc'd, NUL-terminated, caller frees) when an
 * update was waiting; 0 when none; negative errno on error or malformed message. */
int ipc_ctrl_sub__recv(struct ipc_ctrl_sub *cs, uint64_t *ret_version, char **ret_payload);
void ipc_ctrl_sub__free(struct ipc_ctrl_sub *cs);

#endif
