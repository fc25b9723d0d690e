"""The default rule library (``thinkingdb/data/default_rules.tdb``) compiled, written by
``python -m thinkingdb.engine.rules`` from ``SOURCE``: do not edit.
:func:`thinkingdb.engine.rules.precompiled_default_rules` uses it only while ``SOURCE`` is the
library's text."""

from ..model import Atom, Declaration, Rule, Var

SOURCE = '# ThinkingDB default rule library (docs/closure.md, "Default rule library").\n# Weights below 1 make longer inferences score lower than the facts they come from.\n\n# Dependencies are transitive: nginx depends_on openssl, openssl depends_on libc => nginx depends_on libc.\nrelation depends_on transitive.\n\n# Capability: a tool has the capabilities of what it uses.\nrule capability @0.95: ?x uses ?y, ?y provides ?z => ?x has_capability ?z.\n\n# Relevance through capability: something is relevant for a goal its capabilities serve.\nrule relevance @0.90: ?x has_capability ?c, ?c relevant_for ?g => ?x relevant_for ?g.\n\n# Provider: whatever provides a capability another thing requires is a provider for it.\nrule provider @0.90: ?x requires ?c, ?p provides ?c => ?p provider_for ?x.\n\n# Dependency and support: what a thing depends on supports it.\nrule dependency_support @0.90: ?x depends_on ?y => ?y supports ?x.\n\n# Capability through dependency: a thing inherits the capabilities of what it depends on.\nrule capability_through_dependency @0.85: ?x depends_on ?y, ?y has_capability ?c => ?x has_capability ?c.\n\n# Causal chains: causes compose, each extra link costing a little certainty.\nrule causal_chain @0.90: ?x causes ?y, ?y causes ?z => ?x causes ?z.\n'

RULES = (
    Rule(name='capability', premises=(Atom(subject=Var(name='x'), relation='uses', object=Var(name='y')), Atom(subject=Var(name='y'), relation='provides', object=Var(name='z'))), head=Atom(subject=Var(name='x'), relation='has_capability', object=Var(name='z')), weight=0.95, negated=(), constraints=()),
    Rule(name='relevance', premises=(Atom(subject=Var(name='x'), relation='has_capability', object=Var(name='c')), Atom(subject=Var(name='c'), relation='relevant_for', object=Var(name='g'))), head=Atom(subject=Var(name='x'), relation='relevant_for', object=Var(name='g')), weight=0.9, negated=(), constraints=()),
    Rule(name='provider', premises=(Atom(subject=Var(name='x'), relation='requires', object=Var(name='c')), Atom(subject=Var(name='p'), relation='provides', object=Var(name='c'))), head=Atom(subject=Var(name='p'), relation='provider_for', object=Var(name='x')), weight=0.9, negated=(), constraints=()),
    Rule(name='dependency_support', premises=(Atom(subject=Var(name='x'), relation='depends_on', object=Var(name='y')),), head=Atom(subject=Var(name='y'), relation='supports', object=Var(name='x')), weight=0.9, negated=(), constraints=()),
    Rule(name='capability_through_dependency', premises=(Atom(subject=Var(name='x'), relation='depends_on', object=Var(name='y')), Atom(subject=Var(name='y'), relation='has_capability', object=Var(name='c'))), head=Atom(subject=Var(name='x'), relation='has_capability', object=Var(name='c')), weight=0.85, negated=(), constraints=()),
    Rule(name='causal_chain', premises=(Atom(subject=Var(name='x'), relation='causes', object=Var(name='y')), Atom(subject=Var(name='y'), relation='causes', object=Var(name='z'))), head=Atom(subject=Var(name='x'), relation='causes', object=Var(name='z')), weight=0.9, negated=(), constraints=()),
)

DECLARATIONS = (
    Declaration(relation='depends_on', kind='transitive', other=None),
)
