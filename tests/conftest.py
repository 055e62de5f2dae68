"""How `make test` spreads the suite over two pytest-xdist workers.

Each test file stays whole on one worker (its module-scoped clusters are
set up once), and every Spark test shares one worker, so the run starts one
Spark session, not two. The planner's Spark tests take about a third of the
suite's time; the other worker meanwhile runs everything else, whose tests
mostly wait on processes, sockets and timeouts.
"""

import pytest

SPARK_TESTS = ("tests/integration/planner/",)


@pytest.hookimpl(tryfirst=True)   # before xdist reads the groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        group = "spark" if path.startswith(SPARK_TESTS) else path
        item.add_marker(pytest.mark.xdist_group(group))
