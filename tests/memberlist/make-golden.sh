#!/usr/bin/env bash
# Regenerates tests/memberlist/golden.txt from a real memberlist: Debian's
# golang-go and golang-github-hashicorp-memberlist-dev (0.2.2), offline
# (GOPATH mode over /usr/share/gocode, no module downloads). golden_test.go
# is compiled into a scratch copy of the memberlist package because it calls
# the package's own (unexported) encoders.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=/usr/share/gocode/src/github.com/hashicorp/memberlist
command -v go >/dev/null || { echo "make-golden.sh: needs golang-go (apt-get install golang-go)" >&2; exit 2; }
[ -d "$src" ] || { echo "make-golden.sh: needs golang-github-hashicorp-memberlist-dev" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/github.com/hashicorp"
# The package's own files only (its tests need more than Debian ships).
mkdir "$tmp/src/github.com/hashicorp/memberlist"
for f in "$src"/*.go; do
  case "$f" in *_test.go) ;; *) cp "$f" "$tmp/src/github.com/hashicorp/memberlist/" ;; esac
done
cp -r "$src/vendor" "$tmp/src/github.com/hashicorp/memberlist/"
cp "$here/golden_test.go" "$tmp/src/github.com/hashicorp/memberlist/"
cd "$tmp/src/github.com/hashicorp/memberlist"
GO111MODULE=off GOPATH="$tmp:/usr/share/gocode" GOFLAGS= GOCACHE="$tmp/cache" GOPROXY=off \
  GOLDEN_OUT="$here/golden.txt" go test -v -count=1 -run TestGolden . >&2
echo "wrote $here/golden.txt ($(wc -l < "$here/golden.txt") packets)" >&2
