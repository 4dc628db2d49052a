#!/bin/sh
# Two network namespaces joined by two veth pairs (two rails). A sends to B over the plugin's merged
# device; the script reads each rail's tx_bytes in A. Unshaped, both rails must carry bytes; with rail 1
# shaped by `tc tbf`, the bytes must move to rail 0. Skips (77) without root, ip/tc, netns or veth.
set -eu
probe="$1"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
command -v ip >/dev/null && command -v tc >/dev/null || { echo "SKIP: needs iproute2 (ip, tc)"; exit 77; }
tag="ww$$"
A="${tag}a"; B="${tag}b"; dir=$(mktemp -d)
cleanup() { ip netns del "$A" 2>/dev/null || true; ip netns del "$B" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
ip netns add "$A" || { echo "SKIP: cannot create network namespaces here"; exit 77; }
ip netns add "$B"
for i in 0 1; do
  ip link add "${tag}x$i" type veth peer name "${tag}y$i" || { echo "SKIP: cannot create veth pairs"; exit 77; }
  ip link set "${tag}x$i" netns "$A"
  ip link set "${tag}y$i" netns "$B"
  ip -n "$A" addr add "10.77.$i.1/24" dev "${tag}x$i"
  ip -n "$B" addr add "10.77.$i.2/24" dev "${tag}y$i"
  ip -n "$A" link set "${tag}x$i" up
  ip -n "$B" link set "${tag}y$i" up
done
ip -n "$A" link set lo up
ip -n "$B" link set lo up

tx() { ip netns exec "$A" cat "/sys/class/net/${tag}x$1/statistics/tx_bytes"; }

# run LABEL: one transfer; prints rail 1's share of the bytes in percent.
run() {
  rm -f "$dir/handle"
  a0=$(tx 0); a1=$(tx 1)
  ip netns exec "$B" "$probe" recv "$dir/handle" 100 4194304 > "$dir/recv.out" &
  rpid=$!
  ip netns exec "$A" "$probe" send "$dir/handle" 100 4194304
  wait "$rpid"
  d0=$(( $(tx 0) - a0 )); d1=$(( $(tx 1) - a1 ))
  share=$(( 100 * d1 / (d0 + d1) ))
  echo "$1: rail0 $d0 B, rail1 $d1 B, rail1 share ${share}% ($(cat "$dir/recv.out"))" >&2
  echo "$share"
}

even=$(run unshaped)
tc -n "$A" qdisc add dev "${tag}x1" root tbf rate 50mbit burst 32kb latency 20ms
shaped=$(run "rail1 shaped to 50 Mbit/s")
if [ "$even" -lt 15 ] || [ "$even" -gt 85 ]; then
  echo "FAIL: both unshaped rails must carry bytes (rail1 ${even}%)"; exit 1
fi
# Equal static striping would leave rail 1 half the bytes; the bound is loose because on a loaded machine
# the unshaped rail slows down while the shaped one keeps its 50 Mbit/s (measured here: 2-3 %).
if [ "$shaped" -ge 25 ]; then
  echo "FAIL: bytes did not move off the shaped rail (rail1 ${shaped}%)"; exit 1
fi
echo "ok: rail1 share ${even}% unshaped, ${shaped}% shaped"
