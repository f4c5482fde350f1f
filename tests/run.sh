#!/usr/bin/env bash
# tests/run.sh - runs the test suites and prints one closing line "N passed, N failed".
#   tests/run.sh [unit|integration|fuzz|all]   (default all)
# GG_BUILD selects the build directory under test (default build; build/san for the sanitizer run).
set -u
cd "$(dirname "$0")/.."
BUILD=${GG_BUILD:-build}
what=${1:-all}
passed=0
failed=0
failures=()

run_unit() {
	local t out rc
	for t in "$BUILD"/tests/test_*; do
		[ -x "$t" ] || continue
		out=$(timeout 300 "$t" 2>&1)
		rc=$?
		if [ $rc -eq 0 ]; then
			passed=$((passed + 1))
			echo "PASS unit $(basename "$t")"
		else
			failed=$((failed + 1))
			failures+=("unit $(basename "$t")")
			echo "FAIL unit $(basename "$t") (exit $rc)"
			echo "$out" | tail -40
		fi
	done
}

run_integration() {
	local out rc p f build=${1:-$BUILD}
	out=$(mktemp)
	echo "== integration suite on $build"
	GG_BUILD="$build" timeout 1800 python3 tests/integration/run.py 2>&1 | tee "$out"
	rc=${PIPESTATUS[0]}
	p=$(sed -n 's/^integration: \([0-9]*\) passed, \([0-9]*\) failed.*/\1/p' "$out" | tail -1)
	f=$(sed -n 's/^integration: \([0-9]*\) passed, \([0-9]*\) failed.*/\2/p' "$out" | tail -1)
	rm -f "$out"
	if [ -z "$p" ]; then
		failed=$((failed + 1))
		failures+=("integration runner (exit $rc)")
		return
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	[ "$f" -eq 0 ] || failures+=("integration: $f failed")
}

run_fuzz() {
	local f dir rc secs=${GG_FUZZ_SECONDS:-20}
	for f in "$BUILD"/fuzz/fuzz_*; do
		[ -x "$f" ] || continue
		dir=$(mktemp -d)
		[ -d "tests/fuzz/corpus/$(basename "$f")" ] && cp -r "tests/fuzz/corpus/$(basename "$f")/." "$dir/"
		dict=()
		[ -f "tests/fuzz/corpus/$(basename "$f").dict" ] && dict=(-dict="tests/fuzz/corpus/$(basename "$f").dict")
		timeout $((secs + 60)) "$f" "${dict[@]}" -max_total_time="$secs" -rss_limit_mb=2048 -artifact_prefix="$dir/" "$dir" \
			>"$dir.log" 2>&1
		rc=$?
		if [ $rc -eq 0 ]; then
			passed=$((passed + 1))
			echo "PASS fuzz $(basename "$f") ($(grep -o 'Done [0-9]* runs' "$dir.log" | tail -1))"
		else
			failed=$((failed + 1))
			failures+=("fuzz $(basename "$f")")
			echo "FAIL fuzz $(basename "$f") (exit $rc)"
			tail -40 "$dir.log"
		fi
		rm -rf "$dir" "$dir.log"
	done
}

case "$what" in
unit) run_unit ;;
integration) run_integration ;;
fuzz) run_fuzz ;;
all)
	run_unit
	run_fuzz
	run_integration
	# the same suite with ASan+UBSan binaries when they were built (make test does)
	if [ -n "${GG_SAN_BUILD:-}" ]; then
		ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 UBSAN_OPTIONS=print_stacktrace=1 \
			run_integration "$GG_SAN_BUILD"
	fi
	;;
*)
	echo "usage: $0 [unit|integration|fuzz|all]" >&2
	exit 2
	;;
esac

if [ ${#failures[@]} -gt 0 ]; then
	echo "failures:"
	printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
