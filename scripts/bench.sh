#!/usr/bin/env bash
# bench.sh: Sluice's own benchmark (`sluice bench`, when the binary has it), then the
# peer benchmarks of ../shared/bench/peer_bench.sh (when that folder is beside the
# repository), so both sets of figures come from the same run on the same machine.
# Arguments are passed to `sluice bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
mkdir -p bin
go build -o bin/sluice ./cmd/sluice
if bin/sluice help 2>&1 | grep -qE '^  bench '; then
  bin/sluice bench "$@"
else
  echo "sluice bench: not built yet (no 'bench' command in this binary); skipping"
fi

peer=../shared/bench/peer_bench.sh
if [ -f "$peer" ]; then
  bash "$peer"
else
  echo "peer benchmarks: $peer not found; skipping"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
