#!/usr/bin/env bash
# idle_cost.sh - the supervisor's own cost at rest (web_server, REST API, system_infos every 5 s and a
# Prometheus-style scrape every 15 s), measured over SECONDS
# (default 60): RSS at the end and CPU time used (utime+stime from /proc/<pid>/stat).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
SECS=${1:-60}
dir=$(mktemp -d /tmp/gg-idle.XXXXXX)
trap 'kill $sup 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
mkdir -p "$dir/meta"
cp schema/*.meta "$dir/meta/"
cat >"$dir/gg.conf" <<CONF
global = { run_dir = "$dir/run"; meta_path = "$dir/meta"; probes_dir = "$PWD/$BUILD/probes"; };
metric = { out_channel = "web_server"; };
web_server = { port = 18888; };
rest_api_server = { port = 0; state_dir = "$dir/state"; };
logs = { metric_dir = "$dir/m"; event_dir = "$dir/e"; meta_dir = "$dir/me"; debug_dir = "$dir/d"; };
probes = ( { name = "system_infos"; param = "-t 5 -l warn"; switch = "on"; } );
CONF
"$BUILD/gala-gopher" -c "$dir/gg.conf" 2>/dev/null &
sup=$!
sleep 2
tck=$(getconf CLK_TCK)
read -r u0 s0 < <(awk '{ split($0, a, ") "); split(a[2], f, " "); print f[12], f[13] }' /proc/$sup/stat)
end=$((SECONDS + SECS))
while [ $SECONDS -lt $end ]; do
	curl -s -o /dev/null http://127.0.0.1:18888/metrics || true
	sleep 15
done
read -r u1 s1 < <(awk '{ split($0, a, ") "); split(a[2], f, " "); print f[12], f[13] }' /proc/$sup/stat)
rss=$(awk '/VmRSS/ { print $2 }' /proc/$sup/status)
hwm=$(awk '/VmHWM/ { print $2 }' /proc/$sup/status)
probe=$(pgrep -P $sup -f system_infos || true)
prss=$( [ -n "$probe" ] && awk '/VmRSS/ { print $2 }' /proc/$probe/status || echo "?")
ticks=$(( (u1 - u0) + (s1 - s0) ))
awk -v t="$ticks" -v hz="$tck" -v s="$SECS" -v rss="$rss" -v hwm="$hwm" -v prss="$prss" 'BEGIN {
	cpu = t / hz
	printf "supervisor over %d s: cpu %.3f s (%.3f%% of one core), RSS %.1f MiB (peak %.1f MiB); system_infos RSS %s KiB\n",
		s, cpu, 100 * cpu / s, rss / 1024, hwm / 1024, prss }'
