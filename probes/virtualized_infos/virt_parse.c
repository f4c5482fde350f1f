/* virt_parse.c - qemu command lines and libvirt status XML (virt_parse.h). Both come from other
 * programs (a guest owner picks its -name; a domain's XML metadata is free text): every scan is bounded
 * by the buffer, every copy by its destination. */
#include "virt_parse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XML_DEPTH_MAX 64

int virt_uuid_ok(const char *s, size_t n)
{
	if (n != VIRT_UUID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		char c = s[i];

		if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return 0;
	}
	return 1;
}

static void set_uuid(struct virt_guest *g, const char *s, size_t n)
{
	if (!virt_uuid_ok(s, n))
		return;
	for (size_t i = 0; i < n; i++)
		g->uuid[i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i]);
	g->uuid[n] = 0;
}

/* qemu's option value syntax: the first element of "a,,b,key=v" is "a,b" (",," is a comma). */
static void first_elem(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < outlen; i++) {
		if (s[i] == ',') {
			if (i + 1 < n && s[i + 1] == ',') {
				out[o++] = ',';
				i++;
				continue;
			}
			break;
		}
		out[o++] = s[i];
	}
	out[o] = 0;
}

/* "-name" value: "guest=NAME,..." (any position), or a plain "NAME,..." */
static void take_name(struct virt_guest *g, const char *v, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t start = i;

		/* element boundaries: unescaped commas */
		while (i < n && !(v[i] == ',' && !(i + 1 < n && v[i + 1] == ',')))
			i += (v[i] == ',') ? 2 : 1;
		if (i - start > 6 && !memcmp(v + start, "guest=", 6)) {
			first_elem(v + start + 6, n - start - 6, g->name, sizeof(g->name));
			return;
		}
		i++;
	}
	/* legacy form: the first element, unless it is some other key=value */
	first_elem(v, n, g->name, sizeof(g->name));
	if (strchr(g->name, '='))
		g->name[0] = 0;
}

int virt_parse_cmdline(const char *buf, size_t len, struct virt_guest *ret)
{
	const char *p = buf, *end = buf + len;
	const char *prev = NULL;
	size_t prevlen = 0;

	memset(ret, 0, sizeof(*ret));
	while (p < end) {
		const char *nul = memchr(p, 0, (size_t)(end - p));
		size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);

		if (prev) {
			const char *o = prev + (prevlen > 1 && prev[1] == '-');

			if (!strcmp(o, "-name"))
				take_name(ret, p, n);
			else if (!strcmp(o, "-uuid"))
				set_uuid(ret, p, n);
		}
		prev = n ? p : NULL;
		prevlen = n;
		/* an argument that runs to the buffer's end has no NUL: compare it only as a value */
		if (!nul)
			break;
		p = nul + 1;
	}
	return ret->name[0] || ret->uuid[0] ? 0 : -ENOENT;
}

/* ---- libvirt status XML --------------------------------------------------------------------------- */

/* Decode text [s, e) (entities) into out. */
static void xml_text(const char *s, const char *e, char *out, size_t outlen)
{
	size_t o = 0;

	while (s < e && o + 1 < outlen) {
		if (*s != '&') {
			out[o++] = *s++;
			continue;
		}
		{
			const char *semi = memchr(s, ';', (size_t)(e - s) < 12 ? (size_t)(e - s) : 12);
			size_t n = semi ? (size_t)(semi - s) + 1 : 0;
			unsigned long cp = 0;

			if (n == 5 && !memcmp(s, "&amp;", 5))
				cp = '&';
			else if (n == 4 && !memcmp(s, "&lt;", 4))
				cp = '<';
			else if (n == 4 && !memcmp(s, "&gt;", 4))
				cp = '>';
			else if (n == 6 && !memcmp(s, "&quot;", 6))
				cp = '"';
			else if (n == 6 && !memcmp(s, "&apos;", 6))
				cp = '\'';
			else if (n > 3 && s[1] == '#') {
				char num[12];

				memcpy(num, s + 2, n - 3);
				num[n - 3] = 0;
				cp = num[0] == 'x' ? strtoul(num + 1, NULL, 16) : strtoul(num, NULL, 10);
				if (cp == 0 || cp > 0x10ffff)
					cp = '?';
			}
			if (!cp) { /* not an entity: keep the '&' */
				out[o++] = *s++;
				continue;
			}
			/* UTF-8 for what is not ASCII; cut rather than split a character */
			if (cp < 0x80) {
				out[o++] = (char)cp;
			} else if (cp < 0x800 && o + 2 < outlen) {
				out[o++] = (char)(0xc0 | (cp >> 6));
				out[o++] = (char)(0x80 | (cp & 0x3f));
			} else if (cp >= 0x800 && cp < 0x10000 && o + 3 < outlen) {
				out[o++] = (char)(0xe0 | (cp >> 12));
				out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
				out[o++] = (char)(0x80 | (cp & 0x3f));
			} else if (cp >= 0x10000 && o + 4 < outlen) {
				out[o++] = (char)(0xf0 | (cp >> 18));
				out[o++] = (char)(0x80 | ((cp >> 12) & 0x3f));
				out[o++] = (char)(0x80 | ((cp >> 6) & 0x3f));
				out[o++] = (char)(0x80 | (cp & 0x3f));
			} else {
				break;
			}
			s += n;
		}
	}
	out[o] = 0;
}

/* The value of attribute name in a tag's text [s, e) into *ret (an integer), 0 when absent. */
static int attr_int(const char *s, const char *e, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = s; p + nl + 2 < e; p++) {
		if ((p == s || p[-1] == ' ' || p[-1] == '\t' || p[-1] == '\n') && !memcmp(p, name, nl) &&
		    p[nl] == '=' && (p[nl + 1] == '\'' || p[nl + 1] == '"')) {
			long v = 0;

			for (p += nl + 2; p < e && *p >= '0' && *p <= '9' && v < 100000000; p++)
				v = v * 10 + (*p - '0');
			return (int)v;
		}
	}
	return 0;
}

static int name_is(const char *s, const char *e, const char *name)
{
	size_t nl = strlen(name);

	return (size_t)(e - s) >= nl && !memcmp(s, name, nl) &&
	       (s + nl == e || s[nl] == ' ' || s[nl] == '\t' || s[nl] == '\n' || s[nl] == '\r' || s[nl] == '/' ||
		s[nl] == '>');
}

int virt_parse_domstatus(const char *xml, size_t len, struct virt_guest *ret, int *ret_pid)
{
	const char *p = xml, *end = xml + len;
	int depth = 0, domain_depth = -1, got_name = 0, got_uuid = 0;
	const char *text = NULL; /* start of the text of <name> or <uuid> being read */
	int text_kind = 0;	 /* 1 name, 2 uuid */

	memset(ret, 0, sizeof(*ret));
	*ret_pid = 0;
	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p)), *gt;
		int closing, selfclose;

		if (!lt)
			break;
		if ((size_t)(end - lt) >= 4 && !memcmp(lt, "<!--", 4)) {
			const char *c = lt + 4;

			while (c + 3 <= end && memcmp(c, "-->", 3))
				c++;
			if (c + 3 > end)
				return -EINVAL;
			p = c + 3;
			continue;
		}
		gt = memchr(lt, '>', (size_t)(end - lt));
		if (!gt)
			return -EINVAL;
		if (lt[1] == '?' || lt[1] == '!') { /* <?xml ...?>, <!DOCTYPE ...>: skipped */
			p = gt + 1;
			continue;
		}
		closing = lt[1] == '/';
		selfclose = gt[-1] == '/';
		if (closing) {
			if (text && depth == domain_depth + 2) {
				if (text_kind == 1 && !got_name) {
					xml_text(text, lt, ret->name, sizeof(ret->name));
					got_name = 1;
				} else if (text_kind == 2 && !got_uuid) {
					set_uuid(ret, text, (size_t)(lt - text));
					got_uuid = 1;
				}
			}
			text = NULL;
			depth--;
			if (depth < 0)
				return -EINVAL;
			if (domain_depth >= 0 && depth <= domain_depth)
				break; /* </domain>: done */
		} else {
			const char *nm = lt + 1;

			if (name_is(nm, gt, "domstatus"))
				*ret_pid = attr_int(nm, gt, "pid");
			if (domain_depth < 0 && name_is(nm, gt, "domain"))
				domain_depth = depth;
			text = NULL;
			if (domain_depth >= 0 && depth == domain_depth + 1 && !selfclose) {
				if (name_is(nm, gt, "name"))
					text = gt + 1, text_kind = 1;
				else if (name_is(nm, gt, "uuid"))
					text = gt + 1, text_kind = 2;
			}
			if (!selfclose && ++depth > XML_DEPTH_MAX)
				return -EINVAL;
		}
		p = gt + 1;
	}
	return domain_depth >= 0 && got_name ? 0 : -EINVAL;
}
