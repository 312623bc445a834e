# Sourced by the bench scripts: the median and range of a column of numbers, and a ratio, the
# same way in every table (docs/benchmarks.md). FILE holds one run per line; COLUMN (default 1)
# is a space-separated field.
#   . "$(dirname "$0")/../lib/stats.sh"
#   echo "median $(median_of "$work/A") s ($(range_of "$work/A"))"

# median_of FILE [COLUMN]: the middle value (the lower middle of an even count).
median_of() {
  cut -d' ' -f"${2:-1}" "$1" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# range_of FILE [COLUMN]: "min-max", two decimals.
range_of() {
  cut -d' ' -f"${2:-1}" "$1" | sort -g |
    awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }'
}

# ratio_of B A: B / A, two decimals.
ratio_of() { awk -v b="$1" -v a="$2" 'BEGIN { printf "%.2f", b / a }'; }
