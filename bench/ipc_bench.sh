#!/bin/sh
# ipc_bench.sh - N ipc_pub processes -> one ipc_sink over ipc://; prints throughput and loss.
# usage: bench/ipc_bench.sh [NPUB=8] [RECORDS_EACH=2000000] [BATCH=65536] [RATE_EACH=0] [SENDBUF=1024] [RECVBUF=8192]
# DRAIN=ms: how long each publisher waits at exit for its queue to be written (ipc_pub__drain).
set -eu
BUILD=${BUILD:-build}
NPUB=${1:-8}
EACH=${2:-2000000}
BATCH=${3:-65536}
RATE=${4:-0}
SENDBUF=${5:-1024}
RECVBUF=${6:-8192}
DRAIN=${DRAIN:-5000}

dir=$(mktemp -d /tmp/ipc_bench.XXXXXX)
url="ipc://$dir/data"
trap 'rm -rf "$dir"' EXIT

"$BUILD/bench/ipc_sink" -u "$url" -p "$NPUB" -r "$EACH" -B "$RECVBUF" >"$dir/sink.out" &
sink=$!
# The sink prints once it listens; wait for that rather than sleeping a guess.
i=0
until grep -q listening "$dir/sink.out" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 500 ] || { echo "sink did not start" >&2; kill $sink; exit 1; }
	sleep 0.01
done

pids=
n=0
while [ $n -lt "$NPUB" ]; do
	"$BUILD/bench/ipc_pub" -u "$url" -n "bench$n" -r "$EACH" -R "$RATE" -b "$BATCH" -s "$SENDBUF" -d "$DRAIN" \
		>"$dir/pub$n.out" &
	pids="$pids $!"
	n=$((n + 1))
done
for p in $pids; do wait "$p"; done
wait $sink
echo "config: npub=$NPUB each=$EACH batch=$BATCH rate_each=$RATE drain_ms=$DRAIN sendbuf=$SENDBUF recvbuf=$RECVBUF"
cat "$dir"/pub*.out | awk '{ r += $3; d += $NF; print } END { printf "pubs: total %d records, %d batches discarded\n", r, d }'
grep -v listening "$dir/sink.out"
