#!/usr/bin/env bash
# pg_matrix.sh: the suites on a PostgreSQL major version built from source.
# Debian 12 packages only PostgreSQL 15; other versions are built from their release
# source into a prefix of their own, once: a finished build is reused.
#
#   bash tools/pg_matrix.sh build MAJOR     build (or reuse) PostgreSQL MAJOR; prints its prefix
#   bash tools/pg_matrix.sh regress MAJOR   build the extension against it (-Werror), install
#                                           it there, run pg_regress in a scratch cluster
#   bash tools/pg_matrix.sh tap MAJOR       the TAP suites against it (two files at a time)
#
# Sources: 17 from $SIMHASH_PG17_TARBALL, else postgresql-17.6.tar.xz in ../shared/vendor/
# beside this repository (Debian's 17 source is not served here);
# 18 from Debian's postgresql-18 source package, fetched with a deb-src entry for sid kept in a
# private apt directory ($WORK/apt-sid: nothing under /etc/apt changes). Prefixes: $SIMHASH_PG_BUILDS/MAJOR (default /opt/simhash-pg/MAJOR);
# a build is complete when MAJOR/.complete exists and holds the configure options it was built
# with (another set of options rebuilds it). 17 is built with assertions (--enable-cassert), as
# a developer's server is, so that the suites run every Assert() of the extension and of the
# server's own checks on what it is handed (a buffer used after its release, an I/O buffer not
# aligned); 18 is a release build, as users run it. $SIMHASH_PG_CASSERT names the majors built
# with assertions (default 17; empty: none). A cold build of 17 takes about 4 minutes on 2 cores. Run as root (the scratch cluster runs as the postgres OS user). Exit status 3:
# skipped, because the version's source is not on this machine.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILDS=${SIMHASH_PG_BUILDS:-/opt/simhash-pg}
WORK=${SIMHASH_RUN_DIR:-/tmp/simhash-run}/pg-matrix

log() { printf '\n==> %s\n' "$*"; }
pg() { runuser -u postgres -- "$@"; }

# the first that exists of: $SIMHASH_PG17_TARBALL, ../shared/vendor/ beside this checkout
source_tarball() {
	local f
	case "$1" in
		17)
			for f in ${SIMHASH_PG17_TARBALL:-} "$ROOT/../shared/vendor/postgresql-17.6.tar.xz"; do
				[ -f "$f" ] && { echo "$f"; return; }
			done
			echo "$ROOT/../shared/vendor/postgresql-17.6.tar.xz"
			;;
		18)
			# Debian's postgresql-18 source package (sid): its .orig tarball is the 18.6 release
			f=$(ls "$WORK"/dl-18/postgresql-18_*.orig.tar.* 2>/dev/null | head -n 1)
			if [ -z "$f" ]; then
				ensure_sid_sources >&2
				mkdir -p "$WORK/dl-18"
				(cd "$WORK/dl-18" && apt_sid source --download-only -qq postgresql-18 >&2) || true
				f=$(ls "$WORK"/dl-18/postgresql-18_*.orig.tar.* 2>/dev/null | head -n 1)
			fi
			echo "$f"
			;;
		*) echo "" ;;
	esac
}

# sid's source index (source packages only: sid's binaries need a newer libc), read into a
# private apt directory: the entry, the lists and the caches live under $APT_SID, so nothing
# under /etc/apt or /var/lib/apt changes and the system's apt-get sees no sid
APT_SID=$WORK/apt-sid
apt_sid() {
	apt-get -o Dir::Etc::sourcelist="$APT_SID/sources.list" -o Dir::Etc::sourceparts=- \
		-o Dir::State::Lists="$APT_SID/lists" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
		-o Dir::Cache::archives="$APT_SID/archives" "$@"
}
ensure_sid_sources() {
	mkdir -p "$APT_SID/lists/partial" "$APT_SID/archives/partial"
	echo 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian sid main' \
		>"$APT_SID/sources.list"
	apt_sid update -qq
}

# what to do about a missing source, for the skip message
skip_advice() {
	case "$1" in
		17) echo "a clone without ../shared/vendor beside it has none: set SIMHASH_PG17_TARBALL" ;;
		18) echo "fetched from Debian's postgresql-18 source package: needs the network" ;;
		*) echo "only 17 and 18 are built here" ;;
	esac
}

# the configure options of a major's build
configure_options() {
	local opts="--enable-tap-tests"
	case " ${SIMHASH_PG_CASSERT-17} " in
		*" $1 "*) opts="$opts --enable-cassert" ;;
	esac
	echo "$opts"
}

build_server() {
	local major=$1 prefix=$BUILDS/$1 src opts
	opts=$(configure_options "$major")
	if [ -f "$prefix/.complete" ] && [ -x "$prefix/bin/pg_config" ] &&
		[ "$(cat "$prefix/.complete")" = "$opts" ]; then
		log "PostgreSQL $major: reusing the build in $prefix ($("$prefix/bin/pg_config" --version), $opts)"
		return 0
	fi
	src=$(source_tarball "$major")
	if [ -z "$src" ] || [ ! -f "$src" ]; then
		# not a test failure: the suites cannot run here (exit status 3, "skipped")
		echo "pg_matrix.sh: SKIPPED: no source for PostgreSQL $major (looked for ${src:-nothing}; $(skip_advice "$major"))" >&2
		exit 3
	fi
	log "PostgreSQL $major: building from $(basename "$src") into $prefix with $opts (about 4 minutes)"
	bash "$ROOT/tools/apt.sh" bison flex libreadline-dev zlib1g-dev libicu-dev pkg-config libipc-run-perl
	rm -rf "$WORK/src-$major" "$prefix"
	mkdir -p "$WORK/src-$major"
	tar -xf "$src" -C "$WORK/src-$major" --strip-components=1
	(
		cd "$WORK/src-$major"
		# shellcheck disable=SC2086 # the options are words
		./configure --prefix="$prefix" $opts >"$WORK/configure-$major.log" 2>&1
		make -j"$(nproc)" world-bin >"$WORK/make-$major.log" 2>&1
		make install-world-bin >"$WORK/install-$major.log" 2>&1
	) || {
		tail -n 40 "$WORK"/*-"$major".log
		return 1
	}
	rm -rf "$WORK/src-$major"
	echo "$opts" >"$prefix/.complete"
}

# the extension, from the tracked files, built and installed into the prefix
build_extension() {
	local major=$1 prefix=$BUILDS/$1 dir=$WORK/ext-$1
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$ROOT" && git ls-files -z | xargs -0 cp --parents -t "$dir")
	make -C "$dir" -s PG_CONFIG="$prefix/bin/pg_config" COPT=-Werror
	make -C "$dir" -s PG_CONFIG="$prefix/bin/pg_config" install >/dev/null
	chown -R postgres "$dir"
}

regress() {
	local major=$1 prefix=$BUILDS/$1 dir=$WORK/ext-$1 data=$WORK/data-$1 port=$((54400 + $1))
	build_extension "$major"
	mkdir -p "$WORK"
	chown postgres "$WORK"
	rm -rf "$data"
	pg "$prefix/bin/initdb" -D "$data" -E UTF8 --locale=C.UTF-8 -A trust >/dev/null
	pg "$prefix/bin/pg_ctl" -D "$data" -l "$WORK/server-$major.log" -w \
		-o "-p $port -k $WORK -c listen_addresses=''" start >/dev/null
	local rc=0
	PGHOST=$WORK PGPORT=$port PGUSER=postgres \
		pg make -C "$dir" -s PG_CONFIG="$prefix/bin/pg_config" installcheck || rc=$?
	pg "$prefix/bin/pg_ctl" -D "$data" -m fast stop >/dev/null || true
	if [ $rc -ne 0 ] && [ -f "$dir/regression.diffs" ]; then
		cat "$dir/regression.diffs"
	fi
	return $rc
}

tap() {
	local major=$1 prefix=$BUILDS/$1 dir=$WORK/ext-$1
	[ -f "$dir/Makefile" ] || build_extension "$major"
	local rc=0
	# the stress and fuzz files get half the time they get on 15 (the same C
	# code; the CI budget is shared by three versions), unless set explicitly
	pg env SIMHASH_STRESS_SECONDS=${SIMHASH_STRESS_SECONDS:-60} \
		SIMHASH_FUZZ_SQL_SECONDS=${SIMHASH_FUZZ_SQL_SECONDS:-30} \
		SIMHASH_SQLSMITH_QUERIES=${SIMHASH_SQLSMITH_QUERIES:-1500} \
		make -C "$dir" -s PG_CONFIG="$prefix/bin/pg_config" tapcheck TAP_TESTDIR="$dir" \
		PROVE_FLAGS='--timer -j2' || rc=$?
	if [ $rc -ne 0 ]; then
		for f in "$dir"/tmp_check/log/regress_log_*; do
			[ -f "$f" ] && { echo "---- $f (tail)"; tail -n 40 "$f"; }
		done
	fi
	return $rc
}

case "${1:-}" in
	build) build_server "$2" ;;
	regress) build_server "$2" && regress "$2" ;;
	tap) build_server "$2" && tap "$2" ;;
	*)
		echo "usage: bash tools/pg_matrix.sh build|regress|tap MAJOR" >&2
		exit 2
		;;
esac
