"""A small data pipeline with a Makefile: repair it so ``make`` builds the report correctly."""

from __future__ import annotations

import random

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, write
from envfactory.terminal.fs import FileSpec, file

# The pipeline's steps are awk programs: quick to start, present on every Linux system.
CLEAN = """# Keep the header and the rows whose amount (2nd field) is a number.
BEGIN { FS = "," }
NR == 1 || $2 ~ /^-?[0-9]+(\\.[0-9]+)?$/ { print }
"""
REPORT = """# Summarise cleaned CSVs: how many files, rows, and the total amount.
BEGIN { FS = "," }
FNR == 1 { files++; next }
{ rows++; total += $2 }
END { printf "files: %d\\nrows: %d\\ntotal: %.2f\\n", files, rows, total }
"""
HEAD = "DATA := $(wildcard data/*.csv)\n"
CLEANED = "CLEANED := $(patsubst data/%.csv,build/%.clean.csv,$(DATA))\n\nall: out/report.txt\n\n"
RULE_CLEAN = (
    "build/%.clean.csv: data/%.csv scripts/clean.awk\n"
    "\t@mkdir -p build\n\tawk -f scripts/clean.awk $< > $@\n\n"
)
RULE_REPORT = (
    "out/report.txt: $(CLEANED) scripts/report.awk\n"
    "\t@mkdir -p out\n\tawk -f scripts/report.awk $(CLEANED) > $@\n\n"
)
RULE_CLEAN_ALL = "clean:\n\trm -rf build out\n\n"
PHONY = ".PHONY: all clean\n"
BUILD = "rm -rf build out; make >/dev/null 2>&1; cat out/report.txt"


def _csv(rng: random.Random, n: int) -> tuple[str, list[float]]:
    lines, good = ["name,amount"], []
    for _ in range(n):
        if rng.random() < 0.2:
            lines.append(f"{rng.choice(WORDS)},{rng.choice(['', 'n/a', 'TBD'])}")
        else:
            v = rng.randint(100, 99999) / 100
            good.append(v)
            lines.append(f"{rng.choice(WORDS)},{v:.2f}")
    return "\n".join(lines) + "\n", good


def _report(tables: list[list[float]]) -> str:
    rows = [v for t in tables for v in t]
    return f"files: {len(tables)}\nrows: {len(rows)}\ntotal: {sum(rows):.2f}\n"


class MakePipeline(Family):
    id = "term-make-pipeline"
    name = "A small data pipeline with a Makefile"
    description = "Repair a Makefile so that make builds a report from data files, and only then."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        names = sorted(rng.sample(WORDS, 2 + difficulty // 2))
        data = {n: _csv(rng, rng.randint(3, 6)) for n in names}
        good = HEAD + CLEANED + RULE_CLEAN + RULE_REPORT + RULE_CLEAN_ALL + PHONY
        asks = []
        if difficulty in (1, 4):
            broken = good.replace("\tawk -f scripts/clean.awk", "    awk -f scripts/clean.awk")
            asks.append("`make` stops with an error")
        elif difficulty == 2:
            broken = good.replace(
                "scripts/report.awk $(CLEANED) >", "scripts/summary.awk $(CLEANED) >"
            )
            asks.append("`make` fails")
        else:
            broken = good.replace(RULE_CLEAN, "")
            asks.append(
                "the rule that makes build/NAME.clean.csv from data/NAME.csv (by running "
                "awk -f scripts/clean.awk data/NAME.csv > build/NAME.clean.csv) is missing"
            )
        if difficulty >= 4:
            listed = " ".join(f"data/{n}.csv" for n in names)
            broken = broken.replace(HEAD, f"DATA := {listed}\n").replace(
                "out/report.txt: $(CLEANED) scripts/report.awk",
                "out/report.txt: scripts/report.awk",
            )
            asks.append(
                "it must also use every data/*.csv there is (including files added later) and "
                "rebuild the report whenever a data file changes"
            )
        if difficulty >= 5:
            broken = broken.replace(RULE_CLEAN_ALL, "").replace(PHONY, ".PHONY: all\n")
            asks.append("and it needs a `make clean` target that removes build/ and out/")
        files: list[FileSpec] = [file(f"data/{n}.csv", text) for n, (text, _) in data.items()]
        files += [
            file("scripts/clean.awk", CLEAN),
            file("scripts/report.awk", REPORT),
            file("Makefile", broken),
        ]
        instruction = (
            "In /work, `make` should build out/report.txt from the CSV files in data/ (each is "
            "cleaned into build/ by scripts/clean.awk, then scripts/report.awk sums them up), "
            "but " + "; ".join(asks) + ". Fix the Makefile (the scripts are right)."
        )
        tables = [g for _, g in data.values()]
        tests = [_exec("make builds the report", BUILD, {}, stdout=_report(tables))]
        tests.append(_exec("nothing left to do", "make >/dev/null 2>&1 && make -q", {}))
        if difficulty >= 4:
            extra, extra_good = _csv(rng, 4)
            tests.append(
                _exec(
                    "new data files are used",
                    BUILD,
                    {"data/zz_extra.csv": extra},
                    stdout=_report([*tables, extra_good]),
                )
            )
            changed, changed_good = _csv(rng, 5)
            first = names[0]
            tests.append(
                _exec(
                    "a changed data file is rebuilt",
                    f"make >/dev/null 2>&1; cp .check/changed.csv data/{first}.csv; "
                    "make >/dev/null 2>&1; cat out/report.txt",
                    {".check/changed.csv": changed},
                    stdout=_report([changed_good, *tables[1:]]),
                )
            )
        if difficulty >= 5:
            tests.append(
                _exec(
                    "make clean works",
                    "make >/dev/null 2>&1 && make clean >/dev/null 2>&1 && test -d data "
                    "&& test ! -e build && test ! -e out",
                    {},
                )
            )
        return Draft(
            instruction=instruction,
            files=files,
            gold=[write("Makefile", good)],
            tests=tests,
            knobs={"data_files": len(names), "requirements": len(asks)},
            goals=["make"],
        )


def _exec(
    name: str, command: str, files: dict[str, str], stdout: str | None = None
) -> CompletionTest:
    args: dict[str, object] = {"command": command, "files": files, "expect": "exit0"}
    if stdout is not None:
        args.update(expect="stdout", stdout=stdout)
    return CompletionTest(name=name, kind="exec", args=args)
