"""Turn a model's raw reply into thought, canonical visual actions, final answer and warnings.

The public surface is :func:`parse_step`, the :class:`ParsedStep` it returns and the
:data:`DIALECTS` it understands; parsing never raises on a reply, it records what it did.
"""

from engine.parsing.dialects import DIALECTS, get_dialect
from engine.parsing.result import FLAGS, ParsedStep
from engine.parsing.step import dialect_hint, parse_step

__all__ = ["DIALECTS", "FLAGS", "ParsedStep", "dialect_hint", "get_dialect", "parse_step"]
