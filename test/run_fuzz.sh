#!/usr/bin/env bash
# test/run_fuzz.sh [seconds]
#
# Builds test/fuzz (make -C test/fuzz), then
#   1. runs build/tokenize_unit under valgrind (memcheck, full leak check:
#      the frontend palloc is malloc, so any leak is a real leak);
#   2. runs build/nfkc_unit: the pinned Unicode 14.0 NFKC
#      against the linked PostgreSQL's normaliser (equal on PostgreSQL 15);
#   3. runs build/fuzz_hex and 4. build/fuzz_tokenize, each for [seconds]
#      (default 30), from the committed seeds in test/fuzz/corpus/{hex,tokenize}
#      plus the corpus grown by earlier runs in test/fuzz/build/corpus/.
# Crash inputs land in test/fuzz/build/artifacts/, logs in test/fuzz/build/logs/.
#
# Exits non-zero on any build error, crash, sanitizer report, valgrind error
# or failed assertion. The last line is always "fuzz: N passed, M failed".
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
FUZZ=$ROOT/test/fuzz
BUILD=$FUZZ/build
SECS=${1:-30}
STEPS=4

passed=0
failed=0

summary() {
	echo "fuzz: $passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

if ! [[ "$SECS" =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [seconds per fuzzer, a positive integer]" >&2
	failed=$STEPS
	summary
fi

for tool in clang-14:clang valgrind gcc make pg_config; do
	found=
	for t in ${tool//:/ }; do command -v "$t" >/dev/null && found=$t && break; done
	if [ -z "$found" ]; then
		echo "run_fuzz: missing tool: ${tool//:/ or }" >&2
		failed=$STEPS
		summary
	fi
done

echo "==> building test/fuzz"
mkdir -p "$BUILD/logs" "$BUILD/artifacts" "$BUILD/corpus/hex" "$BUILD/corpus/tokenize"
if ! make -C "$FUZZ" -j2 >"$BUILD/logs/make.log" 2>&1; then
	cat "$BUILD/logs/make.log"
	echo "run_fuzz: build failed" >&2
	failed=$STEPS
	summary
fi

result() {	# name rc log
	if [ "$2" -eq 0 ]; then
		passed=$((passed + 1))
		echo "ok: $1"
	else
		failed=$((failed + 1))
		echo "FAILED: $1 (exit $2; full log: $3)"
	fi
}

# --- 1. the tokeniser unit under valgrind ---
echo "==> tokenize_unit under valgrind"
log=$BUILD/logs/tokenize_unit.log
start=$(date +%s)
valgrind -q --error-exitcode=1 --leak-check=full \
	--show-leak-kinds=definite,indirect,possible \
	--errors-for-leak-kinds=definite,indirect,possible \
	"$BUILD/tokenize_unit" >"$log" 2>&1
rc=$?
# any valgrind report (with -q there is no other "==pid==" output) fails
# too, though not its harmless notices about large allocations
if [ "$rc" -eq 0 ] && grep -E '^==[0-9]+==' "$log" | grep -qv 'Warning: set address range perms'; then
	rc=1
fi
grep -E '^(FAIL|XFAIL|XPASS)|^tokenize_unit:|^==[0-9]+==' "$log" | head -60
echo "   ($(($(date +%s) - start)) s)"
result "tokenize_unit (valgrind)" "$rc" "$log"

# --- 2. the pinned NFKC against PostgreSQL's normaliser ---
echo "==> nfkc_unit"
log=$BUILD/logs/nfkc_unit.log
start=$(date +%s)
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1} \
UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	"$BUILD/nfkc_unit" >"$log" 2>&1
rc=$?
grep -vE '^  ' "$log" | head -30
echo "   ($(($(date +%s) - start)) s)"
result "nfkc_unit" "$rc" "$log"

# --- 3 and 4. the fuzzers ---
run_fuzzer() {	# name corpus-subdir
	local name=$1 sub=$2
	local log=$BUILD/logs/$name.log
	local start rc
	echo "==> $name for $SECS s"
	start=$(date +%s)
	rm -f "$BUILD/artifacts/$name-"*
	# halt_on_error etc. are the defaults for ASan; make UBSan fatal with a
	# stack too (the code is built with -fno-sanitize-recover as well)
	ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1} \
	UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	"$BUILD/$name" -max_total_time="$SECS" -timeout=20 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$name-" \
		"$BUILD/corpus/$sub" "$FUZZ/corpus/$sub" >"$log" 2>&1
	rc=$?
	if [ "$rc" -eq 0 ] && grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY: ' "$log"; then
		rc=1
	fi
	grep -E '^#[0-9]+.*DONE|^stat::number_of_executed_units|^Done ' "$log" | sed 's/^/   /'
	if [ "$rc" -ne 0 ]; then
		grep -B2 -A30 -E 'ERROR:|runtime error:|^fuzz_(hex|tokenize):' "$log" | head -80
		for a in "$BUILD/artifacts/$name-"*; do
			[ -e "$a" ] || continue
			echo "   crashing input $a:"
			od -An -tx1 -v "$a" | head -40
		done
	fi
	echo "   ($(($(date +%s) - start)) s)"
	result "$name" "$rc" "$log"
}

run_fuzzer fuzz_hex hex
run_fuzzer fuzz_tokenize tokenize

summary
