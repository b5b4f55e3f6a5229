"""A small data pipeline with a Makefile: repair it so ``make`` builds the report correctly."""

from __future__ import annotations

import random

from envfactory.terminal.checks import CompletionTest
from envfactory.terminal.family import WORDS, Draft, Family, q, read, run, write
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


def makefile(data: str, build: str, out: str) -> str:
    """The correct Makefile of the pipeline."""
    out_dir = out.rsplit("/", 1)[0]
    return (
        f"DATA := $(wildcard {data}/*.csv)\n"
        f"CLEANED := $(patsubst {data}/%.csv,{build}/%.clean.csv,$(DATA))\n\n"
        f"all: {out}\n\n"
        f"{build}/%.clean.csv: {data}/%.csv scripts/clean.awk\n"
        f"\t@mkdir -p {build}\n\tawk -f scripts/clean.awk $< > $@\n\n"
        f"{out}: $(CLEANED) scripts/report.awk\n"
        f"\t@mkdir -p {out_dir}\n\tawk -f scripts/report.awk $(CLEANED) > $@\n\n"
        f"clean:\n\trm -rf {build} {out_dir}\n\n"
        ".PHONY: all clean\n"
    )


BREAKING = ("tab", "script", "rule")
EXTRA = ("wildcard", "deps", "clean")
# The gold fixes bugs in this order, so tasks with the same bugs in the same folders share
# one plan, and the split guard (its solution key) keeps them in one split.
FIXES = BREAKING + EXTRA
# Folder names are one of these and a word ("input-cedar"): with a few fixed names, a train
# task's Makefile (replayed) often named a held-out task's folders and solved it.
DATA = ("data", "input", "raw", "csv")
BUILD = ("build", "work", "stage")
OUT = ("out", "dist", "reports")
REPORTS = ("report", "summary", "totals")


class MakePipeline(Family):
    id = "term-make-pipeline"
    name = "A small data pipeline with a Makefile"
    description = "Repair a Makefile so that make builds a report from data files, and only then."

    def generate(self, rng: random.Random, difficulty: int) -> Draft:
        data = f"{rng.choice(DATA)}-{rng.choice(WORDS)}"
        build = f"{rng.choice(BUILD)}-{rng.choice(WORDS)}"
        out_dir = f"{rng.choice(OUT)}-{rng.choice(WORDS)}"
        out = f"{out_dir}/{rng.choice(REPORTS)}.txt"
        names = sorted(rng.sample(WORDS, rng.randint(2, 2 + difficulty // 2)))
        tables = {n: _csv(rng, rng.randint(3, 6)) for n in names}
        good = makefile(data, build, out)
        n_bugs = rng.randint(*((1, 1), (2, 2), (2, 3), (3, 4), (4, 5))[difficulty - 1])
        first = rng.choice(BREAKING)
        others = [b for b in FIXES if b != first]
        if difficulty == 1:
            others = []
        bugs = sorted([first, *rng.sample(others, n_bugs - 1)], key=FIXES.index)
        rule = (
            f"{build}/%.clean.csv: {data}/%.csv scripts/clean.awk\n"
            f"\t@mkdir -p {build}\n\tawk -f scripts/clean.awk $< > $@\n\n"
        )
        anchor = f"all: {out}\n\n"
        listed = " ".join(f"{data}/{n}.csv" for n in names)
        mkdir = f"\t@mkdir -p {out_dir}\n"
        breaks = {
            "tab": (mkdir, mkdir.replace("\t", "    ")),
            "script": ("scripts/report.awk $(CLEANED) >", "scripts/summary.awk $(CLEANED) >"),
            "rule": (anchor + rule, anchor),
            "wildcard": (f"$(wildcard {data}/*.csv)", listed),
            "deps": (f"{out}: $(CLEANED) scripts", f"{out}: scripts"),
            "clean": (f"clean:\n\trm -rf {build} {out_dir}\n\n", ""),
        }
        broken = good
        for bug in bugs:
            broken = broken.replace(*breaks[bug])
        text = broken
        gold = [read("Makefile"), run("make")]
        for bug in bugs:
            right, wrong = breaks[bug]
            if bug == "rule":
                text = text.replace(wrong, right)
                gold.append(write("Makefile", text))
                continue
            if bug == "tab":
                cmd = f"sed -i 's/^    @mkdir -p {out_dir}$/\\t@mkdir -p {out_dir}/' Makefile"
            elif bug == "script":
                cmd = "sed -i 's/summary.awk/report.awk/' Makefile"
            elif bug == "wildcard":
                cmd = f"sed -i 's|^DATA := .*|DATA := $(wildcard {data}/*.csv)|' Makefile"
            elif bug == "deps":
                cmd = f"sed -i 's|^{out}: scripts|{out}: $(CLEANED) scripts|' Makefile"
            else:
                cmd = f"printf 'clean:\\n\\trm -rf {build} {out_dir}\\n' >> Makefile"
                right = f"clean:\n\trm -rf {build} {out_dir}\n"
                text += right
                gold.append(run(cmd))
                continue
            text = text.replace(wrong, right)
            gold.append(run(cmd))
        gold.append(run("make && make -q"))
        asks = ["`make` fails"]
        if "wildcard" in bugs:
            asks.append(f"it must use every {data}/*.csv there is, including files added later")
        if "deps" in bugs:
            asks.append(f"it must rebuild {out} whenever a data file changes")
        if "clean" in bugs:
            asks.append(f"it needs a `make clean` target that removes {build}/ and {out_dir}/")
        files: list[FileSpec] = [file(f"{data}/{n}.csv", t) for n, (t, _) in tables.items()]
        files += [
            file("scripts/clean.awk", CLEAN),
            file("scripts/report.awk", REPORT),
            file("Makefile", broken),
        ]
        instruction = (
            f"In /work, `make` should build {out} from the CSV files in {data}/ ("
            + ", ".join(f"{n}.csv" for n in names)
            + f"): each is cleaned into {build}/NAME.clean.csv by `awk -f scripts/clean.awk "
            f"{data}/NAME.csv > {build}/NAME.clean.csv`, then `awk -f scripts/report.awk` over "
            f"the cleaned files writes {out}. But "
            + "; ".join(asks)
            + ". Fix the Makefile (the scripts are right)."
        )
        goods = [g for _, g in tables.values()]
        report = _report(goods)
        fresh = f"rm -rf {build} {out_dir}; make >/dev/null 2>&1"
        # Each test prints the report it built and is judged on the host (the expected
        # report never enters the sandbox), so a stub that builds nothing passes none.
        cleaned = "".join(f"{n}.clean.csv\n" for n in names)
        tests = [
            _exec(
                "make builds the report",
                f"{fresh}; cat {out}; ls {build}",
                stdout=report + cleaned,
            )
        ]
        tests.append(_exec("nothing left to do", f"{fresh} && make -q && cat {out}", stdout=report))
        if "wildcard" in bugs:
            extra, extra_good = _csv(rng, 4)
            tests.append(
                _exec(
                    "new data files are used",
                    f"{_put(f'{data}/zz_extra.csv', extra)} && {fresh}; cat {out}",
                    stdout=_report([*goods, extra_good]),
                )
            )
        if "deps" in bugs:
            changed, changed_good = _csv(rng, 5)
            tests.append(
                _exec(
                    "a changed data file is rebuilt",
                    f"make >/dev/null 2>&1; {_put(f'{data}/{names[0]}.csv', changed)}; "
                    f"make >/dev/null 2>&1; cat {out}",
                    stdout=_report([changed_good, *goods[1:]]),
                )
            )
        if "clean" in bugs:
            tests.append(
                _exec(
                    "make clean works",
                    f"{fresh} && built=$(cat {out}) && test -d {build} && "
                    "make clean >/dev/null 2>&1 && "
                    f"test -d {data} && test ! -e {build} && test ! -e {out_dir} && "
                    'printf "%s\\n" "$built"',
                    stdout=report,
                )
            )
        return Draft(
            instruction=instruction,
            files=files,
            gold=gold,
            tests=tests,
            knobs={"data_files": len(names), "bugs": len(bugs)},
            goals=["make"],
        )


def _put(path: str, text: str) -> str:
    """A command that writes ``text`` to ``path`` (the check's data, given inline)."""
    return f"printf %s {q(text)} > {q(path)}"


def _exec(name: str, command: str, stdout: str | None = None) -> CompletionTest:
    args: dict[str, object] = {"command": command, "files": {}, "expect": "exit0"}
    if stdout is not None:
        args.update(expect="stdout", stdout=stdout)
    return CompletionTest(name=name, kind="exec", args=args)
