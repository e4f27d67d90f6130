"""fglcore: the computing core of the FGL reproducibility companion.

Data, partitions, models, the federated engine with its communication ledger,
the algorithms, metrics and the comparison of results with the papers.
"""

__version__ = "0.1.0"


def _exit_with_parent_when_asked() -> None:
    """A kernel started by ``fgl`` (``FGL_EXIT_WITH_PARENT=1``) exits when ``fgl`` is gone (:func:`fglcore.runtime.exit_with_parent`)."""
    from fglcore.settings import setting

    if setting("exit_with_parent"):
        from fglcore.runtime import exit_with_parent

        exit_with_parent()


_exit_with_parent_when_asked()
