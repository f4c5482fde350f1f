/* probe_main.c - the main() of every probe that declares its runner as gg_probe_runner (probe_runner.h).
 * Linked from libggprobe.a only into a program that has no main() of its own. */
#include "probe_runner.h"

int main(int argc, char **argv)
{
	return probe_runner__main(&gg_probe_runner, argc, argv);
}
