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
is not running, Go and Debian's memberlist 0.2.2 source for the Serf
harness's bare memberlist agents). Also extracts Debian's `serf` 0.9.4 agent
into /opt/serf-0.9.4 with dpkg-deb, without installing the package (which
would start a system service): tests/serf, docs/serf-harness.md.
Needs root. Safe to re-run.
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
  iproute2 tcpdump tcpreplay procps ethtool
  bubblewrap
  prometheus
  golang-go golang-github-hashicorp-memberlist-dev
)

# Debian 12's serf agent (0.9.4 on memberlist 0.2.2) for tests/serf: the
# binary only, unpacked beside nothing else; `apt-get install serf` would
# also create a user and start serf.service.
serf_dir=/opt/serf-0.9.4
install_serf() {
  if [ -x "$serf_dir/usr/bin/serf" ]; then return 0; fi
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup-deps.sh: need root to extract serf into $serf_dir" >&2
    exit 1
  fi
  local tmp deb ver
  tmp=$(mktemp -d)
  # apt-get download drops privileges to _apt where it can write.
  chown _apt "$tmp" 2>/dev/null || chmod 0777 "$tmp"
  if ! (cd "$tmp" && apt-get download -qq serf 2>/dev/null); then
    apt-get update -qq
    (cd "$tmp" && apt-get download -qq serf)
  fi
  deb=$(ls "$tmp"/serf_*.deb)
  ver=$(dpkg-deb -f "$deb" Version)
  case "$ver" in
    0.9.4*) ;;
    *) rm -rf "$tmp"; echo "setup-deps.sh: serf $ver is not the 0.9.4 tests/serf expects" >&2; exit 1 ;;
  esac
  rm -rf "$serf_dir.tmp"
  dpkg-deb -x "$deb" "$serf_dir.tmp"
  mv "$serf_dir.tmp" "$serf_dir"
  rm -rf "$tmp"
  echo "setup-deps.sh: serf $ver extracted into $serf_dir"
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup-deps.sh: all ${#packages[@]} packages already installed"
  install_serf
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
install_serf
echo "setup-deps.sh: done"
