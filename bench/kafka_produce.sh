#!/usr/bin/env bash
# bench/kafka_produce.sh [N] - Kafka channel throughput: build/bench/kafka_produce against librdkafka's
# mock broker (tests/helpers/kafka_mock, a separate process); prints records/s delivered, the producer's
# CPU and the broker's CPU. BUILD selects the build directory (default build).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
N=${1:-2000000}
fifo=$(mktemp -u)
mkfifo "$fifo"
out=$(mktemp)
"$BUILD/tests/kafka_mock" -t gala_gopher <"$fifo" >"$out" &
mock=$!
exec 7>"$fifo"
rm -f "$fifo"
for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
boot=$(head -1 "$out")
ticks() { awk '{print $14 + $15}' "/proc/$mock/stat"; }
t0=$(ticks)
"$BUILD/bench/kafka_produce" -b "$boot" -n "$N"
t1=$(ticks)
echo "broker (kafka_mock) CPU: $(awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f s", t / hz }')"
echo quit >&7
exec 7>&-
wait "$mock" || true
rm -f "$out"
