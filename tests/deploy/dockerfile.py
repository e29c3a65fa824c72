"""A small reader for docker/Dockerfile: instructions per build stage, continuations joined.

No Docker engine runs where the tests run, so the rules the images must keep (multi-stage,
non-root, exec-form health checks) are checked on the parsed file instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Stage:
    """One `FROM … AS name` stage and its instructions as (KEYWORD, arguments) pairs."""

    name: str
    base: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def all(self, keyword: str) -> list[str]:
        return [args for key, args in self.instructions if key == keyword]

    def last(self, keyword: str) -> str | None:
        found = self.all(keyword)
        return found[-1] if found else None


def instructions(path: Path) -> list[tuple[str, str]]:
    """Every instruction, with `\\` continuations joined and comments dropped."""
    found: list[tuple[str, str]] = []
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        pending = f"{pending} {line}" if pending else line
        if pending.endswith("\\"):
            pending = pending[:-1].rstrip()
            continue
        keyword, _, args = pending.partition(" ")
        found.append((keyword.upper(), args.strip()))
        pending = ""
    return found


def stages(path: Path) -> dict[str, Stage]:
    """The build stages by name, in order; instructions before the first FROM are dropped."""
    found: dict[str, Stage] = {}
    current: Stage | None = None
    for keyword, args in instructions(path):
        if keyword == "FROM":
            words = args.split()
            name = words[2] if len(words) >= 3 and words[1].upper() == "AS" else str(len(found))
            current = found[name] = Stage(name, words[0])
        elif current is not None:
            current.instructions.append((keyword, args))
    return found


def exec_form(args: str) -> list[str] | None:
    """The JSON array of an exec-form CMD/ENTRYPOINT/HEALTHCHECK CMD, or None (shell form)."""
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        return None
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return value
    return None


def healthcheck_command(stage: Stage) -> list[str] | None:
    """The exec-form command of the stage's HEALTHCHECK, options (--interval…) skipped."""
    check = stage.last("HEALTHCHECK")
    if check is None or " CMD " not in f" {check} ":
        return None
    return exec_form(check.split("CMD", 1)[1].strip())


def resolve(stages_by_name: dict[str, Stage], name: str) -> list[Stage]:
    """A stage and the stages it is built FROM, nearest first."""
    chain = [stages_by_name[name]]
    while chain[-1].base in stages_by_name:
        chain.append(stages_by_name[chain[-1].base])
    return chain
