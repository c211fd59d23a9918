"""Writes of core knowledge. Every write runs the deterministic validator first and is atomic.

The taxonomy maintenance contract (ARG §2.3.5) lives here: adding, moving, renaming or deprecating a
label refreshes the current paths of its subtree, cleans policy references that would dangle, bumps
the project's ``knowledge_revision`` (the label index and the next release read it) and writes the
audit trail.

One concept a module: ``clusters``, ``labels`` (create, edit, move), ``label_lifecycle`` (status
changes), ``incompatibilities``, ``typologies``, ``policies`` (policies and roles), and ``knowledge``,
what every write shares. Callers import the services from this package.
"""

from .clusters import cluster_create, cluster_update
from .incompatibilities import incompatibility_create, incompatibility_delete
from .knowledge import knowledge_changed
from .label_lifecycle import STATUS_TRANSITIONS, label_set_status
from .labels import (
    label_create,
    label_example_add,
    label_example_remove,
    label_move,
    label_synonym_add,
    label_synonym_remove,
    label_update,
    next_label_id,
)
from .policies import POLICY_FIELDS, policy_as_data, policy_defaults, policy_save, role_save
from .typologies import (
    TYPOLOGY_FIELDS,
    typology_as_data,
    typology_copy_from_template,
    typology_defaults,
    typology_save,
)

__all__ = [
    "POLICY_FIELDS",
    "STATUS_TRANSITIONS",
    "TYPOLOGY_FIELDS",
    "cluster_create",
    "cluster_update",
    "incompatibility_create",
    "incompatibility_delete",
    "knowledge_changed",
    "label_create",
    "label_example_add",
    "label_example_remove",
    "label_move",
    "label_set_status",
    "label_synonym_add",
    "label_synonym_remove",
    "label_update",
    "next_label_id",
    "policy_as_data",
    "policy_defaults",
    "policy_save",
    "role_save",
    "typology_as_data",
    "typology_copy_from_template",
    "typology_defaults",
    "typology_save",
]
