"""CSV and JSON transforms: combine, filter, select, sort, group and join into CSV or JSON.

The transformation is a small spec; :func:`transform` computes the expected output here, and
the very same function, shipped as a script, is the gold solution.
"""

from __future__ import annotations

import csv
import inspect
import io
import json
import random
from typing import Any

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, python, read, run, write
from envfactory.terminal.fs import FileSpec, file

CITIES = ("Lyon", "Oslo", "Porto", "Quito", "Turin", "Kyoto", "Perth", "Cork")
DEPTS = ("sales", "ops", "research", "legal", "support", "design")
COLUMNS = ["id", "name", "city", "dept", "amount", "date"]


def transform(spec: dict[str, Any], tables: dict[str, list[dict[str, str]]]) -> list[list[Any]]:
    """The output rows (header first) of ``spec`` over the input tables."""
    rows = [r for name in spec["inputs"] for r in tables[name]]
    if spec["drop_blank"]:
        rows = [r for r in rows if r["amount"].strip()]
    for col, op, value in spec["filters"]:
        if col == "amount":
            rows = [r for r in rows if eval_op(float(r[col] or 0), op, float(value))]
        else:
            rows = [r for r in rows if eval_op(r[col], op, value)]
    if spec["group"]:
        col, agg = spec["group"]
        groups: dict[str, list[float]] = {}
        for r in rows:
            groups.setdefault(r[col], []).append(float(r["amount"] or 0))
        out: list[list[Any]] = [[col, *(["manager"] if spec["join"] else []), agg]]
        for key in sorted(groups):
            v = groups[key]
            value = len(v) if agg == "count" else round(sum(v) if agg == "sum" else max(v), 2)
            out.append([key, *([spec["join"][key]] if spec["join"] else []), value])
        return out
    if spec["sort"]:
        col, desc = spec["sort"]
        num = col in ("amount", "id")
        rows = sorted(rows, key=lambda r: (float(r[col] or 0) if num else r[col], int(r["id"])))
        if desc:
            rows = sorted(rows, key=lambda r: float(r[col] or 0) if num else r[col], reverse=True)
    return [spec["columns"]] + [[r[c] for c in spec["columns"]] for r in rows]


def eval_op(a: Any, op: str, b: Any) -> bool:
    return bool(a == b if op == "==" else a >= b if op == ">=" else a <= b)


SCRIPT = (
    "from __future__ import annotations\n\nimport csv, json, os\n\nSPEC = __SPEC__\n\n"
    + inspect.getsource(eval_op)
    + "\n\n"
    + inspect.getsource(transform)
    + """

spec = json.loads(SPEC)
tables = {n: list(csv.DictReader(open(n, newline=""))) for n in spec["inputs"]}
result = transform(spec, tables)
os.makedirs(os.path.dirname(spec["out"]) or ".", exist_ok=True)
with open(spec["out"], "w", newline="") as f:
    if spec["format"] == "json":
        json.dump([dict(zip(result[0], row)) for row in result[1:]], f, indent=2)
    else:
        w = csv.writer(f)
        w.writerow(result[0])
        w.writerows([["%.2f" % v if isinstance(v, float) else v for v in r] for r in result[1:]])
"""
)


DROP_BLANK = """
import csv
rows = list(csv.reader(open("combined.csv", newline="")))
with open("clean.csv", "w", newline="") as f:
    csv.writer(f).writerows([rows[0]] + [r for r in rows[1:] if r[4].strip()])
"""


def _records(
    rng: random.Random, n: int, start: int, messy: bool, depts: list[str]
) -> list[dict[str, str]]:
    rows = []
    for i in range(n):
        first, last = rng.choice(WORDS).title(), rng.choice(WORDS).title()
        amount = f"{rng.randint(100, 99999) / 100:.2f}"
        rows.append(
            {
                "id": str(start + i),
                "name": f"{last}, {first}" if messy and rng.random() < 0.3 else f"{first} {last}",
                "city": rng.choice(CITIES),
                "dept": rng.choice(depts),
                "amount": "" if messy and rng.random() < 0.15 else amount,
                "date": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            }
        )
    return rows


def _text(rows: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def _filter(rng: random.Random, rows: list[dict[str, str]], kind: str) -> list[Any]:
    pick = rng.choice([r for r in rows if r["amount"]])
    if kind == "amount":
        return ["amount", rng.choice([">=", "<="]), pick["amount"]]
    if kind == "date":
        return ["date", rng.choice([">=", "<="]), pick["date"]]
    return [kind, "==", pick[kind]]


def _describe(f: list[Any]) -> str:
    col, op, value = f
    words = {
        "==": "is",
        ">=": "is at least" if col == "amount" else "is on or after",
        "<=": "is at most" if col == "amount" else "is on or before",
    }
    return f"{col} {words[op]} {value}"


class CsvTransform(Family):
    id = "term-csv-transform"
    name = "CSV / JSON transforms"
    description = "Combine, filter, select, sort, group and join CSV data into CSV or JSON."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        n_in = rng.randint(*((1, 1), (1, 2), (2, 2), (2, 3), (3, 4))[difficulty - 1])
        folder = rng.choice(["data", "exports", "input", "crm"])
        stem = rng.choice(["records", "sales", "orders", "entries"])
        depts = rng.sample(DEPTS, 3 + (difficulty >= 3))
        messy = difficulty >= 5
        tables: dict[str, list[dict[str, str]]] = {}
        start = rng.randint(100, 900)
        for k in range(n_in):
            rows = _records(rng, rng.randint(6, 8 + 2 * difficulty), start, messy, depts)
            start += len(rows) + rng.randint(1, 50)
            tables[f"{folder}/{stem}-{k + 1}.csv" if n_in > 1 else f"{folder}/{stem}.csv"] = rows
        everything = [r for t in tables.values() for r in t]
        n_filters = (1, rng.randint(1, 2), 1, rng.randint(1, 2), rng.randint(2, 3))[difficulty - 1]
        kinds = ["city", "dept"] if difficulty == 1 else ["city", "dept", "amount", "date"]
        filters = [_filter(rng, everything, k) for k in rng.sample(kinds, n_filters)]
        group = None
        if difficulty >= 3:
            group = [
                "dept" if difficulty == 4 else rng.choice(["dept", "city"]),
                rng.choice(["sum", "count", "max"]),
            ]
        join: dict[str, str] | None = None
        lookup = f"{folder}/managers.csv"
        if group and group[0] == "dept" and difficulty >= 4:
            join = {d: rng.choice(WORDS).title() for d in depts}
        columns = COLUMNS
        sort = None
        if difficulty == 2:
            columns = rng.sample(COLUMNS, rng.randint(3, 4))
            sort = [rng.choice(columns), rng.random() < 0.5]
        fmt = "csv" if difficulty in (1, 3) else rng.choice(["csv", "json"])
        out = f"out/{rng.choice(['result', 'report', 'summary', 'extract'])}.{fmt}"
        spec = {
            "inputs": list(tables),
            "drop_blank": messy,
            "filters": filters,
            "group": group,
            "join": join,
            "columns": columns,
            "sort": sort,
            "out": out,
            "format": fmt,
        }
        result = transform(spec, tables)
        if len(result) < 2:
            return self.generate(rng, difficulty)
        files: list[FileSpec] = [file(p, _text(rows)) for p, rows in tables.items()]
        ins = ", ".join(f"/work/{p}" for p in tables)
        parts = [f"Take the rows of {ins}" + (" (all of them, in that order)" if n_in > 1 else "")]
        if messy:
            parts.append("skip rows whose amount is empty")
        parts.append("keep only those where " + " and ".join(_describe(f) for f in filters))
        if group:
            what = {
                "sum": "the total amount",
                "count": "the number of rows",
                "max": "the largest amount",
            }[group[1]]
            parts.append(
                f"then for each {group[0]} (sorted by {group[0]}) give {what} as "
                f"'{group[1]}'" + (" (amounts with 2 decimals)" if group[1] != "count" else "")
            )
            if join:
                files.append(
                    file(lookup, "dept,manager\n" + "".join(f"{d},{m}\n" for d, m in join.items()))
                )
                parts.append(
                    f"with each dept's manager from /work/{lookup} as 'manager' "
                    "(between the dept and the value)"
                )
        else:
            parts.append("keep the columns " + ", ".join(columns) + " in that order")
            if sort:
                parts.append(
                    f"sort by {sort[0]}, {'largest' if sort[1] else 'smallest'} first"
                    " (ties: smaller id first)" * (not sort[1])
                )
        if fmt == "json":
            parts.append(f"Write /work/{out} as a JSON list of objects keyed by column name")
        else:
            parts.append(f"Write /work/{out} as CSV with a header row")
        instruction = "; ".join(parts[:-1]) + ". " + parts[-1] + "."
        if fmt == "json":
            value = [dict(zip(result[0], row, strict=True)) for row in result[1:]]
            test = CompletionTest(
                name=out, kind="json", args={"path": out, "value": value, "tol": 0.006}
            )
        else:
            test = CompletionTest(
                name=out, kind="csv", args={"path": out, "header": result[0], "rows": result[1:]}
            )
        gold = [run(f"head -n 3 {p}") for p in tables]
        if join:
            gold.append(read(lookup))
        gold_spec = dict(spec)
        if n_in > 1:  # combine the inputs first, then (messy data) drop the blank amounts
            first, names = next(iter(tables)), " ".join(tables)
            gold.append(
                run(f"head -n 1 {first} > combined.csv && tail -q -n +2 {names} >> combined.csv")
            )
            gold_spec["inputs"] = ["combined.csv"]
        if messy:
            gold.append(python(DROP_BLANK))
            gold_spec.update(inputs=["clean.csv"], drop_blank=False)
        gold += [
            write("transform.py", SCRIPT.replace("__SPEC__", repr(json.dumps(gold_spec)), 1)),
            run("python3 transform.py"),
            run(f"head -n 5 {out}"),
        ]
        shape = [f"filter:{f[0]}{f[1]}" for f in filters]
        shape += [f"group:{group[0]}:{group[1]}"] if group else [f"columns:{len(columns)}"]
        shape += [f"sort:{sort[0]}:{sort[1]}"] if sort else []
        shape += ["join"] * bool(join) + [f"out:{fmt}"]
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=[test],
            knobs={"inputs": n_in, "rows": len(everything), "filters": len(filters)},
            goals=["group" if group else "rows"],
            shape=shape,
        )
