#!/usr/bin/env bash
# Installs every build, test and demo dependency of gossipgw from Debian 12
# packages. Non-interactive and idempotent: packages already present are skipped.
set -euo pipefail

usage() {
  cat <<'TXT'
usage: scripts/setup-deps.sh [--help]

Installs gossipgw's build, test and demo dependencies from Debian 12 packages
(DPDK 22.11, libsodium, protobuf, Hyperscan, spdlog, GoogleTest, yaml-cpp, CLI11,
nlohmann-json, cpp-httplib, libsystemd (sd_notify), Intel ipsec-mb (AES-GCM), msgpack-c++ (headers:
the memberlist test encoder), meson, clang for fuzzing, tcpreplay and
tcpdump for the cluster demo, prometheus for promtool, which checks
docs/alerts.yml, bubblewrap to test the systemd unit's sandbox where systemd
is not running). Needs root. Safe to re-run.
TXT
}

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") ;;
  *) echo "setup-deps.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
esac

packages=(
  build-essential pkg-config meson ninja-build python3
  dpdk dpdk-dev libdpdk-dev libpcap-dev libnuma-dev
  libsodium-dev libipsec-mb-dev
  libmsgpack-cxx-dev
  protobuf-compiler libprotobuf-dev
  libhyperscan-dev
  libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libcpp-httplib-dev
  libsystemd-dev
  clang libclang-rt-14-dev llvm
  iproute2 tcpdump tcpreplay procps
  bubblewrap
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps.sh: all ${#packages[@]} packages already installed"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-deps.sh: need root to install: ${missing[*]}" >&2
  exit 1
fi

echo "setup-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup-deps.sh: done"
