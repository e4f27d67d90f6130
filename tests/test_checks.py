"""Value checks (fglcore.checks), the typed config's ranges, and every notebook's parameters validated up front.

The property-based test feeds random and adversarial values for every
parameter of every notebook's parameters cell to the validation ``fgl run``
calls before the kernel starts (:func:`fglcore.notebooks.prepare`): each is
either refused with a :class:`ConfigError` naming the parameter, or every
configuration the notebook's plan builds from it is valid for the library.
Nothing trains.
"""
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fglcore import checks, notebooks
from fglcore.checks import Bounds, ConfigError
from fglcore.config import ExperimentConfig

NOTEBOOKS = [nb for paper in notebooks.papers() for nb in notebooks.notebooks_of(paper)]


# --------------------------------------------------------------------------- checks


def test_show_writes_yaml_spellings():
    assert checks.show(math.nan) == ".nan" and checks.show(math.inf) == ".inf" and checks.show(-math.inf) == "-.inf"
    assert checks.show(0.5) == "0.5" and checks.show("a") == "'a'"


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, [1.0, math.nan], {"mu": math.inf}])
def test_check_finite_rejects_nan_and_infinity_anywhere(value):
    with pytest.raises(ConfigError, match=r"^lr"):
        checks.check_finite("lr", value)


def test_bounds_name_key_value_and_range():
    with pytest.raises(ConfigError, match=r"rounds: 0 is not accepted; accepted: an integer >= 1"):
        checks.POSITIVE.check("rounds", 0)
    with pytest.raises(ConfigError, match=r"dropout: 1.0 is not accepted; accepted: a finite number >= 0 and < 1"):
        checks.FRACTION.check("dropout", 1.0)
    with pytest.raises(ConfigError, match=r"seed\[1\]: -1"):
        checks.SEED.check("seed", [0, -1])
    with pytest.raises(ConfigError, match=r"\.nan"):
        Bounds(minimum=0).check("lr", math.nan)  # NaN compares false against every bound: refused explicitly
    assert Bounds(above=0, maximum=1).check("q", 1) == 1 and checks.POSITIVE.check("k", None) is None


def test_check_type_refuses_non_finite_floats_and_bools_as_numbers():
    with pytest.raises(ConfigError, match=r"lr: \.inf"):
        checks.check_type("lr", math.inf, float)
    with pytest.raises(ConfigError, match=r"rounds: expected int, got bool"):
        checks.check_type("rounds", True, int)
    assert checks.check_type("lr", 1, float) == 1.0


def test_choices_and_lists():
    with pytest.raises(ConfigError, match=r"did you mean 'fedavg'"):
        checks.check_choice("algorithm", "fedavgg", ["fedavg", "fedprox"])
    with pytest.raises(ConfigError, match=r"seeds: \[\] is not accepted"):
        checks.check_non_empty("seeds", [])


def test_checks_is_a_leaf_module():
    source = Path(checks.__file__).read_text()
    assert "from fglcore" not in source and "import fglcore" not in source


# --------------------------------------------------------------------------- the typed config


@pytest.mark.parametrize("field", ["lr", "weight_decay", "dropout"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_config_refuses_non_finite_floats(field, value):
    with pytest.raises(ConfigError, match=rf"^{field}: "):
        ExperimentConfig.from_dict({field: value})


def test_config_ranges_are_declared_per_field():
    with pytest.raises(ConfigError, match=r"^seed: -1 is not accepted"):
        ExperimentConfig.from_dict({"seed": -1})
    with pytest.raises(ConfigError, match=r"^algorithm_options.mu: \.nan"):
        ExperimentConfig.from_dict({"algorithm": "fedprox", "algorithm_options": {"mu": math.nan}})
    assert ExperimentConfig.from_dict({"lr": 0}).lr == 0.0  # odd but meaningful: the model keeps its initialisation


def test_config_refuses_more_clients_than_the_partitioner_can_form():
    with pytest.raises(ConfigError, match=r"num_clients: 5000 is too many for 'Cora' \(2708 nodes\)"):
        ExperimentConfig.from_dict({"dataset": "Cora", "partition": "random", "num_clients": 5000})
    with pytest.raises(ConfigError, match=r"accepted: 1 to 128"):  # Louvain's cap N // K - 20 >= 1
        ExperimentConfig.from_dict({"dataset": "Cora", "partition": "louvain", "num_clients": 129})
    assert ExperimentConfig.from_dict({"dataset": "Cora", "partition": "louvain", "num_clients": 128})


def test_graph_counts_match_the_loaded_data_and_bound_the_shards():
    from fglcore.data.datasets import GRAPH_COUNTS, dataset_status, load_graph_dataset

    present = [n for n in GRAPH_COUNTS if dataset_status(n).status == "present"] or ["MUTAG"]
    for name in present:
        assert len(load_graph_dataset(name)) == GRAPH_COUNTS[name], name
    chem4 = {"dataset": "chem", "partition": "dataset_chunks", "split": "graph_stratified",
             "split_ratios": [0.8, 0.1, 0.1], "algorithm": "fedavg", "model": "gin",
             "partition_options": {"members": ["MUTAG", "BZR", "COX2", "PTC_MR"]}}
    assert ExperimentConfig.from_dict({**chem4, "num_clients": 4 * 188})  # MUTAG's 188 graphs, one per client
    with pytest.raises(ConfigError, match=r"num_clients: 756 is too many .* accepted: 1 to 752"):
        ExperimentConfig.from_dict({**chem4, "num_clients": 4 * 189})


def test_node_counts_match_the_loaded_data():
    from fglcore.data.datasets import NODE_COUNTS, dataset_names, dataset_status, load_node_data

    assert set(NODE_COUNTS) == set(dataset_names("node"))
    checked = 0
    for name in ("Cora", "CiteSeer", "Chameleon"):
        if dataset_status(name).status != "missing":
            assert load_node_data(name).num_nodes == NODE_COUNTS[name], name
            checked += 1
    assert checked, "no node dataset available to check NODE_COUNTS against"


# --------------------------------------------------------------------------- notebooks


def test_yaml_values_as_a_person_types_them():
    assert notebooks.parse_override("1e-3") == 0.001 and notebooks.parse_override("-2E+2") == -200.0
    assert notebooks.parse_override(".nan") != notebooks.parse_override(".nan")  # parsed, refused later
    assert notebooks.parse_override("[0, 1]") == [0, 1] and notebooks.parse_override("1.0") == 1.0
    for text in ("[0, 1", "a: b: c", "{x"):
        with pytest.raises(ConfigError, match=r"parameter 'seeds': .* is not a YAML value"):
            notebooks.parse_override(text, "seeds")


def _values(default):
    """Random and adversarial values for a parameter whose default is ``default``."""
    names = st.sampled_from(["Cora", "MUTAG", "chem", "fedavg", "fedstar", "gcn", "louvain", "by_dataset", "",
                             "code", "opfgl9", "Coraa", "/nonexistent/g.pt", "x.pt"])
    # no subnormals: runs in this session flush them to zero (FGL_FLUSH_DENORMAL), and Hypothesis then refuses them
    numbers = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=False),
                        st.sampled_from([0, 1, -1, 2, 3, 7, 129, 5000, 2**32, 0.5, 1e-3]))
    scalars = st.one_of(numbers, names, st.booleans(), st.none(), st.text(max_size=8))
    typed = scalars
    if isinstance(default, list) and default:
        element = default[0]
        member = numbers if isinstance(element, (int, float)) and not isinstance(element, bool) else names
        typed = st.lists(st.one_of(member, scalars), max_size=3)
    elif isinstance(default, list):
        typed = st.lists(names, max_size=3)
    return st.one_of(typed, scalars, st.lists(scalars, max_size=3))


@st.composite
def _cases(draw):
    notebook = draw(st.sampled_from(NOTEBOOKS))
    declared = {k: p for k, p in notebooks.read_parameters(notebook).items() if k not in notebooks.INJECTED}
    keys = draw(st.lists(st.sampled_from(sorted(declared)), min_size=1, max_size=2, unique=True))
    return notebook, {k: draw(_values(declared[k].default)) for k in keys}


def _configs(plan):
    found = []
    for value in (plan or {}).values():
        items = value if isinstance(value, list) else [value]
        found += [c for c in items if isinstance(c, ExperimentConfig)]
    return found


def test_a_client_count_is_refused_under_the_parameter_it_came_from():
    """Found by the property test below: local bias's non-i.i.d. client count was reported as 'bias_clients'."""
    notebook = next(nb for nb in NOTEBOOKS if nb.parent.name == "localbias" and nb.stem == "1_motivation")
    with pytest.raises(ConfigError, match=r"parameter 'noniid_clients': num_clients: 2709 is too many"):
        notebooks.prepare(notebook, "smoke", {"noniid_clients": 2709})
    with pytest.raises(ConfigError, match=r"parameter 'bias_clients': num_clients: 2709 is too many"):
        notebooks.prepare(notebook, "smoke", {"bias_clients": [4, 2709]})
    fedspray = next(nb for nb in NOTEBOOKS if nb.parent.name == "fedspray" and nb.stem == "1_motivation")
    with pytest.raises(ConfigError, match=r"parameter 'num_clients': stand_in_clients: expected an int >= 1"):
        notebooks.prepare(fedspray, "smoke", {"num_clients": 0})  # also found by the property test
    results = next(nb for nb in NOTEBOOKS if nb.parent.name == "fedspray" and nb.stem == "3_results")
    with pytest.raises(ConfigError, match=r"parameter 'datasets'.*contains a NUL character"):
        notebooks.prepare(results, "smoke", {"datasets": ["\x00/"]})  # also found by the property test
    with pytest.raises(ConfigError, match=r"parameter 'datasets'.*'~0' is not a path to a graph"):
        notebooks.prepare(results, "smoke", {"datasets": ["~0"]})  # also found by the property test: no user "0"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_cases())
def test_every_parameter_is_refused_with_its_name_or_valid_for_the_library(case):
    notebook, overrides = case
    try:
        params, _ = notebooks.prepare(notebook, "smoke", overrides)
    except ConfigError as err:
        message = str(err)
        assert any(key in message for key in overrides), f"{notebook.name} {overrides}: {message}"
        return
    declared = notebooks.read_parameters(notebook)
    full = {**{k: p.default for k, p in declared.items()}, **params}
    checks.check_finite("parameters", {k: v for k, v in full.items()})
    for config in _configs(notebooks.check_plan(notebook, full)):
        config.validate()


def test_every_notebook_has_a_plan_that_its_cells_call():
    for notebook in NOTEBOOKS:
        fn = notebooks.plan_function(notebook)
        assert fn is not None, f"{notebook}: no plan in fglcore.notebooks.PLANS"
        assert f"{fn.__name__}(" in notebook.with_suffix(".py").read_text(), \
            f"{notebook}: its cells do not call {fn.__module__}.{fn.__name__}"


def test_notebook_paths_and_injected_parameters_are_refused(tmp_path):
    tour = notebooks.paths.notebooks_root() / "tour" / "fgl_basics.ipynb"
    for path, what in ((tmp_path / "none.ipynb", "not found"), (tour.parent, "is a folder"),
                       (notebooks.paths.repo_root() / "README.md", "is not a notebook")):
        with pytest.raises(ConfigError, match=rf"^notebook: .*{what}"):
            notebooks.prepare(path, "smoke")
    for key, option in notebooks.INJECTED.items():
        with pytest.raises(ConfigError, match=rf"parameter '{key}' is set by {option}"):
            notebooks.prepare(tour, "smoke", {key: "full"})
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match=r"^--out: .* is a file"):
        notebooks.prepare(tour, "smoke", out_dir=tmp_path / "file")


def test_a_relative_path_to_a_users_graph_is_made_absolute(tmp_path, monkeypatch, tiny_graph):
    import torch

    torch.save(tiny_graph, tmp_path / "g.pt")
    monkeypatch.chdir(tmp_path)
    tour = notebooks.paths.notebooks_root() / "tour" / "fgl_basics.ipynb"
    params, _ = notebooks.prepare(tour, "smoke", {"dataset": "g.pt", "num_clients": 2, "partitions": ["random"]})
    assert params["dataset"] == str(tmp_path / "g.pt")
    with pytest.raises(ConfigError, match=r"num_clients: 7 is too many for 'g' \(6 nodes\)"):
        notebooks.prepare(tour, "smoke", {"dataset": "g.pt", "num_clients": 7, "partitions": ["random"]})
