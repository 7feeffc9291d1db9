"""Law 1 for clients of daemons: databases, container engines, clusters.

``mysql -e "DROP DATABASE x"``, ``redis-cli FLUSHALL`` or ``docker compose down -v`` change nothing a
command's files show: the server does the work, outside any overlay, and nothing takes it back.  So
a request that may change what a daemon holds is a ``daemon`` danger (``network`` for a registry or a
remote cluster).  A plain query only reads, as the spec asks (``docker ps``, ``kubectl get``,
``psql -c "SELECT …"``, recognised conservatively: a statement that is not a read, or calls a function
outside a small pure list, is a change); a local image or container change (``docker build``) may change.
"""

from __future__ import annotations

import re

from artoo.tasks.law1.core import Ctx, Danger, Rule, danger, parse_options
from artoo.tasks.shell.parse import PLACEHOLDER

UNDO = "where no sandbox can observe or undo it"


def _verbs(words: list[str], valued: tuple[str, ...] = ()) -> list[str]:
    """The non-option words after the command name, skipping the values of ``valued`` options."""
    out, i = [], 1
    while i < len(words):
        if words[i] in valued:
            i += 1
        elif not words[i].startswith("-"):
            out.append(words[i])
        i += 1
    return out


# ---------------------------------------------------------------- databases
READS = re.compile(r"(select|show|describe|desc|explain|pragma\s+table_info|\.tables|\.schema|\.indexes|"
                   r"\.dump|\.mode|\.headers?|\.databases|\.width|\.dbinfo|\.fullschema|"
                   r"\\d\w*|\\l|\\dt|\\conninfo)(?![\w.])", re.IGNORECASE)
WRITES = re.compile(r"\b(into|insert|update|delete|drop|alter|create|truncate|grant|revoke|call|exec|execute|"
                    r"copy|merge|replace|upsert|attach|detach|vacuum|reindex|set|lock|analyze|load|import|"
                    r"flush|kill|shutdown|outfile|dumpfile|for\s+update)\b|\\[!o]|\.(output|once|shell|"
                    r"system|import|restore|save|backup)\b", re.IGNORECASE)
PURE = {"count", "sum", "avg", "min", "max", "lower", "upper", "length", "coalesce", "round", "abs", "cast",
        "date", "time", "datetime", "strftime", "now", "version", "substr", "substring", "trim", "concat",
        "ifnull", "nullif", "typeof", "json_extract", "group_concat", "string_agg", "array_agg", "date_trunc",
        "extract", "to_char", "current_date", "current_timestamp", "in", "exists", "values", "any", "all",
        "over", "from", "join", "on", "and", "or", "not", "where", "select", "when", "then", "else", "as",
        "using", "filter", "partition", "by", "having", "limit", "union", "distinct", "like", "between"}
"""Names that may precede ``(`` in a plain query: aggregates, string and date functions, SQL keywords."""
SQL_FLAGS = {"mysql": ("e", "--execute"), "mariadb": ("e", "--execute"), "psql": ("c", "--command"),
             "clickhouse-client": ("q", "--query"), "cockroach": ("e", "--execute")}
"""The option that gives a client its statements inline: short letter, long name."""


def read_only_sql(sql: str) -> bool:
    """True only for plain queries: every statement reads (SELECT, SHOW …) and calls nothing that writes."""
    if "$" in sql or "`" in sql or PLACEHOLDER.search(sql):
        return False
    statements = [t.strip() for t in re.split(r";|\n(?=\s*[.\\])", sql) if t.strip()]
    calls = {m.group(1).lower() for m in re.finditer(r"\b(\w+)\s*\(", sql)}
    return bool(statements) and all(READS.match(t) for t in statements) and not WRITES.search(sql) \
        and calls <= PURE


def _sql_server(words: list[str], ctx: Ctx) -> list[Danger]:
    """mysql, psql, mongosh …: whatever statements they send, the server runs; a plain query or a listing reads."""
    name = words[0].rsplit("/", 1)[-1]
    short, long = SQL_FLAGS.get(name, ("", ""))
    sql = parse_options(words[1:], short_values=short, long_values=(long,)).value(f"-{short}", long)
    if (name == "psql" and any(w in ("-l", "--list") for w in words[1:])) or (sql is not None and read_only_sql(sql)):
        return []
    return [danger("daemon", words, f"sends statements to the {name} server, which may change or delete its data "
                   + UNDO, _verbs(words)[:2], ctx)]


REDIS_VALUED = ("-h", "-p", "-s", "-a", "-u", "-n", "-r", "-i", "-d", "-D", "--user", "--pass", "--tls",
                "--cacert", "--cert", "--key", "--sni", "--pattern", "--count", "--rdb", "--functions-rdb")
REDIS_READ = {"PING", "INFO", "GET", "MGET", "KEYS", "SCAN", "EXISTS", "TTL", "PTTL", "TYPE", "DBSIZE", "HGET",
              "HGETALL", "HKEYS", "HVALS", "HLEN", "LRANGE", "LLEN", "SMEMBERS", "SCARD", "ZRANGE", "ZCARD", "STRLEN"}
REDIS_MODES = ("--scan", "--bigkeys", "--memkeys", "--hotkeys", "--stat", "--latency")


def _redis(words: list[str], ctx: Ctx) -> list[Danger]:
    verbs = _verbs(words, REDIS_VALUED)
    if (verbs and verbs[0].upper() in REDIS_READ) or (not verbs and any(w in REDIS_MODES for w in words)):
        return []
    what = f"`{verbs[0]}`" if verbs else "commands read from stdin"
    return [danger("daemon", words, f"sends {what} to the redis server, which may change or delete its data " + UNDO,
                   verbs[:2], ctx)]


# ---------------------------------------------------------------- containers and clusters
DOCKER_VALUED = ("-H", "--host", "--context", "--config", "-l", "--log-level", "-f", "--file", "-p",
                 "--project-name", "--project-directory", "--env-file", "--profile")
DOCKER_READ = {"ps", "images", "inspect", "logs", "version", "info", "top", "stats", "port", "diff", "search",
               "events", "history", "help", "ls", "df", "show", "config", "list"}
DOCKER_LOCAL = {"pull", "build", "login", "logout", "tag", "save", "load"}
"""Requests that change only local images or credentials: they may change something, as a write may."""
GROUPS = {"image", "container", "volume", "network", "system", "builder", "buildx", "context", "plugin",
          "compose", "manifest", "trust", "node", "service", "stack", "secret", "swarm"}
HOST_ACCESS = ("-v", "--volume", "--mount", "--volumes-from", "--privileged", "--device", "--cap-add",
               "--pid=host", "--network=host", "--net=host", "--ipc=host", "--userns=host", "--uts=host")


def _docker(words: list[str], ctx: Ctx) -> list[Danger]:
    """docker/podman/nerdctl (and compose): queries read; every request that changes what the daemon holds asks."""
    verbs = _verbs(words, DOCKER_VALUED)
    if words[0].rsplit("/", 1)[-1] in ("docker-compose", "podman-compose"):
        verbs = ["compose", *verbs]
    if not verbs:
        return []
    first, second = verbs[0], verbs[1] if len(verbs) > 1 else ""
    verb = second if first in GROUPS and second else first
    if verb == "push":
        return [danger("network", words, "pushes an image to a registry", verbs[1:3], ctx)]
    if verb in ("down", "rm", "rmi", "kill", "prune", "remove"):
        return [danger("daemon", words, "removes containers, images or volumes through the container daemon",
                       verbs[1:3], ctx)]
    if verb in DOCKER_READ:
        return []
    if verb in DOCKER_LOCAL or (verb in ("run", "create") and not any(w.startswith(HOST_ACCESS) for w in words)):
        return [danger("may change", words, f"changes local images or containers (`{verb}`)", verbs[1:3], ctx)]
    return [danger("daemon", words, f"asks the container daemon to `{verb}`, which may change containers, volumes "
                   "or host files " + UNDO, verbs[1:3], ctx)]


KUBE_VALUED = ("-n", "--namespace", "--context", "--kubeconfig", "--cluster", "--user", "-o", "--output",
               "-l", "--selector", "-c", "--container", "-f", "--filename", "-s", "--server")
KUBE_READ = {"get", "describe", "logs", "explain", "version", "api-resources", "api-versions", "cluster-info",
             "top", "diff", "wait", "events", "completion", "help", "whoami"}


def _kubectl(words: list[str], ctx: Ctx) -> list[Danger]:
    verbs = _verbs(words, KUBE_VALUED)
    if not verbs or verbs[0] in KUBE_READ or (verbs[0] == "config" and verbs[1:2] in (
            ["view"], ["get-contexts"], ["current-context"], ["get-clusters"])) or verbs[:2] == ["auth", "can-i"]:
        return []
    return [danger("network", words, f"changes the cluster (`{verbs[0]}`) " + UNDO, verbs[1:3], ctx)]


RULES: dict[str, Rule] = {
    **{n: _sql_server for n in ("mysql", "mariadb", "psql", "mongo", "mongosh", "cqlsh", "clickhouse-client",
                                "influx", "sqlcmd", "cockroach", "mysqlsh")},
    **{n: lambda words, ctx: [danger("daemon", words, "asks the database server to drop or change databases or users",
                                     _verbs(words)[:2], ctx)]
       for n in ("dropdb", "dropuser", "createuser", "mysqladmin", "pg_restore", "mongorestore")},
    "redis-cli": _redis, "valkey-cli": _redis, "keydb-cli": _redis,
    **{n: _docker for n in ("docker", "podman", "nerdctl", "docker-compose", "podman-compose")},
    "kubectl": _kubectl, "oc": _kubectl,
}
"""Each client's rule decides whether a request only reads, so it stands in for the read-only rule."""
