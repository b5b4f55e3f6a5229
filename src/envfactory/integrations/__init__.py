"""Adapters to other ecosystems (Gymnasium, ...); each needs its own optional dependency."""
