#!/usr/bin/env bash
# Fuzzes one of Strata's decoders with libFuzzer (and AddressSanitizer).
#
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options…]   run TARGET for SECONDS
#   scripts/fuzz.sh --list                                  list the targets
#   scripts/fuzz.sh --seeds FILE…                           rebuild Fuzz/corpus from real files
#
# Targets: header frame page log checkpoint catalog record key query (Fuzz/StrataFuzz.swift).
# Each starts from the committed seeds in Fuzz/corpus/TARGET (taken from the demo, W1 and
# W2 files) and keeps what it finds in .build-fuzz/corpus/TARGET. A crash writes the input
# to .build-fuzz/crash-TARGET-* and exits non-zero; turn it into a regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGETS="header frame page log checkpoint catalog record key query"
OUT=.build-fuzz
BINARY=$OUT/strata-fuzz

if [ "${1:-}" = "--list" ]; then echo "$TARGETS"; exit 0; fi

build() {
    mkdir -p "$OUT"
    # The engine's only package dependency, swift-log, comes from the package's checkout.
    [ -d .build/checkouts/swift-log ] || swift package resolve >/dev/null
    local strata
    mapfile -t strata < <(find Sources/Strata -name '*.swift' | sort)
    local sources=(Sources/StrataEngine/*.swift "${strata[@]}" Fuzz/StrataFuzz.swift)
    local newest
    # sed reads the whole list: `head -1` exits after one line, and `ls` writing the rest
    # then dies of SIGPIPE, which pipefail turns into this script's exit status (141): CI's
    # fuzz step failed that way, at random, with no output.
    newest=$(ls -t "${sources[@]}" scripts/fuzz.sh | sed -n 1p)
    if [ -x "$BINARY" ] && [ "$BINARY" -nt "$newest" ]; then return; fi
    echo "building $BINARY (swiftc -sanitize=fuzzer,address; about 2 minutes)…" >&2
    local flags=(-parse-as-library -O -package-name Strata -I Sources/CLZ4 -I Sources/CPrefetch -I "$OUT")
    swiftc -emit-library -static -emit-module -module-name Logging "${flags[@]}" -package-name swift_log \
        $(find .build/checkouts/swift-log/Sources/Logging -name '*.swift') \
        -o "$OUT/libLogging.a" -emit-module-path "$OUT/Logging.swiftmodule"
    swiftc -emit-library -static -emit-module -module-name StrataEngine -enable-testing -sanitize=fuzzer,address "${flags[@]}" \
        Sources/StrataEngine/*.swift -o "$OUT/libStrataEngine.a" -emit-module-path "$OUT/StrataEngine.swiftmodule"
    swiftc -emit-library -static -emit-module -module-name Strata -enable-testing -sanitize=fuzzer,address "${flags[@]}" \
        "${strata[@]}" -o "$OUT/libStrata.a" -emit-module-path "$OUT/Strata.swiftmodule"
    swiftc -sanitize=fuzzer,address "${flags[@]}" Fuzz/StrataFuzz.swift \
        "$OUT/libStrata.a" "$OUT/libStrataEngine.a" "$OUT/libLogging.a" -llz4 -o "$BINARY"
}

if [ "${1:-}" = "--seeds" ]; then
    shift
    build
    rm -rf Fuzz/corpus
    files=$(IFS=:; echo "$*")
    STRATA_FUZZ_EXTRACT=Fuzz/corpus STRATA_FUZZ_FILES="$files" "$BINARY"
    exit 0
fi

target=${1:?usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer options…] (targets: $TARGETS)}
seconds=${2:?usage: scripts/fuzz.sh TARGET SECONDS}
shift 2
case " $TARGETS " in *" $target "*) ;; *) echo "unknown target '$target'; targets: $TARGETS" >&2; exit 64 ;; esac
build
mkdir -p "$OUT/corpus/$target"
seeds=()
[ -d "Fuzz/corpus/$target" ] && seeds=("Fuzz/corpus/$target")
# rss_limit bounds what one input may allocate: a decoder that trusts a length from the
# input and allocates gigabytes fails the run. Leak checks are off: the Swift runtime and
# Foundation fill caches lazily on first use, which libFuzzer's per-input check reports as
# leaks; AddressSanitizer still catches every out-of-bounds access and use after free.
ASAN_OPTIONS=detect_leaks=0 STRATA_FUZZ_TARGET=$target "$BINARY" "$OUT/corpus/$target" "${seeds[@]}" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -detect_leaks=0 -max_len=65536 -print_final_stats=1 \
    -artifact_prefix="$OUT/crash-$target-" "$@"
