"""The database kind: a world compiled from a domain description (YAML, a synthesised world or
an imported OpenAPI document) over SQLite state.

- :mod:`~envfactory.db.environment`: ``DatabaseEnvironment`` (the contract's Environment).
- :mod:`~envfactory.db.episode`: ``DatabaseEpisode``, one episode's own copy of the state.
- :mod:`~envfactory.db.tasks`: the drafter (``TaskFactory``): goals instantiated on rows,
  solvable by construction, split by content; :mod:`~envfactory.db.refs` finds the rows a
  goal names.
- :mod:`~envfactory.db.verifier` and :mod:`~envfactory.db.criteria`: the verdict (target state,
  answers, no collateral change, rules) and the domain's rubric.

The state engine it runs on (tables, store, hashing) is :mod:`envfactory.world`.
"""
