"""tau2-bench's retail domain, imported: its data, tools, policy, tasks and reward, run by
envfactory's engine (``tau2-retail``, with tau2's split; ``tau2-retail-strict``, with a held-out
split), plus procedural tasks over the same world (``tau2-retail-procedural``). See
docs/tau2.md."""
