"""``python -m fglcore.compare [paper ...] --profile full``: rewrite comparison.csv, claims.csv and the summary.

From each paper's stored ``outputs/<profile>/<paper>/results.csv``; nothing
is run. Without papers, every paper with a ``paper.yaml`` and a stored
``results.csv`` under the profile.
"""
from __future__ import annotations

import argparse
import sys

from fglcore import paths
from fglcore.compare.paper_file import known_papers
from fglcore.compare.report import build_summary, rebuild_report, summary_counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fglcore.compare", description=__doc__.splitlines()[0])
    parser.add_argument("papers", nargs="*", help=f"paper ids (default: those stored; known: {', '.join(known_papers())})")
    parser.add_argument("--profile", default="full", help="outputs/<profile> to rebuild (default: full)")
    args = parser.parse_args(argv)
    known = known_papers()
    unknown = [p for p in args.papers if p not in known]
    if unknown:
        parser.error(f"unknown paper(s) {', '.join(unknown)}; papers with a paper.yaml: {', '.join(known)}")
    root = paths.outputs_root() / args.profile
    papers = args.papers or [p for p in known if (root / p / "results.csv").is_file()]
    for paper in papers:
        comparison, claims = rebuild_report(root / paper, paper)
        print(f"{paper}: {len(comparison)} entries, {int((claims['group'] == 'overall').sum())} claims -> "
              f"{paths.display_path(root / paper)}")
    summary = build_summary(root)
    print(summary_counts(summary).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
