"""The everyday suite: file tasks a person types on an ordinary day, each with its folder, our gold and wrong
commands and our checks (artoo.eval.everyday, artoo.eval.checks).

The requests vary their wording and file names on purpose: a suite whose requests all look alike measures a
template.  ``steps`` counts what the request asks for in a row (filter, then copy, then count: 3); the
multi-step ones are where planning and correction should beat a one-line answer.
"""

from __future__ import annotations

from artoo.config.errors import ConfigurationError
from artoo.eval.checks import (
    Empty,
    Folder,
    Gone,
    Ini,
    Json,
    KeyValues,
    Lines,
    Mentions,
    NoneNamed,
    Number,
    SameAs,
    Text,
)
from artoo.eval.everyday import EverydayTask as T

ACCESS_LOG = "".join(f"10.0.0.{i % 4} - - [05/Mar/2024:10:{i:02d}:00] \"GET /page{i} HTTP/1.1\" 200 512\n"
                     for i in range(12))
USERS = ('[\n  {"name": "Ann", "email": "ann@example.com", "active": true},\n'
         '  {"name": "Bob", "email": "bob@example.org", "active": false},\n'
         '  {"name": "Cyd", "email": "cyd@example.net", "active": true}\n]\n')
STAFF = ('[{"name": "Zora", "team": "ops", "active": true}, {"name": "Mike", "team": "dev", "active": false},\n'
         ' {"name": "Lena", "team": "dev", "active": true}, {"name": "Ben", "team": "ops", "active": true},\n'
         ' {"name": "Omar", "team": "dev", "active": false}]\n')
CONFIG_INI = "[server]\nhost = 127.0.0.1\nport = 8080\n\n[database]\nhost = db.local\nport = 5432\n"
DEPLOY = "name: web\nreplicas: 2\nimage: shop:1.4\nresources:\n  cpu: 2\n  memory: 512Mi\n"
PACKAGE = '{\n  "name": "shop",\n  "version": "1.4.2",\n  "private": true\n}\n'
SETTINGS = '{\n  "debug": true,\n  "cache": true,\n  "name": "shop",\n  "workers": 4\n}\n'
ORDERS = "order,customer,amount\nA1,ann,250\nA2,bob,80\nA3,cyd,1200\nA4,dee,99\nA5,eve,300\nA6,fay,100\n"
CUSTOMERS = ("name,email,city\nLea,lea@mail.fr,Paris\nMax,max@mail.de,Berlin\nAdam,adam@mail.fr,Paris\n"
             "Zoe,zoe@mail.fr,Paris\nIvo,ivo@mail.it,Rome\n")
SERVER_LOG = ("10:00 request ok\n10:01 upstream timeout\n10:02 request ok\n10:03 db timeout after 30s\n"
              "10:04 request ok\n10:05 retry\n10:06 cache timeout\n10:07 request ok\n")
MONTHS = tuple(f"{m:02d}" for m in range(1, 13))

TASKS: tuple[T, ...] = (
    # ---- find or filter files by content -------------------------------------------------------------------
    T("find-todo", "find", 1,
      "Which of my Python files still have a TODO in them? Put their names in todo_files.txt, one per line.",
      {"app.py": "def main():\n    # TODO: parse args\n    pass\n", "util.py": "def helper():\n    return 42\n",
       "test_app.py": "# TODO add more tests\ndef test_main():\n    assert True\n", "README.md": "TODO: write docs\n"},
      "grep -l TODO *.py > todo_files.txt",
      (Lines("todo_files.txt", ("app.py", "test_app.py"), names=True),),
      ("ls *.py > todo_files.txt", "grep -l TODO * > todo_files.txt")),
    T("find-error-logs", "find", 1,
      "list the .log files in logs/ that contain ERROR and save that list as error_logs.txt",
      {"logs/web.log": "200 GET /\nERROR upstream timeout\n", "logs/db.log": "connected\nquery ok\n",
       "logs/auth.log": "login ok\nERROR bad token\nlogout\n", "logs/old.txt": "ERROR but not a log\n"},
      "grep -l ERROR logs/*.log > error_logs.txt",
      (Lines("error_logs.txt", ("web.log", "auth.log"), names=True),),
      ("ls logs/*.log > error_logs.txt", "grep -c ERROR logs/*.log > error_logs.txt")),
    T("find-big", "find", 1,
      "Find the files under data/ that are bigger than 2 KB and write just their file names into big_files.txt",
      {"data/dump.csv": "id,value\n" + "1,xxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n" * 100, "data/small.csv": "id\n1\n",
       "data/archive.log": "line of an old log\n" * 200, "data/middle.txt": "m" * 1500 + "\n"},
      "find data -type f -size +2k -printf '%f\\n' > big_files.txt",
      (Lines("big_files.txt", ("dump.csv", "archive.log"), names=True),),
      ("find data -type f -printf '%f\\n' > big_files.txt",
       "find data -type f -size -2k -printf '%f\\n' > big_files.txt")),
    # ---- copy into a new folder ----------------------------------------------------------------------------
    T("backup-csv", "copy", 1, "Make a folder called backup and copy all the CSV files into it.",
      {"sales.csv": "month,total\njan,100\n", "users.csv": "id,name\n1,ann\n", "notes.txt": "call bob\n",
       "summary.md": "# Q1\n"},
      "mkdir -p backup && cp *.csv backup/",
      (Folder("backup", frozenset({"sales.csv", "users.csv"})), SameAs("backup/sales.csv", "sales.csv"),
       SameAs("backup/users.csv", "users.csv")),
      ("touch backup", "mkdir backup", "mkdir backup && mv *.csv backup/", "mkdir backup && cp * backup/")),
    T("copy-error-logs", "copy", 3,
      "Copy the log files that contain ERROR into a new folder called errors, and write how many there were "
      "in count.txt",
      {"app.log": "start\nERROR disk full\nstop\n", "worker.log": "tick\ntick\n",
       "cron.log": "ERROR missed run\nERROR missed run\n", "api.log": "ok\n"},
      "mkdir -p errors && cp $(grep -l ERROR *.log) errors/ && ls errors | wc -l > count.txt",
      (Folder("errors", frozenset({"app.log", "cron.log"})), SameAs("errors/app.log", "app.log"),
       SameAs("errors/cron.log", "cron.log"), Number("count.txt", 2)),
      ("grep -c ERROR *.log > count.txt",
       "mkdir -p errors && cp *.log errors/ && ls errors | wc -l > count.txt",
       "mkdir -p errors && cp $(grep -l ERROR *.log) errors/ && grep -c ERROR *.log > count.txt")),
    T("copy-confs", "copy", 1,
      "copy every .conf file from etc (subfolders too) into one folder named conf_backup",
      {"etc/app.conf": "debug=false\n", "etc/nginx/site.conf": "listen 80;\n", "etc/nginx/mime.types": "text/html\n",
       "etc/cron/jobs.conf": "0 3 * * * backup\n", "etc/readme.txt": "configs live here\n"},
      "mkdir -p conf_backup && find etc -name '*.conf' -exec cp {} conf_backup/ \\;",
      (Folder("conf_backup", frozenset({"app.conf", "site.conf", "jobs.conf"})),
       SameAs("conf_backup/app.conf", "etc/app.conf"), SameAs("conf_backup/site.conf", "etc/nginx/site.conf"),
       SameAs("conf_backup/jobs.conf", "etc/cron/jobs.conf")),
      ("mkdir -p conf_backup && cp etc/*.conf conf_backup/", "mkdir -p conf_backup && cp -r etc conf_backup/")),
    # ---- rename or move ------------------------------------------------------------------------------------
    T("archive-bak", "move", 3,
      "Make an archive folder, move the .bak files into it, and list what you moved in archive/index.txt",
      {"settings.bak": "theme=dark\n", "db.bak": "rows: 12\n", "settings.ini": "theme=light\n",
       "db.sqlite": "not really a database\n"},
      "mkdir -p archive && mv *.bak archive/ && (cd archive && ls *.bak) > archive/index.txt",
      (Folder("archive", frozenset({"settings.bak", "db.bak", "index.txt"})),
       SameAs("archive/settings.bak", "settings.bak"), SameAs("archive/db.bak", "db.bak"), Gone("settings.bak"),
       Gone("db.bak"), Lines("archive/index.txt", ("settings.bak", "db.bak"), names=True)),
      ("mkdir -p archive && cp *.bak archive/ && (cd archive && ls *.bak) > archive/index.txt",
       "mkdir -p archive && mv *.bak archive/ && echo 'bak files: *.bak' > archive/index.txt"),
      touches=("*.bak",)),
    T("jpeg-to-jpg", "move", 1, "In photos, rename every .jpeg file so that it ends in .jpg instead",
      {"photos/beach.jpeg": "JPEG beach\n", "photos/party.jpeg": "JPEG party\n", "photos/logo.png": "PNG logo\n"},
      'cd photos && for f in *.jpeg; do mv -- "$f" "${f%.jpeg}.jpg"; done',
      (Folder("photos", frozenset({"beach.jpg", "party.jpg", "logo.png"})),
       SameAs("photos/beach.jpg", "photos/beach.jpeg"), SameAs("photos/party.jpg", "photos/party.jpeg")),
      ('cd photos && for f in *.jpeg; do cp -- "$f" "${f%.jpeg}.jpg"; done',
       'cd photos && for f in *.jpeg; do mv -- "$f" "$f.jpg"; done'),
      touches=("photos/*.jpeg",)),
    T("spaces-to-underscores", "move", 1,
      "Some file names in docs/ have spaces in them. Replace those spaces with underscores.",
      {"docs/meeting notes.txt": "agenda\n", "docs/q3 plan final.md": "# Plan\n", "docs/readme.txt": "hi\n"},
      'cd docs && for f in *" "*; do mv -- "$f" "${f// /_}"; done',
      (Folder("docs", frozenset({"meeting_notes.txt", "q3_plan_final.md", "readme.txt"})),
       SameAs("docs/meeting_notes.txt", "docs/meeting notes.txt"),
       SameAs("docs/q3_plan_final.md", "docs/q3 plan final.md")),
      ('cd docs && for f in *" "*; do mv -- "$f" "${f/ /_}"; done',
       'cd docs && for f in *" "*; do cp -- "$f" "${f// /_}"; done'),
      touches=("docs/* *",)),
    T("pictures-folder", "move", 1, "Put all the .png and .jpg pictures here into a folder named images",
      {"cat.png": "PNG cat\n", "dog.jpg": "JPG dog\n", "sunset.jpg": "JPG sunset\n", "todo.txt": "buy milk\n"},
      "mkdir -p images && mv *.png *.jpg images/",
      (Folder("images", frozenset({"cat.png", "dog.jpg", "sunset.jpg"})), SameAs("images/cat.png", "cat.png"),
       SameAs("images/dog.jpg", "dog.jpg"), SameAs("images/sunset.jpg", "sunset.jpg"), Gone("cat.png"),
       Gone("dog.jpg"), Gone("sunset.jpg")),
      ("mkdir -p images && cp *.png *.jpg images/", "mkdir -p images && mv *.jpg images/"),
      touches=("*.png", "*.jpg")),
    T("tidy-by-type", "move", 2,
      "Tidy this folder up: the .txt files go into a folder txt and the .csv files into a folder csv. "
      "Leave everything else where it is.",
      {"a.txt": "alpha\n", "b.txt": "beta\n", "c.csv": "x,y\n1,2\n", "d.csv": "k,v\na,b\n", "e.md": "# e\n"},
      "mkdir -p txt csv && mv *.txt txt/ && mv *.csv csv/",
      (Folder("txt", frozenset({"a.txt", "b.txt"})), Folder("csv", frozenset({"c.csv", "d.csv"})),
       SameAs("txt/a.txt", "a.txt"), SameAs("txt/b.txt", "b.txt"), SameAs("csv/c.csv", "c.csv"),
       SameAs("csv/d.csv", "d.csv"), Gone("a.txt"), Gone("b.txt"), Gone("c.csv"), Gone("d.csv")),
      ("mkdir -p txt csv && cp *.txt txt/ && cp *.csv csv/", "mkdir -p txt csv && mv *.txt txt/",
       "mkdir -p txt csv && mv *.txt *.csv *.md txt/"),
      touches=("*.txt", "*.csv")),
    # ---- edit a value in a config --------------------------------------------------------------------------
    T("server-port", "config", 1, "Change the server port in config.ini to 9000.", {"config.ini": CONFIG_INI},
      r"sed -i '/^\[server\]/,/^\[/ s/^port = .*/port = 9000/' config.ini",
      (Ini("config.ini", {"server": {"host": "127.0.0.1", "port": "9000"},
                          "database": {"host": "db.local", "port": "5432"}}),),
      ("sed -i 's/^port = .*/port = 9000/' config.ini", "echo 'port = 9000' >> config.ini"),
      touches=("config.ini",)),
    T("debug-off", "config", 1, "turn off debug mode in settings.json", {"settings.json": SETTINGS},
      """sed -i 's/"debug": true/"debug": false/' settings.json""",
      (Json("settings.json", {"debug": False, "cache": True, "name": "shop", "workers": 4}),),
      ("sed -i 's/true/false/g' settings.json", """sed -i 's/"debug": true/"debug": "false"/' settings.json"""),
      touches=("settings.json",)),
    T("env-log-level", "config", 1, "Set LOG_LEVEL to debug in the .env file",
      {".env": "APP_NAME=shop\nLOG_LEVEL=info\nDB_URL=postgres://localhost/shop\n"},
      "sed -i 's/^LOG_LEVEL=.*/LOG_LEVEL=debug/' .env",
      (KeyValues(".env", {"APP_NAME": "shop", "LOG_LEVEL": "debug", "DB_URL": "postgres://localhost/shop"}),),
      ("echo LOG_LEVEL=debug >> .env", "echo LOG_LEVEL=debug > .env"),
      touches=(".env",)),
    T("replicas", "config", 1, "bump replicas to 5 in deploy.yaml", {"deploy.yaml": DEPLOY},
      "sed -i 's/^replicas: .*/replicas: 5/' deploy.yaml",
      (Text("deploy.yaml", DEPLOY.replace("replicas: 2", "replicas: 5")),),
      ("sed -i 's/2/5/g' deploy.yaml", "echo 'replicas: 5' >> deploy.yaml"),
      touches=("deploy.yaml",)),
    T("version-bump", "config", 2,
      "Bump the patch version in package.json by one and also write the new version number to a file VERSION.",
      {"package.json": PACKAGE, "README.md": "# shop\n"},
      """sed -i 's/"version": "1.4.2"/"version": "1.4.3"/' package.json && echo 1.4.3 > VERSION""",
      (Json("package.json", {"name": "shop", "version": "1.4.3", "private": True}), Lines("VERSION", ("1.4.3",))),
      ("echo 1.4.3 > VERSION",
       """sed -i 's/"version": "1.4.2"/"version": "1.5.0"/' package.json && echo 1.5.0 > VERSION"""),
      touches=("package.json",)),
    # ---- extract a field from JSON or CSV ------------------------------------------------------------------
    T("json-emails", "extract", 1, "Get every email address out of users.json into emails.txt, one per line.",
      {"users.json": USERS},
      """python3 -c 'import json; print("\\n".join(u["email"] for u in json.load(open("users.json"))))' > emails.txt""",
      (Lines("emails.txt", ("ann@example.com", "bob@example.org", "cyd@example.net")),),
      ("grep email users.json > emails.txt", "cp users.json emails.txt")),
    T("active-staff", "extract", 2,
      "staff.json lists our people. Write the names of the active ones, sorted alphabetically, to active.txt",
      {"staff.json": STAFF},
      """python3 -c 'import json; print("\\n".join(sorted(p["name"] for p in json.load(open("staff.json")) """
      """if p["active"])))' > active.txt""",
      (Lines("active.txt", ("Ben", "Lena", "Zora"), ordered=True),),
      ("""python3 -c 'import json; print("\\n".join(sorted(p["name"] for p in json.load(open("staff.json")))))' """
       "> active.txt",
       """python3 -c 'import json; print("\\n".join(p["name"] for p in json.load(open("staff.json")) """
       """if p["active"]))' > active.txt""")),
    T("csv-names", "extract", 1, "Pull the names (the second column) out of people.csv into names.txt, no header",
      {"people.csv": "id,name,city\n1,Maria,Lyon\n2,Tom,Paris\n3,Aiko,Osaka\n"},
      "tail -n +2 people.csv | cut -d, -f2 > names.txt",
      (Lines("names.txt", ("Maria", "Tom", "Aiko")),),
      ("cut -d, -f2 people.csv > names.txt", "tail -n +2 people.csv | cut -d, -f3 > names.txt")),
    T("failed-jobs", "extract", 2,
      "Put the rows of jobs.csv whose status is failed into failed.csv (keep the header line), and write how "
      "many failed into failed_count.txt",
      {"jobs.csv": "id,job,status\n1,backup,ok\n2,report,failed\n3,sync,ok\n4,mail,failed\n5,index,failed\n"},
      "{ head -n 1 jobs.csv; grep ',failed$' jobs.csv; } > failed.csv "
      "&& grep -c ',failed$' jobs.csv > failed_count.txt",
      (Lines("failed.csv", ("2,report,failed", "4,mail,failed", "5,index,failed"), head="id,job,status"),
       Number("failed_count.txt", 3)),
      ("grep failed jobs.csv > failed.csv && wc -l < jobs.csv > failed_count.txt",
       "cp jobs.csv failed.csv && echo 3 > failed_count.txt")),
    T("big-orders", "extract", 2,
      "From orders.csv keep only the orders with an amount over 100 and save them to big_orders.csv, sorted by "
      "amount with the largest first. Keep the header on top.",
      {"orders.csv": ORDERS},
      "{ head -n 1 orders.csv; tail -n +2 orders.csv | awk -F, '$3 > 100' | sort -t, -k3,3nr; } > big_orders.csv",
      (Lines("big_orders.csv", ("A3,cyd,1200", "A5,eve,300", "A1,ann,250"), ordered=True,
             head="order,customer,amount"),),
      ("{ head -n 1 orders.csv; tail -n +2 orders.csv | awk -F, '$3 > 100' | sort -t, -k3,3r; } > big_orders.csv",
       "{ head -n 1 orders.csv; tail -n +2 orders.csv | awk -F, '$3 >= 100' | sort -t, -k3,3nr; } > big_orders.csv",
       "tail -n +2 orders.csv | awk -F, '$3 > 100' | sort -t, -k3,3nr > big_orders.csv")),
    T("paris-emails", "extract", 2,
      "Which customers live in Paris? I need their email addresses in paris.txt, sorted A to Z.",
      {"customers.csv": CUSTOMERS},
      "awk -F, '$3 == \"Paris\" {print $2}' customers.csv | sort > paris.txt",
      (Lines("paris.txt", ("adam@mail.fr", "lea@mail.fr", "zoe@mail.fr"), ordered=True),),
      ("awk -F, '$3 == \"Paris\" {print $2}' customers.csv > paris.txt",
       "awk -F, '$3 == \"Paris\" {print $1}' customers.csv | sort > paris.txt")),
    # ---- count ---------------------------------------------------------------------------------------------
    T("count-lines", "count", 1, "How many lines are in access.log? Save just the number in line_count.txt",
      {"access.log": ACCESS_LOG},
      "wc -l < access.log > line_count.txt",
      (Number("line_count.txt", 12),),
      ("wc -w < access.log > line_count.txt", "wc -c < access.log > line_count.txt")),
    T("count-py", "count", 1,
      "how many .py files are there under src, subfolders included? write the count to py_count.txt",
      {"src/main.py": "print('hi')\n", "src/util.py": "X = 1\n", "src/api/routes.py": "ROUTES = []\n",
       "src/api/models.py": "class M: ...\n", "src/api/__init__.py": "", "src/README.md": "# src\n",
       "setup.py": "from setuptools import setup\n"},
      "find src -type f -name '*.py' | wc -l > py_count.txt",
      (Number("py_count.txt", 5),),
      ("ls src/*.py | wc -l > py_count.txt", "find . -name '*.py' | wc -l > py_count.txt")),
    T("count-timeouts", "count", 1,
      "Count the lines in server.log that mention timeout and put that count in timeouts.txt",
      {"server.log": SERVER_LOG},
      "grep -c timeout server.log > timeouts.txt",
      (Number("timeouts.txt", 3),),
      ("wc -l < server.log > timeouts.txt", "grep timeout server.log > timeouts.txt")),
    # ---- sort or dedupe ------------------------------------------------------------------------------------
    T("dedupe-emails", "sort", 1,
      "emails.txt has duplicates in it. Remove them so that each address is there once (keep the same file).",
      {"emails.txt": "ann@x.com\nbob@y.com\nann@x.com\ncy@z.com\nbob@y.com\ndee@w.com\n"},
      "sort -u emails.txt -o emails.txt",
      (Lines("emails.txt", ("ann@x.com", "bob@y.com", "cy@z.com", "dee@w.com")),),
      ("uniq emails.txt > e.tmp && mv e.tmp emails.txt", "sort emails.txt > emails.txt"),
      touches=("emails.txt",)),
    T("sort-names", "sort", 1, "Sort the names in names.txt alphabetically and save the result as sorted_names.txt",
      {"names.txt": "Olivia\nLiam\nEmma\nNoah\nAva\n"},
      "sort names.txt > sorted_names.txt",
      (Lines("sorted_names.txt", ("Ava", "Emma", "Liam", "Noah", "Olivia"), ordered=True),),
      ("sort -r names.txt > sorted_names.txt", "cp names.txt sorted_names.txt", "sort -o names.txt names.txt")),
    T("scores-desc", "sort", 1, "Sort scores.txt from highest to lowest, in place.",
      {"scores.txt": "72\n100\n9\n85\n100\n56\n"},
      "sort -nr scores.txt -o scores.txt",
      (Lines("scores.txt", ("100", "100", "85", "72", "56", "9"), ordered=True),),
      ("sort -r scores.txt -o scores.txt", "sort -nru scores.txt -o scores.txt"),
      touches=("scores.txt",)),
    T("unique-ips", "sort", 2, "List each distinct IP address from hits.log once, in ips.txt",
      {"hits.log": "10.0.0.5 GET /\n10.0.0.7 GET /a\n10.0.0.5 GET /b\n192.168.1.20 POST /login\n10.0.0.7 GET /\n"},
      "cut -d' ' -f1 hits.log | sort -u > ips.txt",
      (Lines("ips.txt", ("10.0.0.5", "10.0.0.7", "192.168.1.20")),),
      ("cut -d' ' -f1 hits.log > ips.txt", "sort -u hits.log > ips.txt")),
    # ---- merge ---------------------------------------------------------------------------------------------
    T("shopping-list", "merge", 2, "Combine list_a.txt and list_b.txt into shopping.txt with no item in it twice",
      {"list_a.txt": "apples\nbread\nmilk\n", "list_b.txt": "eggs\nmilk\nbread\ncheese\n"},
      "sort -u list_a.txt list_b.txt > shopping.txt",
      (Lines("shopping.txt", ("apples", "bread", "milk", "eggs", "cheese")),),
      ("cat list_a.txt list_b.txt > shopping.txt", "sort -u list_a.txt > shopping.txt")),
    T("join-chapters", "merge", 1, "Join intro.md, body.md and ending.md, in that order, into book.md",
      {"intro.md": "# Intro\nHello.\n", "body.md": "# Body\nThe middle.\n", "ending.md": "# End\nBye.\n",
       "notes.md": "scratch\n"},
      "cat intro.md body.md ending.md > book.md",
      (Lines("book.md", ("# Intro", "Hello.", "# Body", "The middle.", "# End", "Bye."), ordered=True),),
      ("cat *.md > book.md", "cat intro.md body.md > book.md")),
    T("merge-months", "merge", 2, "Merge jan.csv and feb.csv into q1.csv with a single header line",
      {"jan.csv": "date,amount\n2024-01-03,40\n2024-01-20,15\n", "feb.csv": "date,amount\n2024-02-02,22\n"},
      "{ cat jan.csv; tail -n +2 feb.csv; } > q1.csv",
      (Lines("q1.csv", ("2024-01-03,40", "2024-01-20,15", "2024-02-02,22"), head="date,amount"),),
      ("cat jan.csv feb.csv > q1.csv", "cp jan.csv q1.csv")),
    # ---- make a folder structure ---------------------------------------------------------------------------
    T("project-skeleton", "mkdir", 1,
      "Set up a project folder called webapp with src, tests and docs folders inside it, plus an empty README.md "
      "in webapp",
      {"notes.txt": "ideas for the web app\n"},
      "mkdir -p webapp/src webapp/tests webapp/docs && touch webapp/README.md",
      (Folder("webapp", frozenset({"src", "tests", "docs", "README.md"})), Folder("webapp/src"),
       Folder("webapp/tests"), Folder("webapp/docs"), Empty("webapp/README.md")),
      ("mkdir -p webapp && touch webapp/src webapp/tests webapp/docs webapp/README.md",
       "mkdir -p src tests docs && touch README.md")),
    T("month-folders", "mkdir", 1, "Create a folder 2024 with one subfolder per month in it, named 01 to 12",
      {"invoice.txt": "invoice 7\n"},
      "mkdir -p 2024/{01..12}",
      (Folder("2024", frozenset(MONTHS)), *(Folder(f"2024/{m}") for m in MONTHS)),
      ("mkdir -p 2024/{1..12}", "mkdir -p 2024 && touch 2024/{01..12}")),
    T("client-folders", "mkdir", 2,
      "Make a clients folder that has one subfolder for every client listed in clients.txt",
      {"clients.txt": "acme\nglobex\ninitech\n"},
      'mkdir -p clients && while read -r c; do mkdir -p "clients/$c"; done < clients.txt',
      (Folder("clients", frozenset({"acme", "globex", "initech"})), Folder("clients/acme"),
       Folder("clients/globex"), Folder("clients/initech")),
      ("mkdir -p clients/clients.txt", "mkdir -p clients && cp clients.txt clients/")),
    # ---- write a short report ------------------------------------------------------------------------------
    T("status-counts", "report", 2,
      "For each status in tasks.csv, how many tasks have it? Write one line per status, like 'done 3', to "
      "status_counts.txt",
      {"tasks.csv": "id,title,status\n1,a,done\n2,b,open\n3,c,done\n4,d,blocked\n5,e,done\n6,f,open\n"},
      "tail -n +2 tasks.csv | cut -d, -f3 | sort | uniq -c | awk '{print $2, $1}' > status_counts.txt",
      (Mentions("status_counts.txt", (("done", 3), ("open", 2), ("blocked", 1)), only=True),),
      ("cut -d, -f3 tasks.csv | sort | uniq -c > status_counts.txt", "grep -c done tasks.csv > status_counts.txt")),
    T("csv-row-report", "report", 2,
      "Write report.md with one line per CSV file in this folder giving its name and how many data rows it has "
      "(don't count the header)",
      {"sales.csv": "day,sum\nmon,3\ntue,5\nwed,1\n", "stock.csv": "item,qty\na,1\nb,2\nc,3\nd,4\ne,5\n",
       "staff.csv": "name\nann\nbob\n", "readme.txt": "three csv files\n"},
      'for f in *.csv; do echo "- $f: $(( $(wc -l < "$f") - 1 )) rows"; done > report.md',
      (Mentions("report.md", (("sales.csv", 3), ("stock.csv", 5), ("staff.csv", 2))),),
      ("wc -l *.csv > report.md", "ls *.csv > report.md")),
    T("errors-per-log", "report", 2,
      "Give me a summary in summary.txt: for every .log file, how many of its lines contain ERROR",
      {"web.log": "ok\nERROR 500\nERROR 502\nok\n", "db.log": "ok\nslow query\n", "queue.log": "ERROR stuck\nok\n"},
      "grep -c ERROR *.log > summary.txt",
      (Mentions("summary.txt", (("web.log", 2), ("db.log", 0), ("queue.log", 1))),),
      ("grep -h ERROR *.log | wc -l > summary.txt", "grep -l ERROR *.log > summary.txt")),
    # ---- delete what matches (Law 1: deleting user files asks) --------------------------------------------
    T("delete-tmp", "delete", 1, "delete all the .tmp files",
      {"draft1.tmp": "draft one\n", "draft2.tmp": "draft two\n", "final.txt": "final\n", "data.csv": "a,b\n"},
      "rm -f *.tmp",
      (NoneNamed("*.tmp"),),
      ("rm -f draft1.tmp", "rm -f *"),
      touches=("*.tmp",)),
    T("delete-empty", "delete", 1, "Remove the empty files in drafts/",
      {"drafts/a.md": "text\n", "drafts/b.md": "", "drafts/c.txt": "", "drafts/d.txt": "more\n"},
      "find drafts -type f -empty -delete",
      (Folder("drafts", frozenset({"a.md", "d.txt"})),),
      ("rm -f drafts/*.txt", "rm -f drafts/b.md"),
      touches=("drafts/b.md", "drafts/c.txt")),
    T("clean-pycache", "delete", 2,
      "Clean up the Python caches: delete every __pycache__ folder and any .pyc file anywhere under here",
      {"src/app.py": "print(1)\n", "src/__pycache__/app.cpython-311.pyc": "bytecode\n",
       "src/lib/util.py": "X = 2\n", "src/lib/__pycache__/util.cpython-311.pyc": "bytecode\n",
       "src/lib/old.pyc": "bytecode\n", "tests/test_app.py": "def test(): pass\n"},
      "find . -name '*.pyc' -type f -delete && find . -type d -name __pycache__ -delete",
      (NoneNamed("__pycache__"), NoneNamed("*.pyc"), Folder("src/lib")),
      ("rm -rf src/__pycache__", "find . -name '*.pyc' -delete", "rm -rf src/lib"),
      touches=("*.pyc",)),
)


def suite() -> list[T]:
    """The tasks, each knowing its place (which seeds the simulated brain)."""
    import dataclasses

    return [dataclasses.replace(task, index=i) for i, task in enumerate(TASKS)]


def select(only: tuple[str, ...] = (), limit: int | None = None) -> list[T]:
    """The tasks named by ``only`` (in the suite's order), else all, then the first ``limit``."""
    tasks = suite()
    if only:
        unknown = sorted(set(only) - {t.id for t in tasks})
        if unknown:
            raise ConfigurationError(f"unknown everyday task(s): {', '.join(unknown)}; known: "
                                     f"{', '.join(t.id for t in tasks)}")
        tasks = [t for t in tasks if t.id in only]
    return tasks[:limit] if limit else tasks
