#!/usr/bin/env bash
# The apps against their plain serial C loops on one thread, alternated
# (app, C, app, C, ...) so that both see the same load; prints each round's
# loop seconds and the ratio C / app (1.0: as fast as C), then checks that
# the app's output has the C loop's bits.
#   bash benches/c/apps_vs_c.sh [EPSILOD_BINARY] [ROUNDS]
# Sizes: POISSON=2050x2050 WAVESIM=2050x2050 LAPLACE=130x130x130
# GAS=66x66x66 (gas-sim's --size: the user domain + 2) GAUSSIAN=2048x2048
# (kw 5 on the checkerboard); ITERS=20, GAS_ITERS=50.
set -euo pipefail
bin=${1:-target/release/epsilod}
rounds=${2:-3}
iters=${ITERS:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
here=$(dirname "$0")
apps=(poisson wavesim laplace gas gaussian)
declare -A cli=([poisson]=poisson [wavesim]=wavesim [laplace]=laplace [gas]=gas-sim [gaussian]=gaussian)
declare -A size=([poisson]=${POISSON:-2050x2050} [wavesim]=${WAVESIM:-2050x2050}
    [laplace]=${LAPLACE:-130x130x130} [gas]=${GAS:-66x66x66} [gaussian]=${GAUSSIAN:-2048x2048})
declare -A steps=([poisson]=$iters [wavesim]=$iters [laplace]=$iters [gas]=${GAS_ITERS:-50} [gaussian]=$iters)
for app in "${apps[@]}"; do
    gcc -O3 -ffp-contract=off "$here/$app.c" -o "$dir/$app" -lm
done
for app in "${apps[@]}"; do
    dims=${size[$app]//x/ }
    for r in $(seq "$rounds"); do
        "$bin" run "${cli[$app]}" --size "${size[$app]}" --iters "${steps[$app]}" --devices cpu:threads=1 \
            --report "$dir/r.json" --output "$dir/app.dat" >/dev/null
        a=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['loop_seconds'])" "$dir/r.json")
        # shellcheck disable=SC2086
        c=$("$dir/$app" $dims "${steps[$app]}" "$dir/c.dat" | awk '{print $2}')
        same=$(cmp -s "$dir/app.dat" "$dir/c.dat" && echo same-bits || echo DIFFERENT-BITS)
        python3 -c "import sys; a,c=float(sys.argv[3]),float(sys.argv[4]); print(f'{sys.argv[1]} {sys.argv[2]} round {sys.argv[5]}: app {a:.3f} s, C {c:.3f} s, C/app {c/a:.2f}, {sys.argv[6]}')" \
            "${cli[$app]}" "${size[$app]}" "$a" "$c" "$r" "$same"
    done
done
