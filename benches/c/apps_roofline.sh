#!/usr/bin/env bash
# Every app with the default device (one CPU device, a thread a core, the
# default options) against the copy roofline: a C/OpenMP copy of arrays the
# size of one of the app's levels (benches/c/copy.c), alternated with the
# app (app, copy, app, copy, ...) so that both see the same load. Prints
# each round's G/s (the report's cell_updates_per_second), the bytes a cell
# update moves at least, the copy's GB/s and the fraction of the roofline:
# G/s x bytes / copy GB/s (above 1 where several steps share one pass over
# memory, `--halo-depth`).
#   bash benches/c/apps_roofline.sh [EPSILOD_BINARY] [ROUNDS]
# Sizes (each level beyond the Xeon VM's 260 MiB L3 where the run takes
# seconds): POISSON=8194x8194 WAVESIM=8194x8194 LAPLACE=514x514x514
# GAUSSIAN=8192x8192 (kw 5) GAS=130x130x66; ITERS=20, GAS_ITERS=10.
# APPS="laplace wavesim" runs only those apps.
set -euo pipefail
bin=${1:-target/release/epsilod}
rounds=${2:-3}
iters=${ITERS:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
here=$(dirname "$0")
gcc -O3 -fopenmp "$here/copy.c" -o "$dir/copy"
read -r -a apps <<<"${APPS:-poisson wavesim laplace gaussian gas-sim}"
declare -A size=([poisson]=${POISSON:-8194x8194} [wavesim]=${WAVESIM:-8194x8194}
    [laplace]=${LAPLACE:-514x514x514} [gaussian]=${GAUSSIAN:-8192x8192} [gas-sim]=${GAS:-130x130x66})
declare -A steps=([poisson]=$iters [wavesim]=$iters [laplace]=$iters [gaussian]=$iters
    [gas-sim]=${GAS_ITERS:-10})
# Bytes a one-step update moves at least: the cell read and the new cell
# written (f32: 8); wavesim also reads the level before (12); gas-sim's
# cells are 19 f32 (152).
declare -A bytes=([poisson]=8 [wavesim]=12 [laplace]=8 [gaussian]=8 [gas-sim]=152)
# The bytes of one level of the global array, what the copy moves a step.
level_bytes() { # level_bytes APP SIZE
    python3 -c "import math,sys; print(math.prod(int(s) for s in sys.argv[2].split('x')) * (76 if sys.argv[1] == 'gas-sim' else 4))" "$1" "$2"
}
# gaussian's --size is its image's: its array's border of kw/2 a side adds
# 0.1% at 8192^2, left out of the copy.
for app in "${apps[@]}"; do
    lb=$(level_bytes "$app" "${size[$app]}")
    for r in $(seq "$rounds"); do
        "$bin" run "$app" --size "${size[$app]}" --iters "${steps[$app]}" --report "$dir/r.json" >/dev/null
        read -r gs depth < <(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r['summary']['cell_updates_per_second'] / 1e9, r['halo_depth'])" "$dir/r.json")
        copy=$("$dir/copy" "$lb" "${steps[$app]}" | awk '{print $4}')
        python3 -c "import sys; a,g,b,c=sys.argv[1],float(sys.argv[2]),int(sys.argv[3]),float(sys.argv[4]); print(f'{a} {sys.argv[5]} round {sys.argv[6]}: {g:.3f} G/s x {b} B = {g*b:.2f} GB/s, copy {c:.2f} GB/s, fraction {g*b/c:.2f} (halo depth {sys.argv[7]})')" \
            "$app" "$gs" "${bytes[$app]}" "$copy" "${size[$app]}" "$r" "$depth"
    done
done
