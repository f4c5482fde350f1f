/* fuzz_rest_body.c - libFuzzer target: the REST API's PUT body decoder and configuration validator
 * (supervisor/rest/validate.c) on any body, for probes with every kind of parameter and snooper. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../supervisor/rest/validate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const probes[] = {"baseinfo", "flamegraph",	  "l7",	   "tcp",
					     "io",	 "opengauss_sli", "nginx", "sli"};
	struct gg_rest_check_ctx ctx = {
		.registered_bin = "/opt/gala-gopher/probes/x",
		.check_cmd = "lsmod | grep ip_vs | wc -l",
		.out_base = "/tmp/gg-fuzz-out",
		.elf_bases = "/usr:/opt",
	};
	const struct gg_probe_def *def;
	char err[512], *json = NULL, *txt;
	cJSON *out = NULL;
	int st;

	if (size < 1)
		return 0;
	/* first byte: which probe, and whether it is an extend probe */
	def = gg_probe_defs__find(probes[data[0] % (sizeof(probes) / sizeof(probes[0]))]);
	ctx.extend = (data[0] >> 7) & 1;
	st = gg_rest_body__decode((const char *)data + 1, size - 1, (data[0] & 0x40) ? "application/json" : NULL, &json,
				  err, sizeof(err));
	if (st) {
		if ((st != 400 && st != 413) || !err[0] || strlen(err) >= sizeof(err))
			abort();
		return 0;
	}
	if (strlen(json) > GG_REST_JSON_MAX)
		abort();
	st = gg_rest_conf__check(def, &ctx, json, &out, err, sizeof(err));
	if (st) {
		if ((st != 400 && st != 403) || out || !err[0])
			abort();
		/* messages quote user text as printable ASCII only */
		for (const char *p = err; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				abort();
	} else {
		/* an accepted configuration is valid again once normalized (the stored form is re-checked at
		 * start-up) */
		cJSON *again = NULL;

		txt = cJSON_PrintUnformatted(out);
		if (!txt)
			abort();
		if (gg_rest_conf__check(def, &ctx, txt, &again, err, sizeof(err)) != 0)
			abort();
		cJSON_Delete(again);
		free(txt);
		cJSON_Delete(out);
	}
	free(json);
	return 0;
}
