#!/usr/bin/env bash
# apt.sh: install the Debian packages named that are missing, and upgrade none that is
# installed. tools/run.sh, tools/pg_matrix.sh and tools/citus.sh install through it.
#
#   bash tools/apt.sh PACKAGE...
#
# A package counts as present when dpkg says "install ok installed"; only the others go to
# apt-get, with --no-upgrade (installed packages named are left as they are). Their
# dependencies may still need newer versions of installed packages: a dry run (apt-get -s)
# lists them first. When one of them is a PostgreSQL package (postgresql*, libpq*: the
# binaries of a server) and a server from Debian's PostgreSQL packages is running, it stops,
# naming them, unless SIMHASH_ALLOW_UPGRADES=1; with no such server running (a fresh machine
# whose image ships an older postgresql-15 than postgresql-server-dev-15 needs) the upgrade
# is named and done, as are the other upgrades. Run as root.
set -euo pipefail

# the running servers started from Debian's packages (pid and binary), one a line
debian_servers() {
	local pid exe
	for pid in $(pgrep -x postgres || true); do
		exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
		case "$exe" in /usr/lib/postgresql/*/bin/postgres) echo "pid $pid: $exe" ;; esac
	done
}

missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

printf '\n==> installing the missing packages %s\n' "${missing[*]}"
apt-get update -qq
# "Inst NAME [INSTALLED-VERSION] (NEW-VERSION ...)": an installed package upgraded
upgrades=$(apt-get install -s --no-upgrade --no-install-recommends "${missing[@]}" 2>/dev/null |
	sed -n 's/^Inst \([^ ]*\) \[\([^]]*\)\] (\([^ ]*\).*/\1 \2 -> \3/p')
if [ -n "$upgrades" ]; then
	echo "apt.sh: installing them upgrades these installed packages (their dependencies need it):"
	sed 's/^/    /' <<<"$upgrades"
	if grep -qE '^(postgresql|libpq)' <<<"$upgrades" && [ "${SIMHASH_ALLOW_UPGRADES:-0}" != 1 ] &&
		running=$(debian_servers) && [ -n "$running" ]; then
		echo "apt.sh: stopped: that would upgrade PostgreSQL packages under a running server:" >&2
		sed 's/^/    /' <<<"$running" >&2
		echo "apt.sh: install ${missing[*]} yourself, or rerun with SIMHASH_ALLOW_UPGRADES=1 to let apt upgrade them." >&2
		exit 1
	fi
fi
# (debconf's "delaying package configuration, since apt-utils is not installed" is noise)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-upgrade --no-install-recommends "${missing[@]}" \
	>/dev/null 2> >(grep -v '^debconf: ' >&2)
