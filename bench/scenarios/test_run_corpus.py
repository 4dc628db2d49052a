#!/usr/bin/env python3
"""Checks run_corpus.py's figures on hand-made reports, and, given --wirewise, its runs end to end on two
hand-written scenarios (short runs) and its refusal without a generator.

Usage: test_run_corpus.py [--wirewise BIN]
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_corpus as rc  # noqa: E402


def report(default, oracle, wirewise, static=None, faults=(), steps=10, share=0.0, div=0, probe=None, captured=None):
    """A report with flat per-step times (each mode's comm time spread evenly), faults as (onset, end, latency,
    default step time, oracle step time during the fault)."""
    per = {k: [v / steps] * steps for k, v in (("nccl-default", default), ("oracle", oracle),
                                               ("wirewise", wirewise), ("static-best", static or default))}
    out_faults = []
    for i, (lo, hi, lat, d, o) in enumerate(faults):
        for s in range(lo, min(hi, steps)):
            per["nccl-default"][s], per["oracle"][s] = d, o
        out_faults.append({"index": i, "onset_step": lo, "end_step": hi, "latency_steps": lat})
    modes = {k: {"comm_time_us": sum(v), "step_comm_time_us": v} for k, v in per.items()}
    d, o, w = (modes[k]["comm_time_us"] for k in ("nccl-default", "oracle", "wirewise"))
    cap = captured if captured is not None else (1.0 if abs(d - o) <= 0.001 * d else (d - w) / (d - o))
    return {"scenario": "x", "steps": steps, "modes": modes, "captured_gain": cap, "faults": out_faults,
            "consistency": {"divergences": div}, "exploration_share": share, "probe_cost": probe}


def row(r, seed=1, group="heldout"):
    return rc.analyse({"id": f"gen-{seed}", "seed": seed, "group": group, "description": ""}, 0, 1.0, r)


class Figures(unittest.TestCase):
    def test_nearest_rank(self):
        self.assertEqual(rc.pct(list(range(1, 101)), 0.10), 10)
        self.assertEqual(rc.pct(list(range(1, 101)), 0.50), 50)
        self.assertEqual(rc.pct([3, 1, 2], 0.90), 3)
        self.assertTrue(math.isinf(rc.pct([1, math.inf], 0.90)))
        self.assertIsNone(rc.pct([], 0.5))

    def test_seed_lists_and_runs(self):
        self.assertEqual(rc.parse_seeds("1-3,7,9-10,2"), [1, 2, 3, 7, 9, 10])
        self.assertEqual(rc.runs_of([1, 2, 3, 7, 9, 10]), [[1, 3], [7, 1], [9, 2]])
        self.assertEqual(rc.half_of(4), "tuning")
        self.assertEqual(rc.half_of(5), "heldout")

    def test_fault_gain_is_over_the_faults_own_steps(self):
        # The oracle gains nothing overall before step 4, 2x during [4, 8); a fault after the run is left out.
        r = report(100, 100, 100, faults=[(4, 8, None, 20.0, 10.0), (2, 4, 3, 10.0, 10.0), (10, 12, None, 1, 1)])
        x = row(r)
        self.assertEqual(len(x["faults"]), 2)
        self.assertAlmostEqual(x["faults"][0]["oracle_gain"], 2.0)
        self.assertTrue(math.isinf(x["faults"][0]["latency"]))
        self.assertAlmostEqual(x["faults"][1]["oracle_gain"], 1.0)
        self.assertIn("adapt>25", x["misses"])  # never adapted, and the oracle gained there

    def test_summary_and_targets(self):
        rows = [row(report(100, 50, 50 + 50 * (1 - c)), seed=2 * k + 1) for k, c in enumerate(
            [1.0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.5])]  # one of ten below 0.7
        rows.append(row(report(100, 100, 102, share=0.03), seed=99))  # nothing to gain; 2% slower; explores 3%
        s = rc.summarise(rows)
        self.assertEqual(s["gainful"], 10)
        self.assertAlmostEqual(s["captured_share_ok"], 0.9)
        self.assertAlmostEqual(s["captured_gain_p10"], 0.5)
        self.assertAlmostEqual(s["captured_gain_median"], 0.9)
        self.assertAlmostEqual(s["worst_loss"][0], 0.02)
        self.assertEqual(s["worst_loss"][1], "gen-99")
        self.assertEqual(s["worst_loss_flat"][1], "gen-99")
        self.assertEqual(s["exploration_above"], 1)
        self.assertFalse(s["probe_reported"])
        t = {name: ok for name, ok, _ in rc.targets(s)}
        self.assertTrue(t["captured gain >= 0.7 in >= 90% (oracle gain >= 5%)"])
        self.assertFalse(t["captured gain p10 >= 0.6"])
        self.assertTrue(t["captured gain median >= 0.85"])
        self.assertFalse(t["never > 1% slower than nccl-default"])
        self.assertFalse(t["exploration <= 2% of comm time in every scenario"])
        self.assertFalse(t["probe inflation reported"])
        self.assertEqual(s["worst"][0], "gen-99")  # misses the most targets
        self.assertEqual(s["worst"][1], "gen-19")  # then the lowest captured gain

    def test_failed_and_diverged_runs(self):
        item = {"id": "gen-3", "seed": 3, "group": "heldout", "description": ""}
        self.assertFalse(rc.analyse(item, "timeout", 1.0, None)["ok"])
        x = rc.analyse(item, rc.SIMULATE_DIVERGED, 1.0, report(10, 10, 10, div=4))
        self.assertTrue(x["ok"])
        s = rc.summarise([x, rc.analyse(dict(item, id="gen-5"), 2, 1.0, None)])
        self.assertEqual(s["divergences"], 4)
        self.assertEqual([f["id"] for f in s["failures"]], ["gen-5"])
        self.assertFalse(dict((n, ok) for n, ok, _ in rc.targets(s))["0 divergences"])
        self.assertIsNone(rc.plain({"a": [math.inf, (1, 2.0)]})["a"][0])


class EndToEnd(unittest.TestCase):
    def setUp(self):
        if not os.environ.get("WW_TEST_WIREWISE"):
            self.skipTest("needs --wirewise")

    def run_corpus(self, *extra):
        return subprocess.run([sys.executable, rc.__file__, "--wirewise", os.environ["WW_TEST_WIREWISE"], *extra],
                              capture_output=True, text=True)

    def test_two_hand_written_scenarios(self):
        with tempfile.TemporaryDirectory() as tmp:
            gen = os.path.join(tmp, "gen")
            os.makedirs(gen)
            for seed, faults in ((1, [{"kind": "degrade", "link": "nic", "node": 1, "index": 2, "factor": 0.25,
                                       "from_step": 10, "to_step": 40}]), (2, [])):
                with open(os.path.join(gen, f"gen-{seed}.json"), "w") as f:
                    json.dump({"name": f"t{seed}", "description": f"test {seed}", "seed": seed,
                               "cluster": {"nodes": 2, "gpus_per_node": 8, "gpu": "h100-sxm"},
                               "comms": [{"name": "world", "ranks": "all"}],
                               "workload": {"steps": 60, "step": [{"comm": "world", "coll": "allreduce",
                                                                   "bytes": 26214400, "repeat": 4}]},
                               "faults": faults}, f)
            out = os.path.join(tmp, "out")
            p = self.run_corpus("--generated", gen, "--seeds", "1-2", "--out", out, "--scenarios", tmp)
            self.assertIn(p.returncode, (0,), p.stdout + p.stderr)
            self.assertIn("HELD-OUT", p.stdout)
            self.assertIn("targets (issue #16 item 3, held-out half)", p.stdout)
            with open(os.path.join(out, "summary.json")) as f:
                s = json.load(f)
            self.assertEqual([x["id"] for x in s["scenarios"]], ["gen-1", "gen-2"])
            self.assertEqual(s["groups"]["heldout"]["scenarios"], 1)
            self.assertEqual(s["groups"]["tuning"]["scenarios"], 1)
            self.assertTrue(all(x["ok"] and x["probe_cost"] is not None for x in s["scenarios"]))
            # A seed without a file is an error, not a silent gap.
            self.assertEqual(self.run_corpus("--generated", gen, "--seeds", "1-3", "--out", out).returncode, 1)

    def test_no_generator_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake = os.path.join(tmp, "wirewise")
            with open(fake, "w") as f:
                f.write("#!/bin/sh\necho 'SUBCOMMANDS:'; echo '  simulate   run a scenario'\n")
            os.chmod(fake, 0o755)
            p = subprocess.run([sys.executable, rc.__file__, "--wirewise", fake, "--limit", "2", "--out", tmp],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, rc.NO_GENERATOR)
            self.assertIn("no `scenario` command", p.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--wirewise":
        os.environ["WW_TEST_WIREWISE"] = sys.argv[2]
        del sys.argv[1:3]
    unittest.main()
