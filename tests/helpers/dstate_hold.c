/* dstate_hold.c - N tasks in uninterruptible sleep (D) for a while, for autotrace's dstate trigger: each
 * of N processes vfork()s a child that sleeps, and a vfork parent waits for its child in TASK_KILLABLE
 * (uninterruptible, shown as D). It prints "pids=a,b,..." (the waiting parents) once they wait.
 *   dstate_hold N SECONDS */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	double secs = argc > 2 ? atof(argv[2]) : 5;
	pid_t pids[64];

	if (n < 1 || n > 64) {
		fprintf(stderr, "usage: dstate_hold N(1..64) SECONDS\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			return 1;
		if (pids[i] == 0) {
			struct timespec ts = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};

			/* the vfork child only sleeps and exits (no library state touched): the parent is in D */
			if (vfork() == 0) {
				nanosleep(&ts, NULL);
				_exit(0);
			}
			_exit(0);
		}
	}
	printf("pids=");
	for (int i = 0; i < n; i++)
		printf("%s%d", i ? "," : "", pids[i]);
	printf("\n");
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	return 0;
}
