#!/usr/bin/env bash
# untouched.sh DIR... -- COMMAND...: runs COMMAND and fails, naming each file, when it added,
# changed or removed anything under the DIRs (make test runs its suites under it for bin/ and
# build/: a test builds and writes into temporary directories, never into the checkout).
set -euo pipefail
dirs=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do dirs+=("$1"); shift; done
[ $# -gt 0 ] || { echo "usage: $0 DIR... -- COMMAND..." >&2; exit 2; }
shift
sums() {
	local d
	for d in "${dirs[@]}"; do
		if [ -e "$d" ]; then find "$d" -type f -print0 | xargs -0 -r sha256sum; fi
	done | sort -k2
}
before=$(sums)
status=0
"$@" || status=$?
after=$(sums)
if [ "$before" != "$after" ]; then
	echo "the tests changed the checkout under ${dirs[*]} (a test must write into a temporary directory):" >&2
	diff <(echo "$before") <(echo "$after") | grep '^[<>]' | awk '$3 != "" {print "  " ($1 == "<" ? "before" : "after ") " " $3}' >&2 || true
	[ "$status" -ne 0 ] || status=1
fi
exit "$status"
