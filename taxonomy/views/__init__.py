"""Browser curation of core knowledge: taxonomy tree, label page, typology/policy/role editors, history.

Pages are server-rendered; an htmx request to the same view gets the fragment it swaps. Each view
checks shape with a form, then calls a service of ``taxonomy.services``; a ``RuleViolation`` is put
back on the form next to the field it names (with the rule name) and nothing is saved.
"""

from .editors import (
    policy_detail,
    policy_list,
    role_detail,
    role_list,
    typology_copy_template,
    typology_detail,
    typology_list,
)
from .history import history
from .labels import (
    incompatibility_add,
    incompatibility_remove,
    label_detail,
    label_edit,
    label_move,
    label_status,
    label_term_add,
    label_term_remove,
)
from .packs import pack_download, packs_page
from .tree import cluster_create, label_create, project_home, taxonomy_page

__all__ = [
    "cluster_create",
    "history",
    "incompatibility_add",
    "incompatibility_remove",
    "label_create",
    "label_detail",
    "label_edit",
    "label_move",
    "label_status",
    "label_term_add",
    "label_term_remove",
    "pack_download",
    "packs_page",
    "policy_detail",
    "policy_list",
    "project_home",
    "role_detail",
    "role_list",
    "taxonomy_page",
    "typology_copy_template",
    "typology_detail",
    "typology_list",
]
