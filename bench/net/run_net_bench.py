#!/usr/bin/env python3
"""wirewise's net face against iperf3, side by side, over real kernel TCP.

Two network namespaces A and B joined by two veth pairs (rail 0 and rail 1). A sends, B receives.
Figures (goodput: payload bits received per second, setup excluded, TCP ramp-up included, as iperf3):
  one rail      N iperf3 streams on rail 0          vs wirewise's rail-0 device, WIREWISE_NET_STREAMS=N
  two rails     N iperf3 streams on each rail       vs wirewise-merged, N streams per rail
  rail 1 shaped the same with rail 1 limited by `tc tbf` to SHAPE% of rail 0's one-rail iperf3 goodput;
                "capacity" is then rail 0's unshaped iperf3 goodput plus the tbf rate.
The iperf3 reference runs one client/server process pair per stream (-P 1 each, own port, all at once,
goodputs summed): iperf3 up to 3.16 (Debian 12 ships 3.12) runs all -P streams of a process on one
thread, so `-P N` measures one CPU, not N streams. The old `-P N` figure (one process per rail) is
printed beside it, labelled "-P", unless --no-single-process.
The wirewise side is bench/net/net_bench_driver.cc: the shipped library through ncclNetPlugin_v11,
driven as NCCL's proxy drives it (WINDOW messages of MESSAGE_BYTES in flight).

Usage: run_net_bench.py --driver PATH [--streams N] [--seconds S] [--repeat R] [--shape PCT]
                        [--message-kib K] [--window W] [--floor PCT] [--machine TEXT]
                        [--no-single-process] [--only one,two,shaped]
--floor: exit 1 when wirewise's unshaped goodput (one rail, and two rails) is below PCT% of iperf3's
in every one of the --repeat paired runs (the best pair counts; the table shows medians).
Exit 77 (skip) without root, iproute2, iperf3 or network namespaces.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

SKIP = 77


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


class Rails:
    """Namespaces A and B, rail i = veth {tag}a{i} (10.78.i.1, in A) <-> {tag}b{i} (10.78.i.2, in B)."""

    def __init__(self):
        self.tag = f"wwn{os.getpid() % 100000}"
        self.ns = {"a": self.tag + "a", "b": self.tag + "b"}
        self.created = []

    def ifname(self, side, rail):
        return f"{self.tag}{side}{rail}"

    def addr(self, side, rail):
        return f"10.78.{rail}.{1 if side == 'a' else 2}"

    def exec(self, side, *cmd):
        return ["ip", "netns", "exec", self.ns[side], *cmd]

    def up(self):
        for side in "ab":
            run(["ip", "netns", "add", self.ns[side]])
            self.created.append(self.ns[side])
            run(["ip", "-n", self.ns[side], "link", "set", "lo", "up"])
        for rail in (0, 1):
            a, b = self.ifname("a", rail), self.ifname("b", rail)
            run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
            for side, name in (("a", a), ("b", b)):
                run(["ip", "link", "set", name, "netns", self.ns[side]])
                run(["ip", "-n", self.ns[side], "addr", "add", self.addr(side, rail) + "/24", "dev", name])
                run(["ip", "-n", self.ns[side], "link", "set", name, "up"])

    def shape(self, rail, bits_per_s):
        # burst: 5 ms at the rate (tbf needs at least rate/HZ), never under 64 KiB.
        burst = max(64 * 1024, int(bits_per_s / 8 * 0.005))
        run(["tc", "-n", self.ns["a"], "qdisc", "add", "dev", self.ifname("a", rail), "root", "tbf",
             "rate", f"{int(bits_per_s)}bit", "burst", str(burst), "latency", "50ms"])

    def down(self):
        for ns in self.created:
            subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Bench:
    def __init__(self, args, rails, tmp):
        self.a, self.rails, self.tmp = args, rails, tmp
        self.servers = []
        self.env = dict(os.environ, WIREWISE_NET_STREAMS=str(args.streams), WIREWISE_NET_IFNAMES=rails.tag,
                        WIREWISE_LOG="none")
        self.env.pop("NCCL_SOCKET_IFNAME", None)

    @staticmethod
    def port(rail, stream):
        return 5201 + 100 * rail + stream

    def start_iperf_servers(self):
        # One server per stream and rail: an iperf3 server runs one test at a time.
        for rail in (0, 1):
            for k in range(self.a.streams):
                self.servers.append(subprocess.Popen(
                    self.rails.exec("b", "iperf3", "-s", "-p", str(self.port(rail, k)), "-B",
                                    self.rails.addr("b", rail)),
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)

    def stop(self):
        for p in self.servers:
            p.terminate()
            p.wait()

    def iperf(self, rails, per_stream=True):
        """Goodput in Gbit/s over `rails`, N streams per rail, all clients run together, summed.
        per_stream: one `-P 1` client process per stream (real parallelism); else one `-P N` client per
        rail (iperf3 3.12 runs those N streams on one thread)."""
        jobs = [(r, k, 1) for r in rails for k in range(self.a.streams)] if per_stream else \
               [(r, 0, self.a.streams) for r in rails]
        clients = [subprocess.Popen(
            self.rails.exec("a", "iperf3", "-c", self.rails.addr("b", r), "-p", str(self.port(r, k)), "-B",
                            self.rails.addr("a", r), "-P", str(n), "-t", str(self.a.seconds), "-J"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r, k, n in jobs]
        total = 0.0
        for c in clients:
            out, err = c.communicate(timeout=self.a.seconds + 60)
            if c.returncode != 0:
                raise RuntimeError(f"iperf3 failed: {out[-400:]} {err[-400:]}")
            total += json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e9
        return total

    def wirewise(self, rail):
        """Goodput in Gbit/s of one wirewise connection on device `rail` (0, 1 or 'merged')."""
        dev = {s: ("wirewise-merged" if rail == "merged" else self.rails.ifname(s, rail)) for s in "ab"}
        handle = os.path.join(self.tmp, f"handle{time.monotonic_ns()}")
        size = str(self.a.message_kib * 1024)
        common = [handle, None, str(self.a.seconds), size, str(self.a.window)]
        recv_cmd = [self.a.driver, "recv"] + common
        send_cmd = [self.a.driver, "send"] + common
        recv_cmd[3], send_cmd[3] = dev["b"], dev["a"]
        tx0 = [self.tx_bytes(r) for r in (0, 1)]
        cpu0 = os.times()
        recv = subprocess.Popen(self.rails.exec("b", *recv_cmd), env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        send = subprocess.run(self.rails.exec("a", *send_cmd), env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=self.a.seconds + 90)
        out, err = recv.communicate(timeout=self.a.seconds + 90)
        if send.returncode != 0 or recv.returncode != 0:
            raise RuntimeError(f"wirewise driver failed: send {send.returncode} {send.stderr.strip()}; "
                               f"recv {recv.returncode} {err.strip()}")
        fields = dict(kv.split("=") for kv in out.split())
        if self.a.diag:
            tx = [self.tx_bytes(r) - tx0[r] for r in (0, 1)]
            cpu1 = os.times()
            cpu = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
            secs = float(fields["seconds"])
            print(f"  diag {rail}: {float(fields['gbps']):.2f} Gb/s; rail tx share {tx[0] / max(1, sum(tx)):.2f} / "
                  f"{tx[1] / max(1, sum(tx)):.2f}; driver CPU {cpu / secs:.2f} cores "
                  f"(user {cpu1.children_user - cpu0.children_user:.1f} s, sys {cpu1.children_system - cpu0.children_system:.1f} s)"
                  f"; load {os.getloadavg()[0]:.1f}", flush=True)
        return float(fields["gbps"])

    def tx_bytes(self, rail):
        path = f"/sys/class/net/{self.rails.ifname('a', rail)}/statistics/tx_bytes"
        return int(run(self.rails.exec("a", "cat", path)).stdout)

    def pair(self, iperf_rails, ww_rail):
        """(iperf3, wirewise, iperf3 -P) medians over --repeat runs, alternating so that load drifts hit
        all, and the runs; the -P median is None (no runs) with --no-single-process."""
        i, w, p = [], [], []
        for _ in range(self.a.repeat):
            i.append(self.iperf(iperf_rails))
            w.append(self.wirewise(ww_rail))
            if not self.a.no_single_process:
                p.append(self.iperf(iperf_rails, per_stream=False))
        return statistics.median(i), statistics.median(w), i, w, (statistics.median(p) if p else None), p


def pct(x, y):
    return f"{100.0 * x / y:5.0f}%" if y > 0 else "    -"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--driver", required=True)
    p.add_argument("--streams", type=int, default=4, help="TCP streams per rail (iperf3 -P, WIREWISE_NET_STREAMS)")
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--shape", type=float, default=10.0, help="rail 1's tbf rate, %% of rail 0's iperf3 goodput")
    p.add_argument("--message-kib", type=int, default=4096)
    p.add_argument("--window", type=int, default=8, help="messages in flight (NCCL keeps up to 8 per connection)")
    p.add_argument("--floor", type=float, default=0.0)
    p.add_argument("--attempts", type=int, default=1,
                   help="with --floor: measure again (up to this many times in all) while the floor is missed; "
                        "another job's burst of CPU slows every run of one measurement, a regression every "
                        "measurement")
    p.add_argument("--machine", default="")
    p.add_argument("--no-single-process", action="store_true",
                   help="skip the old reference (one iperf3 -P N process per rail)")
    p.add_argument("--diag", action="store_true",
                   help="print each wirewise run: rails' tx byte shares, the drivers' CPU time, the load")
    p.add_argument("--only", default="one,two,shaped",
                   help="figures to run, comma-separated among one, two, shaped (shaped needs one's iperf3)")
    a = p.parse_args()
    only = set(a.only.split(","))
    if not only or not only <= {"one", "two", "shaped"}:
        p.error("--only takes one, two, shaped")
    if a.seconds != int(a.seconds):
        p.error("--seconds must be whole (iperf3 -t)")
    a.seconds = int(a.seconds)

    if os.geteuid() != 0:
        print("SKIP: needs root for network namespaces")
        return SKIP
    for tool in ("ip", "tc", "iperf3"):
        if shutil.which(tool) is None:
            print(f"SKIP: needs {tool} (.ci/install-deps installs iperf3)")
            return SKIP
    for attempt in range(1, max(1, a.attempts) + 1):
        rc = measure(a, only)
        if rc != 1 or attempt == max(1, a.attempts) or a.floor <= 0:
            return rc
        print(f"attempt {attempt} of {a.attempts} missed the floor; measuring again\n", flush=True)
    return 1


def measure(a, only):
    """One whole measurement: namespaces up, the figures, the table; 1 when it fails or misses the floor."""
    rails = Rails()
    tmp = tempfile.mkdtemp(prefix="ww-netbench-")
    bench = None
    try:
        try:
            rails.up()
        except subprocess.CalledProcessError as e:
            print(f"SKIP: cannot create namespaces and veth pairs here: {e.stderr.strip()}")
            return SKIP
        bench = Bench(a, rails, tmp)
        bench.start_iperf_servers()
        load_before = os.getloadavg()
        one = bench.pair([0], 0) if only & {"one", "shaped"} else None
        two = bench.pair([0, 1], "merged") if "two" in only else None
        if "shaped" in only:
            rate = one[0] * 1e9 * a.shape / 100.0
            rails.shape(1, rate)
            shaped = bench.pair([0, 1], "merged")
            capacity = one[0] + rate / 1e9
    except RuntimeError as e:
        print(f"FAIL: {e}")
        return 1
    finally:
        if bench is not None:
            bench.stop()
        rails.down()
        shutil.rmtree(tmp, ignore_errors=True)

    la = os.getloadavg()
    label = a.machine or f"{os.cpu_count()}-core box"
    print(f"machine: {label}; {os.cpu_count()} cores, load {load_before[0]:.1f} before, {la[0]:.1f} {la[1]:.1f} after "
          f"(1 and 5 min), kernel {os.uname().release}")
    print(f"veth rails, {a.streams} TCP streams per rail, {a.seconds} s per figure, median of {a.repeat}; "
          f"wirewise: {a.window} x {a.message_kib} KiB messages in flight")
    print(f"{'figure':<34} {'iperf3 Gb/s':>11} {'wirewise Gb/s':>13} {'ww/iperf3':>9} {'ww/capacity':>11} "
          f"{'iperf3 -P Gb/s':>14} {'ww/-P':>6}")
    rows = []
    if "one" in only:
        rows.append(("one rail", one, None))
    if "two" in only:
        rows.append(("two rails", two, two[0]))
    if "shaped" in only:
        rows.append((f"two rails, rail 1 tbf {rate / 1e9:.2f} Gb/s", shaped, capacity))
    for name, (ip, ww, _, _, single, _), cap in rows:
        legacy = f"{single:14.2f} {pct(ww, single):>6}" if single is not None else f"{'-':>14} {'-':>6}"
        print(f"{name:<34} {ip:11.2f} {ww:13.2f} {pct(ww, ip):>9} {pct(ww, cap) if cap else '-':>11} {legacy}")
    print(f"iperf3: one -P 1 process pair per stream, run together; iperf3 -P: one -P {a.streams} process per rail "
          f"(one thread each)")
    if "shaped" in only:
        print(f"capacity: two rails = iperf3 on both rails together; shaped = rail 0 alone ({one[0]:.2f}) + tbf rate")
    if a.repeat > 1:
        for name, (_, _, i, w, _, p), _ in rows:
            legacy = f", iperf3 -P {[round(x, 2) for x in p]}" if p else ""
            print(f"  runs, {name}: iperf3 {[round(x, 2) for x in i]}, wirewise {[round(x, 2) for x in w]}{legacy}")
    if a.floor > 0:
        # Best paired run: other jobs' load only ever slows a run down, so the best of R adjacent
        # (iperf3, wirewise) pairs is the closest to what the transport can do; a regression slows them all.
        best = {name: max(w / i for i, w in zip(runs_i, runs_w)) * 100.0
                for name, (_, _, runs_i, runs_w, _, _), _ in rows if name in ("one rail", "two rails")}
        worst = min(best.values()) if best else 100.0
        if worst < a.floor:
            print(f"FAIL: wirewise unshaped goodput is {worst:.0f}% of iperf3's in the best of {a.repeat} runs "
                  f"(floor {a.floor:.0f}%)")
            return 1
        print(f"ok: wirewise unshaped goodput >= {a.floor:.0f}% of iperf3's (best of {a.repeat}: " +
              ", ".join(f"{k} {v:.0f}%" for k, v in best.items()) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
