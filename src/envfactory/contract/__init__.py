"""What a world is: the contract every kind of environment implements. Read this package first.

An environment E = {T, H, V, S, C} is a task supply T with hidden gold H, a verifier V, a state
S that tools change, and a context C (persona, rules, tools) the agent acts in:

- :mod:`~envfactory.contract.tasks`: a task as the agent sees it (``PublicTask``) and what only
  the verifier sees (``HiddenTask``: gold plan, target changes, expected answers), by
  (split, difficulty, index).
- :mod:`~envfactory.contract.environment`: ``Environment``, the read-only world with its task
  supply, tool schemas, seats and baselines; ``EnvInfo``, what ``envfactory envs`` lists.
- :mod:`~envfactory.contract.episode`: ``Episode``, one live run: ``reset(task)``,
  ``step(action)``, ``evaluate()``, ``state_hash()``, ``close()``; ``ToolEpisode``, the step
  loop of tool-calling worlds.
- :mod:`~envfactory.contract.actions`: the wire types: actions in (``ToolCall``, ``Message``),
  observations out, the record of calls; :mod:`~envfactory.contract.values` bounds what an
  agent may send.
- :mod:`~envfactory.contract.results`: a tool's structured error (``ToolError``).
- :mod:`~envfactory.contract.verdict`: the verifier's ``Verdict`` (reward, success, reasons).
- :mod:`~envfactory.contract.config`: per-episode settings (turns, user simulator, faults).
- :mod:`~envfactory.contract.policy`: the agent's side (``Policy``: start, act).
- :mod:`~envfactory.contract.errors`: envfactory's own exceptions.

This package imports nothing else of envfactory: every other layer builds on it.
"""
