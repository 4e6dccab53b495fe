# device.sh (sourced): what the checks on a lent device machine share (scripts/gpu-check.sh,
# scripts/cpu-isa-check.sh): programs packed with their shared libraries (the machine's image has
# no package registry and none of rlx's build dependencies), and steps run under a time budget.

# bundle_programs DIR PROGRAM...: copies each program into DIR/bin and every shared library they
# use except glibc's own (the image's is as new or newer) into DIR/lib; the C++ runtime goes to
# DIR/fallback, used only where the image lacks one (a newer one serves these programs too).
bundle_programs() {
  local dir=$1 lib
  shift
  mkdir -p "$dir/bin" "$dir/lib" "$dir/fallback"
  cp "$@" "$dir/bin/"
  for b in "$@"; do
    ldd "$b" | awk '/=> \//{print $3}'
  done | sort -u | grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' |
    while read -r lib; do
      case $(basename "$lib") in
      libstdc++.so.* | libgcc_s.so.*) cp -L "$lib" "$dir/fallback/" ;;
      *) cp -L "$lib" "$dir/lib/" ;;
      esac
    done
}

# unpack_bundle TAR DIR: unpacks a bundle into DIR (emptied first) and puts its libraries on
# LD_LIBRARY_PATH (the fallback C++ runtime only when the image has none).
unpack_bundle() {
  local tar=$1 dir=$2 libs
  rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xzf "$tar"
  libs="$dir/lib"
  ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 ' || libs="$libs:$dir/fallback"
  export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# step NAME LIMIT COMMAND...: runs COMMAND under a timeout of min(LIMIT, what is left of $budget
# seconds since $start), appending "NAME: exit RC in S s" to $summary.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - ($(date +%s) - start)))
  ((limit > left)) && limit=$left
  if ((limit <= 5)); then
    echo "$name: skipped (budget spent)" >>"$summary"
    return
  fi
  local t0
  t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  echo "$name: exit $rc in $(($(date +%s) - t0)) s (limit $limit s)" >>"$summary"
}

# begin_device_run NAME BUNDLE DIR: sets the run's $out ($OUT, else $root/NAME-out), $summary
# (emptied) and $start, then unpacks BUNDLE into $dir = DIR ($bin = DIR/bin); exits with a line
# naming the staging step when BUNDLE is missing.
begin_device_run() {
  local name=$1 bundle=$2
  dir=$3
  out=${OUT:-"$root/$name-out"}
  mkdir -p "$out"
  start=$(date +%s)
  summary="$out/summary.txt"
  : >"$summary"
  if [[ ! -f "$bundle" ]]; then
    echo "no $bundle: run scripts/$name.sh --stage here first and carry" \
      "$(basename "$(dirname "$bundle")")" | tee -a "$summary"
    exit 1
  fi
  unpack_bundle "$bundle" "$dir"
  bin="$dir/bin"
}

# The anchor rows both checks time (model:batch, sequence 128).
anchor_cases=(mlp:64 bert_mini:1 bert_mini:8 llama:1 bert_base:1 bert_base:8)

# anchor_flags MODEL BATCH: the `rlx bench` flags of an anchor row at sequence 128, from
# scripts/anchors/anchor_config.py (the one table of the anchors' flags).
anchor_flags() {
  python3 "$root/scripts/anchors/anchor_config.py" "$1" "$2" 128
}
