#!/usr/bin/env bash
# A real noisy neighbour for a run: a busy loop pinned to one CPU, started after a delay
# and stopped after a while, e.g. beside `vgg16 --seconds 60`:
#
#   scripts/hog.sh 1 20 40 & cargo run --release --example vgg16 -- --tune alpha=10 --seconds 60
#
# Usage: scripts/hog.sh CPU START_S STOP_S   (seconds from now). Prints when it starts and
# stops, with the time, so a run's report can be read against it.
set -euo pipefail
if [ $# -ne 3 ]; then
    echo "usage: $0 CPU START_S STOP_S" >&2
    exit 2
fi
cpu=$1 start=$2 stop=$3
case "$cpu$start$stop" in *[!0-9]*) echo "$0: CPU, START_S and STOP_S must be whole numbers" >&2; exit 2;; esac
[ "$stop" -gt "$start" ] || { echo "$0: STOP_S ($stop) must be after START_S ($start)" >&2; exit 2; }
sleep "$start"
taskset -c "$cpu" sh -c 'while :; do :; done' &
hog=$!
trap 'kill $hog 2>/dev/null' EXIT
echo "hog: started on CPU $cpu at +${start}s ($(date +%T.%N | cut -c1-12))" >&2
sleep $((stop - start))
kill $hog
echo "hog: stopped at +${stop}s ($(date +%T.%N | cut -c1-12))" >&2
