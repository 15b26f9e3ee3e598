#!/usr/bin/env bash
# package.sh: build the Debian package the way Debian builds PostgreSQL extensions
# (debian/, pg_buildext; the build runs the pg_regress suites against the built files in
# a throwaway cluster), then prove it alone is enough: remove what `make install` put
# in place, install the .deb with apt, and in a fresh cluster create the extension,
# index a table and search it. Run as root on Debian 12; tools/run.sh test calls it.
#
#   bash tools/package.sh [OUTDIR]     the .deb files land in OUTDIR (default /tmp/simhash-deb)
#
# At the end (also after a failure) the package is removed again and the extension
# re-installed from the tree, so the machine is as it was.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${1:-/tmp/simhash-deb}
WORK=$(mktemp -d /tmp/simhash-pkg.XXXXXX)
# the build's test cluster runs as another user and reads the built files here
chmod 755 "$WORK"
PGBIN=/usr/lib/postgresql/15/bin
PORT=${SIMHASH_PKG_PORT:-54331}

log() { printf '\n==> %s\n' "$*"; }
installed() { dpkg-query -W -f='${Status}' postgresql-15-simhash 2>/dev/null | grep -q 'install ok installed'; }
# whatever happened, leave the machine as it was: no package, the tree installed
cleanup() {
	[ -f "$WORK/data/postmaster.pid" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -m fast stop >/dev/null 2>&1 || true
	rm -rf "$WORK"
	if installed; then
		DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq postgresql-15-simhash >/dev/null || true
	fi
	make -C "$ROOT" -s install >/dev/null || true
}
trap cleanup EXIT
if installed; then
	DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq postgresql-15-simhash >/dev/null
fi

log "building the package (dpkg-buildpackage; its build runs the regression suites)"
mkdir -p "$WORK/src" "$OUT"
# the tracked files as they are in the working tree
(cd "$ROOT" && git ls-files -z | xargs -0 cp --parents -t "$WORK/src")
(cd "$WORK/src" && dpkg-buildpackage -us -uc -b >"$WORK/build.log" 2>&1) || {
	tail -n 60 "$WORK/build.log"
	echo "package.sh: dpkg-buildpackage failed" >&2
	exit 1
}
grep -E 'tests passed|failed' "$WORK/build.log" || true
rm -f "$OUT"/postgresql-*-simhash*.deb
mv "$WORK"/postgresql-*-simhash*.deb "$OUT"/
deb=$(ls "$OUT"/postgresql-15-simhash_*.deb)
dpkg-deb -f "$deb" Package Version Depends

log "installing $(basename "$deb") alone"
make -C "$ROOT" -s uninstall
for f in /usr/lib/postgresql/15/lib/simhash.so /usr/share/postgresql/15/extension/simhash.control; do
	if [ -e "$f" ]; then
		echo "package.sh: $f is still there after make uninstall" >&2
		exit 1
	fi
done
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$deb" >/dev/null
dpkg -S /usr/lib/postgresql/15/lib/simhash.so /usr/share/postgresql/15/extension/simhash.control

log "a fresh cluster: CREATE EXTENSION, an index, a search"
chown postgres "$WORK"
runuser -u postgres -- "$PGBIN/initdb" -D "$WORK/data" -A trust >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -l "$WORK/server.log" -w \
	-o "-p $PORT -k $WORK -c listen_addresses=''" start >/dev/null
got=$(psql -X -At -v ON_ERROR_STOP=1 -h "$WORK" -p "$PORT" -U postgres -d postgres <<'SQL'
CREATE EXTENSION simhash;
CREATE TABLE docs (id int PRIMARY KEY, body text, fp simhash GENERATED ALWAYS AS (simhash(body)) STORED);
INSERT INTO docs (id, body) SELECT g, 'document number ' || g || ' about ' || (g % 7) FROM generate_series(1, 2000) g;
INSERT INTO docs VALUES (2001, 'document number 17 about 3');
CREATE INDEX ON docs USING simhash (fp);
SET enable_seqscan = off;
SELECT extversion FROM pg_extension WHERE extname = 'simhash';
EXPLAIN (COSTS OFF) SELECT id FROM docs WHERE fp <~> simhash('document number 17 about 3'::text) <= 3;
SELECT string_agg(id::text, ',' ORDER BY id) FROM docs WHERE fp <~> simhash('document number 17 about 3'::text) <= 0;
SQL
)
echo "$got"
# the removal scripts come with the package, and run from where it puts them
examples=$("$PGBIN/pg_config" --docdir)/simhash
dpkg -S "$examples/dedup.sql" "$examples/dedup_pairs.sql" "$examples/dedup_settings.sql" \
	"$examples/dedup_finish.sql" "$examples/dedup_restore.sql" "$examples/dedup_variables.sql"
removal=$(cd "$WORK" && psql -X -q -h "$WORK" -p "$PORT" -U postgres -d postgres \
	-v table=docs -v radius=0 -f "$examples/dedup.sql" 2>&1 &&
	psql -X -q -h "$WORK" -p "$PORT" -U postgres -d postgres \
	-v table=docs -v radius=0 -f "$examples/dedup_pairs.sql" 2>&1)
echo "$removal" | grep NOTICE
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$WORK/data" -m fast stop >/dev/null
grep -q 'Index Scan using docs_fp_idx' <<<"$got" || { echo "package.sh: the search did not use the index" >&2; exit 1; }
grep -q '^17,2001$' <<<"$got" || { echo "package.sh: wrong search result" >&2; exit 1; }
[ "$(grep -c '2001 rows, 2001 with a fingerprint; 1 group of near-duplicates (leader within 0 bits) holding 1 duplicate' <<<"$removal")" = 2 ] ||
	{ echo "package.sh: the installed removal scripts did not report the one exact copy" >&2; exit 1; }

echo "package.sh: $(basename "$deb") builds, installs alone and works"
