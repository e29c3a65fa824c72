"""Run every benchmark under bench/ in one process run and print their figures."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    only = set(sys.argv[1:])
    for script in sorted(HERE.glob("bench_*.py")):
        if only and script.stem.removeprefix("bench_") not in only:
            continue
        print(f"== {script.stem}", flush=True)
        spec = importlib.util.spec_from_file_location(script.stem, script)
        if spec is None or spec.loader is None:
            raise SystemExit(f"cannot load {script.name}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
        module.main()
        print(flush=True)


if __name__ == "__main__":
    main()
