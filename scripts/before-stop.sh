#!/usr/bin/env bash
# The reminder to read before you stop (or commit): what your change wrote again, and the
# source files over the 800-line line (tests/file_sizes.rs fails on them; `tests/`, `benches/`
# and `fuzz/` aside). Reads only; always exits 0. `duplicates` is the team's clone finder; where
# it is not installed, that part is skipped with a note.
set -uo pipefail
cd "$(dirname "$0")/.."

echo "== what this change repeats (duplicates --change)"
if command -v duplicates >/dev/null 2>&1; then
    duplicates --change
else
    echo "duplicates is not installed here; skipped"
fi

echo
echo "== source files over 800 lines"
over=$(git ls-files --cached --others --exclude-standard '*.rs' \
    | grep -Ev '(^|/)(tests|benches|fuzz)/' \
    | while read -r f; do
        [ -f "$f" ] || continue
        n=$(wc -l <"$f")
        [ "$n" -gt 800 ] && echo "$f: $n lines"
    done)
if [ -n "$over" ]; then
    echo "$over"
    echo "split each by concept (a long unit-test module moves to a tests.rs of its own)"
else
    echo "none"
fi
exit 0
