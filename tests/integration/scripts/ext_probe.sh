#!/bin/sh
# ext_probe.sh - an extend probe for tests: prints N valid records and one malformed line per round,
# with a child process in its group (to check that the whole group goes away with it).
n=${1:-3}
sleep 1000 &
i=0
while :; do
	j=0
	while [ $j -lt "$n" ]; do
		echo "|test_ext|key$j|lbl|$i|$((i * 2))|"
		j=$((j + 1))
	done
	echo "this is not a record"
	echo "diagnostic on stderr" >&2
	i=$((i + 1))
	sleep 0.2
done
