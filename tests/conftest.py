"""How `make test` spreads the suite over its pytest-xdist workers.

Each test file stays whole on one worker (its module-scoped clusters are
set up once), and every Spark test shares one worker, so the run starts one
Spark session, not two. The Spark tests take about a third of the suite's
time, so they go first: one worker runs them while the others work through
everything else, whose tests mostly wait on processes, sockets and
timeouts; the many short unit test files come last and even out the end.

A scheduler of our own rather than xdist's `loadgroup` marks: with pytest 9,
xdist 3.8 can no longer tag node ids with their group, so the marks are
silently ignored.
"""

SPARK_TESTS = ("tests/integration/planner/",)


def _scope(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    return "spark" if path.startswith(SPARK_TESTS) else path


def pytest_collection_modifyitems(config, items):
    # Spark first, then the other integration tests, then the unit tests;
    # a stable sort, so each file keeps its own order.
    def rank(item):
        path = item.nodeid
        return 0 if path.startswith(SPARK_TESTS) else 1 if path.startswith("tests/integration/") else 2

    items.sort(key=rank)


class _XdistScheduling:
    """Registered only when xdist is loaded (`-p no:xdist` must still work)."""

    def pytest_xdist_make_scheduler(self, config, log):
        from xdist.scheduler import LoadScopeScheduling

        class FileOrSpark(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return _scope(nodeid)

        config.option.loadscopereorder = False   # keep the order above, not "most tests first"
        return FileOrSpark(config, log)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistScheduling(), "kafkactl-xdist-scheduling")
