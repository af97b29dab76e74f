#!/usr/bin/env bash
# Real gossip agents no one here wrote, in network namespaces on this
# machine: N Serf 0.9.4 agents (Debian 12's `serf`, extracted to
# /opt/serf-0.9.4 by scripts/setup-deps.sh without starting its service) or
# N bare memberlist 0.2.2 agents (tests/serf/mlagent, built offline against
# Debian's golang-github-hashicorp-memberlist-dev) on one Linux bridge, plus
# an attacker and a victim namespace. Issue 54 item 3; docs/serf-harness.md.
#
# Gateway slot: `up --front K` puts agent K behind a namespace of its own
# (sfh<ID>-f<K>) whose kernel bridge joins the switch-side veth to the
# agent's (the "without gateway" case: every packet passes; the default, so
# the without-gateway numbers stay comparable). `up --front K --gateway
# GOSSIPGW` runs the real gateway in filter mode (mode: memberlist) in agent
# K's namespace instead, as on a production host: the switch-side veth up0
# is its NIC (net_af_packet; the kernel keeps no address, ARP or route on
# it), and the tap gwml0 it creates (net_tap, its exception path) carries
# agent K's address, so the agent reaches the network only through it.
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
        slot: a kernel bridge, every packet passes). Any failure tears
        everything down.
     [--gateway GOSSIPGW [--gw-allow LIST] [--gw-plaintext LIST]
        [--gw-pps N] [--gw-burst N] [--gw-egress BYTES_PER_S] [--gw-backoff US]]
        with --front K: gossipgw (filter mode) in front of agent K instead
        of the bridge. It runs in agent K's namespace on the veth toward the
        bridge (up0, net_af_packet) and creates the tap gwml0 (net_tap),
        which gets 10.78.0.K/24 once the gateway has it up with up0's MAC;
        then agent K starts, bound to that address. EAL --lcores puts the
        gateway's two lcores on the same two CPUs as the agents, idle
        back-off --gw-backoff us (default 50). Its config, generated into
        DIR/gw/gossipgw.yaml: allow_cidrs = --gw-allow (comma-separated
        prefixes; `members`: each agent's /32; `any`: no list; default
        10.78.0.0/24), allow_plaintext_cidrs = --gw-plaintext (same form;
        default `members` with --rollout, none otherwise), the cluster key
        as keyring_file DIR/gw/keyring.json when there is one, per-source
        bucket --gw-pps/--gw-burst and egress budget --gw-egress when given
        (else the gateway's defaults). Log DIR/gw/gw.log; counters at exit
        in DIR/gw/stats.json.
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
  gw-pid | gw-stop
        the gateway's PID; stop it (SIGTERM, so it writes DIR/gw/stats.json,
        whose path gw-stop prints)
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
Attacker 10.78.0.250 (and 10.78.1.250/24 on the same link: a source
outside the cluster's subnet), victim 10.78.0.251. 10.78.0.100-199 are never
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

# ---- the gateway (up --gateway): one gossipgw in filter mode per harness ----

gw_prefix() { echo "${pfx}gw"; }   # EAL --file-prefix: /var/run/dpdk/<it>, and our marker
gw_pid() { cat "$dir/gw/pid" 2>/dev/null || true; }

gw_is_ours() {  # PID
  local pid=$1
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "--file-prefix=$(gw_prefix) " || return 1
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]
}

gw_wait_gone() {  # PID TIMEOUT_S
  local pid=$1 t=$(( $2 * 10 ))
  while [ $t -gt 0 ] && gw_is_ours "$pid"; do sleep 0.1; t=$((t - 1)); done
  ! gw_is_ours "$pid"
}

# Stops the gateway by PID: SIGTERM (it writes --stats-json on the way
# out), SIGKILL after TIMEOUT_S. Safe when none runs.
stop_gateway() {  # TIMEOUT_S
  local pid
  pid=$(gw_pid)
  [ -n "$pid" ] || return 0
  if gw_is_ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    if ! gw_wait_gone "$pid" "$1"; then
      echo "$prog: gateway (pid $pid) still runs $1 s after SIGTERM: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      gw_wait_gone "$pid" 5 || true
    fi
  fi
  rm -f "$dir/gw/pid"
  rm -rf "/var/run/dpdk/$(gw_prefix)"
}

# cidr_list SPEC: a YAML flow list from "members", "any" or "a/b,c/d".
cidr_list() {
  local spec=$1 out="" i c
  case "$spec" in
    any|"") ;;
    members) for i in $(seq 1 "$NODES"); do out+="${out:+, }\"$(ip_agent "$i")/32\""; done ;;
    *)
      IFS=, read -r -a parts <<<"$spec"
      for c in "${parts[@]}"; do
        [[ "$c" =~ ^[0-9.]+(/[0-9]+)?$|^[0-9a-fA-F:]+(/[0-9]+)?$ ]] || die "not a prefix: '$c' (in '$spec')"
        out+="${out:+, }\"$c\""
      done ;;
  esac
  echo "[$out]"
}

write_gateway_config() {
  local g=$dir/gw
  mkdir -p "$g"
  chmod 0700 "$g"
  local keyring=""
  if [ -n "$KEY" ]; then
    # serf -keyring-file's format: a JSON array of base64 keys, primary first.
    printf '["%s"]\n' "$KEY" >"$g/keyring.json"
    chmod 0600 "$g/keyring.json"
    keyring="  keyring_file: $g/keyring.json"
  fi
  {
    cat <<YAML
# generated by tests/serf/harness.sh for $pfx: gossipgw in front of agent $FRONT
mode: memberlist
lcores:
  control: 0
  workers: [1]
dataplane:
  port_id: 0
  idle_backoff_us: $GW_BACKOFF
log:
  level: info
metrics:
  # Counters published every 50 ms: serf_test.py reads them over DPDK
  # telemetry after each attack (/gossipgw/metrics).
  interval_ms: 50
memberlist:
  ports: [$port]
  agent_port_id: 1
  agent_udp_port: $port
  allow_cidrs: $(cidr_list "$GW_ALLOW")
  allow_plaintext_cidrs: $(cidr_list "$GW_PLAINTEXT")
YAML
    [ -z "$keyring" ] || echo "$keyring"
    [ -z "$GW_PPS" ] || echo "  per_source_pps: $GW_PPS"
    [ -z "$GW_BURST" ] || echo "  per_source_burst: $GW_BURST"
    [ -z "$GW_EGRESS" ] || echo "  egress_bytes_per_sec: $GW_EGRESS"
  } >"$g/gossipgw.yaml"
}

# "" (not a failure) while the interface does not exist.
if_mac() { { ip -n "$1" -o link show dev "$2" 2>/dev/null || true; } | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p'; }
if_up() { { ip -n "$1" -o link show dev "$2" 2>/dev/null || true; } | grep -q '<[^>]*\bUP\b'; }

# In agent K's namespace: gossipgw on up0 (its NIC) with the tap gwml0 (its
# exception path). Returns once gwml0 is up with up0's MAC (the gateway
# gives the tap its NIC's MAC, so neighbours' ARP entries stay right) and
# carries agent K's address; 20 s at most, and at once if the gateway exits.
start_gateway() {
  local k=$FRONT ns pid g=$dir/gw
  ns=$(ns_agent "$k")
  pid=$(gw_pid)
  if gw_is_ours "$pid"; then die "the gateway already runs (pid $pid)"; fi
  rm -rf "/var/run/dpdk/$(gw_prefix)" "$g/stats.json"
  echo "=== start $(date -u +%FT%T.%3NZ)" >>"$g/gw.log"
  setsid ip netns exec "$ns" "$GW" \
    --lcores="0@($CORES),1@($CORES)" --no-huge -m 512 --no-pci \
    --file-prefix="$(gw_prefix)" --log-level=lib.eal:warning --log-level=pmd.net.af_packet:warning \
    --vdev="net_af_packet0,iface=up0,framecnt=16384" --vdev="net_tap0,iface=gwml0" \
    -- --config "$g/gossipgw.yaml" --stats-json "$g/stats.json" \
    </dev/null >>"$g/gw.log" 2>&1 &
  pid=$!
  echo "$pid" >"$g/pid"
  local t=200 nic_mac tap_mac=""
  nic_mac=$(if_mac "$ns" up0)
  while [ $t -gt 0 ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 8 "$g/gw.log" >&2
      die "the gateway exited during start-up (log: $g/gw.log)"
    fi
    tap_mac=$(if_mac "$ns" gwml0)
    if [ -n "$tap_mac" ] && [ "$tap_mac" = "$nic_mac" ] && if_up "$ns" gwml0; then break; fi
    sleep 0.1
    t=$((t - 1))
  done
  if [ $t -eq 0 ]; then
    tail -n 8 "$g/gw.log" >&2
    if [ -z "$tap_mac" ]; then die "no tap gwml0 in $ns 20 s after the gateway started (log: $g/gw.log)"; fi
    die "gwml0 is not up with up0's MAC $nic_mac 20 s after the gateway started (it has ${tap_mac}; log: $g/gw.log)"
  fi
  ip -n "$ns" addr add "$(ip_agent "$k")/24" dev gwml0
  echo "gateway: pid $pid in $ns, NIC up0 (net_af_packet), agent $k at $(ip_agent "$k") on tap gwml0 ($tap_mac)"
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
  # The gateway first (by PID, SIGTERM so it writes its counters).
  stop_gateway 10
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
  local gw="" gw_allow=10.78.0.0/24 gw_plaintext="" gw_plaintext_set=0 gw_pps="" gw_burst="" gw_egress="" gw_backoff=50
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes=${2:?}; shift 2 ;;
      --kind) kind=${2:?}; shift 2 ;;
      --encrypt) key=${2:?}; shift 2 ;;
      --gen-key) genkey=${2:?}; shift 2 ;;
      --rollout) rollout=1; shift ;;
      --profile) profile=${2:?}; shift 2 ;;
      --front) front=${2:?}; shift 2 ;;
      --gateway) gw=${2:?}; shift 2 ;;
      --gw-allow) gw_allow=${2:?}; shift 2 ;;
      --gw-plaintext) gw_plaintext=${2:?}; gw_plaintext_set=1; shift 2 ;;
      --gw-pps) gw_pps=${2:?}; shift 2 ;;
      --gw-burst) gw_burst=${2:?}; shift 2 ;;
      --gw-egress) gw_egress=${2:?}; shift 2 ;;
      --gw-backoff) gw_backoff=${2:?}; shift 2 ;;
      *) die "up: unknown option '$1' (try --help)" ;;
    esac
  done
  [[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 3 ] && [ "$nodes" -le $max_nodes ] || die "--nodes: $nodes is not in 3..$max_nodes"
  case "$kind" in serf|memberlist) ;; *) die "--kind: serf or memberlist" ;; esac
  case "$profile" in lan|local) ;; *) die "--profile: lan or local" ;; esac
  [[ "$front" =~ ^[0-9]+$ ]] && [ "$front" -le "$nodes" ] || die "--front: 1..$nodes"
  if [ -n "$gw" ]; then
    [ "$front" -ge 1 ] || die "--gateway needs --front K (the agent it stands in front of)"
    [ -x "$gw" ] || die "--gateway: $gw is not an executable (build it: ninja -C build control/gateway/gossipgw)"
    gw=$(cd "$(dirname "$gw")" && pwd)/$(basename "$gw")
    local v
    for v in "$gw_pps" "$gw_burst" "$gw_egress" "$gw_backoff"; do
      [ -z "$v" ] || [[ "$v" =~ ^[0-9]+$ ]] || die "--gw-pps/--gw-burst/--gw-egress/--gw-backoff: whole numbers, not '$v'"
    done
    [ "$gw_plaintext_set" = 1 ] || { [ "$rollout" = 1 ] && gw_plaintext=members; } || true
    # The lists are checked now, before anything is built.
    NODES=$nodes cidr_list "$gw_allow" >/dev/null
    NODES=$nodes cidr_list "$gw_plaintext" >/dev/null
  fi
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
  if [ -n "$gw" ]; then command -v ethtool >/dev/null || die "ethtool not found (apt-get install ethtool, or scripts/setup-deps.sh)"; fi
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
  # The gateway and the agents share the two CPUs this script may use.
  local cores
  cores=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //' | tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done | head -n 2 | paste -sd, -)
  [ -n "$cores" ] || cores=0
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
GW=$gw
GW_ALLOW=$gw_allow
GW_PLAINTEXT=$gw_plaintext
GW_PPS=$gw_pps
GW_BURST=$gw_burst
GW_EGRESS=$gw_egress
GW_BACKOFF=$gw_backoff
CORES=$cores
ENV
  for i in $(seq 1 "$nodes"); do
    echo "AGENT${i}_NS=$(ns_agent "$i") AGENT${i}_IP=$(ip_agent "$i")" >>"$dir/harness.env"
  done
  KIND=$kind KEY=$key ROLLOUT=$rollout PROFILE=$profile SERF=$serf_bin MLAGENT=$mlagent NODES=$nodes
  FRONT=$front GW=$gw GW_ALLOW=$gw_allow GW_PLAINTEXT=$gw_plaintext GW_PPS=$gw_pps GW_BURST=$gw_burst
  GW_EGRESS=$gw_egress GW_BACKOFF=$gw_backoff CORES=$cores

  echo "== $pfx: $nodes $kind agents$([ -n "$key" ] && echo ", encrypted$([ "$rollout" = 1 ] && echo ' (rollout: plaintext accepted)')"), attacker, victim on bridge $bridge"
  local ns nss=("$ns_sw" "$ns_atk" "$ns_vic")
  for i in $(seq 1 "$nodes"); do nss+=("$(ns_agent "$i")"); done
  [ "$front" = 0 ] || [ -n "$gw" ] || nss+=("$(ns_front "$front")")
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
    if [ "$i" = "$front" ] && [ -n "$gw" ]; then
      # The gateway in front of agent K, in K's namespace as on a production
      # host: up0 toward the bridge is its NIC. The kernel must not use up0
      # itself, or agent K would be reachable around the gateway: no
      # address, no ARP, and strict reverse-path filtering (every route
      # leads to the tap, so whatever arrives on up0 is dropped by the IP
      # stack; only the gateway's af_packet socket reads it).
      local na
      na=$(ns_agent "$i")
      ip link add name up0 netns "$na" type veth peer name "sfp$i" netns "$ns_sw"
      ip -n "$ns_sw" link set "sfp$i" master "$bridge" up
      # Frames on a wire have whole checksums and fit the MTU: the bridge
      # port toward the gateway's NIC finishes what the veths left to
      # "hardware" (partial checksums, 64 KB TCP segments), which a NIC
      # read through af_packet would otherwise pass on unfinished.
      ip netns exec "$ns_sw" ethtool -K "sfp$i" tx off tso off gso off >/dev/null
      ip netns exec "$na" sysctl -qw net.ipv4.conf.up0.rp_filter=1 net.ipv4.conf.up0.arp_ignore=8 \
        net.ipv4.conf.up0.accept_local=0
      ip -n "$na" link set up0 arp off
      ip -n "$na" link set up0 up
    elif [ "$i" = "$front" ]; then
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
  # A second source on the attacker's link, outside the cluster's subnet
  # (the gateway's default allow-list); without a gateway agents take it too.
  ip -n "$ns_atk" addr add 10.78.1.250/24 dev eth0
  attach "$ns_vic" "$vic_ip" sfpv
  for i in $(seq 1 "$nodes"); do mkdir -p "$dir/a$i"; chmod 0700 "$dir/a$i"; done

  if [ -n "$gw" ]; then
    write_gateway_config
    echo "== gateway in front of agent $front: allow ${gw_allow}, plaintext ${gw_plaintext:-none}, key $([ -n "$key" ] && echo yes || echo no), CPUs $cores"
    start_gateway
  fi
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
  echo "harness $PFX in $dir: $NODES $KIND agents, key $([ -n "$KEY" ] && echo yes || echo no), rollout $ROLLOUT, front ${FRONT}$([ -n "$GW" ] && echo " (gateway pid $(gw_pid), allow $GW_ALLOW, plaintext ${GW_PLAINTEXT:-none})")"
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
    f[0-9]*)
      [ "${1#f}" = "$FRONT" ] || die "no front namespace $1"
      [ -z "$GW" ] || die "no front namespace with --gateway: the gateway runs in agent $FRONT's namespace"
      ns_front "${1#f}" ;;
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
  gw-pid) load_env; [ -n "$GW" ] || die "no gateway in this harness"; gw_pid ;;
  gw-stop)
    need_root; load_env; [ -n "$GW" ] || die "no gateway in this harness"
    stop_gateway 10
    [ -s "$dir/gw/stats.json" ] || die "the gateway left no $dir/gw/stats.json (log: $dir/gw/gw.log)"
    echo "$dir/gw/stats.json"
    ;;
  exec)
    [ $# -ge 3 ] && [ "$2" = -- ] || die "exec NODE|attacker|victim|switch -- CMD..."
    load_env
    ns=$(ns_of "$1")
    shift 2
    exec ip netns exec "$ns" "$@"
    ;;
  *) die "unknown command '$cmd' (try --help)" ;;
esac
