"""MKCT memory (spec R5): Megrams in DuckDB (or PostgreSQL for a cluster), their potentials, the Dreamer's rules.

``store`` (the DuckDB store: spooled writes, single writer) and ``pg_store`` (one memory for many
workers) both implement ``backends.MemoryService``, chosen by ``open_store``; ``potentials`` (the
dual-channel convolution and its thresholds), ``calibration`` (what R2 is told before planning),
``feedback`` (R5's negative feedback), ``sops`` and ``dreamer``/``dream_ops`` (the Dreamer's offline
consolidation), ``transfer`` (export and import), ``cli_ops`` (what ``artoo memory`` shows).
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "backends": ("MemoryService", "open_store"),
    "store": ("MemoryStore",),
    "pg_store": ("PostgresMemoryStore",),
    "potentials": ("make_potentials", "action_for"),
    "calibration": ("calibrate", "calibrate_from_store"),
    "feedback": ("contradicted",),
    "dreamer": ("dream", "DreamReport"),
    "transfer": ("export_parquet", "import_table", "InvalidMegramFile"),
})
