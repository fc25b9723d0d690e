"""The engine: the fact graph, rules, bounded closure with its fast paths, property paths, proofs
and queries. It reads only the model (:mod:`thinkingdb.model`) and the language; it knows nothing
of the store, the lanes or the command line (docs/architecture.md)."""
