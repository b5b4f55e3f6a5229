"""Log analysis into a report: counts, top offenders and latencies as JSON."""

from __future__ import annotations

import gzip
import random
from collections import Counter
from datetime import datetime, timedelta

from envfactory.contract.tasks import PlanStep
from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, read, run, write
from envfactory.terminal.fs import FileSpec, file

LEVELS = ("INFO", "WARN", "ERROR", "DEBUG")
FREQUENCY = (6, 8, 10, 11)  # cumulative weights of the levels: 6, 2, 2, 1
SERVICES = ("api", "auth", "billing", "search", "worker", "gateway", "mailer", "cache")
MESSAGES = ("request done", "cache miss", "retrying", "timeout upstream", "user login", "ok")
START = datetime(2024, 3, 1, 8, 0, 0)

GOLD = """
import json, os
source, out = {source!r}, {out!r}
with open(source) as f:
    lines = [ln.split() for ln in f if ln.strip()]
window = {window!r}
if window:
    lines = [p for p in lines if window[0] <= p[0] <= window[1]]
report = {{}}
levels = {{}}
for p in lines:
    levels[p[1]] = levels.get(p[1], 0) + 1
report["errors"] = levels.get("ERROR", 0)
keys = {keys!r}
if "by_level" in keys:
    report["by_level"] = levels
if "top_error_service" in keys:
    errs = {{}}
    for p in lines:
        if p[1] == "ERROR":
            errs[p[2]] = errs.get(p[2], 0) + 1
    report["top_error_service"] = max(sorted(errs), key=lambda s: errs[s])
lat = [int(p[-1].split("=")[1]) for p in lines]
if "slowest_ms" in keys:
    report["slowest_ms"] = max(lat)
if "mean_latency_ms" in keys:
    report["mean_latency_ms"] = round(sum(lat) / len(lat), 1)
os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
json.dump({{k: report[k] for k in keys}}, open(out, "w"), indent=2)
"""


class LogReport(Family):
    id = "term-log-report"
    name = "Log analysis into a report"
    description = "Read application logs (some compressed) and write a JSON report of them."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        n_files = rng.randint(*((1, 1), (1, 2), (2, 3), (3, 4), (3, 7))[difficulty - 1])
        per_file = rng.randint(10, 12 + 6 * difficulty)
        services = rng.sample(SERVICES, 3 + difficulty // 2)
        # Named with a word: with a few fixed names, a train task's analysis script (replayed)
        # often read a held-out task's folder and wrote its report.
        folder = f"{rng.choice(['logs', 'var/log', 'app/logs', 'srv/logs'])}/{rng.choice(WORDS)}"
        out = f"{rng.choice(['report', 'summary', 'stats', 'out/report'])}-{rng.choice(WORDS)}.json"
        t = START + timedelta(days=rng.randint(0, 300), minutes=rng.randint(0, 600))
        day = t.strftime("%Y-%m-%d")
        files: list[FileSpec] = []
        parsed: list[tuple[str, str, str, int]] = []
        gold: list[PlanStep] = [run(f"ls -la {folder}")]
        for i in range(n_files):
            lines = []
            for _ in range(per_file):
                t += timedelta(seconds=rng.randint(1, 300))
                level = rng.choices(LEVELS, cum_weights=FREQUENCY)[0]
                svc = rng.choice(services)
                ms = rng.randint(2, 2500)
                stamp = t.isoformat() + "Z"  # whole seconds: YYYY-MM-DDTHH:MM:SSZ
                parsed.append((stamp, level, svc, ms))
                lines.append(f"{stamp} {level} {svc} {rng.choice(MESSAGES)} latency_ms={ms}")
            text = "\n".join(lines) + "\n"
            name = f"{folder}/{services[i % len(services)]}-{i + 1}.log"
            if difficulty >= 4 and (i == 0 or rng.random() < 0.5):
                files.append(file(name + ".gz", gzip.compress(text.encode(), mtime=0)))
                gold.append(run(f"zcat {name}.gz | head -n 5"))
            else:
                files.append(file(name, text))
                gold.append(read(name))
        window: tuple[str, str] | None = None
        if difficulty >= 5:
            stamps = sorted(p[0] for p in parsed)
            a = rng.randint(0, len(stamps) // 3)
            b = rng.randint(2 * len(stamps) // 3, len(stamps) - 1)
            window = (stamps[a], stamps[b])
            parsed = [p for p in parsed if window[0] <= p[0] <= window[1]]
        keys = ["errors"]
        keys += ["by_level"] if difficulty >= 2 else []
        keys += ["top_error_service"] if difficulty >= 3 else []
        keys += ["slowest_ms"] if difficulty >= 4 else []
        keys += ["mean_latency_ms"] if difficulty >= 5 else []
        levels = Counter(p[1] for p in parsed)
        errs = Counter(p[2] for p in parsed if p[1] == "ERROR")
        lat = [p[3] for p in parsed]
        ranked = errs.most_common()
        tie = not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1])
        if "top_error_service" in keys and tie:
            return self.generate(rng, difficulty)  # the top service must be unambiguous
        values = {
            "errors": levels["ERROR"],
            "by_level": dict(levels),
            "top_error_service": ranked[0][0] if ranked else "",
            "slowest_ms": max(lat),
            "mean_latency_ms": round(sum(lat) / len(lat), 1),
        }
        explain = {
            "errors": '"errors": the number of ERROR lines',
            "by_level": '"by_level": an object counting the lines of each level present',
            "top_error_service": '"top_error_service": the service with the most ERROR lines',
            "slowest_ms": '"slowest_ms": the largest latency_ms',
            "mean_latency_ms": '"mean_latency_ms": the mean latency_ms rounded to 1 decimal',
        }
        where = f"the .log files in /work/{folder}" + (
            " (and the gzip-compressed .log.gz ones)" if difficulty >= 4 else ""
        )
        instruction = (
            f"Analyse the service logs of {day}: {where}. Each line is: timestamp level service "
            f"message latency_ms=N. Write /work/{out}, a JSON object with: "
            + "; ".join(explain[k] for k in keys)
            + "."
        )
        if window:
            instruction += (
                f" Count only lines with timestamps from {window[0]} to {window[1]} inclusive."
            )
        tests = [
            CompletionTest(
                name=f"report {k}",
                kind="json",
                args={"path": out, "key": [k], "value": values[k], "tol": 0.051},
            )
            for k in keys
        ]
        gold += [run(f"gunzip -k {f.path}") for f in files if f.path.endswith(".gz")]
        source = files[0].path
        if n_files > 1:  # one file of every line, the compressed ones unpacked first
            source = "all.log"
            gold.append(run(f"cat {folder}/*.log > all.log"))
        script = GOLD.format(source=source, out=out, window=window, keys=keys)
        gold += [write("analyze.py", script.strip() + "\n"), run("python3 analyze.py")]
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=tests,
            knobs={"files": n_files, "lines": n_files * per_file, "fields": len(keys)},
            goals=["log-report"],
        )
