/* tool_usage.h - how the test helpers and benchmark tools end on -h or a bad option (getopt's default). */
#ifndef GG_TOOL_USAGE_H
#define GG_TOOL_USAGE_H

#include <stdio.h>

/* -h: the usage on stdout, exit status 0; any other option getopt gave back (a bad one, '?'): the usage
 * on stderr, exit status 2. */
static inline int tool_usage_exit(void (*usage)(FILE *f), int opt)
{
	usage(opt == 'h' ? stdout : stderr);
	return opt == 'h' ? 0 : 2;
}

#endif
