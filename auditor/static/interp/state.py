"""The interpreter's state at one point of a walk: the local bindings, the guards and formula
of the path to it, and how two branches' states join where they meet."""

from __future__ import annotations

from dataclasses import dataclass, field

from auditor.static.interp.formula import FALSE, TRUE, conj, disj
from auditor.static.interp.graph import Guard
from auditor.static.interp.values import Guarded, cap


@dataclass
class State:
    env: dict[str, frozenset]
    guards: tuple[Guard, ...] = ()
    status: int = TRUE  # formula: under which configurations this point runs
    done: bool = False
    raised: bool = False
    # Why what follows cannot run, when a branch that would have gone on is false here.
    stop: Guard | None = None

    def fork(self, guard: Guard, status: int) -> State:
        return State(dict(self.env), (*self.guards, guard), conj(self.status, status))


@dataclass
class Frame:
    node: int
    module: str
    closure: int  # number of the environment this frame's function was defined in (0: module)
    cls: str | None  # qualified class name for methods and class bodies
    kind: str = "function"  # "module" | "class" | "function"
    returns: set = field(default_factory=set)
    self_values: frozenset = frozenset()
    global_names: set[str] = field(default_factory=set)  # declared `global` in this function


def guard_new_values(branch: State, before: dict[str, frozenset]) -> None:
    for name, values in branch.env.items():
        old = before.get(name, frozenset())
        if values is not old:
            branch.env[name] = frozenset(
                v if v in old or isinstance(v, Guarded) else Guarded(v, branch.status) for v in values
            )


def join_env(a: dict[str, frozenset], b: dict[str, frozenset]) -> dict[str, frozenset]:
    out = dict(a)
    for k, v in b.items():
        out[k] = cap(out[k] | v) if k in out else v
    return out


def join(states: list[State]) -> State:
    env = states[0].env
    for s in states[1:]:
        env = join_env(env, s.env)
    guards = states[0].guards
    for s in states[1:]:
        n = 0
        while n < min(len(guards), len(s.guards)) and guards[n] == s.guards[n]:
            n += 1
        guards = guards[:n]
    status = FALSE
    for s in states:
        status = disj(status, s.status)
    return State(env, guards, status)
