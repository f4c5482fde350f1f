/* hw_decode.h - hwprobe's user-space decoding and counting, no I/O: a tracefs event format parser, field
 * access on raw tracepoint records by that format, and the per-device and per-DIMM tallies of
 * net_dev_xmit_timeout and mc_event records. */
#ifndef GG_HW_DECODE_H
#define GG_HW_DECODE_H

#include <stddef.h>
#include <stdint.h>

#define TP_FIELDS_MAX 32u
#define TP_NAME_MAX   32u

/* One field of a tracepoint record, as its tracefs "format" file describes it. */
struct tp_field {
	char name[TP_NAME_MAX];
	uint16_t offset, size;
	uint8_t is_signed;
	uint8_t loc; /* 0 plain, 1 __data_loc (offset from the record start), 2 __rel_loc (from the field's end) */
};

struct tp_format {
	char name[64];
	unsigned int id;
	unsigned int nfields;
	struct tp_field fields[TP_FIELDS_MAX];
};

/* Parse a tracefs format file's text. 0, or -EINVAL (no "name:" or no field), -E2BIG (more fields
 * than TP_FIELDS_MAX). Fields with names longer than TP_NAME_MAX - 1 are skipped. */
int tp_format__parse(const char *text, size_t len, struct tp_format *ret);
const struct tp_field *tp_format__field(const struct tp_format *f, const char *name);
/* An integer field (1, 2, 4 or 8 bytes, sign-extended when signed) of a record of len bytes. 0 or
 * -EINVAL (missing field, not an integer size, outside the record). */
int tp_rec__int(const struct tp_field *f, const void *rec, size_t len, int64_t *ret);
/* A __data_loc/__rel_loc string field into buf (cut to buflen - 1, stops at NUL). 0 or -EINVAL
 * (missing, not a string field, outside the record). */
int tp_rec__str(const struct tp_field *f, const void *rec, size_t len, char *buf, size_t buflen);

#define HW_NICS_MAX  256u
#define HW_MCS_MAX   256u
#define HW_IFNAMSIZ  16u
#define HW_LABEL_MAX 96u

/* One network device: its transmit timeouts (tracepoint) and carrier counts (sysfs / rtnetlink). */
struct hw_nic {
	char dev[HW_IFNAMSIZ];
	char driver[32];
	int queue; /* last queue that timed out, -1 none */
	uint64_t timeouts;
	uint64_t carrier_up, carrier_down;
	uint64_t reported_down, reported_timeouts; /* what the last events said */
	int present;				   /* in /sys/class/net at the last scan */
};

/* A decoded mc_event record. */
struct hw_mc_rec {
	const char *err_type; /* "CE", "UE", "Deferred", "Fatal", "Info" */
	unsigned int error_type;
	unsigned int error_count;
	unsigned int mc_index;
	int top, mid, low;
	int64_t address, syndrome;
	unsigned int grain_bits;
	char label[HW_LABEL_MAX], msg[HW_LABEL_MAX], detail[HW_LABEL_MAX];
};

/* Errors of one kind at one place: (memory controller, severity, DIMM label, layers). */
struct hw_mc {
	unsigned int mc_index;
	const char *err_type;
	char label[HW_LABEL_MAX];
	int top, mid, low;
	uint64_t errors; /* sum of the records' error_count */
	uint64_t records;
};

struct hw_agg {
	struct tp_format xmit_fmt, mc_fmt;
	int has_xmit_fmt, has_mc_fmt;
	unsigned int nnics, nmcs;
	struct hw_nic nics[HW_NICS_MAX];
	struct hw_mc mcs[HW_MCS_MAX];
	uint64_t undecodable, overflow; /* records that did not decode; that found no free slot */
};

/* The device's entry, made when absent (NULL when the table is full). */
struct hw_nic *hw_agg__nic(struct hw_agg *a, const char *dev);
/* Count a net_dev_xmit_timeout record; *ret the device (may be NULL). 0 or -EINVAL/-ENOSPC (counted). */
int hw_agg__xmit_timeout(struct hw_agg *a, const void *rec, size_t len, struct hw_nic **ret);
/* Decode an mc_event record. 0 or -EINVAL. */
int hw_mc__decode(const struct tp_format *f, const void *rec, size_t len, struct hw_mc_rec *ret);
/* Decode and count an mc_event record; *ret_rec the decoded record, *ret its tally (may be NULL).
 * 0 or -EINVAL/-ENOSPC (counted). */
int hw_agg__mc_event(struct hw_agg *a, const void *rec, size_t len, struct hw_mc_rec *ret_rec, struct hw_mc **ret);

#endif
