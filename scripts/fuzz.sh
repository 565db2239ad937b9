#!/usr/bin/env bash
# fuzz.sh: run every FuzzXxx target of the module for FUZZTIME each, one at a time
# (go test -fuzz takes one target per run). New crashers land in the package's
# testdata/fuzz/<Target>/ folder, where `go test` replays them from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
FUZZTIME=${FUZZTIME:-30s}
TAGS=${TAGS:-invariants}

ran=0
for pkg in $(go list -tags "$TAGS" ./...); do
  targets=$(go test -tags "$TAGS" -list '^Fuzz' "$pkg" | grep '^Fuzz' || true)
  for target in $targets; do
    echo "== $pkg $target ($FUZZTIME)"
    go test -tags "$TAGS" -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" "$pkg"
    ran=$((ran + 1))
  done
done
if [ "$ran" -eq 0 ]; then
  echo "no FuzzXxx targets found"
else
  echo "fuzzed $ran target(s) for $FUZZTIME each"
fi
