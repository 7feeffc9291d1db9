"""The Prefect API servers artoo starts, and what they share.

``lingering`` (one server per ARTOO_HOME that outlives its command: idle exit, ``artoo stop``),
``embedded`` (finds or starts that server for a command; a one-shot server when ``linger_s = 0``),
``local`` (``artoo server``: Prefect over a private PostgreSQL cluster), ``cluster`` (the work pool,
deployments and limits ``artoo worker`` needs); shared by them: ``app`` (the API app the embedded
servers serve), ``process`` (a port, a health probe), ``log`` (each service failure in the server's
log, said once) and ``prefect_sources`` (whether Prefect is surely unconfigured, without importing it).
Nothing is imported until asked for: ``python -m artoo.servers.lingering`` runs this package first.
"""

from artoo import exports

__all__, __getattr__ = exports(__name__, {
    "lingering": ("ensure", "stop", "serve"),
    "embedded": ("EmbeddedServer", "prefect_api", "start_early"),
    "local": ("start_local", "Postgres", "PrefectServer"),
    "cluster": ("prepare", "worker_argv"),
    "app": ("create_app",),
    "process": ("free_port", "healthy", "api_url"),
    "log": ("ServerLogWatcher", "service_errors"),
})
