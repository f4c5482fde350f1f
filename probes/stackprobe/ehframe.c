/* ehframe.c - .eh_frame parser: CIEs and FDEs run through the DWARF call frame instructions into
 * sorted (pc, CFA rule, rbp rule) rows for stackprobe's BPF unwinder; libelf finds the section. */
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ehframe.h"

/* Pointer encodings (DW_EH_PE_*): the low nibble is the format, 0x70 the base. */
#define PE_OMIT		0xff
#define PE_PCREL	0x10
#define REG_RBP		6
#define REG_RSP		7
#define STATE_MAX	16 /* DW_CFA_remember_state depth */
#define RAW_ROWS_FACTOR 4

/* A bounded little-endian reader; err is set on the first read past the end. */
struct rd {
	const uint8_t *p, *end;
	int err;
};

static uint64_t rd_u(struct rd *r, size_t n)
{
	uint64_t v = 0;

	if (r->err || (size_t)(r->end - r->p) < n) {
		r->err = 1;
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* A LEB128 number, sign-extended when sleb. Past the end: r fails, and the value is 0 (sleb) or what was
 * read of it. */
static uint64_t rd_leb(struct rd *r, bool sleb)
{
	uint64_t v = 0;
	unsigned int shift = 0;
	uint8_t b = 0;

	while (!r->err) {
		if (r->p >= r->end) {
			r->err = 1;
			return sleb ? 0 : v;
		}
		b = *r->p++;
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	if (sleb && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	return rd_leb(r, false);
}

static int64_t rd_sleb(struct rd *r)
{
	return (int64_t)rd_leb(r, true);
}

/* An offset scaled by the CIE's data alignment factor; a product that does not fit (only malformed or
 * hostile CFI makes one) is a read error, not signed overflow. */
static int64_t scaled(struct rd *r, int64_t v, int64_t factor)
{
	int64_t out;

	if (__builtin_mul_overflow(v, factor, &out)) {
		r->err = 1;
		return 0;
	}
	return out;
}

static void rd_skip(struct rd *r, uint64_t n)
{
	if (r->err || (uint64_t)(r->end - r->p) < n) {
		r->err = 1;
		return;
	}
	r->p += n;
}

/* An encoded pointer whose field is at ELF address field_addr. Only absolute and pc-relative bases:
 * the others (text, data, function relative) do not occur in x86-64 .eh_frame. */
static int rd_ptr(struct rd *r, uint8_t enc, uint64_t field_addr, int with_base, uint64_t *ret)
{
	uint64_t v;

	if (enc == PE_OMIT)
		return -EINVAL;
	switch (enc & 0x0f) {
	case 0x00:
	case 0x04:
	case 0x0c:
		v = rd_u(r, 8);
		break;
	case 0x01:
		v = rd_uleb(r);
		break;
	case 0x02:
		v = rd_u(r, 2);
		break;
	case 0x03:
		v = rd_u(r, 4);
		break;
	case 0x09:
		v = (uint64_t)rd_sleb(r);
		break;
	case 0x0a:
		v = (uint64_t)(int64_t)(int16_t)rd_u(r, 2);
		break;
	case 0x0b:
		v = (uint64_t)(int64_t)(int32_t)rd_u(r, 4);
		break;
	default:
		return -EINVAL;
	}
	if (r->err)
		return -EINVAL;
	if (with_base) {
		switch (enc & 0x70) {
		case 0x00:
			break;
		case PE_PCREL:
			v += field_addr;
			break;
		default:
			return -EINVAL;
		}
	}
	*ret = v;
	return 0;
}

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int has_z;
	const uint8_t *insns, *insns_end;
};

/* A register's rule, for the two registers the unwinder restores (rbp and the return address). */
enum rule { R_SAME = 0, R_UNDEF, R_OFFSET, R_OTHER };

struct regrule {
	uint8_t kind; /* enum rule */
	int64_t off;  /* R_OFFSET: saved at CFA + off */
};

enum cfa_kind { CFA_REG = 0, CFA_PLT, CFA_EXPR };

struct cfa_state {
	uint8_t cfa_kind; /* enum cfa_kind */
	uint8_t plt_thr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	struct regrule rbp, ra;
};

/* Growing row vector, bounded. */
struct rowvec {
	struct sp_uw_row *v;
	size_t n, cap, max;
	int err;
};

static void rows_push(struct rowvec *rv, struct sp_uw_row row)
{
	if (rv->err)
		return;
	if (rv->n == rv->cap) {
		size_t cap = rv->cap ? rv->cap * 2 : 256;
		struct sp_uw_row *v;

		if (rv->n >= rv->max) {
			rv->err = -E2BIG;
			return;
		}
		if (cap > rv->max)
			cap = rv->max;
		v = realloc(rv->v, cap * sizeof(*v));
		if (!v) {
			rv->err = -ENOMEM;
			return;
		}
		rv->v = v;
		rv->cap = cap;
	}
	rv->v[rv->n++] = row;
}

/* The row a state stands for: the rules the BPF unwinder handles, else SP_UW_NONE. */
static struct sp_uw_row make_row(uint64_t pc, const struct cfa_state *st, struct sp_eh_stats *stats)
{
	struct sp_uw_row row = {.pc = (uint32_t)pc, .kind = SP_UW_NONE};

	if (st->ra.kind == R_UNDEF) {
		row.kind = SP_UW_END;
		return row;
	}
	if (st->ra.kind != R_OFFSET || st->ra.off != -8)
		goto unsupported;
	if (st->cfa_kind == CFA_PLT) {
		row.kind = SP_UW_PLT;
		row.cfa_off = 8;
		row.rbp = (int8_t)st->plt_thr;
		return row;
	}
	if (st->cfa_kind != CFA_REG || (st->cfa_reg != REG_RSP && st->cfa_reg != REG_RBP) || st->cfa_off < INT16_MIN ||
	    st->cfa_off > INT16_MAX)
		goto unsupported;
	if (st->rbp.kind == R_OFFSET) {
		if (st->rbp.off % 8 || st->rbp.off < -1024 || st->rbp.off >= 0)
			goto unsupported;
		row.rbp = (int8_t)(st->rbp.off / 8);
	} else if (st->rbp.kind != R_SAME) {
		goto unsupported;
	}
	row.kind = st->cfa_reg == REG_RSP ? SP_UW_CFA_RSP : SP_UW_CFA_RBP;
	row.cfa_off = (int16_t)st->cfa_off;
	return row;
unsupported:
	stats->unsupported++;
	return row;
}

/* The .plt expression gcc/binutils emit: rsp + 8 + ((rip & 15) >= 11 ? 8 : 0) (10 or 11). */
static int is_plt_expr(const uint8_t *p, uint64_t len, uint8_t *ret_thr)
{
	static const uint8_t head[] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a};
	static const uint8_t tail[] = {0x2a, 0x33, 0x24, 0x22};

	if (len != 11 || memcmp(p, head, sizeof(head)) || memcmp(p + 7, tail, sizeof(tail)))
		return 0;
	if (p[6] < 0x30 || p[6] > 0x4f) /* DW_OP_lit0..31 */
		return 0;
	*ret_thr = (uint8_t)(p[6] - 0x30);
	return 1;
}

static struct regrule *rule_of(struct cfa_state *st, const struct cie *cie, uint64_t reg)
{
	if (reg == REG_RBP)
		return &st->rbp;
	if (reg == cie->ra_reg)
		return &st->ra;
	return NULL;
}

/*
 * Runs call frame instructions from state st. With rows (an FDE): a row is pushed for every address
 * range the state covered, [loc, next loc), up to end_pc. init is the state after the CIE's
 * instructions (DW_CFA_restore), NULL while running them.
 */
static int run_insns(struct rd *r, const struct cie *cie, struct cfa_state *st, const struct cfa_state *init,
		     uint64_t loc, uint64_t end_pc, uint64_t sect_addr, const uint8_t *sect, struct rowvec *rows,
		     struct sp_eh_stats *stats)
{
	struct cfa_state stack[STATE_MAX];
	unsigned int depth = 0;

	while (r->p < r->end && !r->err) {
		uint8_t op = (uint8_t)rd_u(r, 1);
		uint64_t reg = 0, delta = 0, newloc = loc, len;
		int64_t off;
		struct regrule *rr;
		int advance = 0;

		switch (op >> 6) {
		case 1:
			delta = op & 0x3f;
			advance = 1;
			break;
		case 2:
			reg = op & 0x3f;
			off = scaled(r, (int64_t)rd_uleb(r), cie->data_align);
			rr = rule_of(st, cie, reg);
			if (rr) {
				rr->kind = R_OFFSET;
				rr->off = off;
			}
			continue;
		case 3:
			reg = op & 0x3f;
			rr = rule_of(st, cie, reg);
			if (rr && init)
				*rr = *rule_of((struct cfa_state *)init, cie, reg);
			continue;
		default:
			break;
		}
		if (!advance) {
			switch (op) {
			case 0x00: /* nop */
				break;
			case 0x01: /* set_loc */
				if (rd_ptr(r, cie->fde_enc, sect_addr + (uint64_t)(r->p - sect), 1, &newloc))
					return -EINVAL;
				if (newloc < loc)
					return -EINVAL;
				advance = 2;
				break;
			case 0x02: /* advance_loc1, 2 and 4: a 1, 2 or 4-byte delta */
			case 0x03:
			case 0x04:
				delta = rd_u(r, 1u << (op - 0x02));
				advance = 1;
				break;
			case 0x05: /* offset_extended */
			case 0x11: /* offset_extended_sf */
			case 0x2f: /* GNU_negative_offset_extended */
				reg = rd_uleb(r);
				if (op == 0x05)
					off = scaled(r, (int64_t)rd_uleb(r), cie->data_align);
				else if (op == 0x11)
					off = scaled(r, rd_sleb(r), cie->data_align);
				else
					off = scaled(r, scaled(r, (int64_t)rd_uleb(r), cie->data_align), -1);
				rr = rule_of(st, cie, reg);
				if (rr) {
					rr->kind = R_OFFSET;
					rr->off = off;
				}
				break;
			case 0x06: /* restore_extended */
				reg = rd_uleb(r);
				rr = rule_of(st, cie, reg);
				if (rr && init)
					*rr = *rule_of((struct cfa_state *)init, cie, reg);
				break;
			case 0x07: /* undefined */
			case 0x08: /* same_value */
				reg = rd_uleb(r);
				rr = rule_of(st, cie, reg);
				if (rr)
					rr->kind = op == 0x07 ? R_UNDEF : R_SAME;
				break;
			case 0x0a: /* remember_state */
				if (depth >= STATE_MAX)
					return -EINVAL;
				stack[depth++] = *st;
				break;
			case 0x0b: /* restore_state: the CFA rule too (what gcc and libgcc do) */
				if (!depth)
					return -EINVAL;
				*st = stack[--depth];
				break;
			case 0x0c: /* def_cfa */
				st->cfa_reg = rd_uleb(r);
				st->cfa_off = (int64_t)rd_uleb(r);
				st->cfa_kind = CFA_REG;
				break;
			case 0x12: /* def_cfa_sf */
				st->cfa_reg = rd_uleb(r);
				st->cfa_off = scaled(r, rd_sleb(r), cie->data_align);
				st->cfa_kind = CFA_REG;
				break;
			case 0x0d: /* def_cfa_register */
				st->cfa_reg = rd_uleb(r);
				if (st->cfa_kind != CFA_REG)
					st->cfa_off = 0;
				st->cfa_kind = CFA_REG;
				break;
			case 0x0e: /* def_cfa_offset */
				st->cfa_off = (int64_t)rd_uleb(r);
				break;
			case 0x13: /* def_cfa_offset_sf */
				st->cfa_off = scaled(r, rd_sleb(r), cie->data_align);
				break;
			case 0x0f: /* def_cfa_expression */
				len = rd_uleb(r);
				if (r->err || (uint64_t)(r->end - r->p) < len)
					return -EINVAL;
				st->cfa_kind = is_plt_expr(r->p, len, &st->plt_thr) ? CFA_PLT : CFA_EXPR;
				rd_skip(r, len);
				break;
			case 0x10: /* expression */
			case 0x16: /* val_expression */
				reg = rd_uleb(r);
				len = rd_uleb(r);
				rd_skip(r, len);
				rr = rule_of(st, cie, reg);
				if (rr)
					rr->kind = R_OTHER;
				break;
			case 0x09: /* register: reg in another register */
			case 0x14: /* val_offset */
			case 0x15: /* val_offset_sf */
				reg = rd_uleb(r);
				if (op == 0x15)
					(void)rd_sleb(r);
				else
					(void)rd_uleb(r);
				rr = rule_of(st, cie, reg);
				if (rr)
					rr->kind = R_OTHER;
				break;
			case 0x2e: /* GNU_args_size */
				(void)rd_uleb(r);
				break;
			default:
				return -EINVAL;
			}
		}
		if (r->err)
			return -EINVAL;
		if (!advance)
			continue;
		if (!rows)
			return -EINVAL; /* a CIE's initial instructions do not advance */
		if (advance == 1) {
			if (cie->code_align && delta > (UINT64_MAX - loc) / cie->code_align)
				return -EINVAL;
			newloc = loc + delta * cie->code_align;
		}
		if (newloc > loc && loc < end_pc)
			rows_push(rows, make_row(loc, st, stats));
		loc = newloc;
	}
	if (r->err)
		return -EINVAL;
	if (rows && loc < end_pc)
		rows_push(rows, make_row(loc, st, stats));
	return rows ? rows->err : 0;
}

/* The CIE at offset off of the section. */
static int parse_cie(const uint8_t *sect, size_t len, size_t off, uint64_t sect_addr, struct cie *ret)
{
	struct rd r = {sect + off, sect + len, 0};
	uint64_t ulen = rd_u(&r, 4), id, auglen = 0;
	const uint8_t *aug, *aug_end = NULL, *end;
	uint8_t version;
	struct cie c = {0};

	if (ulen == 0xffffffffu) {
		ulen = rd_u(&r, 8);
		if (r.err || ulen > (uint64_t)(r.end - r.p))
			return -EINVAL;
		end = r.p + ulen;
		id = rd_u(&r, 8);
	} else {
		if (r.err || ulen > (uint64_t)(r.end - r.p) || ulen < 4)
			return -EINVAL;
		end = r.p + ulen;
		id = rd_u(&r, 4);
	}
	if (r.err || id != 0)
		return -EINVAL;
	r.end = end;
	version = (uint8_t)rd_u(&r, 1);
	if (version != 1 && version != 3 && version != 4)
		return -EINVAL;
	aug = r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p >= r.end)
		return -EINVAL;
	r.p++; /* NUL */
	if (aug[0] && aug[0] != 'z')
		return -EINVAL; /* "eh" and other ancient forms */
	if (version == 4) {
		uint8_t asz = (uint8_t)rd_u(&r, 1), ssz = (uint8_t)rd_u(&r, 1);

		if (asz != 8 || ssz != 0)
			return -EINVAL;
	}
	c.code_align = rd_uleb(&r);
	c.data_align = rd_sleb(&r);
	c.ra_reg = version == 1 ? rd_u(&r, 1) : rd_uleb(&r);
	c.fde_enc = 0; /* absptr */
	if (aug[0] == 'z') {
		c.has_z = 1;
		auglen = rd_uleb(&r);
		if (r.err || auglen > (uint64_t)(r.end - r.p))
			return -EINVAL;
		aug_end = r.p + auglen;
		for (const uint8_t *a = aug + 1; *a; a++) {
			uint8_t enc;
			uint64_t dummy;

			switch (*a) {
			case 'L':
				(void)rd_u(&r, 1);
				break;
			case 'R':
				c.fde_enc = (uint8_t)rd_u(&r, 1);
				break;
			case 'P':
				enc = (uint8_t)rd_u(&r, 1);
				if (rd_ptr(&r, enc & 0x7f, sect_addr + (uint64_t)(r.p - sect), 1, &dummy))
					return -EINVAL;
				break;
			case 'S':
			case 'B':
				break;
			default:
				/* unknown: the rest of the augmentation data is skipped by its length */
				goto aug_done;
			}
			if (r.err || r.p > aug_end)
				return -EINVAL;
		}
	aug_done:
		r.p = aug_end;
	}
	if (r.err)
		return -EINVAL;
	c.insns = r.p;
	c.insns_end = r.end;
	*ret = c;
	return 0;
}

static int row_cmp(const void *x, const void *y)
{
	const struct sp_uw_row *a = x, *b = y;

	if (a->pc != b->pc)
		return a->pc < b->pc ? -1 : 1;
	/* at one pc a rule wins over the gap row of the FDE that ended there */
	return (a->kind != SP_UW_NONE) - (b->kind != SP_UW_NONE);
}

/* One FDE whose CIE pointer field is at pos. */
static int parse_fde(const uint8_t *sect, size_t len, uint64_t sect_addr, const uint8_t *pos, uint64_t cie_ptr,
		     const uint8_t *end, struct rowvec *rows, struct sp_eh_stats *stats)
{
	struct rd r = {pos + 4, end, 0};
	struct cfa_state init = {0}, st;
	uint64_t pc_begin, pc_range, cie_off;
	struct cie cie;
	struct rd ci;
	int err;

	if (cie_ptr > (uint64_t)(pos - sect))
		return -EINVAL;
	cie_off = (uint64_t)(pos - sect) - cie_ptr;
	if (cie_off >= len || parse_cie(sect, len, (size_t)cie_off, sect_addr, &cie))
		return -EINVAL;
	if (rd_ptr(&r, cie.fde_enc, sect_addr + (uint64_t)(r.p - sect), 1, &pc_begin) ||
	    rd_ptr(&r, cie.fde_enc & 0x0f, 0, 0, &pc_range))
		return -EINVAL;
	if (cie.has_z) {
		uint64_t n = rd_uleb(&r);

		rd_skip(&r, n);
	}
	if (r.err)
		return -EINVAL;
	if (!pc_range)
		return 0;
	if (pc_begin > UINT32_MAX || pc_range > UINT32_MAX - pc_begin)
		return -ERANGE; /* rows hold 32-bit addresses */
	/* x86-64 default: CFA = rsp + 8, rbp unchanged, no rule for the return address until the CIE's */
	init.cfa_reg = REG_RSP;
	init.cfa_off = 8;
	ci = (struct rd){cie.insns, cie.insns_end, 0};
	err = run_insns(&ci, &cie, &init, NULL, 0, 0, sect_addr, sect, NULL, stats);
	if (err)
		return err;
	st = init;
	err = run_insns(&r, &cie, &st, &init, pc_begin, pc_begin + pc_range, sect_addr, sect, rows, stats);
	if (err)
		return err;
	/* the end of the function: no rule until another FDE starts */
	rows_push(rows, (struct sp_uw_row){.pc = (uint32_t)(pc_begin + pc_range), .kind = SP_UW_NONE});
	return rows->err;
}

int sp_ehframe__parse(const uint8_t *data, size_t len, uint64_t sect_addr, size_t max_rows, struct sp_uw_row **ret_rows,
		      size_t *ret_n, struct sp_eh_stats *ret_st)
{
	struct rowvec rows = {.max = max_rows * RAW_ROWS_FACTOR};
	struct sp_eh_stats st = {0};
	size_t off = 0, n = 0;
	int err = 0;

	while (off + 4 <= len) {
		struct rd r = {data + off, data + len, 0};
		uint64_t ulen = rd_u(&r, 4), id;
		const uint8_t *pos, *end;
		int e;

		if (ulen == 0)
			break; /* terminator */
		if (ulen == 0xffffffffu) {
			ulen = rd_u(&r, 8);
			if (r.err || ulen > (uint64_t)(r.end - r.p) || ulen < 8)
				break;
			pos = r.p;
			end = r.p + ulen;
			id = rd_u(&r, 8);
		} else {
			if (ulen > (uint64_t)(r.end - r.p) || ulen < 4)
				break;
			pos = r.p;
			end = r.p + ulen;
			id = rd_u(&r, 4);
		}
		if (id == 0) {
			st.cies++;
		} else {
			size_t before = rows.n;

			st.fdes++;
			e = parse_fde(data, len, sect_addr, pos, id, end, &rows, &st);
			if (e == -E2BIG || e == -ENOMEM) {
				err = e;
				goto cleanup;
			}
			if (e) {
				st.bad++;
				rows.n = before; /* none of a bad FDE's rows */
			}
		}
		off = (size_t)(end - data);
	}
	if (rows.n > 1)
		qsort(rows.v, rows.n, sizeof(*rows.v), row_cmp);
	/* one row per pc (the last of equal pcs: a rule before a gap), then equal neighbours merged */
	for (size_t i = 0; i < rows.n; i++) {
		struct sp_uw_row *rw = &rows.v[i];

		if (i + 1 < rows.n && rows.v[i + 1].pc == rw->pc)
			continue;
		if (n && rows.v[n - 1].kind == rw->kind && rows.v[n - 1].cfa_off == rw->cfa_off &&
		    rows.v[n - 1].rbp == rw->rbp)
			continue;
		rows.v[n++] = *rw;
	}
	/* a leading gap row says nothing */
	if (n && rows.v[0].kind == SP_UW_NONE) {
		memmove(rows.v, rows.v + 1, (n - 1) * sizeof(*rows.v));
		n--;
	}
	if (n > max_rows) {
		err = -E2BIG;
		goto cleanup;
	}
	if (!n) {
		free(rows.v);
		rows.v = NULL;
	}
	*ret_rows = rows.v;
	*ret_n = n;
	if (ret_st)
		*ret_st = st;
	return 0;
cleanup:
	free(rows.v);
	return err;
}

const struct sp_uw_row *sp_ehframe__find(const struct sp_uw_row *rows, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pc < rows[mid].pc)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo ? &rows[lo - 1] : NULL;
}

void sp_eh_file__clear(struct sp_eh_file *f)
{
	if (!f)
		return;
	free(f->rows);
	memset(f, 0, sizeof(*f));
}

int sp_ehframe__read_elf(int fd, size_t max_rows, struct sp_eh_file *ret)
{
	struct sp_eh_file f = {0};
	Elf *elf = NULL;
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	size_t shstrndx, nph;
	int err = -ENOENT;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	if (eh.e_machine != EM_X86_64 || gelf_getclass(elf) != ELFCLASS64) {
		err = -ENOEXEC;
		goto cleanup;
	}
	if (elf_getphdrnum(elf, &nph) == 0) {
		for (size_t i = 0; i < nph && f.nloads < SP_EH_LOADS; i++) {
			GElf_Phdr ph;

			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X))
				f.loads[f.nloads++] = (struct sp_eh_load){ph.p_offset, ph.p_vaddr, ph.p_filesz};
		}
	}
	if (elf_getshdrstrndx(elf, &shstrndx)) {
		err = -ENOEXEC;
		goto cleanup;
	}
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, ".eh_frame"))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size) {
			err = -ENOENT;
			goto cleanup;
		}
		err = sp_ehframe__parse(d->d_buf, d->d_size, sh.sh_addr, max_rows, &f.rows, &f.n, &f.st);
		break;
	}
	if (!err)
		*ret = f;
cleanup:
	if (elf)
		elf_end(elf);
	return err;
}
