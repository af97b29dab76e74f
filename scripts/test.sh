#!/usr/bin/env bash
# The test command (README): installs dependencies, builds gossipgw and runs
# every default suite (unit, pcap, integration) in a GCC build with warnings
# as errors, then the same suites in one clang build with ASan+UBSan whose
# objects also make the libFuzzer targets, then each fuzz target for a short
# time. CI runs exactly this (.ci/run). Each phase prints its wall time.
set -euo pipefail

usage() {
  cat <<'TXT'
usage: scripts/test.sh [--no-sanitizers] [--long] [--help]

  1. scripts/setup-deps.sh (Debian packages; needs root the first time)
  2. build/: GCC, debugoptimized, warnings are errors, every target;
     meson test: the unit, pcap and integration suites
  3. build-fuzz/: clang, ASan+UBSan, libFuzzer instrumentation (the build
     tests/fuzz/run.sh uses); only the targets the tests and fuzz targets
     need; meson test: the same suites under the sanitizers
  4. every fuzz target for FUZZ_SECONDS (default 10) seconds from the seeds
     (tests/fuzz/run.sh); a crash fails the run

  --no-sanitizers   steps 1 and 2 only (faster local runs)
  --long            also the opt-in suite `long` in steps 2 and 3 (the
                    cluster scenario with the full attack and under ASan)

Environment: FUZZ_SECONDS (seconds per fuzz target; the long fuzz run is
`tests/fuzz/run.sh --seconds 600`, see FUZZING.md), JOBS (parallel compile
and test jobs, default nproc). No NIC and no hugepages needed; root for the
dependency step and the integration suite (namespaces), which skips parts
without it.
TXT
}

sanitizers=1
long=0
for arg in "$@"; do
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    --no-sanitizers) sanitizers=0 ;;
    --long) long=1 ;;
    *) echo "test.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.."
jobs=${JOBS:-$(nproc)}
fuzz_seconds=${FUZZ_SECONDS:-10}
t_all=$SECONDS
t_phase=$SECONDS
phase() { echo "== $* ($(date -u +%H:%M:%S))"; t_phase=$SECONDS; }
phase_done() { echo "== $1: $((SECONDS - t_phase)) s (total $((SECONDS - t_all)) s)"; }

phase "dependencies (scripts/setup-deps.sh)"
bash scripts/setup-deps.sh
phase_done dependencies

configure() {  # dir [meson options...]
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

# The targets the tests of the given suites run (meson introspect), plus
# extra ones: what a sanitizer build has to compile, and no more.
targets_for() {  # dir [extra target paths...] -- suites...
  local dir=$1; shift
  python3 - "$dir" "$@" <<'PY'
import json, os, subprocess, sys
d = sys.argv[1]
args = sys.argv[2:]
extra = args[:args.index("--")]
suites = set(args[args.index("--") + 1:])
tests = json.loads(subprocess.check_output(["meson", "introspect", d, "--tests"]))
targets = {t["id"]: t for t in json.loads(subprocess.check_output(["meson", "introspect", d, "--targets"]))}
want = set()
for t in tests:
    if {s.split(":")[-1] for s in t["suite"]} & suites:
        want.update(t["depends"])
out = set(extra)
for tid in want:
    for f in targets[tid]["filename"]:
        out.add(os.path.relpath(f, os.path.abspath(d)))
print("\n".join(sorted(out)))
PY
}

suite_names=(unit pcap integration)
[ "$long" = 1 ] && suite_names+=(long)
suites=()
for s in "${suite_names[@]}"; do suites+=(--suite "$s"); done

phase "build/ (GCC, debugoptimized, warnings are errors, every target)"
configure build
meson compile -C build -j "$jobs"
phase_done "build/ compile"
phase "meson test in build/: ${suite_names[*]}"
meson test -C build --no-rebuild --print-errorlogs --num-processes "$jobs" "${suites[@]}"
phase_done "build/ tests"

if [ "$sanitizers" = 1 ]; then
  phase "build-fuzz/ (clang, ASan+UBSan, libFuzzer instrumentation)"
  # The same configuration tests/fuzz/run.sh makes; warnings were checked
  # (as errors) by the GCC build above.
  CXX=clang++ CC=clang configure build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dbuildtype=debugoptimized -Dwerror=false
  mapfile -t fuzz_targets < <(bash tests/fuzz/run.sh --list | sed 's|^|tests/fuzz/fuzz_|')
  mapfile -t san_targets < <(targets_for build-fuzz "${fuzz_targets[@]}" tests/fuzz/make_seeds -- "${suite_names[@]}")
  ninja -C build-fuzz -j "$jobs" "${san_targets[@]}"
  phase_done "build-fuzz/ compile (${#san_targets[@]} targets)"
  phase "meson test in build-fuzz/ under ASan+UBSan: ${suite_names[*]}"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C build-fuzz --no-rebuild --print-errorlogs --timeout-multiplier 4 --num-processes "$jobs" \
    "${suites[@]}"
  phase_done "build-fuzz/ tests"
  phase "fuzz targets under ASan+UBSan, ${fuzz_seconds} s each"
  bash tests/fuzz/run.sh --seconds "$fuzz_seconds"
  phase_done "fuzz"
fi
echo "== all tests passed in $((SECONDS - t_all)) s"
