/* procfs.c - small parsers of /proc files' text that several probes read (procfs.h). */
#include "procfs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int procfs_status_nspid(const char *status, uint32_t *ret_nspid)
{
	const char *s = strstr(status, "\nNSpid:"); /* never the first line (that is "Name:") */
	uint32_t last = 0;
	int n = 0;

	if (!s)
		return -ENOENT;
	/* "NSpid:\t4242\t17": from the outermost namespace to the innermost */
	for (s += 7; *s && *s != '\n'; n++) {
		char *end;
		unsigned long v;

		while (*s == ' ' || *s == '\t')
			s++;
		v = strtoul(s, &end, 10);
		if (end == s)
			break;
		last = (uint32_t)v;
		s = end;
	}
	if (!n)
		return -ENOENT;
	*ret_nspid = last;
	return 0;
}
