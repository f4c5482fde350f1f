/* out_svg.c - interactive SVG flame graphs from folded stacks, drawn here (no external script): hover
 * for details, click to zoom, search with a regular expression, as Brendan Gregg's flamegraph.pl. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe_array.h"
#include "stackprobe.h"

#define IMG_W	    1200
#define FRAME_H	    16
#define XPAD	    10
#define YPAD_TOP    60
#define YPAD_BOTTOM 34
#define FONT_SIZE   12
#define FONT_W	    0.59
#define MIN_W_PX    0.1
#define MAX_DEPTH   1024u

#define fline sp_fline

/* A merged frame: [x0, x1) in value units at depth. */
struct fnode {
	const char *name;
	size_t name_len;
	unsigned int depth;
	uint64_t x0, x1;
};

struct fnodes {
	struct fnode *v;
	size_t n, cap;
};

static int fline_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->stack, ((const struct fline *)b)->stack);
}

/* Parse "stack value\n" lines into buf-backed lines (buf is modified). */
int sp_folded__parse(char *buf, size_t len, struct fline **ret, size_t *ret_n)
{
	struct fline *v = NULL;
	size_t n = 0, cap = 0;
	char *p = buf, *end = buf + len;

	while (p < end) {
		char *eol = memchr(p, '\n', (size_t)(end - p));
		char *sp;
		uint64_t val;

		if (!eol)
			eol = end;
		*eol = '\0';
		sp = strrchr(p, ' ');
		if (sp && sp > p) {
			char *e;

			val = strtoull(sp + 1, &e, 10);
			if (*e == '\0' && val > 0) {
				*sp = '\0';
				if (n == cap) {
					size_t ncap = cap ? cap * 2 : 256;
					struct fline *nv = realloc(v, ncap * sizeof(*nv));

					if (!nv) {
						free(v);
						return -ENOMEM;
					}
					v = nv;
					cap = ncap;
				}
				v[n++] = (struct fline){.stack = p, .value = val};
			}
		}
		p = eol + 1;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int push_node(struct fnodes *ns, const char *name, size_t len, unsigned int depth, uint64_t x0, uint64_t x1)
{
	if (ns->n == ns->cap) {
		struct fnode *p = probe_array_grow(ns->v, &ns->cap, sizeof(*p), 1024);

		if (!p)
			return -ENOMEM;
		ns->v = p;
	}
	ns->v[ns->n++] = (struct fnode){.name = name, .name_len = len, .depth = depth, .x0 = x0, .x1 = x1};
	return 0;
}

/* Merge sorted lines into frames (flamegraph.pl's flow): a frame spans the run of lines sharing the
 * path down to it. */
static int merge(struct fline *lines, size_t n, struct fnodes *ns, uint64_t *ret_total, unsigned int *ret_depth)
{
	const char *pname[MAX_DEPTH];
	size_t plen[MAX_DEPTH];
	uint64_t pstart[MAX_DEPTH];
	unsigned int pn = 0, maxd = 0;
	uint64_t x = 0;

	for (size_t i = 0; i < n; i++) {
		const char *names[MAX_DEPTH];
		size_t lens[MAX_DEPTH];
		unsigned int fn = 0, common = 0;
		const char *s = lines[i].stack;

		while (*s && fn < MAX_DEPTH) {
			const char *semi = strchr(s, ';');
			size_t l = semi ? (size_t)(semi - s) : strlen(s);

			names[fn] = s;
			lens[fn++] = l;
			s += l + (semi ? 1 : 0);
			if (!semi)
				break;
		}
		while (common < pn && common < fn && plen[common] == lens[common] &&
		       !memcmp(pname[common], names[common], lens[common]))
			common++;
		for (unsigned int d = pn; d-- > common;)
			if (push_node(ns, pname[d], plen[d], d + 1, pstart[d], x))
				return -ENOMEM;
		for (unsigned int d = common; d < fn; d++) {
			pname[d] = names[d];
			plen[d] = lens[d];
			pstart[d] = x;
		}
		pn = fn;
		if (fn > maxd)
			maxd = fn;
		x += lines[i].value;
	}
	for (unsigned int d = pn; d-- > 0;)
		if (push_node(ns, pname[d], plen[d], d + 1, pstart[d], x))
			return -ENOMEM;
	*ret_total = x;
	*ret_depth = maxd;
	return push_node(ns, "all", 3, 0, 0, x);
}

/* Length of the valid UTF-8 sequence at s (max n bytes), 0 when invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t need;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		need = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		need = 4;
	else
		return 0;
	if (need > n)
		return 0;
	for (size_t i = 1; i < need; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return need;
}

/* The markup characters and their entities. */
static const char *const xml_entities[256] = {
	['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&apos;",
};

/* XML text: markup characters escaped, invalid UTF-8 bytes as '?' (an SVG must be well formed). */
static void xml_escape(FILE *f, const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		size_t l = utf8_len((const unsigned char *)s + i, len - i);

		if (l == 0) {
			fputc('?', f);
			i++;
			continue;
		}
		if (l > 1) {
			fwrite(s + i, 1, l, f);
			i += l;
			continue;
		}
		if (xml_entities[(unsigned char)s[i]])
			fputs(xml_entities[(unsigned char)s[i]], f);
		else
			fputc((unsigned char)s[i] < 0x20 ? ' ' : s[i], f);
		i++;
	}
}

/* The label that fits w pixels (as the script's fit() computes it), for viewers without scripts. */
static void write_label(FILE *f, const char *s, size_t len, double w)
{
	double m = (w - 6) / (FONT_SIZE * FONT_W);
	size_t cut;

	if (m < 3)
		return;
	if ((double)len <= m) {
		xml_escape(f, s, len);
		return;
	}
	cut = (size_t)m - 2;
	while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--; /* not inside a UTF-8 sequence */
	xml_escape(f, s, cut);
	fputs("..", f);
}

static uint32_t name_hash(const char *s, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static int has_suffix(const char *s, size_t len, const char *suf)
{
	size_t n = strlen(suf);

	return len >= n && !memcmp(s + len - n, suf, n);
}

/* flamegraph.pl's palettes: warm for user code, orange for the kernel, aqua for the process and
 * container frames, grey for what could not be named. */
static void frame_color(const char *s, size_t len, char *out, size_t outlen)
{
	uint32_t h = name_hash(s, len);
	unsigned int v1 = h & 0xff, v2 = (h >> 8) & 0xff, v3 = (h >> 16) & 0xff;

	if (len && s[0] == '[' && (len < 9 || memcmp(s, "[unknown]", 9)) &&
	    (!strncmp(s, "[Pod]", 5) || !strncmp(s, "[Con]", 5) || (s[1] >= '0' && s[1] <= '9')))
		snprintf(out, outlen, "rgb(%u,%u,%u)", 50 + v1 * 60 / 255, 165 + v2 * 55 / 255, 165 + v2 * 55 / 255);
	else if (has_suffix(s, len, "_[k]"))
		snprintf(out, outlen, "rgb(%u,%u,%u)", 200 + v3 * 55 / 255, 110 + v2 * 60 / 255, 0u);
	else if (len && s[0] == '[')
		snprintf(out, outlen, "rgb(%u,%u,%u)", 160 + v1 * 30 / 255, 160 + v1 * 30 / 255, 170 + v1 * 30 / 255);
	else
		snprintf(out, outlen, "rgb(%u,%u,%u)", 205 + v3 * 50 / 255, 0 + v1 * 230 / 255, 0 + v2 * 55 / 255);
}

#define SVG_SCRIPT                                                                                                     \
	"<script type=\"text/ecmascript\"><![CDATA[\n"                                                                 \
	"'use strict';\n"                                                                                              \
	"var W=%d,XPAD=%d,FW=%.2f*%d,frames=[],details,matched,unzoomBtn,total=%" PRIu64 ",unit='%s',scale=%.9g;\n"    \
	"function init(){details=document.getElementById('details').firstChild;"                                       \
	"matched=document.getElementById('matched');unzoomBtn=document.getElementById('unzoom');"                      \
	"var gs=document.getElementsByClassName('f');for(var i=0;i<gs.length;i++){var "                                \
	"g=gs[i],r=g.getElementsByTagName('rect')[0];"                                                                 \
	"g.ox=+r.getAttribute('x');g.ow=+r.getAttribute('width');g.d=+g.getAttribute('data-d');g.fill=r.getAttribute(" \
	"'fill');"                                                                                                     \
	"g.n=g.getAttribute('data-n');frames.push(g);fit(g);"                                                          \
	"g.onmouseover=function(){details.nodeValue=this.getElementsByTagName('title')[0].textContent;};"              \
	"g.onmouseout=function(){details.nodeValue=' ';};g.onclick=function(){zoom(this);};}"                          \
	"document.getElementById('search').onclick=function(){search_prompt();};"                                      \
	"unzoomBtn.onclick=function(){unzoom();};"                                                                     \
	"window.addEventListener('keydown',function(e){if(e.keyCode===114||((e.ctrlKey||e.metaKey)&&e.keyCode===70)){" \
	"e.preventDefault();search_prompt();}});}\n"                                                                   \
	"function fit(g){var "                                                                                         \
	"r=g.getElementsByTagName('rect')[0],t=g.getElementsByTagName('text')[0],w=+r.getAttribute('width');"          \
	"t.setAttribute('x',+r.getAttribute('x')+3);var m=Math.floor((w-6)/FW);"                                       \
	"if(m<3){t.textContent='';return;}t.textContent=g.n.length<=m?g.n:g.n.substring(0,m-2)+'..';}\n"               \
	"function place(g,x,w,show,faded){var r=g.getElementsByTagName('rect')[0];"                                    \
	"g.style.display=show?'':'none';r.setAttribute('x',x);r.setAttribute('width',w);"                              \
	"g.style.opacity=faded?'0.5':'';if(show)fit(g);}\n"                                                            \
	"function zoom(n){var x0=n.ox,w0=n.ow,ratio=(W-2*XPAD)/w0,e=1e-6;"                                             \
	"for(var i=0;i<frames.length;i++){var g=frames[i];"                                                            \
	"if(g.d<n.d){var anc=g.ox<=x0+e&&g.ox+g.ow>=x0+w0-e;place(g,XPAD,W-2*XPAD,anc,true);}"                         \
	"else{var inside=g.ox>=x0-e&&g.ox+g.ow<=x0+w0+e;place(g,XPAD+(g.ox-x0)*ratio,g.ow*ratio,inside,false);}}"      \
	"unzoomBtn.style.opacity='1';}\n"                                                                              \
	"function unzoom(){for(var i=0;i<frames.length;i++){var g=frames[i];place(g,g.ox,g.ow,true,false);}"           \
	"unzoomBtn.style.opacity='0';}\n"                                                                              \
	"function search_prompt(){var t=prompt('Search for (regular "                                                  \
	"expression):','');if(t===null)return;search(t);}\n"                                                           \
	"function search(term){var re;try{re=new RegExp(term);}catch(err){alert('bad expression');return;}"            \
	"var iv=[];for(var i=0;i<frames.length;i++){var g=frames[i],r=g.getElementsByTagName('rect')[0];"              \
	"if(term!==''&&re.test(g.n)){r.setAttribute('fill','rgb(230,0,230)');iv.push([g.ox,g.ox+g.ow]);}else{r."       \
	"setAttribute('fill',g.fill);}}"                                                                               \
	"if(term===''){matched.firstChild.nodeValue=' ';return;}"                                                      \
	"iv.sort(function(a,b){return a[0]-b[0];});var sum=0,end=-1;"                                                  \
	"for(var j=0;j<iv.length;j++){var a=Math.max(iv[j][0],end);if(iv[j][1]>a){sum+=iv[j][1]-a;end=iv[j][1];}}"     \
	"matched.firstChild.nodeValue='Matched: '+(100*sum/(W-2*XPAD)).toFixed(1)+'%%';}\n"                            \
	"]]></script>\n"

int sp_svg__write(int dfd, const char *name, const char *folded, size_t len, const struct sp_svg_opts *opts)
{
	char *buf = malloc(len + 1), color[48];
	struct fline *lines = NULL;
	struct fnodes ns = {0};
	size_t n = 0;
	uint64_t total = 0;
	unsigned int depth = 0;
	int height, err;
	double per;
	FILE *f = NULL;

	if (!buf)
		return -ENOMEM;
	memcpy(buf, folded, len);
	buf[len] = '\0';
	err = sp_folded__parse(buf, len, &lines, &n);
	if (err)
		goto out;
	qsort(lines, n, sizeof(*lines), fline_cmp);
	err = merge(lines, n, &ns, &total, &depth);
	if (err)
		goto out;
	f = probe_outdir__fopen_tmp(dfd, name);
	if (!f) {
		err = -errno;
		goto out;
	}
	height = (int)(depth + 1) * FRAME_H + YPAD_TOP + YPAD_BOTTOM;
	per = total ? (double)(IMG_W - 2 * XPAD) / (double)total : 0;
	fprintf(f,
		"<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<!DOCTYPE svg PUBLIC \"-//W3C//DTD SVG 1.1//EN\" "
		"\"http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd\">\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" onload=\"init(evt)\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\">\n"
		"<!-- gala-gopher stackprobe flame graph -->\n"
		"<style type=\"text/css\">text{font-family:Verdana,sans-serif;font-size:%dpx;fill:rgb(0,0,0);}"
		".f:hover{stroke:black;stroke-width:0.5;cursor:pointer;}#title{text-anchor:middle;font-size:17px;}"
		"#search,#unzoom{cursor:pointer;}</style>\n",
		IMG_W, height, IMG_W, height, FONT_SIZE);
	fprintf(f, SVG_SCRIPT, IMG_W, XPAD, FONT_W, FONT_SIZE, total, opts->unit, opts->unit_scale);
	fprintf(f,
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(250,250,240)\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\">",
		IMG_W, height, IMG_W / 2);
	xml_escape(f, opts->title, strlen(opts->title));
	fprintf(f, "</text>\n<text x=\"%d\" y=\"44\" style=\"text-anchor:middle\">", IMG_W / 2);
	xml_escape(f, opts->subtitle ? opts->subtitle : "", opts->subtitle ? strlen(opts->subtitle) : 0);
	fprintf(f,
		"</text>\n"
		"<text id=\"unzoom\" x=\"%d\" y=\"24\" style=\"opacity:0\">Reset Zoom</text>\n"
		"<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
		XPAD, IMG_W - XPAD - 60, IMG_W - XPAD - 120, height - 12, XPAD, height - 12);
	for (size_t i = 0; i < ns.n; i++) {
		const struct fnode *nd = &ns.v[i];
		double x = XPAD + (double)nd->x0 * per, w = (double)(nd->x1 - nd->x0) * per;
		int y = height - YPAD_BOTTOM - (int)(nd->depth + 1) * FRAME_H;
		uint64_t v = nd->x1 - nd->x0;

		if (w < MIN_W_PX)
			continue;
		frame_color(nd->name, nd->name_len, color, sizeof(color));
		fprintf(f, "<g class=\"f\" data-d=\"%u\" data-n=\"", nd->depth);
		xml_escape(f, nd->name, nd->name_len);
		fputs("\"><title>", f);
		xml_escape(f, nd->name, nd->name_len);
		fprintf(f,
			" (%.9g %s, %.2f%%)</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
			"rx=\"2\" ry=\"2\"/>"
			"<text x=\"%.2f\" y=\"%d\">",
			(double)v * opts->unit_scale, opts->unit, total ? 100.0 * (double)v / (double)total : 0.0, x, y,
			w, FRAME_H - 1, color, x + 3, y + FRAME_H - 4);
		write_label(f, nd->name, nd->name_len, w);
		fputs("</text></g>\n", f);
	}
	fputs("</svg>\n", f);
	err = probe_outdir__commit(dfd, name, f, 0);
	f = NULL;
out:
	free(ns.v);
	free(lines);
	free(buf);
	return err;
}
