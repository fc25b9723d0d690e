"""The files a store keeps beside itself, and the temporaries their dead writers leave.

>>> store_files("kb.sqlite")[:3] + store_files("kb.sqlite")[-1:]
['kb.sqlite.graph', 'kb.sqlite.graph.delta', 'kb.sqlite.graph.view0', 'kb.sqlite.access']
"""

from __future__ import annotations

from .graphfile import VIEW_FILES, access_path, graph_path, remove_temporaries

__all__ = ["store_files", "remove_abandoned"]


def remove_abandoned(store_path: str, graph: str | None = None) -> list[str]:
    """Remove the temporary files that writers of a store's files died leaving: of the graph file (or
    ``graph``, another path it is built at), its delta, the view files and the access table
    (:func:`~thinkingdb.store.graphfile.remove_temporaries`: a temporary file whose writer is alive
    or holds it locked stays). Returns the paths removed.

    """
    return remove_temporaries(store_files(store_path) + ([graph] if graph else []))


def store_files(store_path: str) -> list[str]:
    """Every file beside a store that its readers and writers write (each through
    :func:`~thinkingdb.store.graphfile.write_container`)."""
    g = graph_path(store_path)
    return [g, g + ".delta", *(f"{g}.view{i}" for i in range(VIEW_FILES)), f"{store_path}.topics",
            f"{store_path}.matcher", access_path(store_path)]
