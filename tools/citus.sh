#!/usr/bin/env bash
# tools/citus.sh: the Citus suite. Makes sure Citus is installed for PostgreSQL 15 (building it
# from the release source when it is not), then runs the TAP files under test/citus/ (a
# coordinator and two workers on this machine).
#
#   bash tools/citus.sh            install if needed, then test
#   bash tools/citus.sh install    only install
#
# Citus is not in Debian. Users install it from Citus's own packages (see doc/citus.md); for CI
# and development the release source is $SIMHASH_CITUS_TARBALL, else
# ../shared/vendor/citus-13.2.2.tar.gz beside this checkout, with the patch that
# PostgreSQL 15.18 and later need (they export have_createdb_privilege(), which Citus 13.2.2
# defines again for versions before 16). The build takes a few minutes on 2 cores and is kept
# once installed. Exit status 3: Citus is neither installed nor buildable here (skipped).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PG_MAJOR=15
PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/$PG_MAJOR/bin/pg_config}
RUN_DIR=${SIMHASH_RUN_DIR:-/tmp/simhash-run}
BUILD_DIR=$RUN_DIR/citus-build
CITUS_VERSION=13.2.2

log() { echo "==> citus: $*"; }

find_source() {
	local f
	for f in ${SIMHASH_CITUS_TARBALL:-} "$ROOT/../shared/vendor/citus-$CITUS_VERSION.tar.gz"; do
		if [ -f "$f" ]; then
			echo "$f"
			return 0
		fi
	done
	return 1
}

install_citus() {
	local pkglibdir tarball patchfile
	pkglibdir=$("$PG_CONFIG" --pkglibdir)
	if [ -f "$pkglibdir/citus.so" ]; then
		log "installed already ($pkglibdir/citus.so)"
		return 0
	fi
	if ! tarball=$(find_source); then
		log "SKIPPED: Citus is not installed and its release source is not here (looked for ${SIMHASH_CITUS_TARBALL:+$SIMHASH_CITUS_TARBALL and }../shared/vendor/citus-$CITUS_VERSION.tar.gz beside the checkout; a clone without ../shared has none: set SIMHASH_CITUS_TARBALL)"
		exit 3
	fi
	# what is missing, upgrading nothing installed
	bash "$ROOT/tools/apt.sh" liblz4-dev libzstd-dev libkrb5-dev
	log "building Citus $CITUS_VERSION from $tarball (a few minutes)"
	rm -rf "$BUILD_DIR"
	mkdir -p "$BUILD_DIR"
	tar -xzf "$tarball" -C "$BUILD_DIR"
	patchfile="$(dirname "$tarball")/citus-$CITUS_VERSION-pg15.18.patch"
	if [ -f "$patchfile" ] && (cd "$BUILD_DIR" && patch -p0 --dry-run -s <"$patchfile" >/dev/null 2>&1); then
		(cd "$BUILD_DIR" && patch -p0 -s <"$patchfile")
	fi
	(
		cd "$BUILD_DIR/citus-$CITUS_VERSION"
		PG_CONFIG="$PG_CONFIG" ./configure --without-libcurl >"$BUILD_DIR/configure.log" 2>&1 ||
			{ tail -n 30 "$BUILD_DIR/configure.log"; exit 1; }
		make -j2 >"$BUILD_DIR/make.log" 2>&1 || { tail -n 30 "$BUILD_DIR/make.log"; exit 1; }
		make install >"$BUILD_DIR/install.log" 2>&1 || { tail -n 30 "$BUILD_DIR/install.log"; exit 1; }
	)
	log "installed into $pkglibdir"
}

run_tests() {
	local dir=$RUN_DIR/citus-tap rc=0
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -a "$ROOT/." "$dir/src"
	chown -R postgres "$dir"
	runuser -u postgres -- make -C "$dir/src" -s tapcheck TAP_TESTDIR="$dir" PROVE_FLAGS='--timer' \
		PROVE_TESTS="$dir/src/test/citus/*.pl" || rc=$?
	if [ $rc -ne 0 ]; then
		for f in "$dir"/tmp_check/log/regress_log_*; do
			[ -f "$f" ] && { echo "---- $f (tail)"; tail -n 60 "$f"; }
		done
	fi
	return $rc
}

case "${1:-test}" in
	install) install_citus ;;
	test)
		install_citus
		run_tests
		;;
	*)
		echo "usage: tools/citus.sh [test|install]" >&2
		exit 2
		;;
esac
