#!/usr/bin/env python3
"""Every check of bench/gpu/real_nccl.sh, from its output folder: one summary table, exit 1 on a failure.

    real_nccl_check.py OUT_DIR

Reads OUT_DIR/meta.txt (key=value lines the script wrote), OUT_DIR/probe/ and one folder per run:
  a observe   wirewise as tuner and profiler, WIREWISE_MODE=observe
  b static    a static table (b/table.json) forcing choices, WIREWISE_POLICY=static
  c default   the defaults: agreement and the adaptive policy
  d net       as c, plus wirewise as NCCL's net plugin
  e none      without wirewise (the overhead baseline)
  f cupti     as c, plus WIREWISE_CUPTI=on with the libcupti PyTorch ships
Each run folder holds status.txt (rc=, seconds=, skip=), result.rank<N>.json (real_nccl_worker.py),
nccl.rank<N>.log (NCCL_DEBUG=INFO) and wirewise.<pid>.jsonl (the adaptation log, docs/adaptation-log.md).
Standard library only: the GPU machine has no pip installs.
"""
import glob
import json
import os
import re
import statistics
import sys

COLLS = ("allreduce", "allgather", "reducescatter")
WW_RUNS = ("a", "b", "c", "d", "f")  # the runs with wirewise loaded as tuner and profiler


def read_kv(path):
    kv = {}
    if os.path.exists(path):
        for line in open(path):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                kv[k] = v
    return kv


def size_name(n):
    for unit, shift in (("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def version_tuple(text):
    parts = re.findall(r"\d+", text or "")
    return tuple(int(p) for p in parts[:3]) if len(parts) >= 2 else None


def expected_abi(version):
    """The interface NCCL <version> binds among those wirewise exports (tuner v7..v2, profiler v6..v4, net
    v12..v8): shared/research/nccl-abi.md §3.1, §4.1, §5.1 and §9. None: that NCCL binds none of ours."""
    def pick(table):
        return next((abi for first, abi in table if version >= first), None)
    return {
        "tuner": pick([((2, 32), 7), ((2, 30), 6), ((2, 28), 5), ((2, 24), 4), ((2, 22), 3), ((2, 21), 2)]),
        # 2.32 tries profiler v7 first, which wirewise does not export: it binds v6.
        "profiler": pick([((2, 29), 6), ((2, 28), 5), ((2, 27), 4)]),
        "net": pick([((2, 30), 12), ((2, 28), 11), ((2, 26), 10), ((2, 24), 9), ((2, 20), 8)]),
    }


class Run:
    """One run's files, read once."""

    def __init__(self, out, name):
        self.name, self.dir = name, os.path.join(out, name)
        self.status = read_kv(os.path.join(self.dir, "status.txt"))
        self.skip = self.status.get("skip", "")
        self.results = {}
        for path in glob.glob(os.path.join(self.dir, "result.rank*.json")):
            try:
                r = json.load(open(path))
                self.results[r["rank"]] = r
            except (ValueError, KeyError) as e:
                self.results[path] = {"ok": False, "errors": ["unreadable %s: %s" % (path, e)], "results": []}
        self.nccl_logs = {}
        for path in glob.glob(os.path.join(self.dir, "nccl.rank*.log")):
            rank = int(re.search(r"rank(\d+)", os.path.basename(path)).group(1))
            self.nccl_logs[rank] = open(path, errors="replace").read()
        self.events, self.malformed = [], 0
        for path in sorted(glob.glob(os.path.join(self.dir, "wirewise*.jsonl"))):
            for line in open(path, errors="replace"):
                try:
                    e = json.loads(line)
                    if isinstance(e, dict) and isinstance(e.get("event"), str):
                        self.events.append(e)
                        continue
                except ValueError:
                    pass
                self.malformed += 1

    def of(self, kind, **match):
        return [e for e in self.events if e["event"] == kind and all(e.get(k) == v for k, v in match.items())]

    def pids(self):
        return sorted({e.get("pid") for e in self.events})

    def rank_of_pid(self):
        return {e["pid"]: e.get("rank") for e in self.of("comm_init", face="profiler")}

    def rows(self):
        """(rank, row) for every summary row."""
        return [(e.get("rank"), r) for e in self.of("summary") for r in e.get("rows", [])]


class Checks:
    def __init__(self):
        self.lines = []

    def add(self, name, ok, reason, skip=False):
        status = "SKIP" if skip else ("PASS" if ok else "FAIL")
        self.lines.append((name, status, reason))
        print("%-4s %s: %s" % (status, name, reason), flush=True)

    def failed(self):
        return [n for n, s, _ in self.lines if s == "FAIL"]


def check_probe(out, c):
    p = os.path.join(out, "probe")
    kv = read_kv(os.path.join(p, "status.txt"))
    path = os.path.join(p, "checks.txt")
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    passed = [l for l in lines if l.startswith("PASS")]
    failed = [l for l in lines if l.startswith("FAIL")]
    rc = kv.get("checks_rc", "missing")
    c.add("probe kernels' checks", rc == "0" and passed and not failed,
          "%d passed, %d failed (exit %s)%s" % (len(passed), len(failed), rc, ": " + failed[0] if failed else ""))
    rc = kv.get("probe_rc", "missing")
    gpus = []
    try:
        gpus = [g for g in json.load(open(os.path.join(p, "wiring.json"))).get("gpus", []) if g.get("present", True)]
    except (OSError, ValueError):
        pass
    c.add("wirewise probe", rc == "0" and bool(gpus),
          "exit %s, %d GPU(s) in wiring.json%s" % (rc, len(gpus), "".join(
              ", %s self copy %.0f GB/s" % (g.get("name"), g.get("self_copy_gbps", -1)) for g in gpus)))


def check_workers(run, world, sizes, c):
    name = "run %s: workers" % run.name
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    errors = ["rank %s: %s" % (k, e) for k, r in sorted(run.results.items(), key=str) for e in r.get("errors", [])]
    want = {(coll, s) for coll in COLLS for s in sizes}
    missing = [k for k, r in run.results.items() if want - {(x["coll"], x["bytes"]) for x in r.get("results", [])}]
    checked = sum(x["iters"] for r in run.results.values() for x in r.get("results", []))
    ok = run.status.get("rc") == "0" and len(run.results) == world and not errors and not missing
    c.add(name, ok, "exit %s in %s s, %d of %d rank results, %d timed collectives checked exactly%s%s" % (
        run.status.get("rc", "?"), run.status.get("seconds", "?"), len(run.results), world, checked,
        "; " + errors[0] if errors else "", "; rank %s lacks sizes" % missing[0] if missing else ""))


def check_faces(run, world, abi, version, c):
    name = "run %s: tuner and profiler faces" % run.name
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    problems = []
    tuners = {e["pid"]: e.get("abi") for e in run.of("comm_init", face="tuner")}
    profs = {e["pid"]: e.get("abi") for e in run.of("comm_init", face="profiler")}
    want_t, want_p = "tuner_v%s" % abi["tuner"], "profiler_v%s" % abi["profiler"]
    if len(tuners) != world:
        problems.append("%d of %d processes logged a tuner comm_init" % (len(tuners), world))
    if abi["profiler"] and len(profs) != world:
        problems.append("%d of %d processes logged a profiler comm_init" % (len(profs), world))
    for bound, want in ((tuners, want_t), (profs, want_p)):
        problems += ["pid %s bound %s, NCCL %s binds %s" % (p, a, version, want) for p, a in bound.items() if a != want]
    ranks = sorted(run.rank_of_pid().values(), key=str)
    if abi["profiler"] and ranks != list(range(world)):
        problems.append("profiler ranks %s, expected 0..%d" % (ranks, world - 1))
    # NCCL's own word for it: 2.26+ prints "TUNER/Plugin: Using wirewise (vN)", 2.27+ "PROFILER/Plugin: Loaded
    # wirewise (vN)"; older releases print the name without the version.
    pats = [("TUNER", r"TUNER/Plugin: Using (?:tuner plugin )?wirewise(?: \(v(\d+)\))?", abi["tuner"])]
    if abi["profiler"]:
        pats.append(("PROFILER", r"PROFILER/Plugin: [Ll]oaded wirewise(?: \(v(\d+)\))?", abi["profiler"]))
    for rank in range(world):
        text = run.nccl_logs.get(rank)
        if text is None:
            problems.append("no NCCL log for rank %d" % rank)
            continue
        for kind, pat, want in pats:
            m = re.search(pat, text)
            if not m:
                problems.append("rank %d: NCCL's log has no %s line loading wirewise" % (rank, kind))
            elif m.group(1) and int(m.group(1)) != want:
                problems.append("rank %d: NCCL loaded the %s as v%s, expected v%s" % (rank, kind, m.group(1), want))
    c.add(name, not problems, problems[0] + (" (+%d more)" % (len(problems) - 1) if len(problems) > 1 else "")
          if problems else "%d ranks: %s and %s, as NCCL %s binds (adaptation log and NCCL's log agree)"
          % (world, want_t, want_p if abi["profiler"] else "no profiler", version))


def check_net_face(run, world, abi, version, c):
    name = "run d: net face"
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    problems = []
    for rank in range(world):
        text = run.nccl_logs.get(rank, "")
        m = re.search(r"NET/Plugin: Loaded net plugin wirewise \(v(\d+)\)", text)
        if not m:
            problems.append("rank %d: NCCL's log has no 'NET/Plugin: Loaded net plugin wirewise' line" % rank)
        elif int(m.group(1)) != abi["net"]:
            problems.append("rank %d: net face v%s, NCCL %s binds v%s" % (rank, m.group(1), version, abi["net"]))
        if not re.search(r"Using network wirewise", text):
            problems.append("rank %d: NCCL did not use network wirewise" % rank)
    c.add(name, not problems, problems[0] if problems else
          "%d ranks loaded ncclNetPlugin_v%s and used network wirewise" % (world, abi["net"]))


def check_absent(run, c):
    name = "run e: without wirewise"
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    if not run.nccl_logs:
        return c.add(name, False, "no NCCL logs: NCCL did not start")
    loaded = [r for r, t in run.nccl_logs.items() if re.search(r"Plugin: (?:Using|Loaded)[^\n]*wirewise", t)]
    ok = not run.events and not loaded
    c.add(name, ok, "no adaptation log, NCCL's logs load no wirewise face" if ok else
          "%d adaptation-log events, NCCL loaded wirewise on ranks %s" % (len(run.events), loaded))


def check_observe(run, c):
    name = "run a: observe mode changes nothing"
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    modes = {e["settings"].get("WIREWISE_MODE") for e in run.of("plugin_start")}
    applied = sum(e.get("applied", 0) for e in run.of("comm_finalize", face="tuner"))
    calls = sum(e.get("collectives", 0) for e in run.of("comm_finalize", face="tuner"))
    ok = modes == {"observe"} and applied == 0 and calls > 0
    c.add(name, ok, "WIREWISE_MODE %s, %d getCollInfo calls, %d changed" % (sorted(modes, key=str), calls, applied))


def check_samples(run, world, sizes, abi, c):
    name = "run %s: GPU-timed samples" % run.name
    if run.skip or not abi["profiler"]:
        return c.add(name, False, run.skip or "this NCCL has no profiler interface wirewise exports", skip=True)
    rows = run.rows()
    missing = []
    for rank in range(world):
        for coll in COLLS:
            for s in sizes:
                if not any(r.get("coll") == coll and r["min_bytes"] <= s <= r["max_bytes"] and r["count"] > 0
                           and r["p50_us"] > 0 for rk, r in rows if rk == rank):
                    missing.append("rank %d %s %s" % (rank, coll, size_name(s)))
    samples = {e.get("rank"): e.get("samples", 0) for e in run.of("comm_finalize", face="profiler")}
    drops = {}
    for e in run.of("summary"):
        for k, v in e.get("drops", {}).items():
            if v:
                drops[k] = drops.get(k, 0) + v
    lost = drops.get("pool", 0) + drops.get("ring", 0)
    ok = not missing and len(samples) == world and min(samples.values() or [0]) > 0 and lost == 0
    per_coll = {coll: sum(r["count"] for _, r in rows if r.get("coll") == coll) for coll in COLLS}
    c.add(name, ok, "%s; samples per rank %s; drops %s%s" % (
        ", ".join("%s %d" % kv for kv in per_coll.items()), [samples.get(r, 0) for r in range(world)],
        drops or "none", "; no sample for " + ", ".join(missing[:3]) if missing else ""))


def rule_for(rules, coll, nbytes):
    for r in rules:
        hi = r.get("max_bytes", -1)
        if r["coll"] in (coll, "any") and r.get("min_bytes", 0) <= nbytes and (hi < 0 or nbytes <= hi):
            return r
    return None


def check_forced(run, world, sizes, abi, c):
    name = "run b: forced choices ran"
    if run.skip or not abi["profiler"]:
        return c.add(name, False, run.skip or "this NCCL has no profiler interface wirewise exports", skip=True)
    try:
        rules = json.load(open(os.path.join(run.dir, "table.json")))["rules"]
    except (OSError, ValueError, KeyError) as e:
        return c.add(name, False, "no readable b/table.json: %s" % e)
    wrong, seen = [], set()
    for rank, r in run.rows():
        rule = rule_for(rules, r["coll"], r["min_bytes"])
        if rule is None:
            continue
        if rule is not rule_for(rules, r["coll"], r["max_bytes"]):
            wrong.append("rank %s %s row %d-%d B straddles two rules" % (rank, r["coll"], r["min_bytes"],
                                                                             r["max_bytes"]))
            continue
        for key in ("algo", "proto"):
            if rule.get(key, "any") not in ("any", r[key]):
                wrong.append("rank %s %s %s ran %s/%s, the table forces %s/%s" % (
                    rank, r["coll"], size_name(r["min_bytes"]), r["algo"], r["proto"], rule.get("algo", "any"),
                    rule.get("proto", "any")))
                break
        seen |= {(rank, r["coll"], s) for s in sizes if r["min_bytes"] <= s <= r["max_bytes"]}
    unseen = [(rk, coll, s) for rk in range(world) for coll in COLLS for s in sizes
              if rule_for(rules, coll, s) and (rk, coll, s) not in seen]
    ok = not wrong and not unseen
    forced = ", ".join("%s %s-%s %s/%s" % (r["coll"], size_name(r.get("min_bytes", 0)),
                                           "" if r.get("max_bytes", -1) < 0 else size_name(r["max_bytes"]),
                                           r.get("algo", "any"), r.get("proto", "any")) for r in rules)
    c.add(name, ok, (wrong[0] + " (%d such rows)" % len(wrong)) if wrong else
          ("no Coll events for %s %s on rank %s" % (unseen[0][1], size_name(unseen[0][2]), unseen[0][0])) if unseen
          else "the profiler's Coll events show what the table forces on every rank: " + forced)


def check_cost_tables(runs, world, c):
    """getCollInfo changes a choice only through NCCL's cost table (it enables the wanted entry and leaves the
    rest), so `applied` > 0 on every rank means each got a real table with that entry enabled; NCCL's own
    choices the adaptive policy read from those tables (its prior) are listed from run c's adapt events."""
    name = "getCollInfo saw real cost tables"
    b = runs["b"]
    if b.skip:
        return c.add(name, False, b.skip, skip=True)
    fin = b.of("comm_finalize", face="tuner")
    applied = [e.get("applied", 0) for e in fin]
    kept = sum(e.get("kept", 0) for e in fin)
    prior = sorted({"%s %s: %s" % (e["coll"], size_name(e["min_bytes"]), e["from_nccl"])
                    for e in runs["c"].of("adapt") if e.get("from_nccl")})
    ok = len(applied) == world and min(applied or [0]) > 0
    c.add(name, ok, "run b: choices changed through the cost table per rank %s, entries disabled %d; run c, "
          "NCCL's own choices from its tables: %s" % (applied, kept, "; ".join(prior) or "none logged"))


def check_agreement(run, world, c, need_live=True):
    name = "run %s: verdicts agreed" % run.name
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    members = {}
    for e in run.of("comm_init", face="tuner"):
        members.setdefault(e["comm"], set()).add(e["pid"])
    problems, agreed, live = ([] if members else ["no communicator's tuner face in the log"]), 0, 0
    for comm, pids in sorted(members.items()):
        seen = {p: {} for p in pids}
        for e in run.of("verdict", comm=comm):
            if e["pid"] in seen:
                seen[e["pid"]][e["index"]] = (e.get("boundary"), e.get("next"), e.get("digest"), e.get("observe_only"))
        if len(pids) != world:
            problems.append("comm %s has %d tuner members, expected %d" % (comm, len(pids), world))
        empty = [p for p, v in seen.items() if not v]
        if empty:
            problems.append("comm %s: pid(s) %s received no verdict" % (comm, empty))
            continue
        common = set.intersection(*(set(v) for v in seen.values()))
        for i in sorted(common):
            if len({v[i] for v in seen.values()}) != 1:
                problems.append("comm %s verdict %d differs between processes: %s" % (
                    comm, i, sorted({v[i] for v in seen.values()}, key=str)))
                break
        agreed += len(common)
        live += sum(1 for i in common if not next(iter(seen.values()))[i][3])
    if need_live and agreed and not live:
        problems.append("every verdict was observe-only: nothing was agreed to run")
    c.add(name, not problems and agreed > 0, problems[0] if problems else
          "%d verdicts (%d in force) identical in boundary, next boundary and digest on all %d processes of %d "
          "communicator(s)" % (agreed, live, world, len(members)))


def check_adaptive(run, c):
    name = "run c: adaptive policy"
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    settings = [e["settings"] for e in run.of("plugin_start")]
    policy = {s.get("WIREWISE_POLICY") for s in settings}
    tables = [e for e in run.of("table", source="coordinator") if "index" in e]
    kinds = {}
    for e in run.of("adapt"):
        kinds[e.get("kind")] = kinds.get(e.get("kind"), 0) + 1
    probes = sum(len(e.get("probes", [])) for e in tables)
    ok = policy == {"adaptive"} and bool(tables or kinds)
    c.add(name, ok, "policy %s; coordinator tables %d (%d probes); adapt events %s" % (
        sorted(policy, key=str), len(tables), probes, kinds or "none"))


def check_cupti(run, world, abi, c):
    name = "run f: CUPTI kernels matched"
    if run.skip:
        return c.add(name, False, run.skip, skip=True)
    if abi["profiler"] is None or abi["profiler"] < 5:
        return c.add(name, False, "NCCL's profiler v4 reports no KernelLaunch events: kernels cannot be matched "
                     "to communicators (NCCL 2.28+)", skip=True)
    comms = {e["comm"] for e in run.of("comm_init")}
    latest = {}
    for e in run.of("cupti_kernels"):
        latest[e["pid"]] = e
    status = [s.get("reason", "") for e in run.of("link_health") for s in e.get("sources", [])
              if s.get("name") == "cupti" and not s.get("available")]
    problems = []
    if len(latest) != world:
        problems.append("%d of %d processes logged cupti_kernels%s" % (
            len(latest), world, " (cupti: %s)" % status[-1] if status else ""))
    colls = set()
    for pid, e in sorted(latest.items()):
        if e.get("nccl_kernels", 0) <= 0 or e.get("verified", 0) <= 0 or e.get("mismatched", 0) != 0:
            problems.append("pid %s: %d NCCL kernels, %d verified, %d mismatched" % (
                pid, e.get("nccl_kernels", 0), e.get("verified", 0), e.get("mismatched", 0)))
        for m in e.get("comms", []):
            if m.get("comm") not in comms:
                problems.append("pid %s: kernels credited to unknown communicator %s" % (pid, m.get("comm")))
            colls |= {x.get("coll") for x in m.get("colls", []) if x.get("kernels", 0) > 0}
    if latest and not set(COLLS) <= colls:
        problems.append("no kernels matched to %s" % ", ".join(sorted(set(COLLS) - colls)))
    tot = {k: sum(e.get(k, 0) for e in latest.values())
           for k in ("nccl_kernels", "verified", "unverified", "mismatched")}
    c.add(name, not problems, problems[0] if problems else
          "%d processes: %d NCCL kernels, %d verified against their launch's collective, %d unverified, "
          "%d mismatched; credited to %s" % (len(latest), tot["nccl_kernels"], tot["verified"], tot["unverified"],
                                             tot["mismatched"], ", ".join(sorted(colls))))


def median_times(run):
    """(coll, bytes) -> median over ranks and rounds of each rank's median time."""
    acc = {}
    for r in run.results.values():
        for x in r.get("results", []):
            acc.setdefault((x["coll"], x["bytes"]), []).append(x["median_us"])
    return {k: statistics.median(v) for k, v in acc.items()}


def check_overhead(runs, limit, c):
    name = "overhead: observe (a) against no wirewise (e)"
    a, e = runs["a"], runs["e"]
    if a.skip or e.skip:
        return c.add(name, False, a.skip or e.skip, skip=True)
    ta, te = median_times(a), median_times(e)
    keys = sorted(set(ta) & set(te), key=lambda k: (COLLS.index(k[0]) if k[0] in COLLS else 9, k[1]))
    if not keys:
        return c.add(name, False, "no size timed in both runs")
    print("     %-14s %10s %12s %12s %7s" % ("collective", "size", "e: none us", "a: obs. us", "a/e"))
    ratios = []
    for k in keys:
        ratio = ta[k] / te[k] if te[k] > 0 else float("inf")
        ratios.append(ratio)
        print("     %-14s %10s %12.1f %12.1f %7.3f" % (k[0], size_name(k[1]), te[k], ta[k], ratio))
    med = statistics.median(ratios)
    # One GPU time-sliced between 4 processes is noisy: the bound is on the median ratio, and generous.
    c.add(name, med <= limit, "median a/e %.3f over %d sizes (limit %.2f), worst %.3f" % (med, len(keys), limit,
                                                                                       max(ratios)))


def summarise_logs(out, runs):
    print("\nadaptation logs (events per run):")
    for name in WW_RUNS + ("e",):
        r = runs[name]
        kinds = {}
        for e in r.events:
            kinds[e["event"]] = kinds.get(e["event"], 0) + 1
        print("  %s: %d processes, %d events%s: %s" % (name, len(r.pids()), len(r.events),
                                                      ", %d malformed lines" % r.malformed if r.malformed else "",
                                                      ", ".join("%s %d" % kv for kv in sorted(kinds.items())) or "-"))
    path = os.path.join(out, "c", "log-summary.txt")
    if os.path.exists(path):
        print("\n`wirewise log summarize` of run c (%s):" % path)
        for line in open(path).read().splitlines()[:40]:
            print("  " + line)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    meta = read_kv(os.path.join(out, "meta.txt"))
    c = Checks()
    version = meta.get("nccl_version", "")
    vt = version_tuple(version)
    world = int(meta.get("world", "4"))
    sizes = [int(s) for s in meta.get("sizes", "").split(",") if s]
    dry = ", dry run: recorded" if meta.get("dry_run") == "1" else ""
    c.add("NCCL version", vt is not None, "NCCL %s (PyTorch %s)%s" % (version or "unknown",
                                                                      meta.get("torch_version", "?"), dry))
    if "plugin_load" in meta:  # the real path only: the dry run has no PyTorch to load it beside
        c.add("wirewise loads beside PyTorch", meta["plugin_load"] == "ok", meta["plugin_load"])
    abi = expected_abi(vt or (0, 0))
    check_probe(out, c)
    runs = {n: Run(out, n) for n in WW_RUNS + ("e",)}
    for n in ("e",) + WW_RUNS:
        check_workers(runs[n], world, sizes, c)
    if abi["tuner"] is None:
        c.add("wirewise faces", False, "NCCL %s binds no tuner interface wirewise exports (v2, NCCL 2.21+)" % version)
    else:
        for n in WW_RUNS:
            check_faces(runs[n], world, abi, version, c)
    check_net_face(runs["d"], world, abi, version, c)
    check_absent(runs["e"], c)
    check_observe(runs["a"], c)
    for n in ("a", "c"):
        check_samples(runs[n], world, sizes, abi, c)
    check_forced(runs["b"], world, sizes, abi, c)
    check_cost_tables(runs, world, c)
    for n in ("b", "c"):
        check_agreement(runs[n], world, c)
    check_adaptive(runs["c"], c)
    rc = read_kv(os.path.join(out, "c", "status.txt")).get("summarize_rc", "missing")
    c.add("wirewise log summarize (run c)", rc == "0", "exit %s, c/log-summary.txt" % rc)
    check_cupti(runs["f"], world, abi, c)
    check_overhead(runs, float(meta.get("overhead_limit", "1.5")), c)
    summarise_logs(out, runs)

    print("\n=== real NCCL check summary (NCCL %s, %s) ===" % (version or "?", meta.get("device", "?")))
    width = max(len(n) for n, _, _ in c.lines)
    for n, s, why in c.lines:
        print("%-4s  %-*s  %s" % (s, width, n, why if len(why) <= 110 else why[:107] + "..."))
    counts = {s: sum(1 for _, x, _ in c.lines if x == s) for s in ("PASS", "FAIL", "SKIP")}
    print("%d passed, %d failed, %d skipped" % (counts["PASS"], counts["FAIL"], counts["SKIP"]))
    with open(os.path.join(out, "failed.txt"), "w") as f:  # for scripts: the failed checks' names
        f.writelines(n + "\n" for n in c.failed())
    return 1 if c.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
