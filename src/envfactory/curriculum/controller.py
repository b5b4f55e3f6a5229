"""The difficulty controller of one environment (the RLVE rule) and the curriculum over many.

Each environment has a frontier: the highest level unlocked so far. Tasks are drawn uniformly
from the window of the ``window`` highest unlocked levels. Only episodes at the frontier count
towards moving it: once ``min_samples`` of them have been seen since it last moved, and the
success rate over the latest ``memory`` of them reaches ``raise_at``, the frontier goes up one
level. The two-way variant (``lower_at`` set) brings it down a level when that rate falls to
``lower_at`` or below. Environments are drawn in proportion to their learnability p(1 − p),
with p the smoothed success rate of their latest ``recent`` episodes.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path

from pydantic import BaseModel

from envfactory.curriculum.store import CurriculumError, CurriculumStore, Event
from envfactory.tasks.seeds import stable_hash


@dataclass(frozen=True)
class CurriculumConfig:
    """The controller's settings (stored with the state; a store keeps the ones it began with)."""

    window: int = 3
    raise_at: float = 0.8
    min_samples: int = 16
    memory: int = 24
    lower_at: float | None = None
    success: float = 1.0
    recent: int = 64
    floor: float = 0.01

    def __post_init__(self) -> None:
        if self.window < 1 or self.min_samples < 1 or self.recent < 1:
            raise ValueError("window, min_samples and recent are at least 1")
        if self.memory < self.min_samples:
            raise ValueError("memory must be at least min_samples")
        if not 0.0 < self.raise_at <= 1.0:
            raise ValueError("raise_at is in (0, 1]")
        if self.lower_at is not None and not 0.0 <= self.lower_at < self.raise_at:
            raise ValueError("lower_at is in [0, raise_at)")


@dataclass(frozen=True, slots=True)
class Draw:
    """Where the next episode should come from."""

    env_id: str
    difficulty: int


class LevelStats(BaseModel):
    difficulty: int
    episodes: int
    successes: int


class EnvState(BaseModel):
    """What ``envfactory curriculum show`` and the server report about one environment."""

    env_id: str
    levels: list[int]
    frontier: int
    window: list[int]
    frontier_samples: int
    frontier_accuracy: float | None
    recent_success: float | None
    learnability: float
    weight: float
    episodes: int
    by_level: list[LevelStats]


class _Env:
    """One environment's live state; everything here is rebuilt from the store."""

    def __init__(self, levels: list[int], frontier: int, epoch: int, cfg: CurriculumConfig):
        self.levels = levels
        self.frontier = frontier
        self.epoch = epoch
        self.at_frontier: deque[bool] = deque(maxlen=cfg.memory)
        self.seen_at_frontier = 0
        self.recent: deque[bool] = deque(maxlen=cfg.recent)

    @property
    def level(self) -> int:
        return self.levels[self.frontier]

    def window(self, w: int) -> list[int]:
        return self.levels[max(0, self.frontier - w + 1) : self.frontier + 1]

    def accuracy(self) -> float | None:
        return sum(self.at_frontier) / len(self.at_frontier) if self.at_frontier else None

    def learnability(self) -> tuple[float, float | None]:
        n, s = len(self.recent), sum(self.recent)
        p = (s + 1) / (n + 2)
        return p * (1 - p), (s / n if n else None)


class Curriculum:
    """Per-environment frontiers and the environment sampler, persisted in a store."""

    def __init__(
        self,
        store: CurriculumStore | str | Path = ":memory:",
        config: CurriculumConfig | None = None,
        seed: int = 0,
    ) -> None:
        self.store = store if isinstance(store, CurriculumStore) else CurriculumStore(store)
        saved = self.store.meta("config")
        if saved is None:
            self.config = config or CurriculumConfig()
            with self.store.commit() as db:
                self.store.set_meta(db, "config", asdict(self.config))
                self.store.set_meta(db, "seed", seed)
        else:
            self.config = CurriculumConfig(**saved)
            if config is not None and config != self.config:
                raise CurriculumError(
                    f"{self.store.path} was started with other settings ({saved}); "
                    "open it without settings, or use another file"
                )
        self.seed = int(self.store.meta("seed"))
        self.envs: dict[str, _Env] = {}
        for env_id, (levels, frontier, epoch) in self.store.envs().items():
            self._load(env_id, levels, frontier, epoch)
        self.draws = self.store.issued()

    def _load(self, env_id: str, levels: list[int], frontier: int, epoch: int) -> None:
        cfg = self.config
        e = self.envs[env_id] = _Env(levels, frontier, epoch, cfg)
        mine = self.store.outcomes(env_id, cfg.memory, epoch=epoch)
        e.at_frontier.extend(o.success for o in mine)
        e.seen_at_frontier = self.store.frontier_count(env_id, epoch)
        e.recent.extend(o.success for o in self.store.outcomes(env_id, cfg.recent))

    # -- environments ------------------------------------------------------------------------

    def add(self, env_id: str, levels: list[int]) -> None:
        """Take part: an environment starts at its lowest level. Adding it again with other
        levels keeps its frontier level when that level still exists."""
        levels = sorted(set(levels))
        if not levels:
            raise ValueError(f"{env_id}: no difficulty levels")
        known = self.envs.get(env_id)
        if known is not None and known.levels == levels:
            return
        if known is not None:
            old = known.level
            frontier = max(i for i, lv in enumerate(levels) if lv <= old) if old >= levels[0] else 0
            epoch = known.epoch + 1
        else:
            frontier, epoch = 0, 0
        with self.store.commit() as db:
            self.store.put_env(db, env_id, levels, frontier, epoch)
            if known is None:
                self.store.add_event(db, env_id, "start", None, levels[frontier], 0, None)
        self._load(env_id, levels, frontier, epoch)

    def weights(self, among: Collection[str] | None = None) -> dict[str, float]:
        """Sampling weights (of the environments ``among``, or all): learnability p(1 − p)
        plus a floor, normalised."""
        raw = {
            k: e.learnability()[0] + self.config.floor
            for k, e in self.envs.items()
            if among is None or k in among
        }
        if not raw:
            raise CurriculumError(f"none of {sorted(among or [])} is in the curriculum")
        total = sum(raw.values())
        return {k: v / total for k, v in raw.items()}

    # -- drawing -----------------------------------------------------------------------------

    def _rng(self) -> random.Random:
        return random.Random(stable_hash(self.seed, self.draws))

    def draw(self, env_id: str | None = None, among: Collection[str] | None = None) -> Draw:
        """An environment (``env_id``, or by learnability among ``among`` or all) and a level
        of its frontier window."""
        if not self.envs:
            raise CurriculumError("no environments: add() some first")
        rng = self._rng()
        self.draws += 1
        if env_id is None:
            w = self.weights(among)
            env_id = rng.choices(list(w), weights=list(w.values()))[0]
        e = self.envs.get(env_id)
        if e is None:
            raise CurriculumError(f"{env_id!r} is not in the curriculum ({', '.join(self.envs)})")
        return Draw(env_id, rng.choice(e.window(self.config.window)))

    def take_index(self, draw: Draw, split: str, capacity: int | None = None) -> int:
        """A fresh task index for ``draw`` (wrapping around a finite cell's capacity)."""
        with self.store.commit() as db:
            index = self.store.take_index(db, draw.env_id, split, draw.difficulty)
        return index % capacity if capacity else index

    # -- learning from outcomes --------------------------------------------------------------

    def record(
        self, episode_id: str, env_id: str, difficulty: int, reward: float | None
    ) -> Event | None:
        """Count one scored episode (None: not scored, ignored); returns the frontier move it
        caused, if any. Counting the same episode again does nothing."""
        e = self.envs.get(env_id)
        if reward is None or e is None:
            return None
        success = reward >= self.config.success - 1e-9
        at_frontier = difficulty == e.level
        recent = [*e.at_frontier, success][-self.config.memory :]
        move = self._decide(e, recent, e.seen_at_frontier + 1) if at_frontier else None
        with self.store.commit() as db:
            fresh = self.store.add_outcome(
                db, episode_id, env_id, difficulty, success, reward, e.level, e.epoch
            )
            if fresh and move is not None:
                self.store.put_env(db, env_id, e.levels, move, e.epoch + 1)
                acc = sum(recent) / len(recent)
                event = "raise" if move > e.frontier else "lower"
                self.store.add_event(db, env_id, event, e.level, e.levels[move], len(recent), acc)
        if not fresh:
            return None
        e.recent.append(success)
        if move is None:
            if at_frontier:
                e.at_frontier.append(success)
                e.seen_at_frontier += 1
            return None
        e.frontier, e.epoch = move, e.epoch + 1
        e.at_frontier.clear()
        e.seen_at_frontier = 0
        return self.store.history(env_id)[-1]

    def _decide(self, e: _Env, recent: list[bool], seen: int) -> int | None:
        """The frontier index after this many frontier episodes with these latest outcomes,
        when it moves."""
        cfg = self.config
        if seen < cfg.min_samples:
            return None
        acc = sum(recent) / len(recent)
        if acc >= cfg.raise_at and e.frontier + 1 < len(e.levels):
            return e.frontier + 1
        if cfg.lower_at is not None and acc <= cfg.lower_at and e.frontier > 0:
            return e.frontier - 1
        return None

    # -- reporting ---------------------------------------------------------------------------

    def frontier(self, env_id: str) -> int:
        return self.envs[env_id].level

    def state(self) -> list[EnvState]:
        counts = self.store.counts()
        weights = self.weights() if self.envs else {}
        out = []
        for env_id, e in self.envs.items():
            learn, p = e.learnability()
            by_level = [
                LevelStats(difficulty=d, episodes=n, successes=s)
                for (env, d), (n, s) in sorted(counts.items())
                if env == env_id
            ]
            out.append(
                EnvState(
                    env_id=env_id,
                    levels=e.levels,
                    frontier=e.level,
                    window=e.window(self.config.window),
                    frontier_samples=e.seen_at_frontier,
                    frontier_accuracy=e.accuracy(),
                    recent_success=p,
                    learnability=round(learn, 6),
                    weight=round(weights[env_id], 6),
                    episodes=sum(x.episodes for x in by_level),
                    by_level=by_level,
                )
            )
        return out

    def history(self, env_id: str | None = None) -> list[Event]:
        return self.store.history(env_id)

    def close(self) -> None:
        self.store.close()
