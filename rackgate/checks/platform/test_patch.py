"""PLAT-PATCH-SIZE, PLAT-PATCH-ENVS, PLAT-ATOM-PATH: ATOM PR #2380 is applied, whole, to the ATOM
the server imports. `import` passes on a 0-byte file, so sizes are checked, not just imports."""
import pytest

from rackgate.errors import UnrecognisedOutput
from rackgate.gates import plat as judge
from rackgate.probes import container
from rackgate.report.verdict import CouldNotObserve, check


def _atom_root(node, rack) -> str:
    """The patched tree: the rack file's atom_path, else the tree python imports (as the runbook
    derives ATOM_ROOT)."""
    if rack.atom_path:
        return rack.atom_path.rstrip("/")
    got, _ = container.python(node.container(), "import atom, os; print(os.path.dirname(os.path.dirname(atom.__file__)))",
                              rack.platform.container_python)
    if got.error or not got.value:
        raise CouldNotObserve(f"{node.name}: no atom_path in the rack file and `import atom` fails: {got.summary()}")
    return container.node_path(node.container(), got.value)


@pytest.mark.row("PLAT-PATCH-SIZE")
def test_patch_sizes(node, rack, evidence, facts):
    p = rack.platform
    ch = node.container()
    root = _atom_root(node, rack)
    want = {f"{root}/{rel}": size for rel, size in p.patch_files.items()}
    grep_path = f"{root}/{p.patch_grep_file}"
    got, count, raw = container.sizes_and_count(ch, list(want), p.patch_grep_pattern, grep_path)
    evidence.attach("stat -c '%s %n' (in the container)", raw + f"grep -c {p.patch_grep_pattern} {grep_path}: {count}")
    for path, size in got.items():
        facts.record("platform.patch.size_bytes", size, where=f"{node.name}:{path}", unit="B", row="PLAT-PATCH-SIZE")
    bad = judge.patch_sizes(got, want, (grep_path, count, p.patch_grep_count))
    check(not bad, "PLAT-PATCH-SIZE", node.name, "; ".join(bad))


@pytest.mark.row("PLAT-PATCH-ENVS")
def test_envs_knows_the_patch_var(node, rack, evidence):
    p = rack.platform
    var = p.patch_env_var
    code = f"from atom.utils import envs; print(envs.{var})"
    (off, on), shown = container.python_variants(node.container(), code, [({}, (var,)), ({var: "1"}, ())],
                                                 p.container_python)
    evidence.attach("without / with the env var (in the container)", shown)
    seen = []
    if off.error or off.value != "False":
        seen.append(f"without {var}: {off.summary()} (want False)")
    if on.error or on.value != "True":
        seen.append(f"with {var}=1: {on.summary()} (want True)")
    check(not seen, "PLAT-PATCH-ENVS", node.name, "; ".join(seen))


@pytest.mark.row("PLAT-ATOM-PATH")
def test_imported_atom_is_the_patched_one(node, rack, evidence):
    if not rack.atom_path:
        raise CouldNotObserve(f"{node.name}: the rack file sets no atom_path: cannot tell which tree was patched")
    ch = node.container()
    got, ev = container.python(ch, "import atom; print(atom.__file__)", rack.platform.container_python)
    evidence.attach("atom.__file__ (in the container)", ev)
    if got.value and not got.error and not got.value.startswith("/"):
        raise UnrecognisedOutput(f"node {node.name}: `import atom; print(atom.__file__)` printed no path: "
                                 f"{got.value[:120]!r}")
    where = container.node_path(ch, got.value) if got.value and not got.error else None
    root = rack.atom_path.rstrip("/") + "/"
    check(where is not None and where.startswith(root), "PLAT-ATOM-PATH", node.name,
          f"atom.__file__ = {where}, but the patched tree is {rack.atom_path} (atom_path)" if where else
          f"import atom fails: {got.summary()}")
