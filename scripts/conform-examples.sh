#!/usr/bin/env bash
# conform-examples.sh LAB: runs lab conform (the binary LAB) against
# APIs, each through its public API only, and checks each verdict is the
# expected one: stage 9's reference solution (valid), stage 0's naive
# server (money harmed), both served by lab serve; the two small APIs of
# grader/conform/testdata, payserver and walletd (valid), and the
# payserver again with a restart that loses its keys (money harmed); and
# the seven audit examples, each middleware around stage 0's handlers as
# lab audit wraps it (grader/conform/testdata/auditserve), with the
# verdict docs/conform.md explains. The lab servers are reset once, with
# seed 1, to have customers; lab conform itself never calls /lab. Ends
# with one line, and exits 0 only if every verdict is expected.
set -euo pipefail

lab=${1:?usage: $0 LAB}
dir=$(mktemp -d "${TMPDIR:-/tmp}/idemlab-conform.XXXXXX")
pids=()
stop() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	# The restarted payserver is the restart command's child, not ours.
	[ -f "$dir/restarted.pid" ] && kill "$(cat "$dir/restarted.pid")" 2>/dev/null || true
	wait 2>/dev/null || true
	[ -n "${KEEP:-}" ] && echo "kept $dir" >&2 && return
	rm -rf "$dir"
}
trap stop EXIT

# url_of FILE: the first http:// URL a server has printed to FILE, once it has.
url_of() {
	local u=""
	for _ in $(seq 1 300); do
		u=$(grep -o -m1 'http://127\.0\.0\.1:[0-9]*' "$1" 2>/dev/null || true)
		[ -n "$u" ] && { echo "$u"; return; }
		sleep 0.1
	done
	echo "conform-examples: no server came up; its output:" >&2
	cat "$1" >&2
	exit 2
}

# reset_seed1 URL: POST /lab/reset {"seed":1} to the lab server at URL and
# prints the raw answer (bash's /dev/tcp: nothing beside Go is needed).
reset_seed1() {
	local hostport=${1#http://}
	exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}"
	printf 'POST /lab/reset HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer adm_conform\r\nContent-Type: application/json\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{"seed":1}' "$hostport" >&3
	cat <&3
	exec 3<&-
}

# serve_lab N: serves stage N's reference solution; sets URL and the
# LAB_* variables of the lab profile from a seed-1 reset.
serve_lab() {
	"$lab" serve --stage "$1" --solution --db :memory: --addr 127.0.0.1:0 --admin-token adm_conform >"$dir/serve$1.log" 2>&1 &
	pids+=($!)
	URL=$(url_of "$dir/serve$1.log")
	local reset
	reset=$(reset_seed1 "$URL")
	mapfile -t tokens < <(grep -o '"token":"[^"]*"' <<<"$reset" | cut -d'"' -f4)
	mapfile -t accounts < <(grep -o 'acc_[a-z0-9]*' <<<"$reset")
	export LAB_TOKEN_A=${tokens[0]} LAB_FROM_A=${accounts[0]} LAB_TO_A=${accounts[1]}
	export LAB_TOKEN_B=${tokens[1]} LAB_FROM_B=${accounts[2]} LAB_TO_B=${accounts[3]}
}

summary=()
failed=0
# check NAME WANT URL PROFILE: runs lab conform; WANT is the exit status
# expected (0 valid, 1 invalid).
check() {
	local name=$1 want=$2 url=$3 profile=$4 got=0
	"$lab" conform --url "$url" --profile "$profile" --seed 1 --junit "$dir/$name.xml" >"$dir/$name.out" 2>&1 || got=$?
	local line
	line=$(grep '^conform: ' "$dir/$name.out" | tail -1 | sed 's/^conform: [^:]*: //')
	if [ "$got" != "$want" ]; then
		failed=1
		echo "conform-examples: $name exited $got, expected $want:" >&2
		cat "$dir/$name.out" >&2
	fi
	# "2/2 MUST met, 3/3 SHOULD met, money clean" -> "2/2 MUST met, money clean"
	summary+=("$name $(sed 's/, [0-9]*\/[0-9]* SHOULD met//' <<<"${line:-no verdict}")")
}

profiles=grader/conform/testdata/profiles
serve_lab 9
check "stage 9" 0 "$URL" "$profiles/lab.json"
serve_lab 0
check "stage 0" 1 "$URL" "$profiles/lab.json"
go build -o "$dir/payserver" ./grader/conform/testdata/payserver/serve
"$dir/payserver" >"$dir/payserver.log" 2>&1 &
pids+=($!)
check "payserver" 0 "$(url_of "$dir/payserver.log")" "$profiles/payserver.json"

# The payserver again, its payments in a file and its keys in memory,
# with a restart command in its profile: it kills the server and starts
# it again on the same port and file, and retry-after-restart finds the
# operation paid twice.
"$dir/payserver" -payments "$dir/payments.jsonl" >"$dir/restarted.log" 2>&1 &
echo $! >"$dir/restarted.pid"
url=$(url_of "$dir/restarted.log")
export PAYSERVER_RESTART="pid=\$(cat '$dir/restarted.pid'); kill \$pid; while kill -0 \$pid 2>/dev/null; do sleep 0.05; done; '$dir/payserver' -addr ${url#http://} -payments '$dir/payments.jsonl' >>'$dir/restarted.log' 2>&1 & echo \$! >'$dir/restarted.pid'"
sed 's|^  "expiry"|  "restart": "{{env.PAYSERVER_RESTART}}",\n  "expiry"|' "$profiles/payserver.json" >"$dir/restarted.json"
check "payserver restarted" 1 "$url" "$dir/restarted.json"

go build -o "$dir/walletd" ./grader/conform/testdata/walletd/serve
"$dir/walletd" >"$dir/walletd.log" 2>&1 &
pids+=($!)
check "walletd" 0 "$(url_of "$dir/walletd.log")" "$profiles/walletd.json"

# serve_audit NAME: serves the audit example NAME, which resets its own
# bank and prints the lab profile's LAB_* variables before its URL; sets
# URL and exports them.
serve_audit() {
	"$dir/auditserve" -example "$1" >"$dir/audit-$1.log" 2>&1 &
	pids+=($!)
	URL=$(url_of "$dir/audit-$1.log")
	while IFS='=' read -r name value; do
		export "$name=$value"
	done < <(grep '^LAB_' "$dir/audit-$1.log")
}

# The expected exit status of each audit example: 0 valid, 1 invalid.
go build -o "$dir/auditserve" ./grader/conform/testdata/auditserve/serve
for example in naive:1 final:0 aftercommit:0 heldlock:1 nomarker:0 sharedscope:1 successonly:0; do
	serve_audit "${example%:*}"
	check "${example%:*}" "${example#*:}" "$URL" "$profiles/lab.json"
done

(IFS=';'; echo "conform: ${summary[*]}" | sed 's/;/; /g')
exit $failed
