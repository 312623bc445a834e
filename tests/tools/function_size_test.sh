#!/usr/bin/env bash
# scripts/check-function-size on a fixture tree: the forms of definition it must measure (one-line
# and wrapped headers, member functions in a class body, lambdas inside a function) and the limit's
# edge (150 lines passes, 151 fails).
#   function_size_test.sh SOURCE_DIR
set -euo pipefail
src="${1:?usage: function_size_test.sh SOURCE_DIR}"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

# body N: N lines of statements.
body() { for ((i = 0; i < $1; i++)); do echo "  x += $i;  // {"; done; }

{
  echo "namespace cutover {"
  echo "namespace {"
  echo "int Short(int x) {"; body 3; echo "  return x;"; echo "}"
  echo "}  // namespace"
  # 150 lines from name to closing brace: 1 header + 148 + 1 closing brace.
  echo "int AtTheLimit(int x) {"; body 148; echo "}"
  # 151 lines, with a wrapped header and a lambda holding a block of its own.
  echo "std::vector<int> Wrapped(const std::string& a,"
  echo "                         int x) {"
  echo "  auto f = [&](int y) {"; body 145; echo "  };"; echo "  return {};"; echo "}"
  echo "class Holder {"
  echo " public:"
  echo "  int Member(int x) const {"; body 151; echo "    return x;"; echo "  }"
  echo "};"
  echo "}  // namespace cutover"
} > "$dir/fixture.cc"

set +e
out="$("$src/scripts/check-function-size" "$dir" 2>&1)"
rc=$?
set -e
expect() { grep -qxF "$1" <<<"$out" || { echo "missing line: $1"; echo "$out"; exit 1; }; }
[ "$rc" -eq 1 ] || { echo "exit $rc, want 1"; echo "$out"; exit 1; }
expect "$dir/fixture.cc:313: Member is 154 lines"
expect "check-function-size: 2 function(s) over 150 lines"
if grep -q "AtTheLimit\|Short" <<<"$out"; then echo "a function within the limit was listed"; echo "$out"; exit 1; fi
wrapped="$(grep "Wrapped" <<<"$out")"
[ "$wrapped" = "$dir/fixture.cc:160: Wrapped is 151 lines" ] || { echo "wrapped: $wrapped"; echo "$out"; exit 1; }
"$src/scripts/check-function-size" --max 200 "$dir" >/dev/null || { echo "--max 200 should pass"; exit 1; }
echo "function_size_test: ok"
