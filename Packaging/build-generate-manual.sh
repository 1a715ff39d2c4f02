#!/usr/bin/env bash
# Builds swift-argument-parser's generate-manual (the tool behind its
# generate-manual plugin) from the version Package.resolved pins, and prints
# its path as the last line. The plugin itself would build every product of
# the package (benchmarks included) once more, without the static runtime,
# only to read their --help; the tool reads it from the release binaries.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v swift >/dev/null 2>&1 || export PATH="/opt/swift/usr/bin:$PATH"
cd "$root"
swift package resolve >&2
checkout="$root/.build/checkouts/swift-argument-parser"
scratch="$root/.build/generate-manual"
swift build --package-path "$checkout" --scratch-path "$scratch" --product generate-manual >&2
echo "$(swift build --package-path "$checkout" --scratch-path "$scratch" --show-bin-path)/generate-manual"
