#!/bin/bash
# stack_quiet_vs_perf.sh - bench/stack_quiet_accuracy.py's run (stackprobe at 53 ms, quiet_spin 4 s quiet,
# 3 s spin) with `perf record -a` of the CPU clock every 53 ms on every CPU beside it: both count
# quiet_work's samples in the same seconds (perf's are periodic, not stratified; 53 vs the workload's
# 50 ms drifts through every phase in a second).
set -e
cd "$(dirname "$0")/.."
data=$(mktemp /tmp/gg-quietperf-XXXXXX)
perf record -q -e cpu-clock -c 53000000 -a -g -o "$data" -- sleep 12 2>/dev/null &
PP=$!
python3 bench/stack_quiet_accuracy.py 1 53 4 3 2>&1 | grep "^run" | sed 's/;.*//'
wait $PP
perf script -i "$data" --comm quiet_spin -F comm,ip,sym 2>/dev/null |
	awk 'BEGIN{RS=""} /quiet_work/{q++} /spin_all/{s++} END{printf "perf: quiet_work %d samples = %.3f s, spin_all %d\n", q, q * 0.053, s}'
rm -f "$data"
