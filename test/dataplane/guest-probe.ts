/**
 * What the real-guest networking tests make guests do: a probe loop run from user data that prints what the
 * guest sees on its serial console, one numbered `pcc-guest:` line per check and round, and the reading of those
 * lines back.
 */

export const EXTERNAL_GATEWAY = '203.0.113.1'

/**
 * The probe loop each guest runs, one numbered line per check and round, so the test sees each change: it reads
 * its metadata, listens on TCP 8080, and every round pings the external gateway, tries the peer's 8080 (for 2 s:
 * busybox's `nc -w` does not bound a connect, and `timeout` does not stop it in the guest's standalone shell) and
 * prints how many echo requests reached it (/proc/net/snmp). The first guest also pings the peer every round.
 * The second never does, until server metadata `spoof` appears in its metadata (the test sets it through the
 * compute API): then it sends 3 pings to the peer from an address not its own, and 3 from its own. Once server
 * metadata `hairpin` names an address (its own floating IP), it pings that every round.
 */
export function probeScript(peer: string, role: 'pinger' | 'spoofer'): string {
  const md = 'http://169.254.169.254/openstack/latest/meta_data.json'
  return `#!/bin/sh
wget -q -O /tmp/md ${md} && echo "pcc-guest: metadata-uuid $(grep -o '"uuid": *"[^"]*"' /tmp/md | cut -d'"' -f4)"
echo "pcc-guest: ec2-instance-id $(wget -q -O - http://169.254.169.254/latest/meta-data/instance-id)"
nc -ll -p 8080 -e echo hi &
n=0
while true; do
  n=$((n+1))
${
  role === 'pinger'
    ? `  ping -c 1 -W 1 ${peer} >/dev/null 2>&1 && echo "pcc-guest: peer-ping ok $n" || echo "pcc-guest: peer-ping fail $n"`
    : `  if [ -z "$spoofed" ] && wget -q -O - ${md} | grep -q '"spoof"'; then
    spoofed=1
    ip addr add 10.60.0.250/24 dev eth0
    ping -c 3 -W 1 -I 10.60.0.250 ${peer} >/dev/null 2>&1
    echo "pcc-guest: spoofed-pings-sent 3 $n"
    sleep 2
    ping -c 3 -W 1 ${peer} >/dev/null 2>&1 && echo "pcc-guest: own-pings ok $n" || echo "pcc-guest: own-pings fail $n"
  fi
  h=$(wget -q -O - ${md} | grep -o '"hairpin": *"[^"]*"' | cut -d'"' -f4)
  if [ -n "$h" ]; then ping -c 1 -W 1 $h >/dev/null 2>&1 && echo "pcc-guest: hairpin-ping ok $n" || echo "pcc-guest: hairpin-ping fail $n"; fi`
}
  ping -c 1 -W 1 ${EXTERNAL_GATEWAY} >/dev/null 2>&1 && echo "pcc-guest: external-ping ok $n" || echo "pcc-guest: external-ping fail $n"
  rm -f /tmp/nc.out
  nc ${peer} 8080 </dev/null >/tmp/nc.out 2>/dev/null &
  p=$!
  sleep 2
  kill $p 2>/dev/null
  grep -q hi /tmp/nc.out && echo "pcc-guest: peer-tcp open $n" || echo "pcc-guest: peer-tcp closed $n"
  echo "pcc-guest: in-echos $(awk '/^Icmp:/ { if (!c) { for (i = 1; i <= NF; i++) if ($i == "InEchos") c = i } else print $c }' /proc/net/snmp) $n"
  sleep 1
done
`
}

/** The last round's value of a probe line (`pcc-guest: <what> <value> <n>`), with its round. */
export function latest(log: string, what: string): { value: string; round: number } | undefined {
  const last = [...log.matchAll(new RegExp(`pcc-guest: ${what} (\\S+) (\\d+)`, 'g'))].at(-1)
  return last ? { value: last[1], round: Number(last[2]) } : undefined
}
