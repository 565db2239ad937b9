#!/usr/bin/env bash
# bench.sh: Sluice's own benchmark (`sluice bench`, when the binary has it) against a
# node this script starts, then the peer benchmarks of ../shared/bench/peer_bench.sh
# (when that folder is beside the repository), so both sets of figures come from the
# same run on the same machine. Arguments are passed to `sluice bench`.
#
#   BOOTSTRAP=host:port  bench a node that is already running instead of starting one
#   BENCH_PORT [19093]   port of the node this script starts on 127.0.0.1
#   PEERS [1]            0 skips the peer benchmarks
#   CLUSTER [1]          0 skips `sluice bench cluster` (3 node processes: RF=3 acks=all
#                        throughput and failover times, about 5 minutes)
#   CLUSTER_ARGS         extra arguments for it, e.g. "--kills 3 --shutdowns 3"
#   COMPACTION [1]       0 skips `sluice bench compaction` (MB/s cleaned, and produce
#                        p50/p99 with the cleaner idle and busy; about half a minute)
#   COMPACTION_ARGS      extra arguments for it, e.g. "--fill-mib 1024"
#   HOSTILE [1]          0 skips `sluice bench hostile` (a node of its own, last: a
#                        well-behaved producer alone and under 2,000 hostile
#                        connections, about 45 seconds)
#   HOSTILE_PORT [19300] its node's Kafka port (/metrics on the next one)
#   HOSTILE_ARGS         extra arguments for it, e.g. "--time 60s --conns 4000"
#   BENCH_CHART [docs/images/bench.svg]  the run's picture (`sluice bench chart`); "" skips it
#
# Every FIGURE and CONTEXT line of the run (Sluice's and the peers') is also kept in
# bin/bench-results/<UTC time>.txt, the results file the picture is drawn from.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
BENCH_PORT=${BENCH_PORT:-19093}
PEERS=${PEERS:-1}
CLUSTER=${CLUSTER:-1}
COMPACTION=${COMPACTION:-1}
HOSTILE=${HOSTILE:-1}
HOSTILE_PORT=${HOSTILE_PORT:-19300}
BENCH_CHART=${BENCH_CHART-docs/images/bench.svg}

load3() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown; }
loadavg() { echo "load average: $(load3)"; }
# has PATTERN COMMAND...: whether COMMAND's output (stdout and stderr) matches PATTERN.
# Not `COMMAND | grep -q`: under pipefail, grep -q leaving at the first match can kill
# COMMAND with SIGPIPE, which failed the test (2026-12-04: every Sluice step skipped).
has() { local p=$1; shift; "$@" 2>&1 | grep -E -- "$p" >/dev/null; }

mkdir -p bin/bench-results
results="bin/bench-results/$(date -u +%Y%m%dT%H%M%SZ).txt"
# figures: print the FIGURE and CONTEXT lines of stdin and keep them in the results file.
figures() { tee -a "$results"; }
go build -o bin/sluice ./cmd/sluice
echo "CONTEXT date=$(date -u +%FT%TZ) cpus=$(nproc) loadavg_start=\"$(load3)\"" | figures
loadavg
if ! has '^  bench ' bin/sluice help; then
  echo "sluice bench: not built yet (no 'bench' command in this binary); skipping"
elif [ -n "${BOOTSTRAP:-}" ]; then
  bin/sluice bench --bootstrap "$BOOTSTRAP" "$@" | figures
else
  # The node's data goes on the repository's disk, like ./data, so fsync costs are real.
  data=$(mktemp -d "$PWD/bin/bench-data.XXXXXX")
  # A PLAINTEXT listener, and an SSL one on the next port for the TLS figures.
  tls_port=$((BENCH_PORT + 1))
  bin/sluice certs "$data.tls" >/dev/null
  printf '%s\n' "listeners=PLAINTEXT://127.0.0.1:$BENCH_PORT,SSL://127.0.0.1:$tls_port" \
    "ssl.keystore.type=PEM" "ssl.keystore.location=$data.tls/server.pem" \
    "ssl.truststore.location=$data.tls/ca.pem" >"$data.properties"
  node=""
  trap 'if [ -n "$node" ]; then kill "$node" 2>/dev/null; wait "$node" 2>/dev/null; fi
    rm -rf "$data" "$data.log" "$data.tls" "$data.properties" "$data.compact"' EXIT
  # start_node [PROPERTIES] [HTTP]: a node on an empty data directory, serving once its
  # port answers; HTTP is its metrics address (none by default).
  start_node() {
    rm -rf "$data" && mkdir -p "$data"
    bin/sluice node --id 1 --config "${1:-$data.properties}" --http-listen "${2:-}" \
      --data "$data" >"$data.log" 2>&1 &
    node=$!
    for _ in $(seq 1 150); do
      if (exec 3<>"/dev/tcp/127.0.0.1/$BENCH_PORT") 2>/dev/null; then return 0; fi
      if ! kill -0 "$node" 2>/dev/null; then
        echo "bench: the node did not start:"; cat "$data.log"; exit 1
      fi
      sleep 0.1
    done
  }
  stop_node() { kill "$node" 2>/dev/null; wait "$node" 2>/dev/null || true; node=""; }
  start_node
  bin/sluice bench --bootstrap "127.0.0.1:$BENCH_PORT" --server-pid "$node" "$@" | figures
  # TLS (docs/benchmarks.md, "TLS"): figures named produce_tls_*. On a node of its own,
  # started on an empty directory as the plaintext one was: after the plaintext steps
  # the same node's page cache and logs made TLS acks=1 look half as fast as measured
  # apart (2026-12-04).
  stop_node
  start_node
  loadavg
  bin/sluice bench --bootstrap "127.0.0.1:$tls_port" --tls-ca "$data.tls/ca.pem" \
    --label tls_ --steps acks1_p1,acksall_p1,consume --server-pid "$node" "$@" | figures ||
    echo "TLS bench failed"
  stop_node
  # Compaction (docs/benchmarks.md, "Compaction"): on a node of its own, its metrics on
  # the port after the TLS one (the clean's MB/s comes from its cleaner series) and the
  # cleaner looking for work every second instead of 15, so the clean starts soon after
  # the bench releases it.
  if [ "$COMPACTION" = 0 ]; then
    echo "compaction benchmark: skipped (COMPACTION=0)"
  elif has '--metrics' bin/sluice bench compaction -h; then
    http_port=$((BENCH_PORT + 2))
    printf '%s\n' "listeners=PLAINTEXT://127.0.0.1:$BENCH_PORT" "log.cleaner.backoff.ms=1000" \
      >"$data.compact"
    start_node "$data.compact" "127.0.0.1:$http_port"
    loadavg
    # shellcheck disable=SC2086 # COMPACTION_ARGS is a list of arguments
    bin/sluice bench compaction --bootstrap "127.0.0.1:$BENCH_PORT" \
      --metrics "http://127.0.0.1:$http_port/metrics" --server-pid "$node" \
      ${COMPACTION_ARGS:-} | figures ||
      { echo "compaction bench failed; the node's log:"; tail -20 "$data.log"; }
    stop_node
  fi
fi

# The cluster figures (docs/benchmarks.md, "Cluster"): three node processes with the
# default settings, their data on the repository's disk like the single node's.
if [ "$CLUSTER" = 0 ]; then
  echo "cluster benchmark: skipped (CLUSTER=0)"
elif has '--kills' bin/sluice bench cluster -h; then
  loadavg
  cdata=$(mktemp -d "$PWD/bin/bench-cluster.XXXXXX")
  # shellcheck disable=SC2086 # CLUSTER_ARGS is a list of arguments
  bin/sluice bench cluster --data "$cdata" --log "$cdata.log" ${CLUSTER_ARGS:-} | figures ||
    echo "cluster benchmark failed; node logs in $cdata.log"
  rm -rf "$cdata"
fi

# What produce's record validation costs per batch (100 records of 1 KiB, per codec),
# next to the header-only check it replaced: docs/benchmarks.md, "Produce validation".
loadavg
go test -run '^$' -bench 'BenchmarkValidate|BenchmarkCheck' -benchtime 1s ./core/batch/ |
  grep -E '^Benchmark' || echo "validation benchmark failed"

peer=../shared/bench/peer_bench.sh
if [ "$PEERS" = 0 ]; then
  echo "peer benchmarks: skipped (PEERS=0)"
elif [ -f "$peer" ]; then
  loadavg
  bash "$peer" | figures || echo "peer benchmarks: failed; the picture shows what ran"
else
  echo "peer benchmarks: $peer not found; skipping"
fi
# The hostile-client figures (docs/benchmarks.md, "Hostile clients"), after all the
# others so that its 2,000 connections disturb none of them: `sluice bench hostile`
# starts a node of its own (data on the repository's disk) and stops it. The bench and
# its node each hold over 2,000 descriptors; Go raises the soft limit to the hard one.
if [ "$HOSTILE" = 0 ]; then
  echo "hostile-client benchmark: skipped (HOSTILE=0)"
elif [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt 4500 ]; then
  echo "hostile-client benchmark: skipped (ulimit -Hn is $(ulimit -Hn); it needs 4500)"
elif has '--slow' bin/sluice bench hostile -h; then
  loadavg
  hdata=$(mktemp -d "$PWD/bin/bench-hostile.XXXXXX")
  # shellcheck disable=SC2086 # HOSTILE_ARGS is a list of arguments
  if bin/sluice bench hostile --port "$HOSTILE_PORT" --data "$hdata" --log "$hdata.log" \
    ${HOSTILE_ARGS:-} | figures; then
    rm -f "$hdata.log"
  else
    echo "hostile-client benchmark failed; node log in $hdata.log"
  fi
  rm -rf "$hdata"
fi
echo "CONTEXT loadavg_end=\"$(load3)\"" | figures
loadavg
echo "results: $results"
# The picture of this run next to docs/benchmarks.md; a peer that did not run is said so
# in the picture.
if [ -n "$BENCH_CHART" ]; then
  bin/sluice bench chart --in "$results" --out "$BENCH_CHART" ||
    echo "bench chart: not written (see above)"
fi
