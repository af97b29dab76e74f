#!/usr/bin/env bash
# Builds the libFuzzer targets with ASan+UBSan (clang) and runs each for a
# bounded time from gossipgen-made seeds plus a persistent corpus. A crash or
# an invariant violation fails the run and prints the reproducer.
set -euo pipefail

usage() {
  cat <<'TXT'
usage: tests/fuzz/run.sh [--seconds N] [--corpus DIR] [--jobs N] [TARGET...]
       tests/fuzz/run.sh --list

  --seconds N   time per target (default 30)
  --corpus DIR  persistent corpus root, one folder per target (default
                build-fuzz/corpus); new inputs found are kept there
  --jobs N      libFuzzer workers per target (default 1)
  TARGET        ladder, guard_tables, config, compound, engine, pcap, classifier,
                api_request, http_request, hosts, memberlist, ml_keyring, filter, scenario
                (default: all)
  --list        print the default targets, one a line, and exit

The build (build-fuzz/: clang, ASan+UBSan, -Dfuzz=true) is the one
scripts/test.sh runs the sanitizer suites in: one set of objects for both.

Writes build-fuzz/fuzz-report.txt: executions and coverage per target.
Crashes are saved as build-fuzz/crash-<target>-*; reproduce one with
  build-fuzz/tests/fuzz/fuzz_<target> build-fuzz/crash-<target>-<hash>
TXT
}

seconds=30
list=0
corpus=""
jobs=1
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --list) list=1; shift ;;
    --seconds) seconds=${2:?}; shift 2 ;;
    --corpus) corpus=${2:?}; shift 2 ;;
    --jobs) jobs=${2:?}; shift 2 ;;
    ladder|guard_tables|config|compound|engine|pcap|classifier|api_request|http_request|hosts|memberlist|ml_keyring|filter|scenario) targets+=("$1"); shift ;;
    *) echo "run.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
if [ ${#targets[@]} -eq 0 ]; then
  targets=(ladder guard_tables config compound engine pcap classifier api_request http_request hosts memberlist ml_keyring filter)
  [ -f "$(dirname "$0")/../../perf/gossipsim/scenario.h" ] && targets+=(scenario)
fi
if [ "$list" = 1 ]; then printf '%s\n' "${targets[@]}"; exit 0; fi

cd "$(dirname "$0")/../.."
root=$(pwd)
build=build-fuzz
if [ ! -f "$build/build.ninja" ]; then
  CXX=clang++ CC=clang meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
    -Db_lundef=false -Dbuildtype=debugoptimized -Dwerror=false >/dev/null
fi
ninja -C "$build" $(for t in "${targets[@]}"; do echo "tests/fuzz/fuzz_$t"; done) tests/fuzz/make_seeds >/dev/null

corpus=${corpus:-$build/corpus}
case "$corpus" in /*) corpus=$(realpath --relative-to="$root" "$corpus") ;; esac
seeds="$build/seeds"
rm -rf "$seeds"
"$build/tests/fuzz/make_seeds" "$seeds" >/dev/null
mkdir -p "$seeds/config" "$seeds/pcap" "$seeds/engine" "$seeds/scenario"
for f in perf/scenarios/*.yaml perf/scenarios/ci/*.yaml; do [ -f "$f" ] && cp "$f" "$seeds/scenario/$(echo "$f" | tr / _)"; done
# Engine seeds: each opened plaintext behind a sender byte.
for f in "$seeds"/compound/*; do { printf '\x01'; cat "$f"; } > "$seeds/engine/$(basename "$f")"; done
cp config/examples/gossipgw.yaml config/examples/filter-memberlist.yaml "$seeds/config/"
for c in tests/pcap/cases/*/config.yaml; do cp "$c" "$seeds/config/$(basename "$(dirname "$c")").yaml"; done
for p in "$root"/../shared/corpus/*.pcap; do [ -f "$p" ] && head -c 65536 "$p" > "$seeds/pcap/$(basename "$p")"; done
[ -n "$(ls "$seeds/pcap")" ] || printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00' > "$seeds/pcap/minimal"
# Classifier seeds: NAME \n PATTERN \n PAYLOAD (fuzz_classifier.cc).
mkdir -p "$seeds/classifier"
printf 'gossipgw_v2\n^GSGW\\x02\nGSGW\x02rest' > "$seeds/classifier/v2"
printf 'ping_like\n^(?:\\x0c.{4})?\\x00[\\x81-\\x8f]\n\x00\x85\xa4Node\xa6m-0007' > "$seeds/classifier/ping"
printf 'compound\n^\\x07[\\x01-\\x10]\n\x07\x02\x00\x45\x00\x3e\x00\x85\xa4Node' > "$seeds/classifier/compound"
printf 'crc\nhasCrc\n\x0c\x03\x61\x5b\xa0\x03\x83\xa4From' > "$seeds/classifier/crc"
printf 'weave\n^weave[\\x01-\\x02]\nweave\x01\x02' > "$seeds/classifier/weave"
printf 'broken\nabc(\nabc' > "$seeds/classifier/broken"

# Control API seeds: one request line each (control/api/request.h).
mkdir -p "$seeds/api_request"
i=0
for req in '{"cmd":"members","state":"alive","tag":"role=db"}' '{"cmd":"stats"}' \
    '{"cmd":"keys","op":"install","key":"00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff","primary":true,"scope":"cluster"}' \
    '{"cmd":"keys","op":"use","id":"0a1b2c3d","scope":"node"}' '{"cmd":"keys","op":"remove","id":"0a1b2c3d"}' \
    '{"cmd":"join","address":"[fd00::1]:7946"}' '{"cmd":"leave"}' '{"cmd":"tags","op":"set","tags":{"a":"b"}}' \
    '{"cmd":"tags","op":"unset","keys":["a"]}' '{"cmd":"log-level","level":"debug"}'; do
  printf '%s' "$req" > "$seeds/api_request/$i"
  i=$((i + 1))
done

# Prometheus endpoint seeds: request heads (control/gateway/metrics.h, parse_http_request).
mkdir -p "$seeds/http_request"
printf 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' > "$seeds/http_request/get"
printf 'HEAD /metrics?x=1 HTTP/1.0\n\n' > "$seeds/http_request/head"
printf 'POST / HTTP/1.1\r\n\r\n' > "$seeds/http_request/post"
# Signed cluster-wide key requests (issue 51).
printf '%s' '{"cmd":"keys","op":"use","id":"0a1b2c3d","scope":"cluster","issued_ns":"1800000000000000000","signature":"'"$(printf 'ab%.0s' $(seq 64))"'"}' \
  > "$seeds/api_request/signed"
# Hosts file seeds: tag values, NUL, an existing hosts file (fuzz_hosts.cc).
mkdir -p "$seeds/hosts"
printf 'master\nEtcd\nbad value\na.b\n\x00127.0.0.1 localhost\n' > "$seeds/hosts/plain"
printf 'master\n-x\n\x00127.0.0.1 localhost\r\n# BEGIN gossipgw cluster test \n1.2.3.4 x\n# END gossipgw cluster test\n::1 y' \
  > "$seeds/hosts/block"
printf 'w\x00# END gossipgw cluster test\n# BEGIN gossipgw cluster test\n' > "$seeds/hosts/broken"

# memberlist seeds: real memberlist packets (tests/memberlist/golden.txt),
# behind the mode byte fuzz_memberlist.cc reads: plaintext ones as mode 0,
# sealed ones as mode 1, and hand-made plaintexts as mode 2 (sealed there).
mkdir -p "$seeds/memberlist"
python3 - tests/memberlist/golden.txt "$seeds/memberlist" <<'PY'
import sys
for line in open(sys.argv[1]):
    name, key, label, _source, pkt = line.split()
    mode = 0x41 if label != "-" else (0x01 if key != "-" else 0x00)
    with open(f"{sys.argv[2]}/{name}", "wb") as f:
        f.write(bytes([mode]) + bytes.fromhex(pkt))
PY
printf '\x02\x05\x83\xabIncarnation\x04\xa4Node\xa6node-c\xa4From\xa6node-a' > "$seeds/memberlist/dead"
printf '\x82\x07\x02\x00\x03\x00\x03\x08abc\x08def' > "$seeds/memberlist/compound_vsn0"
printf '\x42\x0c\x00\x00\x00\x00\x08' > "$seeds/memberlist/crc_label"

# Filter seeds (fuzz_filter.cc): the memberlist seeds wrapped into frames
# by the target (mode bit 3; 0x1c: IPv6, 0x2a: VLAN and a keyring), and
# whole frames (mode 0x00 inbound, 0x01 outbound) built here.
mkdir -p "$seeds/filter"
for f in "$seeds"/memberlist/*; do
  { printf '\x08'; tail -c +2 "$f"; } > "$seeds/filter/v4_$(basename "$f")"
  { printf '\x1e'; tail -c +2 "$f"; } > "$seeds/filter/v6_$(basename "$f")"
  { printf '\x2e'; tail -c +2 "$f"; } > "$seeds/filter/vlan_$(basename "$f")"
done
python3 - "$seeds/filter" <<'PY'
import struct, sys
d = sys.argv[1]
eth = lambda t, l3, vlan=b"": b"\x02\0\0\0\0\x01\x02\0\0\0\0\x02" + vlan + struct.pack("!H", t) + l3
def v4(proto, l4, frag=0, opts=b""):
    ihl = (20 + len(opts)) // 4
    return struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, 20 + len(opts) + len(l4), 0, frag, 64, proto, 0,
                       bytes([10, 0, 0, 2]), bytes([10, 0, 0, 1])) + opts + l4
def v6(nh, l4, ext=b""):
    return struct.pack("!IHBB16s16s", 0x60000000, len(ext) + len(l4), nh, 64, bytes([0xfd] + [0] * 14 + [2]),
                       bytes([0xfd] + [0] * 14 + [1])) + ext + l4
udp = lambda s, dp, p: struct.pack("!HHHH", s, dp, 8 + len(p), 0) + p
tcp = lambda s, dp, fl: struct.pack("!HHIIBBHHH", s, dp, 0, 0, 0x50, fl, 0, 0, 0)
suspect = bytes.fromhex("0383ab496e6361726e6174696f6e03a44e6f6465a66e6f64652d63a446726f6da66e6f64652d61")
cases = {
    "in_v4": (0, eth(0x0800, v4(17, udp(7946, 7946, suspect)))),
    "in_v4_opts": (0, eth(0x0800, v4(17, udp(7946, 7946, suspect), opts=b"\x01" * 8))),
    "in_v4_frag": (0, eth(0x0800, v4(17, udp(7946, 7946, suspect), frag=0x2000))),
    "in_v6_destopts": (0, eth(0x86DD, v6(60, udp(7946, 7946, suspect), ext=bytes([17, 0, 1, 4, 0, 0, 0, 0])))),
    "in_v6_frag": (0, eth(0x86DD, v6(44, udp(7946, 7946, suspect), ext=bytes([17, 0, 0, 1, 0, 0, 0, 0])))),
    "in_tcp_syn": (0, eth(0x0800, v4(6, tcp(40000, 7946, 0x02)))),
    "in_vlan": (0, eth(0x0800, v4(17, udp(7946, 8301, suspect)), vlan=b"\x81\x00\x00\x2a")),
    "in_arp": (0, eth(0x0806, bytes(28))),
    "out_gossip": (1, eth(0x0800, v4(17, udp(7946, 7946, bytes(1200))))),
    "out_other": (1, eth(0x86DD, v6(17, udp(40000, 53, bytes(40))))),
}
for name, (mode, frame) in cases.items():
    open(f"{d}/{name}", "wb").write(bytes([mode]) + frame)
PY

# Keyring file seeds (memberlist.keyring_file, config/ml_keyring.h).
mkdir -p "$seeds/ml_keyring"
printf '["MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1ub3BxcnN0dXY=", "MDEyMzQ1Njc4OWFiY2RlZg=="]\n' > "$seeds/ml_keyring/two"
printf '["MDEyMzQ1Njc4OWFiY2RlZmdoaWprbG1u"]' > "$seeds/ml_keyring/k24"
printf '[]' > "$seeds/ml_keyring/empty"
printf '{"keys": ["x"]}' > "$seeds/ml_keyring/object"

report="$build/fuzz-report.txt"
: > "$report"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=0
for t in "${targets[@]}"; do
  # Every target gets a seed folder, empty if make_seeds has none for it
  # (libFuzzer refuses a corpus folder that does not exist).
  mkdir -p "$corpus/$t" "$seeds/$t"
  log="$build/fuzz-$t.log"
  echo "== fuzz_$t for ${seconds}s"
  parallel=()
  [ "$jobs" -gt 1 ] && parallel=(-jobs="$jobs" -workers="$jobs")
  if ! (cd "$build" && "tests/fuzz/fuzz_$t" "$root/$corpus/$t" "$root/$seeds/$t" -max_total_time="$seconds" \
       "${parallel[@]}" -print_final_stats=1 -artifact_prefix="$root/$build/crash-$t-" \
       -rss_limit_mb=2048 -timeout=10) >"$log" 2>&1; then
    failed=1
    echo "FAIL: fuzz_$t found a crash or an invariant violation:"
    grep -E 'ERROR|SUMMARY|Test unit written|==[0-9]+==|No such file' "$log" | head -20 || true
    echo "reproduce: $build/tests/fuzz/fuzz_$t $(ls -t "$build"/crash-"$t"-* 2>/dev/null | head -1)"
  fi
  execs=$(grep -h 'stat::number_of_executed_units' "$log" | head -1 | awk '{print $2}')
  cov=$(grep -hoE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  echo "fuzz_$t: ${execs:-?} executions in ${seconds}s, ${cov:-cov ?}, corpus $(ls "$corpus/$t" | wc -l) inputs" | tee -a "$report"
done
exit $failed
