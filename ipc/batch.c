/* batch.c - the batch wire format (explicit little-endian codec) and receive-side gap accounting. */
#include <errno.h>
#include <string.h>

#include "ipc.h"

/* Field offsets, as drawn in ipc.h. */
enum {
	OFF_MAGIC = 0,
	OFF_HDRLEN = 4,
	OFF_FLAGS = 6,
	OFF_PROBE = 8,
	OFF_PID = 40,
	OFF_NREC = 44,
	OFF_SEQ = 48,
	OFF_RECOFF = 56,
	OFF_CFGVER = 64,
	OFF_PAYLEN = 72,
	OFF_RESERVED = 76,
};

_Static_assert(OFF_PROBE + IPC_PROBE_NAME_MAX == OFF_PID, "probe name field is 32 bytes");
_Static_assert(OFF_RESERVED + 4 == IPC_BATCH_HDR_LEN, "header is 80 bytes");

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

void ipc_batch_hdr__encode(const struct ipc_batch_hdr *hdr, uint8_t buf[IPC_BATCH_HDR_LEN])
{
	/* The name may come from a caller's fixed array that is not NUL-terminated: never read past it,
	 * and always leave room for the terminator the decoder insists on. */
	size_t nlen = strnlen(hdr->probe, IPC_PROBE_NAME_MAX - 1);

	memset(buf, 0, IPC_BATCH_HDR_LEN);
	put_u32(buf + OFF_MAGIC, IPC_BATCH_MAGIC);
	put_u16(buf + OFF_HDRLEN, IPC_BATCH_HDR_LEN);
	put_u16(buf + OFF_FLAGS, 0);
	memcpy(buf + OFF_PROBE, hdr->probe, nlen);
	put_u32(buf + OFF_PID, hdr->pid);
	put_u32(buf + OFF_NREC, hdr->nrecords);
	put_u64(buf + OFF_SEQ, hdr->seq);
	put_u64(buf + OFF_RECOFF, hdr->rec_offset);
	put_u64(buf + OFF_CFGVER, hdr->config_version);
	put_u32(buf + OFF_PAYLEN, hdr->payload_len);
	put_u32(buf + OFF_RESERVED, 0);
}

/* Count lines and enforce the line rules; the payload is untrusted. memchr keeps this fast enough for
 * millions of records per second. */
static int check_lines(const char *p, size_t len, uint64_t *ret_nlines)
{
	const char *end = p + len;
	uint64_t n = 0;

	if (len == 0) {
		*ret_nlines = 0;
		return 0;
	}
	if (p[len - 1] != '\n' || memchr(p, '\0', len))
		return -EBADMSG;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t llen;

		if (!nl)
			return -EBADMSG; /* unreachable: the last byte is '\n' */
		llen = (size_t)(nl - p);
		if (llen == 0 || llen > IPC_RECORD_MAX_LEN)
			return -EBADMSG;
		n++;
		p = nl + 1;
	}
	*ret_nlines = n;
	return 0;
}

int ipc_batch__decode(const void *msg, size_t len, struct ipc_batch_hdr *ret_hdr, const char **ret_payload)
{
	const uint8_t *b = msg;
	struct ipc_batch_hdr h;
	size_t hdrlen, nlen;
	uint64_t nlines;
	int rc;

	if (!msg || len < IPC_BATCH_HDR_LEN)
		return -EBADMSG;
	if (get_u32(b + OFF_MAGIC) != IPC_BATCH_MAGIC)
		return -EBADMSG;
	hdrlen = get_u16(b + OFF_HDRLEN);
	/* A longer header is a later version adding fields at the end; we skip them. */
	if (hdrlen < IPC_BATCH_HDR_LEN || hdrlen > len)
		return -EBADMSG;
	/* Flags would change how the payload reads; refuse what we do not understand. */
	if (get_u16(b + OFF_FLAGS) != 0)
		return -EBADMSG;
	nlen = strnlen((const char *)b + OFF_PROBE, IPC_PROBE_NAME_MAX);
	if (nlen == 0 || nlen == IPC_PROBE_NAME_MAX)
		return -EBADMSG;

	memset(&h, 0, sizeof(h));
	memcpy(h.probe, b + OFF_PROBE, nlen);
	h.pid = get_u32(b + OFF_PID);
	h.nrecords = get_u32(b + OFF_NREC);
	h.seq = get_u64(b + OFF_SEQ);
	h.rec_offset = get_u64(b + OFF_RECOFF);
	h.config_version = get_u64(b + OFF_CFGVER);
	h.payload_len = get_u32(b + OFF_PAYLEN);

	if (h.payload_len > IPC_BATCH_MAX_PAYLOAD)
		return -E2BIG;
	if ((size_t)h.payload_len != len - hdrlen)
		return -EBADMSG;
	rc = check_lines((const char *)b + hdrlen, h.payload_len, &nlines);
	if (rc < 0)
		return rc;
	if (nlines != h.nrecords)
		return -EBADMSG;

	*ret_hdr = h;
	*ret_payload = (const char *)b + hdrlen;
	return 0;
}

int ipc_batch__next_record(const char **cursor, const char *end, const char **ret_line, size_t *ret_len)
{
	const char *p = *cursor, *nl;

	if (!p || p >= end)
		return 0;
	nl = memchr(p, '\n', (size_t)(end - p));
	if (!nl)
		return 0;
	*ret_line = p;
	*ret_len = (size_t)(nl - p);
	*cursor = nl + 1;
	return 1;
}

/*
 * Gap accounting. The sender numbers every batch it assigns a seq to (including ones it later had to
 * discard), and rec_offset is the number of records in all earlier batches, so:
 *  - expected batch: nothing lost;
 *  - seq ahead of expectation: the difference in seq is lost batches, in rec_offset lost records;
 *  - first batch, a new pid, or seq behind expectation: a new instance (a restart, or a pid reused);
 *    everything it numbered before this batch was lost to us. A seq going backwards cannot be a
 *    reordering (one NNG pipe is ordered), so treating it as a restart is the only way not to
 *    underflow and still count what the new instance lost.
 */
uint64_t ipc_seq_tracker__update(struct ipc_seq_tracker *t, const struct ipc_batch_hdr *hdr)
{
	uint64_t missing, lost_rec;

	if (!t->started || t->pid != hdr->pid || hdr->seq < t->next_seq) {
		missing = hdr->seq;
		lost_rec = hdr->rec_offset;
		t->started = 1;
		t->pid = hdr->pid;
	} else {
		missing = hdr->seq - t->next_seq;
		/* rec_offset behind while seq moved forward is a broken sender; count nothing rather than
		 * wrap around. */
		lost_rec = hdr->rec_offset >= t->next_rec ? hdr->rec_offset - t->next_rec : 0;
	}
	t->next_seq = hdr->seq + 1;
	t->next_rec = hdr->rec_offset + hdr->nrecords;
	t->lost_batches += missing;
	t->lost_records += lost_rec;
	t->batches++;
	t->records += hdr->nrecords;
	return missing;
}
