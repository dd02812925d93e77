"""The numpy reference executor: every device and every family is tested against it (docs/exactness.md, section 8)."""

from kinetic.reference.executor import ReferenceRunner
from kinetic.reference.generate import generate, generate_many
from kinetic.reference.sequence import Sequence

__all__ = ["ReferenceRunner", "Sequence", "generate", "generate_many"]
