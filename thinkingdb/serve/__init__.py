"""Serving a knowledge base: a JSON HTTP API, an MCP server for agents, and a browser explorer.

``thinkingdb serve --db kb.sqlite`` runs :func:`~thinkingdb.serve.app.create_app` under uvicorn;
``thinkingdb mcp --db kb.sqlite`` runs :func:`~thinkingdb.serve.mcp_server.run` on standard input and
output. Both call the operations of :class:`~thinkingdb.serve.service.Service`, which keeps the graph
and indexes warm, lets readers run concurrently on a pinned snapshot, and swaps in a new snapshot
after each write. The web parts need the optional ``serve`` extra (``pip install 'thinkingdb[serve]'``);
this package's own modules import them only where they are used.
"""

from .service import ANONYMOUS, Forbidden, NotFound, Principal, Service, Unauthorized

__all__ = ["ANONYMOUS", "Forbidden", "NotFound", "Principal", "Service", "Unauthorized"]
