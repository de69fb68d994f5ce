#!/usr/bin/env bash
# The apps against their plain serial C loops on one thread, alternated
# (app, C, app, C, ...) so that both see the same load; prints each round's
# loop seconds and the ratio C / app (1.0: as fast as C), then checks that
# the app's output has the C loop's bits.
#   bash benches/c/apps_vs_c.sh [EPSILOD_BINARY] [ROUNDS]
# Sizes: POISSON=2050x2050 WAVESIM=2050x2050 LAPLACE=130x130x130 ITERS=20.
set -euo pipefail
bin=${1:-target/release/epsilod}
rounds=${2:-3}
iters=${ITERS:-20}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
here=$(dirname "$0")
for app in poisson wavesim laplace; do
    gcc -O3 -ffp-contract=off "$here/$app.c" -o "$dir/$app" -lm
done
declare -A size=([poisson]=${POISSON:-2050x2050} [wavesim]=${WAVESIM:-2050x2050} [laplace]=${LAPLACE:-130x130x130})
for app in poisson wavesim laplace; do
    dims=${size[$app]//x/ }
    for r in $(seq "$rounds"); do
        "$bin" run "$app" --size "${size[$app]}" --iters "$iters" --devices cpu:threads=1 \
            --report "$dir/r.json" --output "$dir/app.dat" >/dev/null
        a=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['loop_seconds'])" "$dir/r.json")
        # shellcheck disable=SC2086
        c=$("$dir/$app" $dims "$iters" "$dir/c.dat" | awk '{print $2}')
        same=$(cmp -s "$dir/app.dat" "$dir/c.dat" && echo same-bits || echo DIFFERENT-BITS)
        python3 -c "import sys; a,c=float(sys.argv[3]),float(sys.argv[4]); print(f'{sys.argv[1]} {sys.argv[2]} round {sys.argv[5]}: app {a:.3f} s, C {c:.3f} s, C/app {c/a:.2f}, {sys.argv[6]}')" \
            "$app" "${size[$app]}" "$a" "$c" "$r" "$same"
    done
done

# gas-sim (D3Q19, 19 f32 a cell; --size is the user domain + 2) and gaussian
# (kw 5 on the checkerboard; --size is the image), the same way:
# GAS=66x66x66 GAUSSIAN=1024x1024 GAS_ITERS=50.
for app in gas gaussian; do
    gcc -O3 -ffp-contract=off "$here/$app.c" -o "$dir/$app" -lm
done
declare -A cli=([gas]=gas-sim [gaussian]=gaussian)
declare -A size2=([gas]=${GAS:-66x66x66} [gaussian]=${GAUSSIAN:-1024x1024})
declare -A iters2=([gas]=${GAS_ITERS:-50} [gaussian]=$iters)
for app in gas gaussian; do
    dims=${size2[$app]//x/ }
    for r in $(seq "$rounds"); do
        "$bin" run "${cli[$app]}" --size "${size2[$app]}" --iters "${iters2[$app]}" --devices cpu:threads=1 \
            --report "$dir/r.json" --output "$dir/app.dat" >/dev/null
        a=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['loop_seconds'])" "$dir/r.json")
        # shellcheck disable=SC2086
        c=$("$dir/$app" $dims "${iters2[$app]}" "$dir/c.dat" | awk '{print $2}')
        same=$(cmp -s "$dir/app.dat" "$dir/c.dat" && echo same-bits || echo DIFFERENT-BITS)
        python3 -c "import sys; a,c=float(sys.argv[3]),float(sys.argv[4]); print(f'{sys.argv[1]} {sys.argv[2]} round {sys.argv[5]}: app {a:.3f} s, C {c:.3f} s, C/app {c/a:.2f}, {sys.argv[6]}')" \
            "${cli[$app]}" "${size2[$app]}" "$a" "$c" "$r" "$same"
    done
done
