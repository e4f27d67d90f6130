"""The ``fgl`` command: run notebooks under a profile, reproduce papers, list datasets and algorithms.

Exit status 2 means the request was rejected before anything ran (unknown
parameter, wrong type, unknown name); the message says what is accepted.
Exit status 3 means a sweep stopped on request (``fgl stop``) with every
finished run stored; the same command resumes it. Exit status 130 means it
was interrupted (Ctrl-C); finished runs are stored there too.
"""
from __future__ import annotations

import argparse
import functools
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from fglcore.config import ConfigError
from fglcore.registry import UnknownNameError
from fglcore.runlog import LogFollower, RunTally, log_path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fgl", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="execute one notebook under a profile")
    run.add_argument("notebook", type=Path)
    run.add_argument("--profile", default="quick", help="smoke | quick | full (default quick)")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                     help="override a parameter (VALUE is YAML: 3, 0.5, true, [a, b])")
    run.add_argument("--out", type=Path, default=None, help="output folder (default outputs/<profile>/<paper>/)")
    run.add_argument("--workers", type=_positive_int, default=1,
                     help="processes sharing the notebook's runs (default 1); give each FGL_THREADS=1 on a small machine")
    run.add_argument("--fresh", action="store_true",
                     help="recompute every run into a new folder (--out, which must hold no results.csv, or "
                          "outputs/<profile>-fresh-<time>/<paper>/) instead of reusing stored runs")

    rep = sub.add_parser("reproduce", help="run every notebook of the given papers (default: all)")
    rep.add_argument("papers", nargs="*")
    rep.add_argument("--profile", default="quick", help="smoke | quick | full (default quick)")
    rep.add_argument("--jobs", type=_positive_int, default=1,
                     help="notebooks run side by side (default 1); give each FGL_THREADS=1 on a small machine")
    rep.add_argument("--workers", type=_positive_int, default=1,
                     help="notebooks run one after another, each in this many processes sharing its runs "
                          "(default 1; not with --jobs); give each FGL_THREADS=1 on a small machine")
    rep.add_argument("--fresh", action="store_true",
                     help="recompute every run into outputs/<profile>-fresh-<time>/ instead of reusing the runs "
                          "stored in outputs/<profile>/")

    stop = sub.add_parser("stop", help="ask the running sweeps of papers to stop once their current runs are stored")
    stop.add_argument("papers", nargs="*")
    stop.add_argument("--profile", default="quick", help="smoke | quick | full (default quick)")
    stop.add_argument("--out", type=Path, action="append", default=[],
                      help="an output folder given to fgl run --out (or a --fresh folder); repeatable, instead of papers")

    datasets = sub.add_parser("datasets", help="list datasets and whether they are present, in the mirror or missing")
    datasets.add_argument("datasets", nargs="*", metavar="NAME_OR_PATH",
                          help="names or paths of your own graphs to describe (default: every registered dataset)")
    sub.add_parser("algorithms", help="list registered algorithms")

    flower = sub.add_parser("flower", help="run one configuration on Flower: a local SuperLink and one SuperNode per "
                                           "client (run), or write the files each machine needs (prepare)")
    flower.add_argument("action", choices=("run", "prepare"),
                        help="run: start a local deployment, run, stop it; prepare: only write the job and "
                             "partition files into --out, for a deployment across machines")
    flower.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("KEY", "VALUE"),
                        help="an ExperimentConfig field (VALUE is YAML), e.g. -p algorithm fedprox -p num_clients 3")
    flower.add_argument("--out", type=Path, default=None, help="folder for the files, logs and result "
                                                              "(default: a new temporary folder)")
    flower.add_argument("--compare", action="store_true", help="also run the configuration in-process and "
                                                               "print the largest difference of the metrics")
    flower.add_argument("--start-timeout", type=float, default=60.0, help="seconds a Flower process may take to start")
    flower.add_argument("--message-timeout", type=float, default=300.0,
                        help="seconds the server waits for a client's reply before it reports the client lost")
    flower.add_argument("--run-timeout", type=float, default=3600.0, help="seconds the whole run may take")
    flower.add_argument("--parallel", action="store_true",
                        help="send each round's messages to every client at once, each client with its own random "
                             "state: faster, but other numbers than in-process wherever clients draw random numbers "
                             "(dropout); by default one message at a time with the global random state, the "
                             "in-process numbers bit for bit")
    flower.add_argument("--secure-aggregation", choices=("secaggplus", "fglcore"), default="secaggplus",
                        help="for configurations with secure_aggregation true: Flower's SecAgg+ (default; its "
                             "quantisation moves the metrics in the last digits) or fglcore's masking (the in-process "
                             "numbers bit for bit)")
    flower.add_argument("--cold", action="store_true",
                        help="Flower's own process per message instead of one long-lived ClientApp worker per "
                             "SuperNode (same numbers, several seconds slower per message)")

    compare = sub.add_parser("compare", help="rewrite comparison.csv, claims.csv and summary.md of a profile from "
                                             "its stored results.csv (nothing is run)")
    compare.add_argument("papers", nargs="*", help="paper ids (default: every paper with a paper.yaml and stored runs)")
    compare.add_argument("--profile", default="full", help="smoke | quick | full (default full)")
    return parser


def _run(args: argparse.Namespace) -> int:
    from fglcore import notebooks

    # Absolute before any kernel starts: papermill changes the process's working directory while a
    # notebook runs, so a helper thread would look for a relative path in the notebook's folder.
    notebook = args.notebook.resolve()
    out_dir = args.out.resolve() if args.out else None
    if args.fresh:
        notebooks.check_profile(args.profile)
        out_dir = _fresh_folder(out_dir, args.profile, notebooks.paper_of(notebook))
    overrides = {key: notebooks.parse_override(value, key) for key, value in args.parameter}
    _, out = notebooks.prepare(notebook, args.profile, overrides, out_dir)
    _withdraw_stop(out)
    tally = RunTally()
    with LogFollower({log_path(out / "results.csv"): notebooks.paper_of(notebook)}, emit=_tallied(tally)):
        if args.workers == 1:
            target = notebooks.execute(notebook, args.profile, overrides, out_dir)
        else:
            target = _execute_with_helpers(notebook, args.profile, overrides, out_dir, out, args.workers)
    print(f"wrote {target}")
    _say_runs(tally, args.fresh)
    if out_dir is None:  # the notebook may have rewritten its paper's comparison.csv and claims.csv
        _write_summary(_outputs_of(args.profile))
    return 0


def _outputs_of(profile: str) -> Path:
    from fglcore import paths

    return paths.outputs_root() / profile


def _write_summary(folder: Path) -> None:
    from fglcore import compare

    summary = compare.build_summary(folder)
    print(f"summary of {len(summary)} comparisons: {folder / 'summary.md'}")


def _fresh_folder(out_dir: Path | None, profile: str, paper: str | None = None) -> Path:
    """Where ``--fresh`` writes: ``out_dir`` if it holds no results yet, else ``outputs/<profile>-fresh-<time>/[paper]``."""
    import datetime

    from fglcore import paths

    if out_dir is not None:
        if (out_dir / "results.csv").exists():
            raise ConfigError(f"--fresh: {out_dir} already holds results.csv, whose runs would be reused; name a new "
                              f"folder with --out, or leave --out out for outputs/{profile}-fresh-<time>/")
        return out_dir
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    root = paths.outputs_root() / f"{profile}-fresh-{stamp}"
    return root / paper if paper else root


def _tallied(tally: RunTally) -> Callable[[str], None]:
    """Print each progress line and count the sweeps' closing lines in ``tally``."""
    def emit(line: str) -> None:
        tally.add(line)
        _say(line)

    return emit


def _say_runs(tally: RunTally, fresh: bool) -> None:
    """How many runs were computed and how many reused, and how to recompute them all when none was."""
    _say(tally.summary())
    computed, reused = tally.counts()
    if reused and not fresh:
        _say(f"{reused} stored run(s) were reused, not recomputed; --fresh (make reproduce FRESH=1) recomputes "
             "every run into a new folder")


def _execute_with_helpers(notebook: Path, profile: str, overrides: dict, out_dir: Path | None, out: Path,
                          workers: int) -> Path:
    """Execute ``notebook`` in ``workers`` kernels that share its runs; return the executed copy in ``out``.

    The first kernel writes the notebook's outputs. Each helper writes its
    executed copy, figures and tables into a scratch folder whose
    ``results.csv`` links to the real store, so the helpers' sweeps claim,
    compute and store runs there (:mod:`fglcore.claims`) and the scratch
    folder is deleted at the end. A helper's notebook ends early where the
    notebook says that what follows is the first kernel's alone, such as
    timings (:func:`fglcore.claims.helpers_stop_here`).
    """
    import tempfile

    from fglcore import notebooks

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fgl-workers-") as scratch:
        tasks = [functools.partial(notebooks.execute, notebook, profile, overrides, out_dir)]
        for k in range(2, workers + 1):
            folder = Path(scratch) / f"worker-{k}"
            folder.mkdir()
            (folder / "results.csv").symlink_to((out / "results.csv").resolve())
            tasks.append(functools.partial(notebooks.execute, notebook, profile, overrides, folder, progress=False,
                                           helper=True))
        return _in_parallel(tasks, workers)[0]


def _reproduce(args: argparse.Namespace) -> int:
    from fglcore import notebooks, paths

    if args.jobs > 1 and args.workers > 1:
        raise ConfigError(f"--jobs {args.jobs} and --workers {args.workers}: choose one; --jobs runs notebooks "
                          "side by side, --workers runs them one after another, each in several processes")
    selected = args.papers or notebooks.papers()
    jobs = [(paper, nb) for paper in selected for nb in notebooks.notebooks_of(paper)]
    for _, nb in jobs:  # validate every parameter set before the first notebook runs
        notebooks.prepare(nb, args.profile)
    root = _fresh_folder(None, args.profile) if args.fresh else None
    out_dirs = {paper: None if root is None else root / paper for paper in selected}
    outs = {paper: out_dirs[paper] or paths.output_dir(args.profile, paper) for paper in selected}
    if root is not None:
        _say(f"--fresh: every run is computed anew into {root}")
    for paper in selected:
        _withdraw_stop(outs[paper])
    logs = {log_path(outs[paper] / "results.csv"): paper for paper in selected}
    tally = RunTally()
    with LogFollower(logs, emit=_tallied(tally)):
        if args.jobs > 1:
            _execute_side_by_side(jobs, args.profile, args.jobs, out_dirs)
        else:
            for paper, nb in jobs:
                _say(f"[{paper}] {nb.name} ({args.profile})")
                if args.workers == 1:
                    notebooks.execute(nb, args.profile, None, out_dirs[paper])
                else:
                    _execute_with_helpers(nb, args.profile, {}, out_dirs[paper], outs[paper], args.workers)
    _say_runs(tally, args.fresh)
    _write_summary(root or _outputs_of(args.profile))
    return 0


def _stop(args: argparse.Namespace) -> int:
    from fglcore import notebooks, paths
    from fglcore.experiment import request_stop

    if args.out:
        if args.papers:
            raise ConfigError(f"fgl stop: give papers or --out, not both (got {' '.join(args.papers)} and --out)")
        for folder in args.out:
            if not folder.is_dir():
                raise ConfigError(f"--out: {str(folder)!r} is not a folder; accepted: the output folder of a running "
                                  "fgl run --out (the folder holding its results.csv)")
            path = request_stop(folder.resolve())
            _say(f"asked the sweeps writing to {folder} to stop once their current runs are stored ({path})")
        return 0
    notebooks.check_profile(args.profile)
    for paper in args.papers or notebooks.papers():
        notebooks.notebooks_of(paper)  # an unknown paper is rejected
        path = request_stop(paths.output_dir(args.profile, paper))
        _say(f"[{paper}] asked its sweeps to stop once their current runs are stored ({path})")
    return 0


def _withdraw_stop(results_dir: Path) -> None:
    from fglcore.experiment import withdraw_stop

    if withdraw_stop(results_dir):
        _say(f"withdrew the stop request left in {results_dir} (fgl stop)")


def _execute_side_by_side(jobs: Sequence[tuple[str, Path]], profile: str, workers: int,
                          out_dirs: dict[str, Path | None] | None = None) -> None:
    """Run the notebooks ``workers`` at a time (each in its own kernel), in order of start; ``out_dirs``
    maps a paper to its output folder (``None``: ``outputs/<profile>/<paper>/``).

    The notebooks of one paper share its ``results.csv``, whose writes are
    locked, and each sweep skips what another has stored or is computing
    (:mod:`fglcore.claims`).
    """
    from fglcore import notebooks

    def execute(paper: str, nb: Path) -> None:
        _say(f"[{paper}] {nb.name} ({profile}) started")
        notebooks.execute(nb, profile, None, (out_dirs or {}).get(paper), progress=False)
        _say(f"[{paper}] {nb.name} ({profile}) done")

    _in_parallel([functools.partial(execute, paper, nb) for paper, nb in jobs], workers)


def _in_parallel(tasks: Sequence[Callable[[], Any]], workers: int) -> list[Any]:
    """Call ``tasks`` ``workers`` at a time, in order of start; return their results in order.

    The first failure stops the tasks not yet started, is reported at once and is raised once the
    running ones end (a helper kernel that fails must not leave the main one computing alone unnoticed).
    """
    from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait

    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(task) for task in tasks]
        done, pending = wait(futures, return_when=FIRST_EXCEPTION)
        for future in pending:
            future.cancel()
        running = sum(not future.cancelled() for future in pending)
        failure = next((error for error in map(Future.exception, done) if error is not None), None)
        if failure is not None and running:
            _warn(f"fgl: a task failed ({type(failure).__name__}: {failure}); "
                  f"the error is raised when the {running} still running end")
    for future in futures:
        if future.done() and not future.cancelled() and future.exception() is not None:
            raise future.exception()
    return [future.result() for future in futures]


def _say(line: str) -> None:
    """Print a line above any progress bar on the terminal (papermill's cell bar), never glued to it."""
    from tqdm import tqdm

    tqdm.write(line)
    sys.stdout.flush()


def _warn(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def _datasets(args: argparse.Namespace) -> int:
    from fglcore.data.datasets import datasets_table

    print(datasets_table(args.datasets))
    return 0


def _algorithms(_: argparse.Namespace) -> int:
    from fglcore.algorithms import ALGORITHMS

    width = max(len(name) for name in ALGORITHMS.names()) + 2
    for name in ALGORITHMS.names():
        cls = ALGORITHMS.get(name)
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        print(f"{name:<{width}}{'/'.join(cls.tasks):<12}{doc}")
    return 0


def _compare(args: argparse.Namespace) -> int:
    """Rebuild each paper's comparison from ``outputs/<profile>/<paper>/results.csv``, then the profile's summary."""
    from fglcore import notebooks, paths
    from fglcore.compare import build_summary, known_papers, rebuild_report, summary_counts

    notebooks.check_profile(args.profile)
    known = known_papers()
    root = paths.outputs_root() / args.profile
    for paper in args.papers:
        if paper not in known:
            raise ConfigError(f"compare: unknown paper {paper!r}; papers with a paper.yaml: {', '.join(known)}")
        if not (root / paper / "results.csv").is_file():
            raise ConfigError(f"compare: {paths.display_path(root / paper)} holds no results.csv; run the paper's "
                              f"notebooks under --profile {args.profile} first")
    for paper in args.papers or [p for p in known if (root / p / "results.csv").is_file()]:
        comparison, claims = rebuild_report(root / paper, paper)
        _say(f"{paper}: {len(comparison)} entries, {int((claims['group'] == 'overall').sum())} claims -> "
             f"{paths.display_path(root / paper)}")
    _say(summary_counts(build_summary(root)).to_string(index=False))
    return 0


def _flower(args: argparse.Namespace) -> int:
    """``fgl flower run|prepare``: one configuration on Flower (:mod:`fglcore.fl.flower`)."""
    from fglcore import notebooks
    from fglcore.experiment import as_config

    try:
        from fglcore.fl.flower import deploy, job
    except ImportError as err:
        raise ConfigError(f"flower: Flower is not installed ({err}); pip install 'fglcore[flower]'") from None
    fields = {key: notebooks.parse_override(value, key) for key, value in args.parameter}
    config = as_config({"device": "cpu", **fields})
    try:
        if args.action == "prepare":
            if args.out is None:
                raise ConfigError("flower prepare: name the folder for the files with --out")
            written = job.prepare_job(config, args.out)
            _say(f"server job: {written.server_file}")
            for cid, path in written.partition_files.items():
                _say(f"client {cid}: {path}  (flower-supernode --node-config 'partition-file=\"{path}\"')")
            _say(f"run config: job-file=\"{written.server_file}\" result-file=\"<absolute path on the SuperLink's "
                 "machine>\"; see the README's \"Run across machines\"")
            return 0
        flower = deploy.run_on_flower(config, args.out, start_timeout=args.start_timeout,
                                      run_timeout=args.run_timeout, message_timeout=args.message_timeout,
                                      parallel=args.parallel, warm=not args.cold,
                                      secure_aggregation=args.secure_aggregation)
    except job.FlowerUnsupported as err:
        raise ConfigError(f"flower: {err}") from None
    except (deploy.DeploymentError, deploy.ClientLost) as err:
        print(f"fgl: flower: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    result = flower.result
    _say(f"{config.algorithm} on Flower ({len(flower.job.partition_files)} SuperNodes): round {result.selected_round} "
         f"selected; {flower.seconds:.1f} s in all, {result.extras['flower_seconds']:.1f} s of rounds")
    for key in ("val_accuracy", "test_accuracy", "test_macro_f1"):
        if key in result.metrics:
            _say(f"  {key:<16}{result.metrics[key]:.6f}")
    _say(flower.wire_vs_ledger().to_string(index=False))
    if args.compare:
        import math
        import time

        from fglcore.experiment import run_full

        started = time.perf_counter()
        _, expected = run_full(config)
        seconds = time.perf_counter() - started
        gaps = [abs(result.metrics[k] - v) for k, v in expected.metrics.items()
                if not (math.isnan(v) and math.isnan(result.metrics.get(k, math.nan)))]
        same_ledger = result.ledger.to_frame().equals(expected.ledger.to_frame())
        _say(f"in-process: {seconds:.1f} s; largest metric difference {max(gaps, default=0.0):.3g}; "
             f"ledgers {'identical' if same_ledger else 'DIFFER'}"
             + ("; --parallel: each client drew from its own random state, so runs that draw random numbers "
                "(dropout) differ from in-process" if args.parallel else ""))
    _say(f"files, logs and result: {flower.folder}")
    return 0


COMMANDS = {"run": _run, "flower": _flower, "reproduce": _reproduce, "stop": _stop, "datasets": _datasets, "algorithms": _algorithms,
            "compare": _compare}


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command in ("run", "reproduce"):
            from fglcore.settings import settings

            settings()  # a bad FGL_* variable stops here, before the first notebook
        return COMMANDS[args.command](args)
    except (ConfigError, UnknownNameError) as err:
        print(f"fgl: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the kernel is shut down, stored outputs are untouched
        print("fgl: interrupted; every finished run is stored and the same command resumes; the stored "
              "notebooks, figures and tables were left as they were", file=sys.stderr)
        return 130
    except Exception as err:  # a notebook cell failed: papermill names the cell and keeps the partial notebook
        if type(err).__name__ != "PapermillExecutionError":
            raise
        if getattr(err, "ename", "") == "SweepStopped":
            print(f"fgl: {err.evalue}", file=sys.stderr)
            return 3
        if getattr(err, "ename", "") == "TrainingDiverged":  # the run's own words say which run, round, clients
            print(f"fgl: error: {err.evalue}\nfgl: that run stored nothing; the runs stored before it, and the "
                  "stored notebooks, figures and tables, are kept", file=sys.stderr)
            return 1
        print(f"fgl: notebook failed: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
