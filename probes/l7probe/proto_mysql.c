/* proto_mysql.c - MySQL/MariaDB client/server protocol for l7probe: packets (3-byte length, sequence
 * id), handshake skipped, commands (COM_QUERY, COM_STMT_*, COM_PING...) answered by OK, ERR, EOF or a
 * result set counted packet by packet to its end; ERR = error with its code; api = command + keyword. */
#include <stdio.h>
#include <string.h>

#include "l7_api.h"
#include "l7_proto_impl.h"

enum { M_FIRST = 0, M_COLDEFS, M_COLDEF_EOF, M_ROWS, M_INFILE, M_PREP_DEFS };

#define MY_PKT_MAX   0xffffffu
#define MY_PEEK	     32	 /* payload bytes looked at in a response packet */
#define MY_SQL_PEEK  256 /* payload bytes of a query read for its statement type and table */
#define MY_KNOWN     1u	 /* session flags: whether EOF packets are deprecated is known */
#define MY_NOEOF     2u	 /* ... and they are (CLIENT_DEPRECATE_EOF) */
#define MY_AUTH	     4u	 /* the server asked the client for more than a command (auth, LOCAL INFILE) */
#define MY_CAP_41    0x200u
#define MY_CAP_NOEOF (1u << 24)
#define MY_MORE	     0x0008u /* SERVER_MORE_RESULTS_EXISTS */
#define MY_CURSOR    0x0040u /* SERVER_STATUS_CURSOR_EXISTS */

enum {
	COM_QUIT = 0x01,
	COM_QUERY = 0x03,
	COM_FIELD_LIST = 0x04,
	COM_STATISTICS = 0x09,
	COM_CHANGE_USER = 0x11,
	COM_BINLOG_DUMP = 0x12,
	COM_STMT_PREPARE = 0x16,
	COM_STMT_EXECUTE = 0x17,
	COM_STMT_SEND_LONG_DATA = 0x18,
	COM_STMT_CLOSE = 0x19,
	COM_STMT_FETCH = 0x1c,
	COM_BINLOG_DUMP_GTID = 0x1e,
	COM_STMT_BULK_EXECUTE = 0xfa,
};

static const char *const my_cmds[0x20] = {
	[0x01] = "COM_QUIT",
	[0x02] = "COM_INIT_DB",
	[0x03] = "COM_QUERY",
	[0x04] = "COM_FIELD_LIST",
	[0x05] = "COM_CREATE_DB",
	[0x06] = "COM_DROP_DB",
	[0x07] = "COM_REFRESH",
	[0x08] = "COM_SHUTDOWN",
	[0x09] = "COM_STATISTICS",
	[0x0a] = "COM_PROCESS_INFO",
	[0x0c] = "COM_PROCESS_KILL",
	[0x0d] = "COM_DEBUG",
	[0x0e] = "COM_PING",
	[0x11] = "COM_CHANGE_USER",
	[0x12] = "COM_BINLOG_DUMP",
	[0x13] = "COM_TABLE_DUMP",
	[0x15] = "COM_REGISTER_SLAVE",
	[0x16] = "COM_STMT_PREPARE",
	[0x17] = "COM_STMT_EXECUTE",
	[0x18] = "COM_STMT_SEND_LONG_DATA",
	[0x19] = "COM_STMT_CLOSE",
	[0x1a] = "COM_STMT_RESET",
	[0x1b] = "COM_SET_OPTION",
	[0x1c] = "COM_STMT_FETCH",
	[0x1e] = "COM_BINLOG_DUMP_GTID",
	[0x1f] = "COM_RESET_CONNECTION",
};

static const char *cmd_name(uint8_t c)
{
	if (c == COM_STMT_BULK_EXECUTE)
		return "COM_STMT_BULK_EXECUTE";
	return c < 0x20 ? my_cmds[c] : NULL;
}

/* Length of a command packet that has a fixed one, 0 for the others. */
static uint32_t cmd_len(uint8_t c)
{
	switch (c) {
	case COM_QUIT:
	case COM_STATISTICS:
	case 0x0a: /* COM_PROCESS_INFO */
	case 0x0d: /* COM_DEBUG */
	case 0x0e: /* COM_PING */
	case 0x1f: /* COM_RESET_CONNECTION */
		return 1;
	case COM_STMT_CLOSE:
	case 0x1a: /* COM_STMT_RESET */
		return 5;
	case COM_STMT_FETCH:
		return 9;
	default:
		return 0;
	}
}

static uint32_t le24(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* A length-encoded integer at p[0..n): its size in bytes (0 when cut or invalid), value in *v. */
static size_t lenenc(const uint8_t *p, size_t n, uint64_t *v)
{
	size_t k;

	if (n < 1)
		return 0;
	if (p[0] < 0xfb) {
		*v = p[0];
		return 1;
	}
	k = p[0] == 0xfc ? 2 : p[0] == 0xfd ? 3 : p[0] == 0xfe ? 8 : 0;
	if (k == 0 || n < 1 + k)
		return 0;
	*v = 0;
	for (size_t i = 0; i < k; i++)
		*v |= (uint64_t)p[1 + i] << (8 * i);
	return 1 + k;
}

/* Server status of an OK (0x00 or 0xfe header) or EOF packet; 0 when not readable. */
static uint16_t ok_status(const uint8_t *pay, size_t avail, uint32_t plen)
{
	size_t i = 1, k;
	uint64_t v;

	if (pay[0] == 0xfe && plen < 9)
		return avail >= 5 ? le16(pay + 3) : 0; /* EOF: header, warnings, status */
	k = lenenc(pay + i, avail - i, &v);
	if (!k)
		return 0;
	i += k;
	k = lenenc(pay + i, avail - i, &v);
	if (!k)
		return 0;
	i += k;
	return avail >= i + 2 ? le16(pay + i) : 0;
}

static void learn_eof(struct l7_session *s, bool deprecated)
{
	s->flags = (s->flags & ~MY_NOEOF) | MY_KNOWN | (deprecated ? MY_NOEOF : 0);
}

long l7__mysql_parse_req(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts)
{
	struct l7_dir *d = &s->dir[L7_FLOW_REQ];
	struct l7_mysql_dir *y = &d->p.mysql;
	struct l7_msg *m = &d->msg;
	uint32_t plen;
	size_t need, avail, k;
	const char *name;
	uint8_t cmd;

	if (n < 4)
		return 0;
	plen = le24(p);
	if (y->cont) {
		y->cont = plen == MY_PKT_MAX; /* the rest of a 16 MiB packet */
		d->skip = plen;
		return 4;
	}
	if (p[3] != 0) {
		/* the handshake response (sequence 1), then authentication data or LOCAL INFILE contents,
		 * only while the server asked for them */
		if (p[3] == 1 && plen >= 32) {
			if (n < 4 + 32)
				return s->gap_follows ? -1 : 0;
			/* capabilities with protocol 4.1, 19 reserved zero bytes (MariaDB's own after) */
			if (!(le16(p + 4) & MY_CAP_41))
				return -1;
			for (size_t i = 13; i < 32; i++)
				if (p[i])
					return -1;
			learn_eof(s, (p[4] | p[5] << 8 | p[6] << 16 | (uint32_t)p[7] << 24) & MY_CAP_NOEOF);
			s->flags |= MY_AUTH;
		} else if (!(s->flags & MY_AUTH)) {
			return -1;
		}
		y->cont = plen == MY_PKT_MAX;
		d->skip = plen;
		return 4;
	}
	if (plen == 0)
		return -1;
	need = 4 + (plen < 1 + MY_SQL_PEEK ? plen : 1 + MY_SQL_PEEK);
	if (n < need && s->gap_follows && n > 4)
		need = n;
	if (n < need)
		return 0;
	cmd = p[4];
	name = cmd_name(cmd);
	if (!name || (plen != cmd_len(cmd) && cmd_len(cmd)))
		return -1;
	avail = need - 5;
	l7__msg_start(s, L7_FLOW_REQ, ts);
	k = l7__api_put(m->api, sizeof(m->api), name, strlen(name));
	if ((cmd == COM_QUERY || cmd == COM_STMT_PREPARE) && k + 2 < sizeof(m->api)) {
		m->api[k] = ' ';
		if (!l7_api__sql(m->api + k + 1, sizeof(m->api) - k - 1, p + 5, avail))
			m->api[k] = '\0';
	} else if ((cmd == COM_STMT_EXECUTE || cmd == COM_STMT_CLOSE) && avail >= 4) {
		/* the statement id: named by the keyword its prepare had */
		uint32_t id = le16(p + 5) | (uint32_t)le16(p + 7) << 16;
		const char *kw = l7__stmt_get(s, id + 1);

		if (cmd == COM_STMT_CLOSE)
			l7__stmt_del(s, id + 1);
		else if (kw && k + 2 < sizeof(m->api))
			snprintf(m->api + k, sizeof(m->api) - k, " %s", kw);
	}
	m->aux = cmd;
	s->flags &= ~MY_AUTH;
	if (cmd == COM_CHANGE_USER)
		s->flags |= MY_AUTH;
	/* never answered; a binlog dump is a stream, not a reply */
	m->ignore = cmd == COM_QUIT || cmd == COM_STMT_CLOSE || cmd == COM_STMT_SEND_LONG_DATA ||
		    cmd == COM_BINLOG_DUMP || cmd == COM_BINLOG_DUMP_GTID;
	y->cont = plen == MY_PKT_MAX;
	l7__msg_end(s, L7_FLOW_REQ);
	d->skip = plen;
	return 4;
}

/* A prepared statement's parameter and column definitions: params first, then columns, each block
 * followed by an EOF packet unless the session deprecated them. */
static void prep_block_done(struct l7_session *s, struct l7_mysql_dir *y)
{
	if (y->cols && y->state == M_PREP_DEFS && y->phase == 0) {
		y->phase = 1; /* now the columns */
		y->left = y->cols;
		y->fresh = true;
		return;
	}
	l7__msg_end(s, L7_FLOW_RESP);
}

static int prep_packet(struct l7_session *s, struct l7_mysql_dir *y, uint8_t b0, uint32_t plen)
{
	if (b0 == 0xfe && plen < 9) {
		/* EOF after a block */
		learn_eof(s, false);
		if (y->left && y->fresh) {
			/* it ends the parameters, whose EOF was guessed away */
			y->fresh = false;
			return 0;
		}
		if (y->left)
			return -1;
		prep_block_done(s, y);
		return 0;
	}
	y->fresh = false;
	if (y->left == 0)
		return -1; /* an EOF was due */
	if (--y->left == 0 && (s->flags & (MY_KNOWN | MY_NOEOF)) != MY_KNOWN)
		prep_block_done(s, y); /* no EOF expected (or, not knowing, none guessed) */
	return 0;
}

long l7__mysql_parse_resp(struct l7_session *s, const uint8_t *p, size_t n, uint64_t ts)
{
	struct l7_dir *d = &s->dir[L7_FLOW_RESP];
	struct l7_mysql_dir *y = &d->p.mysql;
	struct l7_msg *m = &d->msg;
	const uint8_t *pay = p + 4;
	uint32_t plen;
	size_t need, avail;
	uint64_t v;
	uint8_t seq, b0;

	if (n < 4)
		return 0;
	plen = le24(p);
	seq = p[3];
	if (y->cont) {
		y->cont = plen == MY_PKT_MAX;
		d->skip = plen;
		return 4;
	}
	need = 4 + (plen < MY_PEEK ? plen : MY_PEEK);
	if (n < need && s->gap_follows && n > 4)
		need = n;
	if (n < need)
		return 0;
	avail = need - 4;
	b0 = plen ? pay[0] : 0;
	if (!m->started) {
		const struct l7_pend *front = l7__pend_front(s);

		if (seq != 1) {
			/* the server's greeting (seq 0), authentication (switch, more data, OK or ERR), or
			 * the EOF of a prepare whose end was guessed: no request's first packet */
			if (seq == 0 ? b0 != 0x0a && b0 != 0xff : b0 != 0x00 && b0 != 0xff && b0 != 0xfe && b0 != 0x01)
				return -1;
			if ((seq == 0 && b0 == 0x0a) || (seq > 1 && (b0 == 0xfe || b0 == 0x01)))
				s->flags |= MY_AUTH;
			if (seq > 1 && b0 == 0xfe && plen == 5 && y->last_seq && seq == (uint8_t)(y->last_seq + 1))
				learn_eof(s, false);
			d->skip = plen;
			y->last_seq = 0;
			return 4;
		}
		memset(y, 0, sizeof(*y));
		l7__msg_start(s, L7_FLOW_RESP, ts);
		y->state = M_FIRST;
		m->aux = front && !front->ignore ? front->aux : COM_QUERY;
	}
	y->last_seq = seq;
	y->cont = plen == MY_PKT_MAX;
	d->skip = plen;
	if (y->state == M_FIRST && m->aux == COM_STMT_FETCH && b0 != 0xff)
		y->state = M_ROWS; /* binary rows (0x00 header, like an OK) up to EOF */
	switch (y->state) {
	case M_FIRST:
		if (b0 == 0xff) {
			m->error = 1;
			m->status = avail >= 3 ? le16(pay + 1) : 0;
			l7__msg_end(s, L7_FLOW_RESP);
		} else if (m->aux == COM_STATISTICS) {
			l7__msg_end(s, L7_FLOW_RESP); /* a bare string */
		} else if (m->aux == COM_CHANGE_USER && (b0 == 0xfe || b0 == 0x01)) {
			/* authentication switch or more data: the OK or ERR comes later */
		} else if (b0 == 0x00 && m->aux == COM_STMT_PREPARE && plen >= 12 && avail >= 12) {
			uint16_t cols = le16(pay + 5), params = le16(pay + 7);
			const struct l7_pend *front = l7__pend_front(s);
			const char *kw = front ? strchr(front->api, ' ') : NULL;

			/* statement ids key the keywords (+ 1: 0 marks a free slot) */
			if (kw)
				l7__stmt_put(s, (le16(pay + 1) | (uint32_t)le16(pay + 3) << 16) + 1, kw + 1);

			y->state = M_PREP_DEFS;
			y->cols = cols;
			y->phase = params ? 0 : 1;
			y->left = params ? params : cols;
			if (!params && !cols)
				l7__msg_end(s, L7_FLOW_RESP);
		} else if ((b0 == 0x00 && plen >= 7) || (b0 == 0xfe && plen < 9)) {
			if (!(ok_status(pay, avail, plen) & MY_MORE))
				l7__msg_end(s, L7_FLOW_RESP);
		} else if (b0 == 0xfb) {
			y->state = M_INFILE;
			s->flags |= MY_AUTH; /* the file's contents come with sequence ids 2 and up */
		} else if (m->aux == COM_FIELD_LIST) {
			y->state = M_ROWS; /* column definitions up to EOF, like rows */
		} else {
			size_t k = lenenc(pay, avail, &v);

			if (!k || v == 0 || v > 4096 || b0 == 0xfe)
				return -1;
			y->state = M_COLDEFS;
			y->left = v;
		}
		break;
	case M_COLDEFS:
		if (b0 == 0xff)
			return -1;
		if (--y->left == 0)
			y->state = M_COLDEF_EOF;
		break;
	case M_COLDEF_EOF:
		if (b0 == 0xfe && plen == 5) {
			learn_eof(s, false);
			if (ok_status(pay, avail, plen) & MY_CURSOR)
				l7__msg_end(s, L7_FLOW_RESP); /* rows come with COM_STMT_FETCH */
			else
				y->state = M_ROWS;
			break;
		}
		learn_eof(s, true);
		y->state = M_ROWS;
		/* this packet is a row or the terminating OK */
		__attribute__((fallthrough));
	case M_ROWS:
		if (b0 == 0xff && plen < MY_PKT_MAX) {
			m->error = 1;
			m->status = avail >= 3 ? le16(pay + 1) : 0;
			l7__msg_end(s, L7_FLOW_RESP);
		} else if (b0 == 0xfe && plen < MY_PKT_MAX) {
			if (ok_status(pay, avail, plen) & MY_MORE)
				y->state = M_FIRST;
			else
				l7__msg_end(s, L7_FLOW_RESP);
		}
		break;
	case M_INFILE:
		if (b0 == 0xff) {
			m->error = 1;
			m->status = avail >= 3 ? le16(pay + 1) : 0;
		}
		l7__msg_end(s, L7_FLOW_RESP);
		break;
	case M_PREP_DEFS:
		if (prep_packet(s, y, b0, plen) < 0)
			return -1;
		break;
	}
	return 4;
}

bool l7__mysql_infer(const uint8_t *p, size_t n, enum l7_flow *ret_flow)
{
	uint32_t plen;
	const uint8_t *pay = p + 4;
	size_t i, end;

	if (n < 5)
		return false;
	plen = le24(p);
	if (plen == 0 || plen + 4 < n)
		return false; /* one packet per chunk here: a first exchange is not pipelined */
	if (plen + 4 > n && n < 64)
		return false;
	end = n - 4;
	if (p[3] == 0) {
		if (pay[0] == 0x0a && end > 2) {
			/* server greeting: protocol 10, a printable version ending in NUL */
			for (i = 1; i < end && i < 64 && pay[i] >= 0x20 && pay[i] < 0x7f; i++)
				;
			if (i > 1 && i < end && pay[i] == 0) {
				*ret_flow = L7_FLOW_RESP;
				return true;
			}
			return false;
		}
		if ((pay[0] == COM_QUERY || pay[0] == COM_STMT_PREPARE) && end > 1) {
			char kw[16];

			if (l7__sql_keyword(kw, sizeof(kw), pay + 1, end - 1) >= 2) {
				*ret_flow = L7_FLOW_REQ;
				return true;
			}
			return false;
		}
		if ((pay[0] == 0x0e || pay[0] == COM_QUIT) && plen == 1) {
			*ret_flow = L7_FLOW_REQ;
			return true;
		}
		return false;
	}
	if (p[3] == 1) {
		/* handshake response: capabilities with protocol 4.1, 19 reserved zero bytes (MariaDB keeps
		 * its own capabilities in the 4 after them) */
		if (plen >= 32 && end >= 32 && (le16(pay) & MY_CAP_41)) {
			for (i = 9; i < 28 && !pay[i]; i++)
				;
			if (i == 28) {
				*ret_flow = L7_FLOW_REQ;
				return true;
			}
		}
		/* ERR with an SQL state, or a short OK, answering a command */
		if ((pay[0] == 0xff && end >= 4 && pay[3] == '#') || (pay[0] == 0 && plen >= 7 && plen <= 64)) {
			*ret_flow = L7_FLOW_RESP;
			return true;
		}
	}
	return false;
}
