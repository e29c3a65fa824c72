"""The center's storage: SQLAlchemy models, the engine setup and Alembic migrations."""

from center.db.engine import make_engine, migrate, private_dir, private_file
from center.db.models import (
    AuditHead,
    AuditRecord,
    Base,
    Copy,
    Feed,
    Generation,
    Grant,
    Key,
    Member,
    Node,
    Request,
    Token,
    VaultLease,
)

__all__ = [
    "AuditHead",
    "AuditRecord",
    "Base",
    "Copy",
    "Feed",
    "Generation",
    "Grant",
    "Key",
    "Member",
    "Node",
    "Request",
    "Token",
    "VaultLease",
    "make_engine",
    "migrate",
    "private_dir",
    "private_file",
]
