#!/usr/bin/env bash
# Real gossip agents no one here wrote, in network namespaces on this
# machine: N Serf 0.9.4 agents (Debian 12's `serf`, extracted to
# /opt/serf-0.9.4 by scripts/setup-deps.sh without starting its service) or
# N bare memberlist 0.2.2 agents (tests/serf/mlagent, built offline against
# Debian's golang-github-hashicorp-memberlist-dev) on one Linux bridge, plus
# an attacker and a victim namespace. Issue 54 item 3; docs/serf-harness.md.
#
# Gateway slot: `up --front K` puts agent K behind a namespace of its own
# (sfh<ID>-f<K>) between the bridge and the agent. Today a kernel bridge
# joins its two veths (the "without gateway" case: every packet passes);
# the filter mode will run gossipgw there instead, its NIC on the
# switch-side veth and its exception path toward the agent.
set -euo pipefail

prog=harness.sh

usage() {
  cat <<'TXT'
usage: tests/serf/harness.sh [--id ID] [--dir DIR] COMMAND [options]

Commands:
  up [--nodes N] [--kind serf|memberlist] [--encrypt BASE64 | --gen-key BYTES]
     [--rollout] [--profile lan|local] [--front K]
        create the namespaces, bridge and veths, start N agents (3..32,
        default 5; kind default serf), join them all to agent 1 and wait
        until every agent sees exactly N alive members (60 s at most).
        --encrypt gives the key (base64 of 16, 24 or 32 bytes), --gen-key
        makes one of that many bytes. --rollout (memberlist only): the key
        is used for sending but plaintext is still accepted
        (GossipVerifyIncoming=false); serf 0.9.4 has no such option.
        --front K: agent K sits behind namespace sfh<ID>-f<K> (the gateway
        slot, a kernel bridge for now). Any failure tears everything down.
  down  stop the agents (SIGTERM, SIGKILL after 5 s; only PIDs we started),
        delete our namespaces (bridge and veths go with them) and DIR.
  members NODE [--json]
        the member list as agent NODE sees it (serf members / mlagent file)
  count NODE [STATUS]
        how many members agent NODE lists (with STATUS: only those)
  wait-members NODE COUNT [--timeout S]
        wait until agent NODE lists exactly COUNT alive members
  running NODE
        exit 0 if agent NODE's process is alive
  pid NODE | log NODE | ns NODE|attacker|victim|switch
  exec NODE|attacker|victim|switch -- CMD...
        run CMD inside that namespace
  status  one line per agent

Global options:
  --id ID    names everything sfh<ID>-*: agents sfh<ID>-a1..aN, bridge
             namespace sfh<ID>-sw, attacker sfh<ID>-atk, victim sfh<ID>-vic.
             Letters and digits, 1..8. Default 1.
  --dir DIR  work directory (default /tmp/sfh<ID>): harness.env, a<i>/ with
             each agent's log, pid and members file.

Addresses (inside our namespaces only): agent i is 10.78.0.i, UDP/TCP port
7946, node name s<i>; serf RPC on 127.0.0.1:7373 in each agent's namespace.
Attacker 10.78.0.250, victim 10.78.0.251. 10.78.0.100-199 are never
assigned (phantoms' addresses). Binaries: $SERF_BIN (default
/opt/serf-0.9.4/usr/bin/serf), $MLAGENT_BIN (default: built into DIR with
go, offline). Needs root.
TXT
}

die() { echo "$prog: $*" >&2; exit 2; }

id=1
dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --id) [ $# -ge 2 ] || die "--id needs a value"; id=$2; shift 2 ;;
    --dir) [ $# -ge 2 ] || die "--dir needs a path"; dir=$2; shift 2 ;;
    -*) die "unknown option '$1' (try --help)" ;;
    *) break ;;
  esac
done
[ $# -ge 1 ] || { usage >&2; exit 2; }
cmd=$1
shift
[[ "$id" =~ ^[A-Za-z0-9]{1,8}$ ]] || die "--id: '$id' must be 1..8 letters or digits"
[ -n "$dir" ] || dir=/tmp/sfh$id
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

pfx=sfh$id
ns_sw=$pfx-sw
ns_atk=$pfx-atk
ns_vic=$pfx-vic
ns_agent() { echo "$pfx-a$1"; }
ns_front() { echo "$pfx-f$1"; }
ip_agent() { echo "10.78.0.$1"; }
atk_ip=10.78.0.250
vic_ip=10.78.0.251
port=7946
rpc=127.0.0.1:7373
bridge=sfhbr0
max_nodes=32

need_root() { [ "$(id -u)" = 0 ] || die "needs root (network namespaces, veths)"; }

load_env() {
  [ -f "$dir/harness.env" ] || die "no harness in $dir (run '$prog --id $id up' first)"
  # shellcheck disable=SC1091
  . "$dir/harness.env"
}

check_node() {
  [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$NODES" ] || die "NODE is 1..$NODES, not '$1'"
}

# ---- processes: only PIDs we started, recognised by their command line ----

# Every agent's command line carries a marker unique to this harness and
# node: serf's tag harness=<pfx>-a<i>, mlagent's -members-file under DIR.
marker() { if [ "$KIND" = serf ]; then echo "harness=$pfx-a$1"; else echo "$dir/a$1/members.json"; fi; }

is_ours() {  # PID NODE
  local pid=$1 node=$2
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$(marker "$node")" || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]
}

agent_pid() { cat "$dir/a$1/pid" 2>/dev/null || true; }

wait_gone() {  # PID NODE TIMEOUT_S
  local pid=$1 node=$2 t=$(( $3 * 10 ))
  while [ $t -gt 0 ] && is_ours "$pid" "$node"; do sleep 0.1; t=$((t - 1)); done
  ! is_ours "$pid" "$node"
}

mlagent_bin() {
  if [ -n "${MLAGENT_BIN:-}" ]; then echo "$MLAGENT_BIN"; return; fi
  local out=$dir/mlagent
  if [ ! -x "$out" ]; then
    command -v go >/dev/null || die "go not found (apt-get install golang-go golang-github-hashicorp-memberlist-dev, or scripts/setup-deps.sh)"
    [ -d /usr/share/gocode/src/github.com/hashicorp/memberlist ] || die "memberlist source missing: apt-get install golang-github-hashicorp-memberlist-dev"
    # Offline, against Debian's packaged Go libraries only.
    (cd "$here/mlagent" && GOPATH=/usr/share/gocode GO111MODULE=off GOPROXY=off GOFLAGS='' \
      GOCACHE="${GOCACHE:-/var/tmp/sfh-gocache}" go build -o "$out" .) >&2 || die "building mlagent failed"
  fi
  echo "$out"
}

start_agent() {  # NODE
  local i=$1 ns ip log pid
  ns=$(ns_agent "$i"); ip=$(ip_agent "$i"); log=$dir/a$i/agent.log
  pid=$(agent_pid "$i")
  if is_ours "$pid" "$i"; then die "agent $i already runs (pid $pid)"; fi
  echo "=== start $(date -u +%FT%T.%3NZ)" >>"$log"
  local args=()
  if [ "$KIND" = serf ]; then
    args=("$SERF" agent -node="s$i" -bind="$ip:$port" -advertise="$ip:$port" -rpc-addr="$rpc"
          -profile="$PROFILE" -log-level=debug -tag "harness=$pfx-a$i")
    [ -z "$KEY" ] || args+=(-encrypt="$KEY")
  else
    args=("$MLAGENT" -name="s$i" -bind="$ip" -port="$port" -profile="$PROFILE"
          -members-file="$dir/a$i/members.json")
    [ -z "$KEY" ] || args+=(-encrypt="$KEY" -verify-incoming="$([ "$ROLLOUT" = 1 ] && echo false || echo true)")
    [ "$i" = 1 ] || args+=(-join="$(ip_agent 1):$port")
  fi
  # setsid: a Ctrl-C reaches this script, not the agents (stopped by PID).
  # `ip netns exec` and setsid exec, so $! is the agent's own PID.
  setsid ip netns exec "$ns" "${args[@]}" </dev/null >>"$log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/a$i/pid"
  local t=100
  while [ $t -gt 0 ]; do
    kill -0 "$pid" 2>/dev/null || { tail -n 5 "$log" >&2; die "agent $i exited during start-up (log: $log)"; }
    if [ "$KIND" = serf ]; then
      ip netns exec "$ns" "$SERF" members -rpc-addr="$rpc" >/dev/null 2>&1 && break
    else
      [ -s "$dir/a$i/members.json" ] && break
    fi
    sleep 0.1; t=$((t - 1))
  done
  [ $t -gt 0 ] || die "agent $i did not answer within 10 s (log: $log)"
  if [ "$KIND" = serf ] && [ "$i" != 1 ]; then
    ip netns exec "$ns" "$SERF" join -rpc-addr="$rpc" "$(ip_agent 1):$port" >>"$log" 2>&1 ||
      die "agent $i could not join agent 1 (log: $log)"
  fi
  echo "agent $i: pid $pid, s$i at $ip:$port, namespace $ns"
}

# ---- members ----

members_json() {  # NODE -> {"members":[{"name","addr","status",...}]}
  local i=$1
  if [ "$KIND" = serf ]; then
    ip netns exec "$(ns_agent "$i")" "$SERF" members -rpc-addr="$rpc" -format=json
  else
    cat "$dir/a$i/members.json"
  fi
}

count_members() {  # NODE [STATUS]
  members_json "$1" | python3 -c '
import json, sys
st = sys.argv[1] if len(sys.argv) > 1 else None
print(sum(1 for m in json.load(sys.stdin)["members"] if st is None or m["status"] == st))' ${2:+"$2"}
}

# ---- down: safe on a half-built harness, any number of times ----

down() {
  trap '' INT TERM HUP
  if [ -f "$dir/harness.env" ]; then . "$dir/harness.env"; fi
  local i pid ns pids
  if [ -n "${KIND:-}" ]; then
    for i in $(seq 1 $max_nodes); do
      pid=$(agent_pid "$i")
      if is_ours "$pid" "$i"; then kill -TERM "$pid" 2>/dev/null || true; fi
    done
    for i in $(seq 1 $max_nodes); do
      [ -f "$dir/a$i/pid" ] || continue
      pid=$(agent_pid "$i")
      if ! wait_gone "$pid" "$i" 5; then kill -KILL "$pid" 2>/dev/null || true; wait_gone "$pid" "$i" 5 || true; fi
      rm -f "$dir/a$i/pid"
    done
  fi
  # Helpers a driver started in our namespaces registered their PIDs here.
  if [ -d "$dir/pids" ]; then
    for f in "$dir"/pids/*.pid; do
      [ -f "$f" ] || continue
      kill -TERM "$(cat "$f")" 2>/dev/null || true
      rm -f "$f"
    done
  fi
  # Whatever still runs inside our own namespaces was started by us.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$pfx-(a[0-9]+|f[0-9]+|sw|atk|vic)$" || true); do
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [ -n "$pids" ]; then
      # shellcheck disable=SC2086
      kill -TERM $pids 2>/dev/null || true
      for _ in $(seq 30); do
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        [ -z "$pids" ] && break
        sleep 0.1
      done
      # shellcheck disable=SC2086
      [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
    fi
    ip netns del "$ns" 2>/dev/null || echo "$prog: could not delete namespace $ns" >&2
  done
  if [ -f "$dir/.sfh-harness" ]; then rm -rf "$dir"; fi
  echo "harness $pfx down"
}

# ---- up ----

up() {
  local nodes=5 kind=serf key="" genkey="" rollout=0 profile=lan front=0
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes=${2:?}; shift 2 ;;
      --kind) kind=${2:?}; shift 2 ;;
      --encrypt) key=${2:?}; shift 2 ;;
      --gen-key) genkey=${2:?}; shift 2 ;;
      --rollout) rollout=1; shift ;;
      --profile) profile=${2:?}; shift 2 ;;
      --front) front=${2:?}; shift 2 ;;
      *) die "up: unknown option '$1' (try --help)" ;;
    esac
  done
  [[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 3 ] && [ "$nodes" -le $max_nodes ] || die "--nodes: $nodes is not in 3..$max_nodes"
  case "$kind" in serf|memberlist) ;; *) die "--kind: serf or memberlist" ;; esac
  case "$profile" in lan|local) ;; *) die "--profile: lan or local" ;; esac
  [[ "$front" =~ ^[0-9]+$ ]] && [ "$front" -le "$nodes" ] || die "--front: 1..$nodes"
  if [ -n "$genkey" ]; then
    [ -z "$key" ] || die "--encrypt and --gen-key exclude each other"
    case "$genkey" in 16|24|32) ;; *) die "--gen-key: 16, 24 or 32" ;; esac
    key=$(head -c "$genkey" /dev/urandom | base64)
  fi
  if [ -n "$key" ]; then
    local n
    n=$(printf '%s' "$key" | base64 -d 2>/dev/null | wc -c) || die "--encrypt: not base64"
    case "$n" in 16|24|32) ;; *) die "--encrypt: the key is $n bytes, not 16, 24 or 32" ;; esac
  fi
  [ "$rollout" = 0 ] || { [ "$kind" = memberlist ] && [ -n "$key" ]; } ||
    die "--rollout needs --kind memberlist and a key (serf 0.9.4 exposes no GossipVerifyIncoming)"
  need_root
  local serf_bin=${SERF_BIN:-/opt/serf-0.9.4/usr/bin/serf}
  if [ "$kind" = serf ]; then
    [ -x "$serf_bin" ] || die "$serf_bin not found: run scripts/setup-deps.sh (or set SERF_BIN)"
  fi
  if ip netns list | awk '{print $1}' | grep -qE "^$pfx-"; then
    die "namespaces $pfx-* exist already: '$prog --id $id down' first, or pick another --id"
  fi
  if [ -e "$dir" ] && { [ ! -d "$dir" ] || [ -n "$(ls -A "$dir" 2>/dev/null)" ]; }; then
    die "--dir $dir exists and is not an empty directory (down would remove it): pick a new one"
  fi

  up_exit() {
    local rc=$?
    if [ $rc -ne 0 ]; then echo "$prog: up failed: tearing down" >&2; down >&2; fi
  }
  trap up_exit EXIT
  trap 'exit 130' INT TERM

  mkdir -p "$dir/pids"
  chmod 0700 "$dir"
  touch "$dir/.sfh-harness"
  local mlagent=""
  [ "$kind" = memberlist ] && mlagent=$(mlagent_bin)
  cat >"$dir/harness.env" <<ENV
ID=$id
PFX=$pfx
NODES=$nodes
KIND=$kind
KEY=$key
ROLLOUT=$rollout
PROFILE=$profile
FRONT=$front
SERF=$serf_bin
MLAGENT=$mlagent
PORT=$port
NS_SW=$ns_sw
NS_ATK=$ns_atk
NS_VIC=$ns_vic
ATK_IP=$atk_ip
VIC_IP=$vic_ip
BRIDGE=$bridge
ENV
  for i in $(seq 1 "$nodes"); do
    echo "AGENT${i}_NS=$(ns_agent "$i") AGENT${i}_IP=$(ip_agent "$i")" >>"$dir/harness.env"
  done
  KIND=$kind KEY=$key ROLLOUT=$rollout PROFILE=$profile SERF=$serf_bin MLAGENT=$mlagent NODES=$nodes

  echo "== $pfx: $nodes $kind agents$([ -n "$key" ] && echo ", encrypted$([ "$rollout" = 1 ] && echo ' (rollout: plaintext accepted)')"), attacker, victim on bridge $bridge"
  local ns nss=("$ns_sw" "$ns_atk" "$ns_vic")
  for i in $(seq 1 "$nodes"); do nss+=("$(ns_agent "$i")"); done
  [ "$front" = 0 ] || nss+=("$(ns_front "$front")")
  for ns in "${nss[@]}"; do
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  done
  ip -n "$ns_sw" link add "$bridge" type bridge stp_state 0 forward_delay 0
  ip -n "$ns_sw" link set "$bridge" up
  # attach NS IP PORTNAME: a veth "eth0" in NS with IP/24, its peer on the bridge.
  attach() {
    ip link add name eth0 netns "$1" type veth peer name "$3" netns "$ns_sw"
    ip -n "$1" addr add "$2/24" dev eth0
    ip -n "$1" link set eth0 up
    ip -n "$ns_sw" link set "$3" master "$bridge" up
  }
  for i in $(seq 1 "$nodes"); do
    if [ "$i" = "$front" ]; then
      # The gateway slot: bridge <-> f<K>:up0 ... f<K>:dn0 <-> agent K.
      local nf
      nf=$(ns_front "$i")
      ip link add name up0 netns "$nf" type veth peer name "sfp$i" netns "$ns_sw"
      ip -n "$ns_sw" link set "sfp$i" master "$bridge" up
      ip link add name dn0 netns "$nf" type veth peer name eth0 netns "$(ns_agent "$i")"
      ip -n "$(ns_agent "$i")" addr add "$(ip_agent "$i")/24" dev eth0
      ip -n "$(ns_agent "$i")" link set eth0 up
      ip -n "$nf" link add frontbr type bridge stp_state 0 forward_delay 0
      ip -n "$nf" link set up0 master frontbr up
      ip -n "$nf" link set dn0 master frontbr up
      ip -n "$nf" link set frontbr up
    else
      attach "$(ns_agent "$i")" "$(ip_agent "$i")" "sfp$i"
    fi
  done
  attach "$ns_atk" "$atk_ip" sfpa
  attach "$ns_vic" "$vic_ip" sfpv
  for i in $(seq 1 "$nodes"); do mkdir -p "$dir/a$i"; chmod 0700 "$dir/a$i"; done

  for i in $(seq 1 "$nodes"); do start_agent "$i"; done
  echo "== waiting until every agent sees exactly $nodes alive members"
  for i in $(seq 1 "$nodes"); do wait_members "$i" "$nodes" 60; done
  echo "== $pfx up: every agent lists $nodes alive members"
  trap - EXIT INT TERM
}

wait_members() {  # NODE COUNT TIMEOUT_S
  local i=$1 want=$2 t=$(( $3 * 10 )) got=""
  while [ $t -gt 0 ]; do
    got=$(count_members "$i" alive 2>/dev/null || true)
    [ "$got" = "$want" ] && return 0
    sleep 0.1; t=$((t - 1))
  done
  die "agent $i lists ${got:-no} alive members, not $want, after $3 s"
}

status() {
  load_env
  local i pid state
  echo "harness $PFX in $dir: $NODES $KIND agents, key $([ -n "$KEY" ] && echo yes || echo no), rollout $ROLLOUT, front ${FRONT}"
  for i in $(seq 1 "$NODES"); do
    pid=$(agent_pid "$i")
    if is_ours "$pid" "$i"; then state="running (pid $pid), $(count_members "$i" alive 2>/dev/null || echo '?') alive members"; else state=stopped; fi
    printf '  s%-3s %-12s %-12s %s\n' "$i" "$(ip_agent "$i")" "$(ns_agent "$i")" "$state"
  done
  printf '  atk  %-12s %s\n  vic  %-12s %s\n' "$ATK_IP" "$NS_ATK" "$VIC_IP" "$NS_VIC"
}

ns_of() {
  case "$1" in
    attacker) echo "$NS_ATK" ;;
    victim) echo "$NS_VIC" ;;
    switch) echo "$NS_SW" ;;
    f[0-9]*) [ "${1#f}" = "$FRONT" ] || die "no front namespace $1"; ns_front "${1#f}" ;;
    *) check_node "$1"; ns_agent "$1" ;;
  esac
}

case "$cmd" in
  up) up "$@" ;;
  down) need_root; down ;;
  status) status ;;
  members)
    [ $# -ge 1 ] || die "members NODE [--json]"
    load_env; check_node "$1"
    if [ "${2:-}" = --json ]; then members_json "$1"; else
      members_json "$1" | python3 -c '
import json, sys
for m in json.load(sys.stdin)["members"]:
    print("%-16s %-20s %s" % (m["name"], m["addr"], m["status"]))'
    fi
    ;;
  count) [ $# -ge 1 ] || die "count NODE [STATUS]"; load_env; check_node "$1"; count_members "$@" ;;
  wait-members)
    [ $# -ge 2 ] || die "wait-members NODE COUNT [--timeout S]"
    load_env; check_node "$1"
    to=30; [ "${3:-}" = --timeout ] && to=${4:?}
    wait_members "$1" "$2" "$to"
    ;;
  running) [ $# -eq 1 ] || die "running NODE"; load_env; check_node "$1"; is_ours "$(agent_pid "$1")" "$1" ;;
  pid) [ $# -eq 1 ] || die "pid NODE"; load_env; check_node "$1"; agent_pid "$1" ;;
  log) [ $# -eq 1 ] || die "log NODE"; load_env; check_node "$1"; echo "$dir/a$1/agent.log" ;;
  ns) [ $# -eq 1 ] || die "ns NODE|attacker|victim|switch"; load_env; ns_of "$1" ;;
  exec)
    [ $# -ge 3 ] && [ "$2" = -- ] || die "exec NODE|attacker|victim|switch -- CMD..."
    load_env
    ns=$(ns_of "$1")
    shift 2
    exec ip netns exec "$ns" "$@"
    ;;
  *) die "unknown command '$cmd' (try --help)" ;;
esac
