#!/bin/bash
# files.sh BIN: 10k and 100k-file images: cold, no-op, one-file change (time, CPU, peak RSS, load);
# then a 5-file image's no-op on the cache the 100k build left.
BIN=$1
W=${W:-/tmp/perfcount/w}
m() { # LABEL args...
  local l=$(cut -d' ' -f1 /proc/loadavg) label=$1; shift
  /usr/bin/time -f "%e %U %S %M" -o $W/t "$@" >/dev/null 2>$W/err || { echo "$label FAILED"; cat $W/err; }
  read e u s r < $W/t
  printf '%-28s %6.2f s  cpu %5.2f  rss %6.1f MB  load %s\n' "$label" $e $(echo "$u + $s" | bc) $(echo "$r/1024" | bc -l) $l
}
for n in 10000 100000; do
  d=$W/files-$n; c=$W/fc-$n; o=$W/fo-$n
  rm -rf $c $o
  P=($BIN build -f $d/pallet.yaml --cache-dir $c -o oci:$o --record $W/rec-f.json -q)
  m "$n cold" "${P[@]}"
  sleep 2.5
  m "$n first rebuild" "${P[@]}"
  m "$n no-op" "${P[@]}"
  m "$n no-op" "${P[@]}"
  f=$(find $d/files -type f | head -1); echo "changed $RANDOM" >> $f
  m "$n one-file" "${P[@]}"
  m "$n no-op after one-file" "${P[@]}"
done
S=($BIN build -f $W/small/pallet.yaml --cache-dir $W/fc-100000 -o oci:$W/so --record $W/rec-s.json -q)
S2=($BIN build -f $W/small/pallet.yaml --cache-dir $W/fc-small -o oci:$W/so2 --record $W/rec-s2.json -q)
"${S[@]}"; "${S2[@]}"; sleep 2.5; "${S[@]}"; "${S2[@]}"
for i in 1 2 3; do
  m "small no-op, 100k cache" "${S[@]}"
  m "small no-op, own cache" "${S2[@]}"
done
ls -la $W/fc-100000/ $W/fc-small/ | grep -i digest
