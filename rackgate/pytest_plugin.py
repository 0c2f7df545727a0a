"""rackgate's command-line options, registered as an installed pytest plugin (entry point
pytest11) so that pytest knows them before it looks for conftest files: `--rack /abs/path.toml`
then works from any directory."""


def pytest_addoption(parser):
    g = parser.getgroup("rackgate", "rackgate: hardware acceptance for AI inference racks")
    g.addoption("--rack", metavar="FILE", default=None,
                help="rack file (TOML); default: the simulated rack (racks/sim.toml)")
    g.addoption("--sim-fault", metavar="NAME[@NODE[:GPU]]", action="append", default=[],
                help="simulated rack only: inject a named fault (repeatable)")
    g.addoption("--sim-faults-list", action="store_true", help="list the simulated rack's faults and exit")
    g.addoption("--atom-url", metavar="URL", default=None,
                help="attach to a running server instead of launching one (never stopped by the suite)")
    g.addoption("--served-model", metavar="NAME", default=None,
                help="with --atom-url: the model name the server serves (default: the rack file's)")
    g.addoption("--record-baseline", action="store_true", help="store the facts this run observes as the baseline")
    g.addoption("--baseline", metavar="FILE", default=None, help="baseline file (default: the rack file's)")


def pytest_configure(config):
    import pytest
    # pytest settles its rootdir before any plugin is loaded, taking an option's value for a path:
    # `--rack /elsewhere/rack.toml` makes /elsewhere the rootdir and the suite's configuration
    # (markers, testpaths) is silently lost. Say so instead of running the wrong thing.
    rack = config.option.rack
    if rack and config.inipath is None:
        raise pytest.UsageError(
            f"pytest took {rack!r} for a test path and lost rackgate's configuration (rootdir {config.rootpath}); "
            f"write --rack={rack} (with '='), or run the 'rackgate' command")
