"""`python -m ome.cmd.chartgen [--check]`: write (or check) charts/ from config/."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ome.cmd.chartgen.chart_files import CHARTS, charts


def main(argv: list[str] | None = None, write: Callable[[Path, str], None] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ome.cmd.chartgen")
    parser.add_argument("--check", action="store_true", help="exit 1 when charts/ differs from config/")
    args = parser.parse_args(argv)
    files = charts()
    stale = [p for p, text in files.items() if not (CHARTS / p).exists() or (CHARTS / p).read_text() != text]
    if args.check:
        for path in stale:
            print(f"charts/{path} is stale: run python -m ome.cmd.chartgen", file=sys.stderr)
        return 1 if stale else 0
    for path, text in files.items():
        target = CHARTS / path
        target.parent.mkdir(parents=True, exist_ok=True)
        (write or Path.write_text)(target, text)
    print(f"wrote {len(files)} files under {CHARTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
