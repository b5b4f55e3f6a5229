"""CSV and JSON transforms: filter, select, sort, group, join and convert."""

from __future__ import annotations

import csv
import io
import random
from collections import defaultdict

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, python
from envfactory.terminal.fs import file

CITIES = ("Lyon", "Oslo", "Porto", "Quito", "Turin", "Kyoto", "Perth", "Cork")
DEPTS = ("sales", "ops", "research", "legal", "support", "design")
COLUMNS = ["id", "name", "city", "dept", "amount", "date"]

GOLD = """
import csv, json
rows = list(csv.DictReader(open("data/records.csv", newline="")))
spec = {spec!r}
rows = [r for r in rows if r["amount"].strip()]
if spec.get("city"):
    rows = [r for r in rows if r["city"] == spec["city"]]
if spec.get("since"):
    rows = [r for r in rows if r["date"] >= spec["since"]]
if spec["mode"] == "rows":
    if spec.get("sort"):
        rows.sort(key=lambda r: (-float(r["amount"]), int(r["id"])))
    cols = spec["columns"]
    with open(spec["out"], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        w.writerows([[r[c] for c in cols] for r in rows])
else:
    totals = {{}}
    for r in rows:
        totals[r["dept"]] = totals.get(r["dept"], 0.0) + float(r["amount"])
    if spec["mode"] == "group":
        with open(spec["out"], "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["dept", "total"])
            w.writerows([[d, "%.2f" % totals[d]] for d in sorted(totals)])
    else:
        managers = {{r["dept"]: r["manager"] for r in csv.DictReader(open("data/depts.csv"))}}
        out = [{{"dept": d, "manager": managers[d], "total": round(totals[d], 2)}}
               for d in sorted(totals)]
        json.dump(out, open(spec["out"], "w"), indent=2)
"""


class CsvTransform(Family):
    id = "term-csv-transform"
    name = "CSV / JSON transforms"
    description = "Filter, select, sort, group and join CSV data into CSV or JSON outputs."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        n = (10, 15, 20, 25, 30)[difficulty - 1]
        depts = rng.sample(DEPTS, 3 + (difficulty >= 3))
        rows = []
        for i in range(n):
            name = f"{rng.choice(WORDS).title()} {rng.choice(WORDS).title()}"
            if difficulty >= 5 and rng.random() < 0.3:
                name = f"{rng.choice(WORDS).title()}, {rng.choice(WORDS).title()}"
            amount = f"{rng.randint(100, 99999) / 100:.2f}"
            if difficulty >= 5 and rng.random() < 0.15:
                amount = ""
            date = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            rows.append(
                {
                    "id": str(1000 + i * rng.randint(1, 3) + i),
                    "name": name,
                    "city": rng.choice(CITIES[: 3 + difficulty]),
                    "dept": rng.choice(depts),
                    "amount": amount,
                    "date": date,
                }
            )
        buf = io.StringIO()
        writer = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        files = [file("data/records.csv", buf.getvalue())]
        valid = [r for r in rows if r["amount"]]
        spec: dict[str, object] = {}
        if difficulty <= 2:
            city = rng.choice(sorted({r["city"] for r in valid}))
            cols = COLUMNS if difficulty == 1 else ["id", "name", "amount"]
            keep = [r for r in valid if r["city"] == city]
            if difficulty == 2:
                keep.sort(key=lambda r: (-float(r["amount"]), int(r["id"])))
            spec = {"mode": "rows", "city": city, "columns": cols, "out": "out/filtered.csv"}
            spec["sort"] = difficulty == 2
            ask = f"keep only the rows whose city is {city}"
            if difficulty == 2:
                ask += ", keep only the columns id, name, amount (in that order), and sort by "
                ask += "amount from largest to smallest (ties by id, smallest first)"
            else:
                ask += ", with all the columns in the same order"
            instruction = f"From /work/data/records.csv, {ask}. Write the result with its "
            instruction += "header row to /work/out/filtered.csv."
            tests = [
                _csv_test("out/filtered.csv", cols, [[r[c] for c in cols] for r in keep]),
            ]
        else:
            since = None
            if difficulty >= 5:
                since = f"2024-{rng.randint(3, 7):02d}-01"
                valid = [r for r in valid if r["date"] >= since]
            totals: dict[str, float] = defaultdict(float)
            for r in valid:
                totals[r["dept"]] += float(r["amount"])
            scope = "every row" + (f" dated {since} or later" if since else "")
            scope += " (skip rows with an empty amount)" if difficulty >= 5 else ""
            if difficulty == 3:
                spec = {"mode": "group", "out": "out/summary.csv"}
                instruction = (
                    "From /work/data/records.csv, total the amount of each dept over "
                    f"{scope}. Write /work/out/summary.csv with the header dept,total and one "
                    "row per dept sorted by dept name, totals with 2 decimals."
                )
                want = [[d, f"{totals[d]:.2f}"] for d in sorted(totals)]
                tests = [_csv_test("out/summary.csv", ["dept", "total"], want)]
            else:
                managers = {d: f"{rng.choice(WORDS).title()}" for d in depts}
                depts_csv = "dept,manager\n" + "".join(f"{d},{m}\n" for d, m in managers.items())
                files.append(file("data/depts.csv", depts_csv))
                spec = {"mode": "join", "out": "out/report.json", "since": since}
                instruction = (
                    "From /work/data/records.csv, total the amount of each dept over "
                    f"{scope}, and look up each dept's manager in /work/data/depts.csv. Write "
                    "/work/out/report.json: a JSON list of objects "
                    '{"dept": ..., "manager": ..., "total": ...} sorted by dept, totals '
                    "rounded to 2 decimals."
                )
                want_json = [
                    {"dept": d, "manager": managers[d], "total": round(totals[d], 2)}
                    for d in sorted(totals)
                ]
                tests = [
                    CompletionTest(
                        name="out/report.json",
                        kind="json",
                        args={"path": "out/report.json", "value": want_json, "tol": 0.006},
                    )
                ]
            spec["since"] = since
        gold = python("import os\nos.makedirs('out', exist_ok=True)\n" + GOLD.format(spec=spec))
        return Draft(
            instruction=instruction,
            files=files,
            gold=[gold],
            tests=tests,
            knobs={"rows": n},
            goals=[str(spec["mode"])],
        )


def _csv_test(path: str, header: list[str], rows: list[list[str]]) -> CompletionTest:
    return CompletionTest(
        name=path, kind="csv", args={"path": path, "header": header, "rows": rows}
    )
