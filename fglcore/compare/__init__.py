"""Our results next to a paper's: reported numbers, how a cell is formed, tolerance, status and claims.

The one comparison module every paper uses: a paper adds ``params/<paper>/paper.yaml``
(and its grids), no comparison code. Parts:

* :mod:`~fglcore.compare.paper_file`: reading and validating ``paper.yaml``;
* :mod:`~fglcore.compare.cells`: our cells as the paper forms them (:func:`ours_cells`) and :func:`compare`;
* :mod:`~fglcore.compare.verdicts`: :func:`check_claims` and the notebooks' :func:`claims_table`;
* :mod:`~fglcore.compare.report`: :func:`format_mean_std` (the one formatter), :func:`side_by_side`,
  ``comparison.csv`` / ``claims.csv`` (:func:`write_report`, :func:`rebuild_report`) and the summary.

``fgl compare <paper>... --profile full`` rewrites a profile's
comparison and claims from its stored ``results.csv`` and the summary.

paper.yaml
----------
::

    paper: fedspray                 # required: the paper id (the rows' ``paper`` column)
    title: "..."                    # optional
    citation: "..."                 # optional
    notes: "..."                    # optional, free text
    datasets:                       # the paper's data (required with claims)
      - PubMed                      # a name, or a mapping:
      - {dataset: chem, num_clients: 7, tables: ["1", "4"], note: "..."}
    stand_ins:                      # optional: data that stands in for the paper's
      - {dataset: Cora, for: PubMed, note: "PubMed's features are not available offline"}
    aggregation:                    # optional: how our cell's mean ± std is formed
      std: over_clients             # over_seeds (default) | over_clients
      ddof: 1                       # 0 (default: population std) | 1 (sample std)
      tables: {opfgl1: {std: over_seeds, ddof: 0}}   # optional per-table overrides
    results:                        # the paper's reported numbers, one entry per table cell
      - {table: "2", dataset: Cora, method: fedavg, metric: accuracy, mean: 80.12, std: 0.45,
         partition: louvain, num_clients: 10, model: gcn, setting: ""}
    claims:                         # its qualitative claims
      - {id: fedspray_beats_baselines, text: "FedSpray beats every baseline on overall accuracy",
         table: "2", metric: accuracy, winner: fedspray, losers: [local, fedavg], per: [dataset, model]}
    settings: {...}                 # free-form: hyperparameters and where each comes from

``datasets`` / ``stand_ins`` entries: ``dataset`` (required); ``num_clients``
(an int or a list of ints: the paper's numbers of clients; a run of the dataset
with another number is a *subset*, unless a stand-in entry names that number); ``tables`` (list:
the tables the entry covers, default all); stand-ins also need ``for`` (what
they stand in for, free text); ``note``.

``results`` entries (errors name the entry and the field):

* required: ``table`` (str; a YAML number such as ``2`` is read as ``"2"``),
  ``dataset``, ``method``, ``metric`` (a metric of :mod:`fglcore.results`,
  e.g. ``accuracy`` in percent), ``mean`` (number);
* optional: ``std`` (number >= 0; omitted or null when the paper gives none),
  ``partition``, ``num_clients`` (int), ``model``, ``setting`` (str) --
  omitted (or null) means *any value*; ``setting: ""`` means "no setting";
  ``tolerance`` (number > 0, the floor of the tolerance, default 1.5 points;
  set it for metrics that are not percentages); ``note`` (free text, e.g.
  the row and column of the paper's table).

``claims`` entries:

* required: ``id`` (unique), ``text``, ``table``, ``metric``, ``winner`` and
  ``losers`` (a non-empty list). A participant is a method name, or a mapping
  ``{method: fedspray, setting: "S=0"}`` that also fixes label columns
  (``dataset``, ``partition``, ``num_clients``, ``model``, ``setting``);
* optional: ``per`` (label columns the claim is checked separately for,
  default ``[]``: once over everything), ``direction`` (``higher``, the
  default, or ``lower`` when less is better, e.g. bytes), ``beyond_noise``
  (bool, default false: the claim says "by a notable margin"), the filters
  ``dataset``, ``partition``, ``num_clients``, ``model``, ``setting``, and
  ``note``.

The claims live only here: a notebook asks for them by table
(``check_claims(results, paper, tables=["2"])``) and shows
:func:`claims_table`.

Whose data a row is on
----------------------
Every cell and claim group of ours carries ``data``
(:func:`~fglcore.compare.paper_file.data_role`): ``paper`` (a dataset of
``datasets``, with the paper's number of clients where given, or one the paper
reports numbers on in that table), ``stand-in`` (a ``stand_ins`` entry),
``subset`` (a paper dataset run on another number of clients, e.g. a FedStar
setting on some of its members) or ``other`` (anything else, such as a
user's own graph). Claims are judged only on ``paper`` and ``stand-in`` rows;
the other groups read "not judged" and never count as failing. A paper
entry whose cell of ours is a ``subset`` gets status ``subset``.

How a cell is formed
--------------------
Our rows are those whose ``paper`` column is the paper's id. With
``aggregation.std: over_seeds`` a cell's mean and std are taken over seeds
of each run's value (ddof from ``aggregation.ddof``); with ``over_clients``
(FedStar's official ``aggregateResults``) from the runs' per-client rows
``metric[client=K]``: the mean over clients of each client's mean over
seeds, "±" the mean over clients of each client's std over seeds. Either way
``std_of_mean`` is the population std over seeds of the run values
(:data:`fglcore.results.STD_DDOF`), the seed noise of the cell's mean.

How the comparison is made
--------------------------
A paper entry matches the rows with its table, dataset, method and metric
and with each optional label it gives. Those rows must form one group -- one
value each of ``partition``, ``num_clients``, ``model`` and ``setting`` and
one row per seed -- otherwise the entry is ambiguous and :func:`compare`
raises an error naming it. With ``delta = ours - paper``::

    tolerance = max(1.5, 2 * sqrt(std_paper**2 + std_ours**2))     # points

and status ``match`` if ``|delta| <= tolerance``, else ``above`` / ``below``,
``missing`` if we have no rows for the entry, or ``subset`` (see above).

A claim holds in a group when the winner's mean over seeds beats (strictly)
every loser's mean; it is ``None`` there when the winner or a loser has no
rows, or when they ran different seeds. With two seeds or more, the detail
names the margin closest to the seed noise
(:func:`fglcore.results.difference_noise` of the two means' standard
errors over seeds); with ``beyond_noise`` the claim holds only where every
margin exceeds it. The overall row of a claim is ``False`` if it fails in
any judged group, ``None`` if no judged group has all its data, and ``True``
otherwise (its detail says how many groups were checked, lacked data or were
not judged).
"""
from fglcore.compare.cells import (CELL_COLUMNS, CELL_LABELS, COMPARISON_COLUMNS, DEFAULT_TOLERANCE, STATUSES,
                                   compare, ours_cells, paper_entries, status, tolerance)
from fglcore.compare.paper_file import (AGGREGATIONS, DATA_ROLES, JUDGED_ROLES, PaperFileError, aggregation_for,
                                        data_role, known_papers, load_paper, paper_path, validate_paper)
from fglcore.compare.report import (build_summary, format_delta, format_mean_std, format_table, rebuild_report,
                                    side_by_side, summary_counts, write_report)
from fglcore.compare.verdicts import CLAIM_COLUMNS, CLAIMS_TABLE_COLUMNS, check_claims, claims_table

__all__ = [
    "AGGREGATIONS", "CELL_COLUMNS", "CELL_LABELS", "CLAIMS_TABLE_COLUMNS", "CLAIM_COLUMNS", "COMPARISON_COLUMNS",
    "DATA_ROLES", "DEFAULT_TOLERANCE", "JUDGED_ROLES", "PaperFileError", "STATUSES", "aggregation_for",
    "build_summary", "check_claims", "claims_table", "compare", "data_role", "format_delta", "format_mean_std",
    "format_table", "known_papers", "load_paper", "ours_cells", "paper_entries", "paper_path", "rebuild_report",
    "side_by_side", "status", "summary_counts", "tolerance", "validate_paper", "write_report",
]
