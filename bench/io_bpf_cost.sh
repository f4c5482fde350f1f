#!/bin/sh
# bench/io_bpf_cost.sh [BUILD] - ioprobe's BPF run time per block request under 4 KiB direct IO (dd),
# read from its --bpf-stats log (two 4 s periods). Root; run alone:
#   flock /tmp/gg-bench.lock bench/io_bpf_cost.sh build
set -u
B=${1:-build}
log=$(mktemp)
data=/var/tmp/gg-io-bench.$$
"$B/probes/ioprobe" -t 4 --bpf-stats > /dev/null 2> "$log" &
P=$!
sleep 2
dd if=/dev/zero of="$data" bs=4k count=30000 oflag=direct 2>&1 | tail -1
dd if="$data" of=/dev/null bs=4k iflag=direct 2>&1 | tail -1
sleep 3
kill $P
wait $P
rm -f "$data"
grep "bpf stats" "$log" | tail -2 | sed 's/.*(runs\/ns per run): //' | cut -d, -f1-4
rm -f "$log"
