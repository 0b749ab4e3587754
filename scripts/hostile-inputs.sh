#!/usr/bin/env bash
# hostile-inputs: write each hostile probe file of docs/reliability.md ("Bad input") into a
# temporary directory and give it to replaycheck, printing what it answers, its exit status and
# how long it took. From a clone:
#
#   make build && scripts/hostile-inputs.sh            # every case, validate and run
#   scripts/hostile-inputs.sh alias-bomb               # one case
#   REPLAYCHECK=path/to/replaycheck scripts/hostile-inputs.sh
#
# Every case must end with exit status 2 and a first line naming the file, position and rule (the
# cases of many problems list the first 100 after it; only the first line is printed); run is
# given --backend acl --runtime /nonexistent/plugin.so to show nothing is opened before the
# refusal. The same cases are specs of cmd/replaycheck/internal/cli (hostile_test.go).
set -euo pipefail

bin=${REPLAYCHECK:-bin/replaycheck}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
head='version: replaycheck/v1
set: t'
probe() { # NAME DESCRIPTION
	printf '%s\nprobes:\n  - name: %s\n    description: %s\n    hazard: none\n    streams: [main]\n    capture: {ops: [sync: {}]}\n    expect: {guarded: exact}\n' "$head" "$1" "$2"
}
repeat() { # N STRING
	local i
	for ((i = 0; i < $1; i++)); do printf '%s' "$2"; done
}

make_case() {
	local f=$dir/$1.yaml
	case $1 in
	alias-bomb)
		{
			printf '%s\nbomb:\n  - &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n' "$head"
			for i in 1 2 3 4 5 6 7 8; do
				printf '  - &a%d [%s*a%d]\n' "$i" "$(repeat 9 "*a$((i - 1)), ")" "$((i - 1))"
			done
		} >"$f" ;;
	deep-nesting) { printf '%s\nprobes: ' "$head"; repeat 100 '['; repeat 100 ']'; echo; } >"$f" ;;
	very-deep-nesting) { printf '%s\nprobes: ' "$head"; repeat 20000 '['; repeat 20000 ']'; echo; } >"$f" ;;
	binary-20mib) head -c $((20 << 20)) /dev/urandom >"$f" ;;
	invalid-utf8) probe p "$(printf 'caf\xe9')" >"$f" ;;
	ops-1e6)
		{
			printf '%s\nprobes:\n  - name: p\n    hazard: none\n    streams: [main]\n    capture:\n      ops:\n' "$head"
			yes '        - sync: {}' | head -n 1000000
		} >"$f" ;;
	many-values) { printf '%s\nprobes: [' "$head"; yes 'a,' | head -n 2500000 | tr -d '\n'; echo 'a]'; } >"$f" ;;
	many-problems) { printf '%s\nprobes: [' "$head"; yes 'a,' | head -n 1999990 | tr -d '\n'; echo 'a]'; } >"$f" ;;
	unknown-names)
		{
			printf '%s\nprobes:\n  - name: p\n    hazard: none\n    streams: [main]\n    buffers:\n' "$head"
			for ((i = 0; i < 2000; i++)); do printf '      buffer-number-%d: {bytes: 64}\n' "$i"; done
			printf '    capture:\n      ops:\n'
			yes '        - fill: {dst: buffer-number-x, value: 1}' | head -n 90000
			printf '    expect: {guarded: exact}\n'
		} >"$f" ;;
	esc-in-name) probe '"p\e[2J"' fine >"$f" ;;
	c1-in-description) probe p '"a\u009b31m"' >"$f" ;;
	*) echo "unknown case $1" >&2; exit 2 ;;
	esac
	echo "$f"
}

cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(alias-bomb deep-nesting very-deep-nesting binary-20mib invalid-utf8 ops-1e6 many-values many-problems unknown-names esc-in-name c1-in-description)
fail=0
for c in "${cases[@]}"; do
	f=$(make_case "$c")
	for cmd in "validate" "run --backend acl --runtime /nonexistent/plugin.so"; do
		start=$(date +%s.%N)
		set +e
		# shellcheck disable=SC2086
		msg=$("$bin" $cmd "$f" 2>&1 >/dev/null)
		rc=$?
		set -e
		secs=$(awk "BEGIN { print $(date +%s.%N) - $start }")
		lines=$(printf '%s\n' "$msg" | wc -l)
		more=""
		[ "$lines" -le 1 ] || more="  (and $((lines - 1)) more lines)"
		printf '%-18s %-8s exit %d  %.2fs  %s%s\n' "$c" "${cmd%% *}" "$rc" "$secs" "${msg%%$'\n'*}" "$more"
		[ "$rc" = 2 ] || fail=1
	done
done
exit $fail
