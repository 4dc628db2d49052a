# shellcheck shell=sh
# Shared by the callgrind benchmarks (sourced): instructions are counted on the caller's main thread
# only, since the plugin's own threads (I/O, drain) run on their own schedule.

# Exits 77 (CTest's skip) when valgrind is missing.
callgrind_require() {
  if ! command -v valgrind >/dev/null 2>&1; then
    echo "valgrind not found: skipping the callgrind instruction count"
    exit 77
  fi
}

# callgrind_ir OUT COMMAND...: runs COMMAND under callgrind, one output per thread (OUT-01 is the main
# thread), and prints the main thread's total Ir. Valgrind's log is shown if the command fails. With
# $callgrind_collect set (a function pattern), only instructions inside that function are counted.
callgrind_ir() {
  out=$1
  shift
  valgrind --tool=callgrind --separate-threads=yes ${callgrind_collect:+"--toggle-collect=$callgrind_collect"} \
    --callgrind-out-file="$out" "$@" >/dev/null 2>"$out.log" || {
    cat "$out.log" >&2
    exit 1
  }
  sed -n 's/^totals: *\([0-9]*\).*/\1/p; s/^summary: *\([0-9]*\).*/\1/p' "$out-01" | head -n 1
}

# callgrind_setup NAME: a work directory ($work) removed on exit, for ir below.
callgrind_setup() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

# ir A B C: the main thread's Ir of "$driver" "$library" A B C (both set by the calling script).
ir() { callgrind_ir "$work/$1-$2-$3.out" "$driver" "$library" "$1" "$2" "$3"; }
