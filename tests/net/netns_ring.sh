#!/bin/sh
# N ranks (ring_member), each in its own network namespace with two interfaces, rail0 and rail1, on
# two subnets; a 'switch' namespace holds one Linux bridge per rail joining every rank's rail i. Each
# rank sends to rank+1 and receives from rank-1 over the plugin's merged device, checking every byte.
#   netns_ring.sh MEMBER N check   [member options]  all ranks must exit 0 and report what they verified
#   netns_ring.sh MEMBER N corrupt [member options]  rank 0 flips one byte of one message: rank 1 must
#                                                   report exactly that byte (the harness can fail)
# Every rank runs under `timeout`; namespaces (and with them veths and bridges) go on any exit. Skips
# (77) without root, iproute2, network namespaces, veth pairs or bridges.
set -eu
member="$1"; n="$2"; mode="$3"; shift 3
limit=${WW_RING_TIMEOUT:-100}
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root for network namespaces"; exit 77; }
command -v ip >/dev/null && command -v timeout >/dev/null || { echo "SKIP: needs iproute2 (ip) and timeout"; exit 77; }
tag="wwr$$"; sw="${tag}sw"; dir=$(mktemp -d)
cleanup() {
  if [ -n "${flipper:-}" ]; then kill "$flipper" 2>/dev/null || true; fi
  r=0
  while [ "$r" -lt "$n" ]; do  # ranks still running (the driver was interrupted) go with their namespace
    for p in $(ip netns pids "${tag}n$r" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "${tag}n$r" 2>/dev/null || true
    r=$((r + 1))
  done
  ip netns del "$sw" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP
ip netns add "$sw" || { echo "SKIP: cannot create network namespaces here"; exit 77; }
for i in 0 1; do
  ip -n "$sw" link add "br$i" type bridge || { echo "SKIP: cannot create bridges"; exit 77; }
  ip -n "$sw" link set "br$i" up
done
r=0
while [ "$r" -lt "$n" ]; do
  ns="${tag}n$r"
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  for i in 0 1; do
    ip link add "${tag}h$r.$i" type veth peer name "${tag}s$r.$i" || { echo "SKIP: cannot create veth pairs"; exit 77; }
    ip link set "${tag}h$r.$i" netns "$ns"
    ip -n "$ns" link set "${tag}h$r.$i" name "rail$i"
    ip -n "$ns" addr add "10.79.$i.$((r + 1))/24" dev "rail$i"
    ip -n "$ns" link set "rail$i" up
    ip link set "${tag}s$r.$i" netns "$sw"
    ip -n "$sw" link set "${tag}s$r.$i" master "br$i" up
  done
  r=$((r + 1))
done

# WW_RING_TC="<qdisc>" (e.g. "tbf rate 200mbit burst 64kb latency 20ms"; netem is not built on every kernel) shapes every
# rank's rail1: the plugin's rail weights, hedging and resends then run under the same byte checks.
# WW_RING_FLIP="<qdisc>" (with WW_RING_TC) flips every rank's rail1 between the two every 0.7 s while the
# ranks run. WW_RING_EXPECT_HEDGED=1 (check mode, with WW_RING_LOG=1 and WIREWISE_NET_HEDGE) also
# requires some connection's close summary to count hedged chunks, so that the run did exercise them.
if [ -n "${WW_RING_TC:-}" ]; then
  r=0
  while [ "$r" -lt "$n" ]; do tc -n "${tag}n$r" qdisc add dev rail1 root $WW_RING_TC; r=$((r + 1)); done
fi

# The negative self-test corrupts byte 4321 of rank 0's message 14 (the 64 KiB sweep message; 128 KiB
# when --max-bytes is under 3 MiB).
corrupt_msg=14; corrupt_at=4321
if [ "$mode" = corrupt ]; then export WW_RING_CORRUPT="0:$corrupt_msg:$corrupt_at"; else unset WW_RING_CORRUPT || true; fi
# Here every rank stops by design with its comms open (rank 1 on the bad byte, the others when it fails), as
# a failing NCCL process exits: under AddressSanitizer that is no leak to report, and the report would change
# rank 1's exit status. The check mode closes everything and keeps leak detection.
if [ "$mode" = corrupt ] && [ -n "${ASAN_OPTIONS+set}" ]; then export ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"; fi

start=$(date +%s)
pids=""
r=0
while [ "$r" -lt "$n" ]; do
  ( rc=0
    timeout -k 5 "$limit" ip netns exec "${tag}n$r" "$member" --rank "$r" --nranks "$n" --dir "$dir" \
      --timeout $((limit - 10)) "$@" >"$dir/out$r" 2>&1 || rc=$?
    echo "$rc" >"$dir/rc$r" ) &
  pids="$pids $!"
  r=$((r + 1))
done
flipper=""
if [ -n "${WW_RING_FLIP:-}" ] && [ -n "${WW_RING_TC:-}" ]; then
  ( i=0
    while :; do
      q="$WW_RING_TC"; [ $((i % 2)) = 0 ] && q="$WW_RING_FLIP"
      r=0
      while [ "$r" -lt "$n" ]; do tc -n "${tag}n$r" qdisc change dev rail1 root $q 2>/dev/null || true; r=$((r + 1)); done
      i=$((i + 1))
      sleep 0.7
    done ) &
  flipper=$!
fi
wait $pids
if [ -n "$flipper" ]; then kill "$flipper" 2>/dev/null || true; wait "$flipper" 2>/dev/null || true; fi
echo "$n ranks, $(($(date +%s) - start)) s"

fail=0
r=0
while [ "$r" -lt "$n" ]; do
  rc=$(cat "$dir/rc$r" 2>/dev/null || echo missing)
  sed "s/^/  [rank $r rc $rc] /" "$dir/out$r"
  if [ "$mode" = check ]; then
    [ "$rc" = 0 ] && grep -q "verified" "$dir/out$r" || fail=1
  fi
  r=$((r + 1))
done
if [ "$mode" = check ]; then
  [ "$fail" = 0 ] && echo "ok: every rank verified every byte" || echo "FAIL: a rank failed (see above)"
  if [ "${WW_RING_EXPECT_HEDGED:-0}" = 1 ]; then
    if cat "$dir"/out* | grep -q "closed: .*([1-9][0-9]* of them hedged)"; then
      echo "ok: chunks were hedged"
    else
      echo "FAIL: no connection hedged a chunk (needs WW_RING_LOG=1, WIREWISE_NET_HEDGE and a flipping rail)"
      fail=1
    fi
  fi
  exit "$fail"
fi
# corrupt: rank 1 (rank 0's right neighbour) must name the flipped byte and exit 10.
if [ "$(cat "$dir/rc1" 2>/dev/null)" = 10 ] &&
   grep -q "DATA message $corrupt_msg from rank 0: wrong byte at $corrupt_at " "$dir/out1"; then
  echo "ok: the flipped byte was detected"
  exit 0
fi
echo "FAIL: the flipped byte (message $corrupt_msg, byte $corrupt_at) was not reported by rank 1"
exit 1
