#!/usr/bin/env bash
# device-check: one run on a device host (an Ascend NPU or an NVIDIA GPU), from a clone of the
# repository with gcc and the platform's driver installed, and Go or binaries built elsewhere.
#
#   make device-check                  # the first usable device backend: cuda, then acl
#   BACKEND=acl make device-check      # a given one
#   scripts/device-check.sh            # on a host without Go: runs the binaries that
#                                      # `make device-bundle` put in build/device-bundle/ on a
#                                      # build host (same clone, x86-64 Linux, glibc as old or older);
#                                      # BUNDLE, if set, is relative to the clone
#
# STEP_TIMEOUT (seconds, default 1800) bounds each step, so a device that hangs ends the step, not
# the check.
#
# It builds replaycheck with cgo, lists the backends (`replaycheck devices`), runs the device-API
# conformance suite on the real driver, runs the whole catalog on the device in every capture mode
# with guards off and on, writes the reports, runs replaycheck watch's hazard programs on the
# device and on the fake and compares their findings (with watch's benchmarks on CUDA), measures
# the verification's read-back throughput against a plain device-to-host read and its verification
# by fingerprints (CUDA), and records the
# platform's baseline under specs/baselines/ named after the device's platform key, and last measures the rules of the
# platform's profile that no device has settled (replaycheck measure: specs/measure), ending with their table: each
# rule, what the profile says, what the device did, whether they agree. Everything it writes lands in
# build/device-check/<time>/ (reports, logs, summary.md), and with Go the CLI in bin/replaycheck;
# the baseline is the one tracked file it writes, for review and commit.
#
# Exit status: 1 when a step failed. A failed conformance suite or benchmark, or a baseline not
# written, does not stop the steps after it (device time is scarce: every step's evidence counts);
# a check that cannot go on (no binaries, no usable device, a hung driver, a catalog run that broke)
# stops there. Either way summary.md ends with a result section naming each failed step and why.
# A failing catalog verdict, and a measured rule that disagrees with its profile, are findings, reported in summary.md,
# not failed steps.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
BUNDLE=${BUNDLE:-build/device-bundle}
STEP_TIMEOUT=${STEP_TIMEOUT:-1800}
out="build/device-check/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
log() { printf '%s\n' "$*" | tee -a "$out/summary.md"; }
step() { current=$*; printf '\n## %s\n\n' "$*" | tee -a "$out/summary.md"; }

# fail WHY: the step running failed, for the result section. stop WHY: and the check cannot go on.
failed=()
current=start
stopped=
fail() { failed+=("$current: $*"); }
stop() { fail "$*; the steps after it did not run"; stopped=yes; exit 1; }
# The result section, on every exit: a stop, the end, or a command that broke under set -e.
finish() {
	local status=$? f
	trap - EXIT
	if [ "$status" -ne 0 ] && [ -z "$stopped" ]; then
		fail "broke (exit status $status; see the output above); the steps after it did not run"
	fi
	step "result"
	if [ "${#failed[@]}" -eq 0 ]; then
		local findings=
		if [ "${run_rc:-0}" -eq 1 ]; then findings="a catalog verdict failed (listed in run.txt)"; fi
		if [ "${measure_rc:-0}" -eq 1 ]; then
			findings="${findings:+$findings; }a measured rule disagreed with its profile or decided nothing (measure.txt)"
		fi
		if [ -z "$findings" ]; then
			log "no step failed"
		else
			log "no step failed; findings: $findings"
		fi
	else
		if [ "${#failed[@]}" -eq 1 ]; then log "1 step failed:"; else log "${#failed[@]} steps failed:"; fi
		for f in "${failed[@]}"; do log "- $f"; done
	fi
	log ""
	log "took $(( $(date +%s) - started )) s; everything is in $out"
	if [ "${#failed[@]}" -ne 0 ]; then exit 1; fi
	exit 0
}

started=$(date +%s)
trap finish EXIT
log "# replaycheck device check, $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"

step "build"
# With Go: build here. Without it: the binaries of `make device-bundle`, the test binaries run from
# their package's directory as go test runs them.
if command -v "$GO" > /dev/null; then
	CGO_ENABLED=1 "$GO" build -o bin/replaycheck ./cmd/replaycheck
	rc=bin/replaycheck
	gotest() { # gotest PKG ARGS...: the package's tests, go test's flags
		local pkg=$1; shift
		"$GO" test "$@" "./$pkg"
	}
elif [ -x "$BUNDLE/replaycheck" ]; then
	rc=$BUNDLE/replaycheck
	log "no Go toolchain here ($GO not found): the binaries of make device-bundle in $BUNDLE"
	gotest() {
		local pkg=$1 bin args=() a; shift
		bin=$(pwd)/$BUNDLE/$(basename "$pkg").test
		for a in "$@"; do
			case $a in -*) args+=("-test.${a#-}") ;; *) args+=("$a") ;; esac
		done
		(cd "$pkg" && "$bin" "${args[@]}")
	}
else
	log "no Go toolchain here ($GO not found) and no $BUNDLE/replaycheck: run make device-bundle on a"
	log "host with Go and gcc, copy the clone with $BUNDLE/ here, and run scripts/device-check.sh again"
	stop "FAILED (no Go toolchain and no $BUNDLE/replaycheck)"
fi
"$rc" version | tee -a "$out/summary.md"
if ! command -v "${CC:-cc}" > /dev/null; then
	log "no C compiler here (${CC:-cc}): the conformance suite's specs on the fake driver library cannot build it"
fi

step "devices"
# Opening a driver runs its initialisation, which a broken device can hang in: bounded like every
# step, and killed if it does not end on SIGTERM (a thread inside the driver holds the process).
if ! timeout -k 5 "$STEP_TIMEOUT" "$rc" devices > "$out/devices.txt" ||
	! timeout -k 5 "$STEP_TIMEOUT" "$rc" devices --format json > "$out/devices.json"; then
	sed 's/^/    /' "$out/devices.txt" | tee -a "$out/summary.md"
	log "replaycheck devices failed or did not end within ${STEP_TIMEOUT}s: a driver that hangs while it initialises cannot be checked"
	stop "FAILED (replaycheck devices failed or did not end within ${STEP_TIMEOUT}s); see devices.txt"
fi
sed 's/^/    /' "$out/devices.txt" | tee -a "$out/summary.md"

backend=${BACKEND:-}
if [ -z "$backend" ]; then
	for b in cuda acl; do
		if grep -Eq "^$b +usable" "$out/devices.txt"; then backend=$b; break; fi
	done
fi
if [ -z "$backend" ]; then
	log "no usable device backend on this host (see devices above): nothing to check"
	stop "FAILED (no usable device backend); see devices.txt"
fi
if ! grep -Eq "^$backend +usable" "$out/devices.txt"; then
	log "backend $backend is not usable here (see devices above)"
	stop "FAILED (backend $backend is not usable here); see devices.txt"
fi
log ""
log "backend: $backend"

step "conformance suite on the real driver"
# The binding's whole suite: its specs on the fake driver library (device/fake, built with cc) and,
# with REPLAYCHECK_HARDWARE set, the conformance suite on the driver the binding's own search finds.
# The suite prints one line counting the specs labelled hardware.
conformance_ok=yes
if REPLAYCHECK_HARDWARE=$backend gotest "device/$backend" -count=1 -timeout "${STEP_TIMEOUT}s" -v > "$out/conformance.log" 2>&1; then
	log "passed ($(grep -Eo 'Ran [0-9]+ of [0-9]+ Specs' "$out/conformance.log" | tail -1))"
else
	conformance_ok=
	log "FAILED: see conformance.log"
	tail -40 "$out/conformance.log" | sed 's/\x1b\[[0-9;]*m//g; s/^/    /' | tee -a "$out/summary.md"
fi
hw=$(grep -Eo 'hardware specs: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$out/conformance.log" | tail -1 || true)
on_device=yes
if [ -z "$hw" ] || echo "$hw" | grep -q '^hardware specs: 0 passed'; then
	log "no spec passed on the hardware (${hw:-no count}): the run above did not check the device"
	on_device=
else
	log "$hw"
fi
if [ -z "$conformance_ok" ]; then
	fail "FAILED (${hw:-no count of hardware specs}); see conformance.log"
fi

step "the catalog, every mode, guards off and on"
# A device call that hangs holds replaycheck past SIGTERM (it waits for the instance in flight):
# killed 5 s later, as the devices step is.
set +e
timeout -k 5 "$STEP_TIMEOUT" "$rc" run --backend "$backend" --format json --timelines failed specs > "$out/run.json" 2> "$out/run.stderr"
run_rc=$?
timeout -k 5 "$STEP_TIMEOUT" "$rc" run --backend "$backend" specs > "$out/run.txt" 2>> "$out/run.stderr"
text_rc=$?
set -e
if [ "$run_rc" -gt 1 ] || [ "$text_rc" -gt 1 ]; then
	# 0 and 1 are verdicts; anything else is a run that broke (2), was stopped (130, 143) or
	# timed out (124, 137): its report says nothing about the device.
	log "BROKEN: replaycheck run exited $run_rc (json) and $text_rc (text); see run.stderr"
	tail -20 "$out/run.stderr" | sed 's/^/    /' | tee -a "$out/summary.md"
	stop "BROKEN (replaycheck run exited $run_rc for json, $text_rc for text); see run.stderr"
fi
# The text report ends with the enforcement table.
sed -n '/^enforcement:/,$p' "$out/run.txt" > "$out/table.txt"
grep -E '^[0-9]+ instances?:' "$out/run.txt" | tail -1 | tee -a "$out/summary.md" || true
log "exit status $run_rc (0: every verdict passes; 1: a verdict failed, listed in run.txt)"
log ""
sed 's/^/    /' "$out/table.txt" | tee -a "$out/summary.md" > /dev/null

step "watch on the device and on the fake"
# replaycheck watch's hazard programs (C, driver API, the binding's PTX kernel) run under watch on
# the driver the dynamic loader finds and on the fake driver library: their findings must be the
# same (watch/hardware_test.go; with REPLAYCHECK_HARDWARE the suite runs those specs only, and
# prints what each found and one line counting them). Then, on CUDA, the watch benchmarks' ratios
# of watched to unwatched (docs/performance.md). A failure fails the step; the steps after it run.
watch_why=
watch_rc=0
if REPLAYCHECK_HARDWARE=$backend gotest watch -count=1 -v -timeout "${STEP_TIMEOUT}s" > "$out/watch.log" 2>&1; then
	log "passed ($(grep -Eo 'Ran [0-9]+ of [0-9]+ Specs' "$out/watch.log" | tail -1))"
else
	watch_rc=$?
	log "FAILED: see watch.log"
	tail -40 "$out/watch.log" | sed 's/\x1b\[[0-9;]*m//g; s/^/    /' | tee -a "$out/summary.md"
fi
whw=$(grep -Eo 'watch hardware specs: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$out/watch.log" | tail -1 || true)
if [ -z "$whw" ]; then
	log "no count of watch hardware specs: the run above compared nothing"
	watch_why="the specs exited $watch_rc and printed no count of watch hardware specs; see watch.log"
elif echo "$whw" | grep -q ': 0 passed'; then
	log "no watch spec passed on the device ($whw): the run above compared nothing"
	watch_why="$whw; see watch.log"
else
	log "$whw"
	if [ "$watch_rc" -ne 0 ]; then watch_why="$whw; see watch.log"; fi
fi
if [ "$backend" = cuda ]; then
	if REPLAYCHECK_HARDWARE=$backend gotest watch -run '^$' -bench 'Launch100Nodes|AllocFree|NoCapture' -benchtime 20x -count 1 -timeout "${STEP_TIMEOUT}s" > "$out/watch-bench.txt" 2>&1; then
		grep -E '^Benchmark(Launch100Nodes|AllocFree|NoCapture)' "$out/watch-bench.txt" | sed 's/^/    /' | tee -a "$out/summary.md" ||
			log "no result: the watch benchmarks printed none (skipped?); see watch-bench.txt"
	else
		watch_bench_rc=$?
		log "FAILED: the watch benchmarks; see watch-bench.txt"
		watch_why="${watch_why:+$watch_why; }the benchmarks exited $watch_bench_rc; see watch-bench.txt"
	fi
fi
if [ -n "$watch_why" ]; then
	fail "FAILED ($watch_why)"
fi

step "verification throughput"
# The engine's read-back verification of 256 MiB on the device (chunks read while the previous one
# is compared) against one plain device-to-host read of the same bytes (docs/performance.md); and
# its verification by fingerprints (docs/performance.md, "Fingerprints"; on CUDA, ACL has none):
# 256 MiB rewritten and unchanged against the pinned link's read, and a soak of 100,000 replays
# verified against unverified. The fingerprint kernel's own check against the test vectors is a
# hardware spec of the conformance step (device/cuda), which prints a line when it passed: the
# step says whether it did, after the figures.
if REPLAYCHECK_HARDWARE=$backend REPLAYCHECK_SOAK_REPLAYS=100000 gotest capture -run '^$' -bench '^Benchmark(VerifyReadBack256MiB|Fingerprints256MiB|Soak)$' -benchtime 5x -count 3 -timeout "${STEP_TIMEOUT}s" > "$out/verify-bench.txt" 2>&1; then
	# A benchmark that skipped (no device to read back from) prints no result line.
	grep -E '^Benchmark(VerifyReadBack|Fingerprints256MiB|Soak)' "$out/verify-bench.txt" | sed 's/^/    /' | tee -a "$out/summary.md" ||
		log "no result: the benchmark printed none (skipped?); see verify-bench.txt"
else
	bench_rc=$?
	log "FAILED: see verify-bench.txt"
	fail "FAILED (the benchmark exited $bench_rc); see verify-bench.txt"
fi

if [ "$backend" = cuda ]; then
	if grep -q "fingerprint kernel on the hardware: the test vectors' fingerprints" "$out/conformance.log"; then
		log "the fingerprint kernel computes the test vectors' fingerprints (conformance.log)"
	else
		log "the fingerprint kernel's spec did not pass on the hardware (conformance.log): do not trust the fingerprint figures above"
	fi
fi

step "baseline"
# A baseline records a device: not one written over a fake library (its platform key says
# replaycheck-fake) or from a run whose conformance suite checked nothing on the hardware.
key=$(grep -Eo '"platform": *"[^"]*"' "$out/devices.json" | sed 's/.*"\([^"]*\)"$/\1/' | grep "^$backend/" | head -1 || true)
if [ -z "$on_device" ] || [[ "$key" == *replaycheck-fake* ]]; then
	why="not written: ${key:-the platform} is not a device this run checked (see the conformance suite above)"
	log "$why"
	fail "$why"
else
	timeout -k 5 "$STEP_TIMEOUT" "$rc" baseline write --backend "$backend" --out specs/baselines/ specs | tee -a "$out/summary.md"
	if [ -z "$conformance_ok" ]; then
		log "this baseline was recorded from a device whose conformance suite failed ($hw; see conformance.log): review it before it is committed"
	fi
fi

step "verify rules measured"
# The measurement probes (specs/measure/probes) on the device, each answer compared with the rule of the platform's
# profile that specs/measure/rules.yaml says it decides (docs/platforms.md, "Settling verify rules"). The table ends
# the check. Exit 1 (a rule disagreed, or a row decided nothing) is a finding for the profile, not a failed step;
# anything else but 0 is a measurement that broke.
set +e
timeout -k 5 "$STEP_TIMEOUT" "$rc" measure --backend "$backend" specs/measure > "$out/measure.txt" 2> "$out/measure.stderr"
measure_rc=$?
set -e
if [ "$measure_rc" -gt 1 ]; then
	log "BROKEN: replaycheck measure exited $measure_rc; see measure.stderr"
	tail -20 "$out/measure.stderr" | sed 's/^/    /' | tee -a "$out/summary.md"
	fail "BROKEN (replaycheck measure exited $measure_rc); see measure.stderr"
else
	log "exit status $measure_rc (0: every measured rule agrees with its profile; 1: one disagreed or decided nothing, a finding)"
	log ""
	sed 's/^./    &/' "$out/measure.txt" | tee -a "$out/summary.md"
fi
