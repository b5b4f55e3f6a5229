"""Group statistics shared by every advantage estimator."""

from __future__ import annotations

import math
from collections.abc import Sequence

EPS = 1e-6


def normalise(values: Sequence[float], *, std: bool = True, eps: float = EPS) -> list[float]:
    """(x − mean) / (std + eps), or x − mean without ``std`` (Dr. GRPO). Population std."""
    if not values:
        return []
    mean = sum(values) / len(values)
    centred = [v - mean for v in values]
    if not std:
        return centred
    sd = math.sqrt(sum(c * c for c in centred) / len(values))
    return [c / (sd + eps) for c in centred]
