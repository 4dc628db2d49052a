#!/usr/bin/env python3
"""Runs a corpus of generated scenarios, and the examples, through `wirewise simulate` and checks issue 16's
adaptation targets on the held-out half.

Usage: run_corpus.py --wirewise BIN [--out DIR] [--seeds LIST] [--limit N] [--only tuning|heldout|examples]
                     [--jobs N] [--timeout S] [--generated DIR] [--scenarios DIR] [--enforce]
                     [--plugin LIB] [--policy NAME] [--sync MODE] [--steps N]

Scenarios: `wirewise scenario generate --count N --seed S --out DIR` writes DIR/gen-<s>.json for seeds
S..S+N-1 (each depending only on its own seed); the runner asks it for every seed of --seeds (default 1-320)
into OUT/scenarios, or reads them from --generated DIR instead. Even seeds are the TUNING half, odd seeds the
HELD-OUT half; the example scenarios (--scenarios, default scenarios/) are reported as their own group and
counted in tuning. Each runs as `wirewise simulate FILE --report OUT/reports/NAME.json --quiet` (plus the
passthrough options), --jobs at a time, each within --timeout seconds.

Per group it prints: runs and failures; where the oracle beats nccl-default by >= 5% (default/oracle comm
time >= 1.05), captured gain p10/median, the share >= 0.7 and the share slower than static-best; the
exploration share; adaptation latency over the faults during which the oracle gains >= 5% over nccl-default
(per fault, from the per-step comm times over its active steps [onset_step, end_step); never adapted counts
as infinite); the worst loss vs nccl-default, overall and where nothing can be gained; divergences; the
probes' cost (report field probe_cost, docs/simulator.md); the 10 worst scenarios; and, for the held-out
half, PASS/FAIL per target. Percentiles are nearest-rank. Everything is simulated. OUT/summary.json holds the
same figures plus one row per scenario; OUT/summary.txt the table.

Exit status: 0; 1 when a run failed (non-zero exit, timeout, no report) or ranks diverged; with --enforce
also 1 when a held-out target fails; 4 when the generator command does not exist (CTest reports the test as
skipped); 2 for bad arguments.
"""
import argparse
import concurrent.futures
import glob
import json
import math
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_EXAMPLES = os.path.normpath(os.path.join(HERE, "..", "..", "scenarios"))
NO_GENERATOR = 4
SIMULATE_DIVERGED = 3  # `wirewise simulate`'s exit status when ranks diverged (docs/simulator.md)

GAIN_MIN = 1.05        # default/oracle comm time from which there is something to gain
CAPTURE_OK = 0.7       # a scenario's captured gain counted as good
LOSS_MAX = 0.01        # wirewise may be at most 1% slower than nccl-default
EXPLORE_MAX = 0.02     # exploration share of wirewise comm time
ADAPT_STEPS = 25       # adaptation latency target

GROUPS = ("examples", "tuning", "heldout")
GROUP_TITLE = {"examples": "examples (scenarios/, counted in tuning)", "tuning": "TUNING half (even seeds + examples)",
               "heldout": "HELD-OUT half (odd seeds)"}


class NoGenerator(Exception):
    pass


def parse_seeds(text):
    """'1-320', '5,7,9-12' -> sorted unique seeds."""
    seeds = set()
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise argparse.ArgumentTypeError(f"bad seed list element {part!r} (want N or N-M)")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise argparse.ArgumentTypeError(f"bad seed range {part!r}")
        seeds.update(range(lo, hi + 1))
    return sorted(seeds)


def half_of(seed):
    return "tuning" if seed % 2 == 0 else "heldout"


def runs_of(seeds):
    """Contiguous runs (start, count) of sorted seeds: one generator call each."""
    out = []
    for s in seeds:
        if out and out[-1][0] + out[-1][1] == s:
            out[-1][1] += 1
        else:
            out.append([s, 1])
    return out


def has_generator(wirewise):
    """True when `wirewise` lists a `scenario` subcommand (an unknown subcommand's --help is not reliable)."""
    try:
        proc = subprocess.run([wirewise, "--help"], capture_output=True, text=True, timeout=30)
    except OSError as e:
        raise NoGenerator(f"cannot run {wirewise}: {e}")
    return re.search(r"^\s+scenario\b", proc.stdout + proc.stderr, re.MULTILINE) is not None


def generate(wirewise, seeds, folder):
    if not has_generator(wirewise):
        raise NoGenerator(f"{wirewise} has no `scenario` command: `wirewise scenario generate --count N --seed S "
                          f"--out DIR` is needed to generate the corpus (or pass --generated DIR with gen-<seed>.json "
                          f"files, or --only examples)")
    os.makedirs(folder, exist_ok=True)
    for old in glob.glob(os.path.join(folder, "gen-*.json")):
        os.remove(old)  # a stale file must not pass for a generated one
    for start, count in runs_of(seeds):
        cmd = [wirewise, "scenario", "generate", "--count", str(count), "--seed", str(start), "--out", folder]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise NoGenerator(f"{' '.join(cmd)} failed (exit status {proc.returncode}): "
                              f"{(proc.stderr or proc.stdout).strip()[:2000]}")


def load_description(path):
    try:
        with open(path) as f:
            return json.load(f).get("description", "")
    except (OSError, ValueError):
        return ""


def run_one(args, item):
    base = os.path.join(args.out, "reports", item["id"])
    for ext in (".json", ".txt"):
        if os.path.exists(base + ext):
            os.remove(base + ext)
    cmd = [args.wirewise, "simulate", item["path"], "--report", base + ".json", "--quiet"]
    for opt in ("plugin", "policy", "sync", "steps"):
        if getattr(args, opt) is not None:
            cmd += ["--" + opt, str(getattr(args, opt))]
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        rc, text = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        text = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
    wall = time.monotonic() - t0
    if text:
        with open(base + ".txt", "w") as f:
            f.write(text)
    report = None
    if rc != "timeout" and os.path.exists(base + ".json"):
        try:
            with open(base + ".json") as f:
                report = json.load(f)
        except ValueError:
            report = None
    return item, rc, wall, report, text


def pct(values, q):
    """Nearest-rank q-quantile; None when empty. inf sorts last."""
    if not values:
        return None
    v = sorted(values)
    return v[min(len(v), max(1, math.ceil(q * len(v)))) - 1]


def fault_rows(r):
    """Per fault inside the run: the oracle's gain over nccl-default during it, and the latency (inf: never)."""
    steps = r["steps"]
    d = r["modes"]["nccl-default"]["step_comm_time_us"]
    o = r["modes"]["oracle"]["step_comm_time_us"]
    out = []
    for f in r["faults"]:
        lo, hi = f["onset_step"], min(f.get("end_step", steps), steps)
        if lo >= steps or hi <= lo:
            continue
        sd, so = sum(d[lo:hi]), sum(o[lo:hi])
        gain = sd / so if so > 0 else 1.0
        lat = f["latency_steps"]
        out.append({"index": f["index"], "label": f.get("label", ""), "onset": lo, "end": hi, "oracle_gain": gain,
                    "latency": math.inf if lat is None else lat})
    return out


def analyse(item, rc, wall, r):
    row = {"id": item["id"], "group": item["group"], "seed": item.get("seed"), "description": item["description"],
           "exit_status": rc, "wall_s": round(wall, 3),
           # simulate exits 3 when ranks diverged: the run itself is complete and its report counts
           "ok": rc in (0, SIMULATE_DIVERGED) and r is not None}
    if r is None:
        return row
    m = {k: r["modes"][k]["comm_time_us"] for k in ("nccl-default", "static-best", "oracle", "wirewise")}
    d, s, o, w = m["nccl-default"], m["static-best"], m["oracle"], m["wirewise"]
    pc = r.get("probe_cost")
    row.update({
        "scenario": r["scenario"], "steps": r["steps"], "comm_time_us": m,
        "oracle_gain": d / o if o > 0 else 1.0,
        "captured_gain": r["captured_gain"],
        "loss_vs_default": w / d - 1 if d > 0 else 0.0,
        "slower_than_static": w > s,
        "exploration_share": r.get("exploration_share", 0.0),
        "divergences": r["consistency"]["divergences"],
        "faults": fault_rows(r),
        "probe_cost": pc,
        "adaptations": r.get("adaptations", {}),
        "run_time_s": r.get("run_time_s"),
        "plugin_note": r.get("plugin", {}).get("note", ""),
    })
    row["gainful"] = row["oracle_gain"] >= GAIN_MIN
    row["misses"] = misses(row)
    return row


def misses(row):
    """The held-out targets this one scenario fails (a per-scenario view of them, for ranking)."""
    out = []
    if row["divergences"]:
        out.append("divergence")
    if row["gainful"] and row["captured_gain"] < CAPTURE_OK:
        out.append(f"captured<{CAPTURE_OK}")
    if row["loss_vs_default"] > LOSS_MAX:
        out.append("loss>1%")
    if row["exploration_share"] > EXPLORE_MAX:
        out.append("explore>2%")
    if any(f["oracle_gain"] >= GAIN_MIN and f["latency"] > ADAPT_STEPS for f in row["faults"]):
        out.append(f"adapt>{ADAPT_STEPS}")
    return out


def badness(row):
    """Sort key, worst first: failed runs, then most targets missed, lowest captured gain, worst loss."""
    if not row["ok"]:
        return (0, 0, 0.0, 0.0)
    cap = row["captured_gain"] if row["gainful"] else 1.0
    return (1, -len(row["misses"]), cap, -row["loss_vs_default"])


def summarise(rows):
    ok = [x for x in rows if x["ok"]]
    gainful = [x for x in ok if x["gainful"]]
    flat = [x for x in ok if not x["gainful"]]
    caps = [x["captured_gain"] for x in gainful]
    shares = [x["exploration_share"] for x in ok]
    faults = [(x["id"], f) for x in ok for f in x["faults"] if f["oracle_gain"] >= GAIN_MIN]
    lats = [f["latency"] for _, f in faults]
    priced = [x for x in ok if x.get("probe_cost") is not None]
    infl = [(x["probe_cost"]["step_inflation_max"], x["id"]) for x in priced
            if x["probe_cost"].get("step_inflation_max") is not None]
    ratio = [(x["probe_cost"]["ratio_max"], x["id"]) for x in priced if x["probe_cost"].get("ratio_max") is not None]

    def worst(items, key):
        return max(((key(x), x["id"]) for x in items), default=(None, None))

    s = {
        "scenarios": len(rows),
        "failures": [{"id": x["id"], "seed": x["seed"], "exit_status": x["exit_status"]} for x in rows if not x["ok"]],
        "gainful": len(gainful),
        "captured_gain_p10": pct(caps, 0.10),
        "captured_gain_median": pct(caps, 0.50),
        "captured_share_ok": sum(c >= CAPTURE_OK for c in caps) / len(caps) if caps else None,
        "slower_than_static_share": sum(x["slower_than_static"] for x in gainful) / len(gainful) if gainful else None,
        "exploration_median": pct(shares, 0.50),
        "exploration_max": max(shares, default=None),
        "exploration_above": sum(v > EXPLORE_MAX for v in shares),
        "gainful_faults": len(faults),
        "latency_p50": pct(lats, 0.50),
        "latency_p90": pct(lats, 0.90),
        "never_adapted": sum(math.isinf(v) for v in lats),
        "adapted_share": sum(v <= ADAPT_STEPS for v in lats) / len(lats) if lats else None,
        "worst_loss": worst(ok, lambda x: x["loss_vs_default"]),
        "worst_loss_flat": worst(flat, lambda x: x["loss_vs_default"]),
        "divergences": sum(x["divergences"] for x in ok),
        "probe_priced": len(priced),
        "probe_reported": len(priced) == len(ok),
        "probe_inflation_p99": pct([v for v, _ in infl], 0.99),
        "probe_inflation_max": max(infl, default=(None, None)),
        "probe_ratio_max": max(ratio, default=(None, None)),
        "worst": [x["id"] for x in sorted(rows, key=badness)[:10]],
    }
    return s


def targets(s):
    """Issue 16 item 3, as (name, passed, figure). None figures (nothing to measure) pass vacuously."""
    def ge(v, lim):
        return v is None or v >= lim

    loss = s["worst_loss"][0]
    return [
        ("0 divergences", s["divergences"] == 0, f"{s['divergences']}"),
        ("no failed runs", not s["failures"], f"{len(s['failures'])}"),
        ("captured gain >= 0.7 in >= 90% (oracle gain >= 5%)", ge(s["captured_share_ok"], 0.90),
         fmt_pct(s["captured_share_ok"])),
        ("captured gain median >= 0.85", ge(s["captured_gain_median"], 0.85), fmt(s["captured_gain_median"])),
        ("captured gain p10 >= 0.6", ge(s["captured_gain_p10"], 0.6), fmt(s["captured_gain_p10"])),
        ("never > 1% slower than nccl-default", loss is None or loss <= LOSS_MAX, fmt_signed_pct(loss)),
        ("exploration <= 2% of comm time in every scenario", s["exploration_above"] == 0,
         f"max {fmt_pct(s['exploration_max'])}"),
        ("adapted within 25 steps for >= 90% of faults (oracle gain >= 5%)", ge(s["adapted_share"], 0.90),
         fmt_pct(s["adapted_share"])),
        ("probe inflation reported", s["probe_reported"],
         f"p99 {fmt(s['probe_inflation_p99'])} max {fmt(s['probe_inflation_max'][0])}"),
    ]


def fmt(v, digits=3):
    if v is None:
        return "n/a"
    if isinstance(v, float) and math.isinf(v):
        return "never"
    return f"{v:.{digits}f}" if isinstance(v, float) else str(v)


def fmt_pct(v):
    return "n/a" if v is None else f"{v * 100:.1f}%"


def fmt_signed_pct(v):
    return "n/a" if v is None else f"{v * 100:+.2f}%"


def row_line(x):
    name = x["id"]
    if not x["ok"]:
        return f"  {name:<26} FAILED (exit status {x['exit_status']}): {x['description'][:70]}"
    lat = " ".join(fmt(f["latency"], 0) + ("" if f["oracle_gain"] >= GAIN_MIN else "*") for f in x["faults"]) or "-"
    pc = x.get("probe_cost") or {}
    return (f"  {name:<26} gain {x['oracle_gain']:5.3f} capt {x['captured_gain']:6.3f} "
            f"loss {x['loss_vs_default'] * 100:+6.2f}% expl {x['exploration_share'] * 100:5.2f}% "
            f"infl {fmt(pc.get('step_inflation_max'))} lat {lat:<12} misses {','.join(x['misses']) or '-'}\n"
            f"  {'':<26} {x['description'][:110]}")


def group_text(name, rows, s, by_id, with_targets):
    out = [f"== {GROUP_TITLE[name]}: {s['scenarios']} scenarios ==",
           f"failures: {len(s['failures'])}" + (" (" + ", ".join(
               f"{f['id']} [{f['exit_status']}]" for f in s["failures"]) + ")" if s["failures"] else "")]
    out.append(f"oracle gains >= 5% in {s['gainful']}: captured gain p10 {fmt(s['captured_gain_p10'])}, median "
               f"{fmt(s['captured_gain_median'])}, >= 0.7 in {fmt_pct(s['captured_share_ok'])}; slower than "
               f"static-best in {fmt_pct(s['slower_than_static_share'])}")
    out.append(f"exploration share: median {fmt_pct(s['exploration_median'])}, max {fmt_pct(s['exploration_max'])}, "
               f"above 2% in {s['exploration_above']}")
    out.append(f"adaptation over {s['gainful_faults']} faults with oracle gain >= 5%: p50 {fmt(s['latency_p50'], 0)}, "
               f"p90 {fmt(s['latency_p90'], 0)} steps, never {s['never_adapted']}; within 25 steps "
               f"{fmt_pct(s['adapted_share'])}")
    wl, wf = s["worst_loss"], s["worst_loss_flat"]
    out.append(f"worst loss vs nccl-default: {fmt_signed_pct(wl[0])} ({wl[1] or '-'}); where nothing to gain "
               f"{fmt_signed_pct(wf[0])} ({wf[1] or '-'})")
    out.append(f"divergences: {s['divergences']}")
    pi, pr = s["probe_inflation_max"], s["probe_ratio_max"]
    out.append(f"probe step inflation (worst step of each scenario): p99 {fmt(s['probe_inflation_p99'])}, max "
               f"{fmt(pi[0])} ({pi[1] or '-'}); probe/incumbent time ratio max {fmt(pr[0])} ({pr[1] or '-'}); "
               f"priced in {s['probe_priced']} of {s['scenarios'] - len(s['failures'])} reports")
    out.append(f"worst {min(10, len(s['worst']))} (latency * = fault without oracle gain >= 5%):")
    out += [row_line(by_id[i]) for i in s["worst"]]
    if with_targets:
        out.append("targets (issue #16 item 3, held-out half):")
        out += [f"  {'PASS' if ok else 'FAIL'}  {n:<66} {v}" for n, ok, v in targets(s)]
    return "\n".join(out) + "\n"


def plain(v):
    """JSON-safe: infinite latencies (never adapted) become null, tuples lists."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wirewise", required=True, help="the wirewise program")
    ap.add_argument("--out", default=os.path.join("bench-out", "corpus"), help="output folder")
    ap.add_argument("--seeds", type=parse_seeds, default=parse_seeds("1-320"), help="generator seeds (default 1-320)")
    ap.add_argument("--limit", type=int, help="only the first N seeds of the list (after --only)")
    ap.add_argument("--only", choices=GROUPS, help="one group: tuning (even seeds + examples), heldout, examples")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at a time (default: CPUs)")
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds per scenario (default 180)")
    ap.add_argument("--generated", help="read gen-<seed>.json from here instead of running the generator")
    ap.add_argument("--scenarios", default=DEFAULT_EXAMPLES, help="the example scenarios (default: scenarios/)")
    ap.add_argument("--enforce", action="store_true", help="exit 1 when a held-out target fails")
    ap.add_argument("--plugin", help="tuner library (default: the one next to wirewise)")
    ap.add_argument("--policy", help="WIREWISE_POLICY (default: the simulator's)")
    ap.add_argument("--sync", help="WIREWISE_SYNC (default: the simulator's)")
    ap.add_argument("--steps", type=int, help="shorten every run (default: in full)")
    args = ap.parse_args()
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")

    seeds = [] if args.only == "examples" else [s for s in args.seeds if args.only in (None, half_of(s))]
    if args.limit is not None:
        seeds = seeds[:args.limit]
    os.makedirs(os.path.join(args.out, "reports"), exist_ok=True)
    folder = args.generated or os.path.join(args.out, "scenarios")
    t_start = time.monotonic()
    if seeds and not args.generated:
        try:
            generate(args.wirewise, seeds, folder)
        except NoGenerator as e:
            print(f"run_corpus: {e}", file=sys.stderr)
            return NO_GENERATOR
    t_gen = time.monotonic() - t_start

    items = []
    missing = []
    for s in seeds:
        path = os.path.join(folder, f"gen-{s}.json")
        if not os.path.exists(path):
            missing.append(s)
            continue
        items.append({"id": f"gen-{s}", "seed": s, "group": half_of(s), "path": path,
                      "description": load_description(path)})
    if missing:
        print(f"run_corpus: no gen-<seed>.json in {folder} for seeds {missing[:20]}"
              f"{' ...' if len(missing) > 20 else ''}", file=sys.stderr)
        return 1
    if args.only in (None, "tuning", "examples"):
        for path in sorted(glob.glob(os.path.join(args.scenarios, "*.json"))):
            name = os.path.splitext(os.path.basename(path))[0]
            items.append({"id": name, "seed": None, "group": "examples", "path": path,
                          "description": load_description(path)})
    if not items:
        print("run_corpus: nothing to run", file=sys.stderr)
        return 2

    rows = []
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, args, it) for it in items]
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            item, rc, wall, report, text = fut.result()
            rows.append(analyse(item, rc, wall, report))
            if rc not in (0, SIMULATE_DIVERGED) or report is None:
                tail = text.strip().splitlines()[-1] if text.strip() else ""
                print(f"run_corpus: {item['id']} failed (exit status {rc}): {tail}", file=sys.stderr)
            if sys.stderr.isatty() or n % 25 == 0:
                print(f"run_corpus: {n}/{len(items)} done, {time.monotonic() - t0:.0f} s", file=sys.stderr)
    t_run = time.monotonic() - t0
    order = {it["id"]: k for k, it in enumerate(items)}
    rows.sort(key=lambda x: order[x["id"]])
    by_id = {x["id"]: x for x in rows}

    members = {"examples": [x for x in rows if x["group"] == "examples"],
               "tuning": [x for x in rows if x["group"] in ("examples", "tuning")],
               "heldout": [x for x in rows if x["group"] == "heldout"]}
    summaries = {g: summarise(members[g]) for g in GROUPS if members[g]}
    cpu = sum(x["wall_s"] for x in rows)
    head = (f"simulated: corpus of {len(rows)} scenarios ({len(members['tuning']) - len(members['examples'])} tuning, "
            f"{len(members['heldout'])} held-out, {len(members['examples'])} examples)"
            + (f", {args.steps} steps each" if args.steps else ", full runs") +
            f"; {args.jobs} jobs; generation {t_gen:.1f} s, runs {t_run:.1f} s wall "
            f"({cpu / max(1, len(rows)):.2f} s per scenario, max {max(x['wall_s'] for x in rows):.1f} s)\n")
    text = head + "\n".join(group_text(g, members[g], summaries[g], by_id, g == "heldout") for g in summaries)
    print(text, end="")
    with open(os.path.join(args.out, "summary.txt"), "w") as f:
        f.write(text)
    result = {"simulated": True, "seeds": seeds, "options": {k: getattr(args, k) for k in (
                  "policy", "sync", "steps", "plugin", "only", "limit", "jobs", "timeout")},
              "timing_s": {"generate": t_gen, "runs": t_run, "scenario_sum": cpu},
              "groups": summaries,
              "targets": {g: [{"target": n, "pass": ok, "figure": v} for n, ok, v in targets(summaries[g])]
                          for g in summaries},
              "scenarios": rows}
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(plain(result), f, indent=1, allow_nan=False)
        f.write("\n")
    print(f"reports in {os.path.abspath(os.path.join(args.out, 'reports'))}; summary.json beside them")

    bad = any(not x["ok"] for x in rows) or any(x.get("divergences") for x in rows if x["ok"])
    missed = "heldout" in summaries and not all(ok for _, ok, _ in targets(summaries["heldout"]))
    if missed:
        print("run_corpus: held-out targets missed" + (" (enforced)" if args.enforce else " (not enforced)"))
    return 1 if bad or (missed and args.enforce) else 0


if __name__ == "__main__":
    sys.exit(main())
