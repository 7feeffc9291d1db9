"""R6, the Auditor's pure core and its append-only log.

The Auditor is a lateral observer: it reads the bus (as Prefect events), writes one
hash-chained AuditEvent per message and reports patterns to the human operator.  It
never publishes on the bus and never touches the memory store, so nothing here imports
``memory`` or calls ``Bus.publish``.  Its flow is ``artoo.flows.auditor``.

- ``chain``: canonical JSON, the SHA-256 chain and ``verify``.
- ``observe``: a Prefect event (as JSON) → the fields of one AuditEvent.
- ``log``: the append-only JSONL file, its lock, seen-id index, head and checkpoint.
- ``stats`` / ``anomalies``: the window statistics and anomaly detectors (pure).
- ``report``: the AuditReport and its markdown; ``persist``: statistics across restarts.
- ``across``: the chains of several homes verified together (``artoo audit verify --home``).
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "chain": ("verify", "seal"),
    "observe": ("observation",),
    "log": ("AuditLog", "AuditPaths"),
    "stats": ("StatsState", "fold"),
    "anomalies": ("AuditParams", "drift_alerts"),
    "report": ("build_report", "render_markdown"),
    "persist": ("publish_report", "load_state"),
    "across": ("verify_chains",),
})
