#!/usr/bin/env bash
# A real gossipgw cluster on one machine: K network namespaces, each running
# one gossipgw on DPDK net_af_packet bound to its own veth, joined by a Linux
# bridge that lives in a namespace of its own (the host's network is never
# touched), plus one attacker namespace on the same bridge. Topology, keys and
# configs are generated into a work directory; teardown removes everything.
# See docs/cluster.md.
set -euo pipefail

prog=cluster.sh

usage() {
  cat <<'TXT'
usage: scripts/cluster.sh [--id ID] [--dir DIR] COMMAND [options]

Commands:
  up [--nodes K] [--preset local|lan|wan] [--seeds N] [--idle-backoff-us N]
     [--framecnt N] [--log-level L] [--bin-dir DIR] [--no-start]
        create the namespaces, bridge, veths, keys and one config per gateway
        in DIR, then start every gateway (K: 3..32, default 3; the first N
        nodes, default 1, are everyone's seeds; preset default local;
        dataplane.idle_backoff_us default 500, so all gateways share two
        cores; af_packet ring of --framecnt frames, default 16384; log level
        default info). On any failure it tears down what it created.
  down  stop every gateway (SIGTERM: graceful leave; SIGKILL 10 s
        later), kill whatever still runs in our namespaces, delete the
        namespaces (and with them the bridge and veths), the DPDK runtime
        dirs /var/run/dpdk/gwc<ID>-n<i> and DIR.  --keep-dir keeps DIR.
  status [--json]
        namespaces, links, gateway PIDs, control sockets
  start NODE
        (re)start gateway NODE (1..K); its log is appended to DIR/n<NODE>/gw.log
  stop NODE [--kill] [--timeout S]
        SIGTERM gateway NODE and wait for it to exit (it leaves gracefully and
        writes DIR/n<NODE>/stats.json); --kill sends SIGKILL instead (a crash:
        no leave, no stats)
  exec NODE|attacker|switch -- CMD...
        run CMD inside that namespace (NODE: 1..K)
  run [up options]
        up, print the topology, wait until Ctrl-C or SIGTERM, then down
        (a trap tears everything down on any exit)

Global options:
  --id ID    names everything gwc<ID>-*: namespaces gwc<ID>-n1..n<K>,
             gwc<ID>-sw (bridge), gwc<ID>-atk (attacker), DPDK file prefixes
             gwc<ID>-n<i>. Letters and digits, 1..8. Default 1.
  --dir DIR  work directory (default /tmp/gwc<ID>): cluster.env, keys/,
             n<i>/{gossipgw.yaml,gw.log,pid,stats.json,control.sock}

Addresses: gateway i is 10.77.0.i, MAC 02:47:57:00:00:0i, UDP port 7946, on
interface gwc0 in namespace gwc<ID>-n<i> (no kernel IP on it: DPDK owns it).
The attacker is 10.77.0.250, MAC 02:47:57:00:00:fe, interface gwc0 in
gwc<ID>-atk, with static neighbour entries for every gateway. Every namespace
has lo up; each gateway serves Prometheus metrics on its namespace's own
http://127.0.0.1:9464/metrics (status prints it; reach it with exec, e.g.
`cluster.sh exec 1 -- curl -s http://127.0.0.1:9464/metrics`). Needs root.
Binaries: --bin-dir (a meson build dir), else $GOSSIPGW_BIN_DIR, else build/.
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
[ -n "$dir" ] || dir=/tmp/gwc$id
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

ns_sw=gwc$id-sw
ns_atk=gwc$id-atk
ns_node() { echo "gwc$id-n$1"; }
prefix_node() { echo "gwc$id-n$1"; }
ip_node() { echo "10.77.0.$1"; }
mac_node() { printf '02:47:57:00:00:%02x' "$1"; }
atk_ip=10.77.0.250
atk_mac=02:47:57:00:00:fe
port=7946
metrics_port=9464
bridge=gwcbr0
max_nodes=32

need_root() { [ "$(id -u)" = 0 ] || die "needs root (network namespaces, veths, DPDK af_packet)"; }

load_env() {
  [ -f "$dir/cluster.env" ] || die "no cluster in $dir (run '$prog --id $id up' first)"
  # shellcheck disable=SC1091
  . "$dir/cluster.env"
}

# ---- process helpers (only PIDs we started, checked by their command line) ----

# is_ours PID NODE: PID is alive and is gossipgw with our file prefix.
is_ours() {
  local pid=$1 node=$2
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "--file-prefix=$(prefix_node "$node") " || return 1
  # a zombie has exited already
  [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" != Z ]
}

node_pid() { cat "$dir/n$1/pid" 2>/dev/null || true; }

wait_gone() {  # PID NODE TIMEOUT_S
  local pid=$1 node=$2 t=$(( $3 * 10 ))
  while [ $t -gt 0 ] && is_ours "$pid" "$node"; do sleep 0.1; t=$((t - 1)); done
  ! is_ours "$pid" "$node"
}

start_node() {
  local i=$1 pid
  pid=$(node_pid "$i")
  if is_ours "$pid" "$i"; then die "gateway $i already runs (pid $pid)"; fi
  rm -rf "/var/run/dpdk/$(prefix_node "$i")" "$dir/n$i/stats.json" "$dir/n$i/control.sock"
  echo "=== start $(date -u +%FT%T.%3NZ)" >>"$dir/n$i/gw.log"
  # setsid: a Ctrl-C in the terminal reaches this script's trap, not the
  # gateways; they are stopped by PID. `ip netns exec` and setsid both exec,
  # so $! is the gateway's own PID.
  setsid ip netns exec "$(ns_node "$i")" "$GW" \
    --lcores="0@($CORES),1@($CORES)" --no-huge -m 256 --no-pci \
    --file-prefix="$(prefix_node "$i")" --log-level=lib.eal:warning --log-level=pmd.net.af_packet:warning \
    --vdev="net_af_packet0,iface=gwc0,framecnt=$FRAMECNT" \
    -- --config "$dir/n$i/gossipgw.yaml" --stats-json "$dir/n$i/stats.json" \
    </dev/null >>"$dir/n$i/gw.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/n$i/pid"
  # It must get past EAL and the port: "cluster '...' node '...' on net_af_packet".
  local t=200
  while [ $t -gt 0 ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 5 "$dir/n$i/gw.log" >&2
      die "gateway $i exited during start-up (log: $dir/n$i/gw.log)"
    fi
    if tail -n 20 "$dir/n$i/gw.log" | grep -q "node 'gw-$i' on"; then break; fi
    sleep 0.1
    t=$((t - 1))
  done
  [ $t -gt 0 ] || die "gateway $i did not come up within 20 s (log: $dir/n$i/gw.log)"
  echo "gateway $i: pid $pid, $(ip_node "$i"), namespace $(ns_node "$i")"
}

stop_node() {  # NODE kill(0|1) timeout_s
  local i=$1 kill9=$2 timeout=$3 pid
  pid=$(node_pid "$i")
  if ! is_ours "$pid" "$i"; then echo "gateway $i is not running"; rm -f "$dir/n$i/pid"; return 0; fi
  if [ "$kill9" = 1 ]; then
    kill -KILL "$pid"
    wait_gone "$pid" "$i" 10 || die "gateway $i (pid $pid) survived SIGKILL"
    rm -rf "/var/run/dpdk/$(prefix_node "$i")"  # a killed process leaves its runtime dir
    echo "gateway $i: killed (pid $pid)"
  else
    kill -TERM "$pid"
    if ! wait_gone "$pid" "$i" "$timeout"; then
      echo "$prog: gateway $i (pid $pid) still runs ${timeout}s after SIGTERM: SIGKILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
      wait_gone "$pid" "$i" 10 || true
    fi
    echo "gateway $i: stopped (pid $pid)"
  fi
  rm -f "$dir/n$i/pid"
}

# ---- down: safe to run any number of times, on a half-built cluster too ----

down() {
  local keep_dir=$1 i ns pids
  # A second Ctrl-C must not leave a half-removed cluster behind.
  trap '' INT TERM HUP
  if [ -f "$dir/cluster.env" ]; then . "$dir/cluster.env"; fi
  for i in $(seq 1 $max_nodes); do
    [ -f "$dir/n$i/pid" ] || continue
    local pid
    pid=$(node_pid "$i")
    if is_ours "$pid" "$i"; then kill -TERM "$pid" 2>/dev/null || true; fi
  done
  for i in $(seq 1 $max_nodes); do
    [ -f "$dir/n$i/pid" ] || continue
    local pid
    pid=$(node_pid "$i")
    if ! wait_gone "$pid" "$i" 10; then kill -KILL "$pid" 2>/dev/null || true; wait_gone "$pid" "$i" 5 || true; fi
    rm -f "$dir/n$i/pid"
  done
  # Helpers the driver started (tcpdump, tcpreplay) registered their PIDs here.
  if [ -d "$dir/pids" ]; then
    for f in "$dir"/pids/*.pid; do
      [ -f "$f" ] || continue
      kill -TERM "$(cat "$f")" 2>/dev/null || true
      rm -f "$f"
    done
  fi
  # Anything else still inside our own namespaces was started by us.
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^gwc$id-(n[0-9]+|sw|atk)$" || true); do
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
  for i in $(seq 1 $max_nodes); do rm -rf "/var/run/dpdk/$(prefix_node "$i")"; done
  if [ "$keep_dir" = 1 ]; then
    echo "cluster gwc$id down (work directory kept: $dir)"
  else
    # Only a directory this script made (it holds our cluster.env).
    if [ -f "$dir/cluster.env" ] || [ -f "$dir/.gwc-cluster" ]; then rm -rf "$dir"; fi
    echo "cluster gwc$id down"
  fi
}

# ---- up ----

find_bins() {
  local d=$1
  for b in control/gateway/gossipgw control/ctl/gossipctl perf/gossipgen/gossipgen; do
    [ -x "$d/$b" ] || die "$d/$b not found: build it (meson setup build && ninja -C build) or pass --bin-dir"
  done
  GW=$(cd "$d" && pwd)/control/gateway/gossipgw
  CTL=$(cd "$d" && pwd)/control/ctl/gossipctl
  GEN=$(cd "$d" && pwd)/perf/gossipgen/gossipgen
}

up() {
  local nodes=3 preset=local seeds=1 backoff=500 framecnt=16384 level=info bindir="" start=1
  while [ $# -gt 0 ]; do
    case "$1" in
      --nodes) nodes=${2:?}; shift 2 ;;
      --preset) preset=${2:?}; shift 2 ;;
      --seeds) seeds=${2:?}; shift 2 ;;
      --idle-backoff-us) backoff=${2:?}; shift 2 ;;
      --framecnt) framecnt=${2:?}; shift 2 ;;
      --log-level) level=${2:?}; shift 2 ;;
      --bin-dir) bindir=${2:?}; shift 2 ;;
      --no-start) start=0; shift ;;
      *) die "up: unknown option '$1' (try --help)" ;;
    esac
  done
  [[ "$nodes" =~ ^[0-9]+$ ]] && [ "$nodes" -ge 3 ] && [ "$nodes" -le $max_nodes ] || die "--nodes: $nodes is not in 3..$max_nodes"
  [[ "$seeds" =~ ^[1-9]$ ]] && [ "$seeds" -le "$nodes" ] || die "--seeds: 1..--nodes"
  case "$preset" in local|lan|wan) ;; *) die "--preset: local, lan or wan" ;; esac
  [[ "$backoff" =~ ^[0-9]+$ ]] || die "--idle-backoff-us: a whole number"
  [[ "$framecnt" =~ ^[0-9]+$ ]] || die "--framecnt: a whole number"
  need_root
  [ -n "$bindir" ] || bindir=${GOSSIPGW_BIN_DIR:-$repo/build}
  find_bins "$bindir"
  if ip netns list | awk '{print $1}' | grep -qE "^gwc$id-"; then
    die "namespaces gwc$id-* exist already: '$prog --id $id down' first, or pick another --id"
  fi
  [ ! -e "$dir/cluster.env" ] || die "$dir holds a cluster already: '$prog --id $id --dir $dir down' first"
  # down removes DIR: it must be ours alone, so a new or empty directory.
  if [ -e "$dir" ] && { [ ! -d "$dir" ] || [ -n "$(ls -A "$dir" 2>/dev/null)" ]; }; then
    die "--dir $dir exists and is not an empty directory (down would remove it): pick a new one"
  fi

  # From here on, any failure tears down what was built.
  up_exit() {
    local rc=$?
    if [ $rc -ne 0 ]; then echo "$prog: up failed: tearing down" >&2; down 0 >&2; fi
  }
  trap up_exit EXIT
  trap 'exit 130' INT TERM

  mkdir -p "$dir/keys" "$dir/pids"
  chmod 0700 "$dir"
  touch "$dir/.gwc-cluster"
  # Two CPUs at most for all gateways: the first two this process may use.
  local cores
  cores=$(taskset -pc $$ 2>/dev/null | sed 's/.*: //' | tr ',' '\n' | while IFS=- read -r a b; do seq "$a" "${b:-$a}"; done | head -n 2 | paste -sd, -)
  [ -n "$cores" ] || cores=0
  cat >"$dir/cluster.env" <<ENV
ID=$id
NODES=$nodes
PRESET=$preset
SEEDS=$seeds
GW=$GW
CTL=$CTL
GEN=$GEN
CORES=$cores
FRAMECNT=$framecnt
IDLE_BACKOFF_US=$backoff
PORT=$port
NS_SW=$ns_sw
NS_ATK=$ns_atk
ATK_IP=$atk_ip
ATK_MAC=$atk_mac
BRIDGE=$bridge
ENV
  for i in $(seq 1 "$nodes"); do
    echo "NODE${i}_NS=$(ns_node "$i") NODE${i}_IP=$(ip_node "$i") NODE${i}_MAC=$(mac_node "$i") NODE${i}_PREFIX=$(prefix_node "$i")" >>"$dir/cluster.env"
  done
  CORES=$cores FRAMECNT=$framecnt

  echo "== topology gwc$id: $nodes gateways + attacker on bridge $bridge (namespace $ns_sw)"
  local ns
  for ns in "$ns_sw" "$ns_atk" $(for i in $(seq 1 "$nodes"); do ns_node "$i"; done); do
    ip netns add "$ns"
    # Loopback up: a new namespace has lo down, and the gateway's Prometheus
    # listener (metrics.prometheus_address 127.0.0.1) is reached through it.
    ip -n "$ns" link set lo up
    # No IPv6 autoconfiguration chatter (router solicitations, MLD) on our
    # segment: every frame the gateways see is either gossip or an attack.
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
  done
  ip -n "$ns_sw" link add "$bridge" type bridge stp_state 0 forward_delay 0 mcast_snooping 0
  ip -n "$ns_sw" link set "$bridge" up
  for i in $(seq 1 "$nodes"); do
    ip link add name gwc0 netns "$(ns_node "$i")" type veth peer name "gwcp$i" netns "$ns_sw"
    ip -n "$(ns_node "$i")" link set gwc0 address "$(mac_node "$i")"
    ip -n "$(ns_node "$i")" link set gwc0 up
    ip -n "$ns_sw" link set "gwcp$i" master "$bridge" up
  done
  ip link add name gwc0 netns "$ns_atk" type veth peer name gwcpa netns "$ns_sw"
  ip -n "$ns_atk" link set gwc0 address "$atk_mac"
  ip -n "$ns_atk" link set gwc0 up
  ip -n "$ns_atk" addr add "$atk_ip/24" dev gwc0
  ip -n "$ns_sw" link set gwcpa master "$bridge" up
  # The attacker replays frames carrying real members' source MACs: the
  # bridge must not learn from its port (port security on a real switch),
  # or it would divert the members' traffic to the attacker. What the
  # gateways do with the frames is what is under test, not the switch.
  ip netns exec "$ns_sw" bridge link set dev gwcpa learning off
  # The gateways answer no ARP; kernel sockets in the attacker namespace
  # (nc, python) reach them through static neighbour entries.
  for i in $(seq 1 "$nodes"); do
    ip -n "$ns_atk" neigh replace "$(ip_node "$i")" lladdr "$(mac_node "$i")" dev gwc0 nud permanent
  done

  echo "== keys and configs in $dir"
  "$CTL" keygen --out "$dir/keys/primary.key" >/dev/null
  "$CTL" keygen --out "$dir/keys/foreign.key" >/dev/null   # the attacker's: never in any keyring
  local seedlist control_ok=0
  # The control API section, where this gossipgw has it.
  printf 'cluster:\n  name: probe\n  keys:\n    - file: keys/primary.key\nnode:\n  address: 10.77.0.1\ncontrol:\n  socket: %s/probe.sock\n' "$dir" >"$dir/probe.yaml"
  if "$CTL" config check --config "$dir/probe.yaml" >/dev/null 2>&1; then control_ok=1; fi
  rm -f "$dir/probe.yaml"
  echo "CONTROL_API=$control_ok" >>"$dir/cluster.env"
  for i in $(seq 1 "$nodes"); do
    mkdir -p "$dir/n$i"
    chmod 0700 "$dir/n$i"
    seedlist=""
    for s in $(seq 1 "$seeds"); do
      [ "$s" = "$i" ] && continue
      seedlist+="${seedlist:+, }\"$(ip_node "$s"):$port\""
    done
    {
      cat <<YAML
# gateway $i of cluster gwc$id, generated by scripts/cluster.sh
cluster:
  name: gwc-$id
  suite: chacha20poly1305
  keys:
    - file: ../keys/primary.key
      primary: true
node:
  name: gw-$i
  address: $(ip_node "$i")
  port: $port
lcores:
  control: 0
  workers: [1]
rings:
  size: 1024
dataplane:
  mbufs: 8192
  idle_backoff_us: $backoff
membership:
  preset: $preset
  seeds: [$seedlist]
  tags: {role: gateway, rack: r$i}
  leave_timeout_ms: 2000
log:
  level: $level
YAML
      if [ "$control_ok" = 1 ]; then
        printf 'control:\n  socket: %s/n%s/control.sock\n' "$dir" "$i"
        # Prometheus on the namespace's own loopback: the same port in
        # every namespace (status prints the URLs).
        printf 'metrics:\n  prometheus_address: 127.0.0.1\n  prometheus_port: %s\n' "$metrics_port"
      fi
    } >"$dir/n$i/gossipgw.yaml"
    "$CTL" config check --config "$dir/n$i/gossipgw.yaml" >/dev/null
  done

  if [ "$start" = 1 ]; then
    echo "== gateways (lcores 0,1 floating on CPUs $cores, idle back-off ${backoff} us)"
    for i in $(seq 1 "$nodes"); do start_node "$i"; done
  fi
  trap - EXIT INT TERM
}

status() {
  local json=0
  [ "${1:-}" = --json ] && json=1
  load_env
  local i pid state
  if [ "$json" = 1 ]; then
    printf '{"id":"%s","dir":"%s","nodes":[' "$ID" "$dir"
    for i in $(seq 1 "$NODES"); do
      pid=$(node_pid "$i")
      if is_ours "$pid" "$i"; then state=running; else state=stopped; pid=0; fi
      [ "$i" = 1 ] || printf ','
      printf '{"node":%s,"name":"gw-%s","namespace":"%s","ip":"%s","mac":"%s","port":%s,"pid":%s,"state":"%s","config":"%s","log":"%s","stats":"%s","socket":"%s","prefix":"%s","metrics":"%s"}' \
        "$i" "$i" "$(ns_node "$i")" "$(ip_node "$i")" "$(mac_node "$i")" "$PORT" "${pid:-0}" "$state" \
        "$dir/n$i/gossipgw.yaml" "$dir/n$i/gw.log" "$dir/n$i/stats.json" \
        "$([ "$CONTROL_API" = 1 ] && echo "$dir/n$i/control.sock")" "$(prefix_node "$i")" \
        "$([ "$CONTROL_API" = 1 ] && echo "http://127.0.0.1:$metrics_port/metrics")"
    done
    printf '],"attacker":{"namespace":"%s","ip":"%s","mac":"%s","iface":"gwc0"},"switch":{"namespace":"%s","bridge":"%s"},"gw":"%s","ctl":"%s","gen":"%s","preset":"%s","control_api":%s}\n' \
      "$NS_ATK" "$ATK_IP" "$ATK_MAC" "$NS_SW" "$BRIDGE" "$GW" "$CTL" "$GEN" "$PRESET" "$CONTROL_API"
    return 0
  fi
  echo "cluster gwc$ID in $dir: $NODES gateways, preset $PRESET, bridge $BRIDGE in $NS_SW"
  for i in $(seq 1 "$NODES"); do
    pid=$(node_pid "$i")
    if is_ours "$pid" "$i"; then state="running (pid $pid)"; else state=stopped; fi
    printf '  gw-%s  %-10s %s  %-18s %s\n' "$i" "$(ip_node "$i")" "$(mac_node "$i")" "$(ns_node "$i")" "$state"
  done
  printf '  atk   %-10s %s  %s\n' "$ATK_IP" "$ATK_MAC" "$NS_ATK"
  ip netns list | awk '{print $1}' | grep -E "^gwc$ID-" | tr '\n' ' ' | sed 's/^/  namespaces: /; s/$/\n/'
  ip -n "$NS_SW" -br link show master "$BRIDGE" 2>/dev/null | sed 's/^/  bridge port: /' || true
  if [ "$CONTROL_API" = 1 ]; then
    echo "  metrics: http://127.0.0.1:$metrics_port/metrics inside each gateway's namespace, e.g."
    echo "    $0 --id $ID exec 1 -- curl -s http://127.0.0.1:$metrics_port/metrics"
    for i in $(seq 1 "$NODES"); do
      [ -S "$dir/n$i/control.sock" ] || continue
      echo "  gw-$i members:"
      "$CTL" members --socket "$dir/n$i/control.sock" 2>/dev/null | sed 's/^/    /' || true
    done
  fi
}

case "$cmd" in
  up) up "$@" ;;
  down)
    keep=0
    [ "${1:-}" = --keep-dir ] && keep=1
    need_root
    down "$keep"
    ;;
  status) status "$@" ;;
  start)
    [ $# -eq 1 ] || die "start NODE"
    need_root; load_env
    [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$NODES" ] || die "start: NODE is 1..$NODES"
    start_node "$1"
    ;;
  stop)
    [ $# -ge 1 ] || die "stop NODE [--kill] [--timeout S]"
    need_root; load_env
    node=$1; shift
    [[ "$node" =~ ^[0-9]+$ ]] && [ "$node" -ge 1 ] && [ "$node" -le "$NODES" ] || die "stop: NODE is 1..$NODES"
    k=0 to=15
    while [ $# -gt 0 ]; do
      case "$1" in
        --kill) k=1; shift ;;
        --timeout) to=${2:?}; shift 2 ;;
        *) die "stop: unknown option '$1'" ;;
      esac
    done
    stop_node "$node" "$k" "$to"
    ;;
  exec)
    [ $# -ge 3 ] && [ "$2" = -- ] || die "exec NODE|attacker|switch -- CMD..."
    load_env
    case "$1" in
      attacker) ns=$NS_ATK ;;
      switch) ns=$NS_SW ;;
      *) [[ "$1" =~ ^[0-9]+$ ]] && [ "$1" -ge 1 ] && [ "$1" -le "$NODES" ] || die "exec: NODE is 1..$NODES"; ns=$(ns_node "$1") ;;
    esac
    shift 2
    exec ip netns exec "$ns" "$@"
    ;;
  run)
    need_root
    # Only the main shell tears down: a signal that lands while a command
    # substitution runs must not start a second teardown in that subshell.
    main_pid=$$
    run_exit() { if [ "$BASHPID" = "$main_pid" ]; then down 0; fi; }
    run_stop() { if [ "$BASHPID" = "$main_pid" ]; then echo; echo "$prog: stopping"; exit 0; fi; }
    up "$@"
    trap run_exit EXIT
    trap run_stop INT TERM HUP
    status
    echo "cluster running; logs in $dir/n*/gw.log; Ctrl-C tears it down"
    while true; do sleep 1; done
    ;;
  *) die "unknown command '$cmd' (try --help)" ;;
esac
