#!/usr/bin/env bash
# quickstart.sh: run every fenced block of README.md's "Quick start" section verbatim and in
# order, as a reader would: ```sql blocks in psql (in the database the section creates, where
# its sql blocks are pasted), ```sh blocks in bash from the top of the repository. Fails at the
# first block that fails (psql with ON_ERROR_STOP; bash with -e), naming it.
#
#   bash test/quickstart.sh          against the server the libpq variables name (PGHOST,
#                                    PGPORT, PGUSER), as a superuser, with simhash installed
#
# The database the section uses (simhash_try) is dropped first and at the end.
# tools/run.sh test runs it on PostgreSQL 15.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DB=simhash_try
WORK=$(mktemp -d /tmp/simhash-quickstart.XXXXXX)
trap 'rm -rf "$WORK"; dropdb --if-exists "$DB" >/dev/null 2>&1 || true' EXIT

# the blocks, one file each: NN.sql or NN.sh
python3 - "$ROOT/README.md" "$WORK" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^## Quick start\n(.*?)(?=^## )", text, re.S | re.M)
if not m:
    sys.exit("quickstart.sh: README.md has no '## Quick start' section")
blocks = re.findall(r"^```(\w*)\n(.*?)^```", m.group(1), re.S | re.M)
n = 0
for lang, body in blocks:
    if lang not in ("sql", "sh"):
        sys.exit(f"quickstart.sh: a block of kind '{lang}' in the Quick start: only sql and sh are run")
    n += 1
    open(f"{sys.argv[2]}/{n:02d}.{lang}", "w", encoding="utf-8").write(body)
if n == 0:
    sys.exit("quickstart.sh: no blocks in the Quick start")
PY

dropdb --if-exists "$DB" >/dev/null 2>&1 || true
cd "$ROOT"
for f in "$WORK"/*; do
	name=$(basename "$f")
	echo "---- Quick start block $name"
	sed 's/^/    | /' "$f"
	rc=0
	case "$f" in
		*.sql) psql -X -v ON_ERROR_STOP=1 -d "$DB" -f "$f" </dev/null || rc=$? ;;
		*.sh) bash -e "$f" </dev/null || rc=$? ;;
	esac
	if [ $rc -ne 0 ]; then
		echo "quickstart.sh: FAILED: README.md's Quick start, block $name (exit status $rc)" >&2
		exit 1
	fi
done
echo "quickstart.sh: every block of README.md's Quick start ran ($(ls "$WORK" | wc -l) blocks)"
