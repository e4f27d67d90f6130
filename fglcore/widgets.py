"""ipywidgets explorers for notebooks (shown only when a notebook's ``interactive`` is true).

ipywidgets and the data modules are imported inside the functions, so this
module imports without them.
"""
from __future__ import annotations

from typing import Any, Sequence


def partition_explorer(
    datasets: Sequence[str],
    partitions: Sequence[str],
    max_clients: int = 20,
    seed: int = 0,
) -> Any:
    """Pick a dataset, a partitioner and a number of clients; see each client's label mix and homophily.

    Returns an ``ipywidgets.VBox``: two dropdowns and a slider on top, below
    them an ``Output`` with the per-client label-mix figure, the homophily
    figure (dashed line: the whole graph) and the
    :func:`~fglcore.data.statistics.client_statistics` table. Datasets are
    loaded once per explorer; partitions come from the partition cache.
    """
    import ipywidgets as widgets
    from IPython.display import display

    if not datasets or not partitions:
        raise ValueError("partition_explorer needs at least one dataset and one partitioner")
    if max_clients < 2:
        raise ValueError(f"max_clients must be >= 2, got {max_clients}")

    dataset = widgets.Dropdown(options=list(datasets), description="dataset")
    partition = widgets.Dropdown(options=list(partitions), description="partition")
    num_clients = widgets.IntSlider(
        value=min(10, max_clients), min=2, max=max_clients, description="clients", continuous_update=False
    )
    output = widgets.Output()
    loaded: dict[str, Any] = {}

    def draw(_change: Any = None) -> None:
        output.clear_output(wait=True)
        with output:
            try:
                figures, table = _explore(dataset.value, partition.value, num_clients.value, seed, loaded)
            except Exception as error:  # shown to the user, who can pick another setting
                setting = f"{dataset.value} / {partition.value} / {num_clients.value} clients"
                print(f"{setting}: {type(error).__name__}: {error}")
                return
            for figure in figures:
                display(figure)
            display(table)

    for control in (dataset, partition, num_clients):
        control.observe(draw, names="value")
    draw()
    return widgets.VBox([widgets.HBox([dataset, partition, num_clients]), output])


def _explore(dataset: str, method: str, num_clients: int, seed: int, loaded: dict[str, Any]) -> tuple[list, Any]:
    """The figures and statistics table the explorer shows for one setting."""
    from fglcore.data.datasets import load_node_data
    from fglcore.data.federation import build_clients
    from fglcore.data.partition import cached_partition
    from fglcore.data.statistics import client_statistics
    from fglcore.metrics import node_homophily
    from fglcore.plotting import client_homophily, client_label_mix

    if dataset not in loaded:
        loaded[dataset] = load_node_data(dataset)
    data = loaded[dataset]
    num_classes = getattr(data, "num_classes", None) or int(data.y.max()) + 1
    assignment = cached_partition(data, method, num_clients, seed)
    clients = build_clients(data, assignment)
    stats = client_statistics(clients, num_classes)
    whole = node_homophily(data.edge_index, data.y)
    title = f"{dataset}, {method}, {num_clients} clients"
    figures = [
        client_label_mix(stats, title=f"Label mix: {title}"),
        client_homophily(stats.set_index("client")["homophily"], reference=whole, title=f"Node homophily: {title}"),
    ]
    return figures, stats

