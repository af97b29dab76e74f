#!/usr/bin/env bash
# The test command: installs dependencies, configures, builds and runs every
# default suite (unit, pcap), then does the same in an ASan+UBSan build.
set -euo pipefail

usage() {
  cat <<'TXT'
usage: scripts/test.sh [--no-sanitizers] [--help]

Installs dependencies (scripts/setup-deps.sh), builds gossipgw with meson in
build/, runs `meson test` (unit and pcap suites), then builds build-asan/ with
AddressSanitizer and UndefinedBehaviorSanitizer and runs the same suites there.
Needs root for the dependency step; no NIC and no hugepages.

  --no-sanitizers   skip the ASan+UBSan build and the fuzz run (faster local runs)

Then it builds the libFuzzer targets (clang, ASan+UBSan) and runs each for
FUZZ_SECONDS (default 30) seconds; a crash fails the run.
TXT
}

sanitizers=1
for arg in "$@"; do
  case "$arg" in
    -h|--help) usage; exit 0 ;;
    --no-sanitizers) sanitizers=0 ;;
    *) echo "test.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

cd "$(dirname "$0")/.."
bash scripts/setup-deps.sh

jobs=$(nproc)

configure() {  # dir [meson options...]
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson setup --reconfigure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@" >/dev/null
  fi
}

echo "== build (debugoptimized, warnings are errors)"
configure build
meson compile -C build -j "$jobs"
echo "== meson test (unit, pcap, integration)"
meson test -C build --print-errorlogs --num-processes "$jobs"

if [ "$sanitizers" = 1 ]; then
  echo "== build-asan (ASan+UBSan)"
  # Warnings are errors in the main build above; with sanitizers at -O2, GCC 12
  # reports false -Wmaybe-uninitialized in libstdc++ (std::regex), so here they
  # are only printed.
  configure build-asan -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dwerror=false
  meson compile -C build-asan -j "$jobs"
  echo "== meson test under ASan+UBSan (unit, pcap, integration)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C build-asan --print-errorlogs --timeout-multiplier 4 --num-processes "$jobs" --suite unit --suite pcap --suite integration
fi
if [ "$sanitizers" = 1 ]; then
  echo "== fuzz targets under ASan+UBSan, ${FUZZ_SECONDS:-30}s each"
  bash tests/fuzz/run.sh --seconds "${FUZZ_SECONDS:-30}"
fi
echo "== all tests passed"
