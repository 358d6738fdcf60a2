/**
 * The user data real-guest volume tests give their guests (busybox ash): it watches the guest's disks and prints
 * what happens on the serial console, which is the tests' evidence. A new disk is listed (its files and their first
 * line); the "writer" formats an empty one (vfat) and writes note.txt, the "reader" adds later.txt; size changes
 * and disks that go are printed.
 */
/** The watcher's script; ROLE is writer or reader. */
export function watcher(role: 'writer' | 'reader'): string {
  return `#!/bin/sh
ROLE=${role}
NAME=$(hostname)
seen=""
sizes=""
while true; do
  for d in /sys/block/vd[b-z]; do
    [ -e "$d" ] || continue
    n=\${d##*/}
    case " $seen " in *" $n "*) ;; *)
      seen="$seen $n"
      mkdir -p /mnt/$n
      if mount -t vfat /dev/$n /mnt/$n 2>/dev/null; then
        for f in /mnt/$n/*.txt; do [ -e "$f" ] && echo "pcc-guest: $n file \${f##*/} $(head -n 1 $f)"; done
        if [ "$ROLE" = reader ] && [ ! -e /mnt/$n/later.txt ]; then echo "later from $NAME" > /mnt/$n/later.txt; sync; echo "pcc-guest: $n wrote later.txt"; fi
        umount /mnt/$n
      elif [ "$ROLE" = writer ]; then
        mkdosfs /dev/$n >/dev/null 2>&1 && mount -t vfat /dev/$n /mnt/$n && echo "hello from $NAME" > /mnt/$n/note.txt && sync && umount /mnt/$n && echo "pcc-guest: $n wrote note.txt"
      fi
      echo "pcc-guest: $n listed"
    ;; esac
    size=$(cat $d/size)
    case " $sizes " in *" $n=$size "*) ;; *) sizes="$(echo " $sizes " | sed "s/ $n=[0-9]* / /") $n=$size"; echo "pcc-guest: $n size $size" ;; esac
  done
  for n in $seen; do
    [ -e /sys/block/$n ] && continue
    seen=$(echo " $seen " | sed "s/ $n / /"); sizes=$(echo " $sizes " | sed "s/ $n=[0-9]* / /"); echo "pcc-guest: $n gone"
  done
  sleep 1
done
`
}
