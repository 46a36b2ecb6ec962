# Sourced by the device runners (issue34_h100.sh, issue40_h100.sh), from the repository root on the GPU machine
# with $OUT set by the device tool: makes the solution copies, and defines run NAME COMMAND... (the output, its
# command line first and its exit, time and Triton last, into $OUT/v/NAME-tritonXY.txt), J NAME (that record's
# JSON path) and strict_checks (the automatic route and the portable copy, check.py --strict --seeds 1).
: "${OUT:?is not set: run this through the device tool, which sets it, or set it to a folder for the records}"
mkdir -p "$OUT/v"
python3 tools/solution_copies.py copies > /dev/null
T=$(python3 -c "import triton; print(triton.__version__)"); tag=triton$(echo "$T" | cut -d. -f1,2 | tr -d .)
run() {
  local name=$1; shift; local s; s=$(date +%s)
  { echo "# $*"; timeout "${LIMIT:-300}" "$@"; echo "# exit $? in $(( $(date +%s) - s )) s (Triton $T)"; } \
    > "$OUT/v/$name-$tag.txt" 2>&1
  echo "== $name: $(tail -n 3 "$OUT/v/$name-$tag.txt" | tr '\n' ' ' | cut -c1-400)"
}
J() { echo "$OUT/v/$1-$tag.json"; }
strict_checks() {  # the automatic route and the portable copy, strict
  run check-auto python3 check.py --strict --seeds 1 --json "$(J check-auto)"
  run check-portable python3 check.py --strict --seeds 1 --solution copies/portable.py --json "$(J check-portable)"
}
