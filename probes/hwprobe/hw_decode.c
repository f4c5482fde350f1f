/* hw_decode.c - tracefs format parsing, raw record fields, and hwprobe's tallies (hw_decode.h). */
#include "hw_decode.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "offset:12;" after key in [s, e): the number, or -1. */
static long num_after(const char *s, const char *e, const char *key)
{
	size_t kl = strlen(key);
	long v = 0;
	int digits = 0;

	for (const char *p = s; p + kl <= e; p++) {
		if (memcmp(p, key, kl))
			continue;
		p += kl;
		while (p < e && *p >= '0' && *p <= '9' && v < 1000000) {
			v = v * 10 + (*p++ - '0');
			digits++;
		}
		return digits ? v : -1;
	}
	return -1;
}

/* One "field:<decl>;\toffset:N;\tsize:N;\tsigned:N;" line [s, e). 1 taken, 0 skipped. */
static int parse_field(const char *s, const char *e, struct tp_field *ret)
{
	const char *decl = s + 6, *semi = memchr(decl, ';', (size_t)(e - decl)), *end, *start;
	long off = num_after(s, e, "offset:"), size = num_after(s, e, "size:"), sg = num_after(s, e, "signed:");

	if (!semi || off < 0 || size <= 0 || off > 0xffff || size > 0xffff)
		return 0;
	end = semi;
	/* "char comm[16]" and "__data_loc char[] msg": the name is the last word, without a [..] */
	if (end > decl && end[-1] == ']') {
		const char *lb = end;

		while (lb > decl && *lb != '[')
			lb--;
		if (lb > decl && lb[-1] != ' ')
			end = lb;
	}
	start = end;
	while (start > decl && start[-1] != ' ' && start[-1] != '\t' && start[-1] != '*')
		start--;
	if (start == end || (size_t)(end - start) >= TP_NAME_MAX)
		return 0;
	memset(ret, 0, sizeof(*ret));
	memcpy(ret->name, start, (size_t)(end - start));
	ret->offset = (uint16_t)off;
	ret->size = (uint16_t)size;
	ret->is_signed = sg == 1;
	if (!strncmp(decl, "__data_loc ", 11))
		ret->loc = 1;
	else if (!strncmp(decl, "__rel_loc ", 10))
		ret->loc = 2;
	return 1;
}

int tp_format__parse(const char *text, size_t len, struct tp_format *ret)
{
	const char *p = text, *end = text + len;
	int named = 0;

	memset(ret, 0, sizeof(*ret));
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *s = p;

		if (!eol)
			eol = end;
		while (s < eol && (*s == ' ' || *s == '\t'))
			s++;
		if (eol - s > 5 && !memcmp(s, "name:", 5)) {
			const char *n = s + 5;

			while (n < eol && *n == ' ')
				n++;
			snprintf(ret->name, sizeof(ret->name), "%.*s", (int)(eol - n), n);
			named = 1;
		} else if (eol - s > 3 && !memcmp(s, "ID:", 3)) {
			long id = num_after(s, eol, "ID: ");

			ret->id = id > 0 ? (unsigned int)id : 0;
		} else if (eol - s > 6 && !memcmp(s, "field:", 6)) {
			struct tp_field f;

			if (parse_field(s, eol, &f)) {
				if (ret->nfields >= TP_FIELDS_MAX)
					return -E2BIG;
				ret->fields[ret->nfields++] = f;
			}
		}
		p = eol + 1;
	}
	return named && ret->nfields ? 0 : -EINVAL;
}

const struct tp_field *tp_format__field(const struct tp_format *f, const char *name)
{
	for (unsigned int i = 0; f && i < f->nfields; i++)
		if (!strcmp(f->fields[i].name, name))
			return &f->fields[i];
	return NULL;
}

int tp_rec__int(const struct tp_field *f, const void *rec, size_t len, int64_t *ret)
{
	const unsigned char *p;
	uint64_t v = 0;

	if (!f || f->loc || (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8) ||
	    (size_t)f->offset + f->size > len)
		return -EINVAL;
	p = (const unsigned char *)rec + f->offset;
	/* the record is in the host's byte order */
	memcpy(&v, p, f->size);
	if (f->size < 8) {
		uint64_t mask = (1ull << (8 * f->size)) - 1;

#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		v >>= 8 * (8 - f->size);
#endif
		v &= mask;
		if (f->is_signed && (v >> (8 * f->size - 1)) & 1)
			v |= ~mask;
	}
	*ret = (int64_t)v;
	return 0;
}

int tp_rec__str(const struct tp_field *f, const void *rec, size_t len, char *buf, size_t buflen)
{
	uint32_t loc;
	size_t off, n;
	const char *s, *nul;

	if (!buflen)
		return -EINVAL;
	buf[0] = 0;
	if (!f || !f->loc || f->size != 4 || (size_t)f->offset + 4 > len)
		return -EINVAL;
	memcpy(&loc, (const unsigned char *)rec + f->offset, 4);
	off = loc & 0xffff;
	n = loc >> 16;
	if (f->loc == 2)
		off += (size_t)f->offset + 4;
	if (off > len || n > len - off)
		return -EINVAL;
	s = (const char *)rec + off;
	nul = memchr(s, 0, n);
	if (nul)
		n = (size_t)(nul - s);
	if (n > buflen - 1)
		n = buflen - 1;
	memcpy(buf, s, n);
	buf[n] = 0;
	return 0;
}

/* ---- tallies ------------------------------------------------------------------------------------ */

struct hw_nic *hw_agg__nic(struct hw_agg *a, const char *dev)
{
	struct hw_nic *n;

	for (unsigned int i = 0; i < a->nnics; i++)
		if (!strcmp(a->nics[i].dev, dev))
			return &a->nics[i];
	if (a->nnics >= HW_NICS_MAX || !dev[0] || strlen(dev) >= HW_IFNAMSIZ)
		return NULL;
	n = &a->nics[a->nnics++];
	memset(n, 0, sizeof(*n));
	snprintf(n->dev, sizeof(n->dev), "%s", dev);
	n->queue = -1;
	return n;
}

int hw_agg__xmit_timeout(struct hw_agg *a, const void *rec, size_t len, struct hw_nic **ret)
{
	const struct tp_format *f = &a->xmit_fmt;
	char dev[64], driver[64];
	int64_t q;
	struct hw_nic *n;

	if (ret)
		*ret = NULL;
	if (!a->has_xmit_fmt || tp_rec__str(tp_format__field(f, "name"), rec, len, dev, sizeof(dev)) ||
	    tp_rec__int(tp_format__field(f, "queue_index"), rec, len, &q)) {
		a->undecodable++;
		return -EINVAL;
	}
	(void)tp_rec__str(tp_format__field(f, "driver"), rec, len, driver, sizeof(driver));
	n = hw_agg__nic(a, dev);
	if (!n) {
		a->overflow++;
		return -ENOSPC;
	}
	n->timeouts++;
	n->queue = q >= 0 && q <= 0xffff ? (int)q : -1;
	if (driver[0])
		snprintf(n->driver, sizeof(n->driver), "%.*s", (int)sizeof(n->driver) - 1, driver);
	if (ret)
		*ret = n;
	return 0;
}

/* enum hw_event_mc_err_type (include/linux/edac.h) as gala-gopher labels it. */
static const char *err_type_name(unsigned int t)
{
	static const char *const names[] = {"CE", "UE", "Deferred", "Fatal", "Info"};

	return t < sizeof(names) / sizeof(names[0]) ? names[t] : "Unknown";
}

int hw_mc__decode(const struct tp_format *f, const void *rec, size_t len, struct hw_mc_rec *ret)
{
	int64_t et, cnt, mc, top, mid, low, grain = 0;

	memset(ret, 0, sizeof(*ret));
	if (tp_rec__int(tp_format__field(f, "error_type"), rec, len, &et) ||
	    tp_rec__int(tp_format__field(f, "error_count"), rec, len, &cnt) ||
	    tp_rec__int(tp_format__field(f, "mc_index"), rec, len, &mc) ||
	    tp_rec__int(tp_format__field(f, "top_layer"), rec, len, &top) ||
	    tp_rec__int(tp_format__field(f, "middle_layer"), rec, len, &mid) ||
	    tp_rec__int(tp_format__field(f, "lower_layer"), rec, len, &low) ||
	    tp_rec__str(tp_format__field(f, "label"), rec, len, ret->label, sizeof(ret->label)))
		return -EINVAL;
	(void)tp_rec__str(tp_format__field(f, "msg"), rec, len, ret->msg, sizeof(ret->msg));
	(void)tp_rec__str(tp_format__field(f, "driver_detail"), rec, len, ret->detail, sizeof(ret->detail));
	(void)tp_rec__int(tp_format__field(f, "address"), rec, len, &ret->address);
	(void)tp_rec__int(tp_format__field(f, "syndrome"), rec, len, &ret->syndrome);
	(void)tp_rec__int(tp_format__field(f, "grain_bits"), rec, len, &grain);
	ret->error_type = (unsigned int)et;
	ret->err_type = err_type_name((unsigned int)et);
	ret->error_count = (unsigned int)cnt;
	ret->mc_index = (unsigned int)mc;
	ret->top = (int)top;
	ret->mid = (int)mid;
	ret->low = (int)low;
	ret->grain_bits = (unsigned int)grain;
	return 0;
}

int hw_agg__mc_event(struct hw_agg *a, const void *rec, size_t len, struct hw_mc_rec *ret_rec, struct hw_mc **ret)
{
	struct hw_mc_rec r;
	struct hw_mc *m = NULL;

	if (ret)
		*ret = NULL;
	if (!a->has_mc_fmt || hw_mc__decode(&a->mc_fmt, rec, len, &r)) {
		a->undecodable++;
		return -EINVAL;
	}
	if (ret_rec)
		*ret_rec = r;
	for (unsigned int i = 0; i < a->nmcs && !m; i++) {
		struct hw_mc *c = &a->mcs[i];

		if (c->mc_index == r.mc_index && c->err_type == r.err_type && !strcmp(c->label, r.label) &&
		    c->top == r.top && c->mid == r.mid && c->low == r.low)
			m = c;
	}
	if (!m) {
		if (a->nmcs >= HW_MCS_MAX) {
			a->overflow++;
			return -ENOSPC;
		}
		m = &a->mcs[a->nmcs++];
		memset(m, 0, sizeof(*m));
		m->mc_index = r.mc_index;
		m->err_type = r.err_type;
		memcpy(m->label, r.label, sizeof(m->label));
		m->top = r.top;
		m->mid = r.mid;
		m->low = r.low;
	}
	/* the kernel counts a report of several errors once with error_count set */
	m->errors += r.error_count ? r.error_count : 1;
	m->records++;
	if (ret)
		*ret = m;
	return 0;
}
