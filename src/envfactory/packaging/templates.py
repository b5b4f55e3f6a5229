"""The files of a package of worlds, as templates filled by :mod:`envfactory.packaging.scaffold`.

Placeholders: ``{name}`` (the distribution and the starter world's id), ``{module}`` (the
import name) and ``{title}``. Braces meant literally are doubled.
"""

PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
description = "{title}: worlds for envfactory"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["envfactory"]

# envfactory finds the worlds of every installed distribution through this group.
[project.entry-points."envfactory.environments"]
{name} = "{module}:environments"

[tool.setuptools.package-data]
{module} = ["worlds/*"]
"""

INIT = '''\
"""{title}: worlds for envfactory, registered through the ``envfactory.environments`` entry
point when this package is installed."""

from pathlib import Path

WORLDS = Path(__file__).resolve().parent / "worlds"


def environments() -> list[Path]:
    """The worlds this package provides: every domain file in ``worlds/``."""
    return [WORLDS]
'''

HANDLERS = '''\
"""Python handlers of the {name} domain: the escape hatch for what data cannot express.

A tool whose domain entry says ``handler: {module}.<name>`` calls the function registered under
that name. It reads and writes through the episode's store, so the verdict sees its effects.
"""

from typing import Any

from envfactory.tools.runtime import ToolContext, handler


@handler("{module}.list_loans")
def list_loans(ctx: ToolContext) -> list[dict[str, Any]]:
    """The books a member holds (an unknown member is a not-found error for the agent)."""
    member = ctx.row("members", ctx.args["member_id"])
    return ctx.store.rows("books", {{"holder_id": member["id"]}})
'''

DOMAIN = """\
# The {name} world: a domain file the envfactory engine compiles into tools, tasks and a
# verifier. Edit it (see envfactory's docs/authoring-domains.md), then run the tests.
id: {name}
name: {title}
description: A small lending library. Members borrow, return and renew books.
persona: You are the librarian's assistant.
handlers: {module}.handlers
entities:
  members:
    label: member
    id_prefix: MEM
    count: 60
    fields:
      name: {{faker: name}}
      email: {{expr: "slug(row.name) + '@library.example'", unique: true}}
    refs:
      - text: "{{row.name}} ({{row.email}})"
        unique: [email]
        lookup: [{{tool: find_member, args: {{email: "=row.email"}}}}]
  books:
    label: book
    id_prefix: BK
    count: 400
    fields:
      title: {{faker: catch_phrase, unique: true}}
      author: {{faker: name}}
      genre: {{choices: [novel, history, science, poetry, travel]}}
      holder_id: {{type: ref, ref: members, null_rate: 0.5}}
      due_on: {{type: date, min: -10, max: 25}}
    refs:
      - text: "'{{row.title}}'"
        unique: [title]
        lookup: [{{tool: search_books, args: {{title: "=row.title"}}}}]
rules:
  - id: check_loans_first
    text: Look at the member's loans before recording a return.
    prior_call: {{tool: return_book, needs: list_loans, match: {{book_id.holder_id: member_id}}}}
  - id: no_overdue_renewals
    text: Overdue books cannot be renewed; they must be returned.
  - id: loan_limit
    text: A member may hold at most five books at a time.
ladder:  # difficulty 1, 2, 3 (0 is the starter level: one call, ids given)
  - {{width: 1, indirection: 0, goal_levels: [1]}}
  - {{width: 1, indirection: 1, goal_levels: [1, 2]}}
  - {{width: 2, indirection: 1, distractors: 1, goal_levels: [1, 2]}}
actions:
  - name: find_member
    kind: read
    description: Find a member by e-mail.
    params: {{email: {{description: "The member's e-mail."}}}}
    load: {{found: {{rows: members, where: {{email: "=email"}}, limit: 1}}}}
    require:
      - {{check: "len(found) == 1", error: "No member has the e-mail {{email}}.", code: not_found}}
    returns: "=found[0]"
  - name: search_books
    kind: read
    description: Find books by title.
    params: {{title: {{description: "The book's title."}}}}
    load: {{found: {{rows: books, where: {{title: "=title"}}, limit: 5}}}}
    returns: "=found"
  - name: list_loans
    kind: read
    description: Books a member holds.
    params: {{member_id: {{description: "Member id, like MEM-00001."}}}}
    handler: {module}.list_loans
  - name: lend_book
    kind: write
    description: Lend a book on the shelf to a member, due in three weeks.
    params:
      member_id: {{description: "Member id, like MEM-00001."}}
      book_id: {{description: "Book id, like BK-00001."}}
    load:
      member: "members[member_id]"
      book: "books[book_id]"
      held: {{rows: books, where: {{holder_id: "=member_id"}}}}
    require:
      - {{check: "book.holder_id is None", error: "'{{book.title}}' is already on loan."}}
      - check: "len(held) < 5"
        error: "{{member.name}} already holds five books."
        rule: loan_limit
    effects: [{{update: book, set: {{holder_id: "=member.id", due_on: "=add_days(today, 21)"}}}}]
  - name: return_book
    kind: write
    description: Record that a book came back.
    params: {{book_id: {{description: "Book id, like BK-00001."}}}}
    load: {{book: "books[book_id]"}}
    require: [{{check: "book.holder_id is not None", error: "'{{book.title}}' is not on loan."}}]
    effects: [{{update: book, set: {{holder_id: null}}}}]
  - name: renew_book
    kind: write
    description: Extend a loan by two weeks from its due date.
    params: {{book_id: {{description: "Book id, like BK-00001."}}}}
    load: {{book: "books[book_id]"}}
    require:
      - {{check: "book.holder_id is not None", error: "'{{book.title}}' is not on loan."}}
      - check: "book.due_on >= today"
        error: "'{{book.title}}' is overdue and cannot be renewed."
        rule: no_overdue_renewals
    effects: [{{update: book, set: {{due_on: "=add_days(book.due_on, 14)"}}}}]
goals:
  - id: author_of
    level: 1
    anchor: {{entity: books}}
    plan:
      - {{tool: search_books, args: {{title: "=anchor.title"}}}}
    instruction:
      - "Who wrote '{{anchor.title}}'?"
      - "Which author is '{{anchor.title}}' by?"
    answer: "anchor.author"
  - id: due_date
    level: 1
    anchor: {{entity: books, where: "row.holder_id is not None and row.due_on != today"}}
    plan:
      - {{tool: search_books, args: {{title: "=anchor.title"}}}}
    instruction:
      - "When is {{ref:anchor}} due back?"
      - "By what date must {{ref:anchor}} be returned?"
    answer: "anchor.due_on"
  - id: return_one
    level: 1
    anchor: {{entity: books, where: "row.holder_id is not None"}}
    let: {{member: "members[anchor.holder_id]"}}
    plan:
      - {{tool: list_loans, args: {{member_id: "=member.id"}}}}
      - {{tool: return_book, args: {{book_id: "=anchor.id"}}}}
    instruction:
      - "{{ref:member}} brought back {{ref:anchor}}. Please record it."
      - "Please check in {{ref:anchor}}; {{ref:member}} just returned it."
  - id: renew_one
    level: 2
    anchor: {{entity: books, where: "row.holder_id is not None and row.due_on >= today"}}
    plan:
      - {{tool: search_books, args: {{title: "=anchor.title"}}}}
      - {{tool: renew_book, args: {{book_id: "=anchor.id"}}}}
    instruction:
      - "Please renew {{ref:anchor}}."
      - "I need two more weeks with {{ref:anchor}}; please renew it."
  - id: lend_one
    level: 2
    anchor: {{entity: books, where: "row.holder_id is None"}}
    let:
      out: {{rows: {{rows: books, filter: "row.holder_id is not None"}}}}
      member:
        pick:
          rows: members
          filter: >-
            count(b for b in out if b.holder_id == row.id) < 5
    plan:
      - {{tool: search_books, args: {{title: "=anchor.title"}}}}
      - {{tool: lend_book, args: {{member_id: "=member.id", book_id: "=anchor.id"}}}}
    instruction:
      - "Please lend {{ref:anchor}} to {{ref:member}}."
      - "{{ref:member}} would like to borrow {{ref:anchor}}; please check it out."
  - id: pass_on
    level: 2
    anchor: {{entity: books, where: "row.holder_id is not None"}}
    let:
      holder: "members[anchor.holder_id]"
      out: {{rows: {{rows: books, filter: "row.holder_id is not None"}}}}
      member:
        pick:
          rows: members
          filter: >-
            (row.id != anchor.holder_id
             and count(b for b in out if b.holder_id == row.id) < 5)
    plan:
      - {{tool: list_loans, args: {{member_id: "=holder.id"}}}}
      - {{tool: return_book, args: {{book_id: "=anchor.id"}}}}
      - {{tool: lend_book, args: {{member_id: "=member.id", book_id: "=anchor.id"}}}}
    instruction:
      - "{{ref:holder}} has returned {{ref:anchor}}; please lend it straight to {{ref:member}}."
      - "Please check in {{ref:anchor}} from {{ref:holder}} and check it out to {{ref:member}}."
"""

TEST = '''\
"""The audit as a test: every world of this package is solvable, its rewards are honest (the
do-nothing, random and spamming agents earn nothing, no exploit pays), and it is
deterministic."""

import pytest

import envfactory
from envfactory.quality.audit import audit
from envfactory.registry.sources import resolve

from {module} import WORLDS

WORLD_IDS = resolve(WORLDS)


def test_the_package_provides_worlds() -> None:
    assert WORLD_IDS
    assert set(WORLD_IDS) <= set(envfactory.list_envs())


@pytest.mark.parametrize("env_id", WORLD_IDS)
def test_the_world_passes_the_audit(env_id: str) -> None:
    report = audit(envfactory.make(env_id), n=60, diversity=200)
    assert report.oracle_success_rate == 1.0
    assert report.passed, report.problems
'''

README = """\
# {title}

Worlds for [envfactory](https://github.com/envfactory/envfactory): verifiable, resettable
tool-use environments for agentic RL.

```bash
pip install -e .              # registers the worlds through the envfactory.environments entry point
envfactory envs               # they are listed beside the built-in worlds
envfactory audit {first}      # oracle 1.0, honest baselines, no exploit pays
envfactory serve --envs {first}
pytest tests                  # the audit as a test
```

The worlds are the domain files in `src/{module}/worlds/`; a domain names its Python handlers
(`handlers: {module}.handlers`) for tools data cannot express. `envfactory pack` turns a
folder of worlds into a wheel like this one.
"""
