#!/bin/bash
# count.sh BIN RECIPE TAG [extra args]: cold then no-op (after 2.5 s) then no-op, sha256 bytes per site
BIN=$1 R=$2 TAG=$3; shift 3
W=${W:-/tmp/perfcount/w}; source $W/addrs
rm -rf $W/c-$TAG $W/o-$TAG
for run in cold noop1 noop2; do
  [[ $run == noop1 ]] && sleep 2.5
  PALLET_SHA_COUNT=$W/count-$TAG-$run /usr/bin/time -f "%e s %U+%S cpu %M KB" $BIN build -f $R --arg RELEASES=$FILES --cache-dir $W/c-$TAG -o oci:$W/o-$TAG --record $W/rec-$TAG.json -q "$@" 2>&1 | tail -1 | sed "s/^/$run: /"
  [[ -f $W/count-$TAG-$run ]] && cat $W/count-$TAG-$run
done
