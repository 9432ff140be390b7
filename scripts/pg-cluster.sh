#!/usr/bin/env bash
# pg-cluster.sh COMMAND [ARG...]: runs COMMAND against a throwaway
# PostgreSQL cluster of its own, with IDEMLAB_DATABASE_URL naming it.
#
# The cluster lives in a temporary folder (initdb), listens on a free
# loopback port and nowhere else, trusts local connections (nothing but
# this run can reach it), and is stopped and deleted when COMMAND ends,
# however it ends. PostgreSQL refuses to run as root: run as root, the
# cluster runs as the unprivileged user "postgres" (made if missing).
# Where PostgreSQL is not installed, apt installs it (Debian's packages).
# It is made for tests: fsync is off, since a crash of the machine loses
# only a cluster that was to be deleted anyway.
#
# IDEMLAB_PG_PORTS (ports separated by spaces, e.g. "5433 5434") are the
# ports it tries, in turn, in place of eight random ones: a port taken is
# named and the next one tried.
set -euo pipefail

if [ $# -eq 0 ]; then
	echo "usage: $0 COMMAND [ARG...]" >&2
	echo "  (IDEMLAB_PG_PORTS=\"5433 5434\" picks the ports it tries, in turn)" >&2
	exit 2
fi

# bindir finds the folder of initdb and pg_ctl: Debian keeps them under
# /usr/lib/postgresql/VERSION/bin, off the PATH.
bindir() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
	done
	if command -v pg_config >/dev/null && [ -x "$(pg_config --bindir)/pg_ctl" ]; then pg_config --bindir; return; fi
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then dirname "$(command -v pg_ctl)"; return; fi
}

bin=$(bindir)
if [ -z "$bin" ]; then
	echo "pg-cluster: PostgreSQL is not installed; installing it with apt" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15 >&2 ||
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >&2
	bin=$(bindir)
	if [ -z "$bin" ]; then
		echo "pg-cluster: no initdb and pg_ctl after installing PostgreSQL" >&2
		exit 2
	fi
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/idemlab-pg.XXXXXX")
run=()
if [ "$(id -u)" -eq 0 ]; then
	id postgres >/dev/null 2>&1 || useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin postgres
	chown postgres "$dir"
	run=(setpriv --reuid=postgres --regid="$(id -g postgres)" --clear-groups --)
fi
as_owner() { (cd "$dir" && "${run[@]}" "$@"); }

stop() {
	as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

as_owner "$bin/initdb" -D "$dir/data" -U idemlab --auth=trust --no-locale -E UTF8 >"$dir/initdb.log" 2>&1 ||
	{ cat "$dir/initdb.log" >&2; exit 2; }

# A free port: one nothing answers on now. Another process may take it
# before the server does (or hold it without answering); then the start
# fails, the script says which port was taken, and the next port is
# tried. pg_ctl's own words ("Examine the log output.") are kept for a
# start that fails for another reason, with the log. IDEMLAB_PG_PORTS
# (ports separated by spaces) are tried in place of random ones.
ports=${IDEMLAB_PG_PORTS:-}
if [ -z "$ports" ]; then
	for _ in 1 2 3 4 5 6 7 8; do ports="$ports $((20000 + RANDOM % 40000))"; done
fi
started=""
for port in $ports; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		echo "pg-cluster: port $port is taken; trying another" >&2
		continue
	fi
	log="$dir/server-$port.log"
	if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$log" -w -t 60 start \
		-o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=400 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >"$dir/pg_ctl.out" 2>&1; then
		started=1
		break
	fi
	if grep -q "could not bind\|Address already in use" "$log" 2>/dev/null; then
		echo "pg-cluster: port $port is taken; trying another" >&2
		continue
	fi
	break
done
if [ -z "$started" ]; then
	if [ -z "${log:-}" ]; then
		echo "pg-cluster: the server did not start: every port tried was taken: $(echo $ports)${IDEMLAB_PG_PORTS:+ (IDEMLAB_PG_PORTS)}" >&2
		exit 2
	fi
	echo "pg-cluster: the server did not start:" >&2
	cat "$dir/pg_ctl.out" >&2 || true
	cat "$log" >&2 || true
	exit 2
fi

export IDEMLAB_DATABASE_URL="postgres://idemlab@127.0.0.1:$port/postgres?sslmode=disable"
# The lab prints a command to run again with this script in front (reproduce
# lines): the cluster is gone once "$@" ends.
export IDEMLAB_PG_THROWAWAY=1
echo "pg-cluster: PostgreSQL $("$bin/postgres" -V | awk '{print $3}') at $IDEMLAB_DATABASE_URL (data in $dir, deleted at the end)" >&2
"$@"
