"""Knowledge packs (format ``arg-pack/1``, see docs/knowledge-pack-format.md): parse, validate,
import all-or-nothing, export deterministically."""

from .exporter import pack_dump, pack_export
from .importer import PackImportResult, pack_import
from .reader import PackDocument, pack_read

__all__ = ["PackDocument", "PackImportResult", "pack_dump", "pack_export", "pack_import", "pack_read"]
