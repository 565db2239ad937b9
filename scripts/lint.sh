#!/usr/bin/env bash
# lint.sh: gofmt, go vet and, when the module proxy can serve it, staticcheck.
# The repository rules (pure core, doc.go per package) are Go tests in internal/lint
# and run with `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
TAGS=${TAGS:-invariants}
STATICCHECK=${STATICCHECK:-honnef.co/go/tools/cmd/staticcheck@v0.8.2}

unformatted=$(gofmt -l . || true)
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need \`make fmt\`:"
  echo "$unformatted"
  exit 1
fi
echo "gofmt: clean"

go vet -tags "$TAGS" ./...
echo "go vet: clean"

if command -v staticcheck >/dev/null 2>&1; then
  staticcheck -tags "$TAGS" ./...
elif timeout 300 go run "$STATICCHECK" -version >/dev/null 2>&1; then
  go run "$STATICCHECK" -tags "$TAGS" ./...
else
  echo "staticcheck: skipped (not installed and $STATICCHECK could not be fetched)"
  exit 0
fi
echo "staticcheck: clean"
