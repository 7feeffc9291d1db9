import pytest
from tests.reliability.helpers import artoo_process
from tests.scenario_kit import scenario, spec

pytestmark = pytest.mark.usefixtures("prefect_api")

@pytest.mark.parametrize("req,sc", [("say hello", dict(TaskSpec=[{"raw": "not json {"}, {"raw": "still not"}])), ("  ", {}),
   ("x", dict(TaskSpec=[{"status": 500, "repeat": True}]))])
def test_exp(scripted, artoo_env, req, sc):
    scripted(scenario(**sc))
    done = artoo_process("run", "--json", req)
    print("CODE", done.returncode)
    print("OUT", done.stdout)
    print("ERR", done.stderr)
