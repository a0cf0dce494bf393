#!/usr/bin/env bash
# Render every Graphviz source in images/src/ to images/<name>.png.
# Needs Graphviz (`dot`): apt-get install graphviz, brew install graphviz, …
set -euo pipefail
cd "$(dirname "$0")"
command -v dot >/dev/null || { echo "render.sh: Graphviz 'dot' is not installed" >&2; exit 1; }
for source in src/*.dot; do
  name=$(basename "$source" .dot)
  dot -Tpng -Gdpi=110 "$source" -o "$name.png"
  echo "rendered $name.png"
done
