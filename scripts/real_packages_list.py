"""The packages scripts/real_packages.py measures: name, version (or a git snapshot at a fixed
commit, for packages whose sdists ship no tests), the paths it migrates, the test subset it runs and
why. Standard library only.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

@dataclasses.dataclass(frozen=True)
class Package:
    """One package under test: where its code and tests are in the sdist, and which tests to run."""

    name: str  # PyPI name
    version: str
    import_name: str  # the top-level module the tests must import from the migrated tree
    migrate: tuple[str, ...]  # paths in the sdist given to ts2export (the package and its tests)
    tests: tuple[str, ...]  # pytest paths in the sdist
    source_root: str = "."  # folder of the sdist that holds the import package (put first on sys.path)
    k: str | None = None  # pytest -k expression
    requires: tuple[str, ...] = ()  # test requirements, beside the package itself
    pytest_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    timeout: int = 600  # seconds for one pytest run
    test_timeout: int = 180  # seconds for one test (pytest-timeout)
    subset: str = ""  # why these tests: said in the table
    binaries: bool = False  # copy the installed package's compiled modules (*.so) into the tree (the sdist has their sources only)
    source: str = ""  # "": the PyPI sdist of name==version; else a git snapshot, "github:OWNER/REPO@COMMIT" (see GitSource)

    @property
    def git(self) -> GitSource | None:
        return parse_git_source(self.source) if self.source else None


@dataclasses.dataclass(frozen=True)
class GitSource:
    """A package taken from a fixed commit of a git repository, not from its sdist (whose tests are not shipped).

    `github:OWNER/REPO@COMMIT`: a bare copy of github.com/OWNER/REPO, looked for under each --git-mirror folder
    (as OWNER+REPO/repo, the layout of the workspace's snapshot store, OWNER+REPO.git or OWNER/REPO.git), then
    under WORK/git/, and cloned (bare) there when neither has it. `git:/PATH/TO/REPO@COMMIT`: that repository
    (bare or not), as it is. COMMIT is a full 40-digit hash, never a branch or tag: the run is repeatable and
    the commit is recorded in the results."""

    kind: str  # "github" or "git"
    repo: str  # OWNER/REPO, or the path of the repository
    commit: str

    @property
    def label(self) -> str:
        return f"{self.kind}:{self.repo}"

    @property
    def url(self) -> str | None:
        return f"https://github.com/{self.repo}.git" if self.kind == "github" else None

    def candidates(self, work: Path, mirrors: list[Path]) -> list[Path]:
        """Where a bare copy of the repository may already be, in order."""
        if self.kind == "git":
            return [Path(self.repo).expanduser()]
        owner, name = self.repo.split("/")
        out = []
        for m in mirrors:
            out += [m / f"{owner}+{name}" / "repo", m / f"{owner}+{name}.git", m / owner / f"{name}.git"]
        return [*out, work / "git" / f"{owner}+{name}.git"]


GIT_SOURCE = re.compile(r"^(?P<kind>github|git):(?P<repo>.+)@(?P<commit>[0-9a-fA-F]{40})$")
GITHUB_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def parse_git_source(text: str) -> GitSource:
    """`github:OWNER/REPO@COMMIT` or `git:PATH@COMMIT` (COMMIT: 40 hex digits); ValueError otherwise."""
    m = GIT_SOURCE.match(text.strip())
    if not m:
        raise ValueError(f"not a git source {text!r}: expected github:OWNER/REPO@COMMIT or git:PATH@COMMIT, "
                         "COMMIT a full 40-digit hash")
    kind, repo = m["kind"], m["repo"]
    if kind == "github":
        repo = repo.removesuffix(".git")
        if not GITHUB_REPO.match(repo):
            raise ValueError(f"not a GitHub repository {repo!r} in {text!r}: expected OWNER/REPO")
    return GitSource(kind, repo, m["commit"].lower())


PACKAGES: dict[str, Package] = {
    p.name: p
    for p in (
        Package(
            name="e3nn",
            version="0.6.0",
            import_name="e3nn",
            migrate=("e3nn", "tests"),
            tests=("tests/util", "tests/nn/batchnorm_test.py", "tests/nn/dropout_test.py", "tests/nn/models",
                   "tests/o3/tensor_product_test.py"),
            k="(jit or script or trace or save or batchnorm or dropout) and not test_input_weights_jit",
            requires=("pytest",),
            subset="the tests of e3nn.util.jit, the scripted models and tensor products (named for jit / "
            "script / trace), and two fast suites that script modules through assert_auto_jitable; left out "
            "for time: the suites that also build torch.compile inductor kernels (minutes each on 2 cores) "
            "and test_input_weights_jit (2 min)",
        ),
        Package(
            name="julius",
            version="0.2.8",
            import_name="julius",
            migrate=("julius", "tests"),
            tests=("tests",),
            requires=("numpy", "resampy==0.4.3"),
            subset="the whole suite (the `test_torchscript` cases script every module)",
        ),
        Package(
            name="einops",
            version="0.8.2",
            import_name="einops",
            migrate=("einops",),
            tests=("einops/tests",),
            requires=("numpy",),
            k="not torch_compile and not threading",
            env=(("EINOPS_TEST_BACKENDS", "numpy,torch"),),
            subset="the whole suite for the numpy and torch backends (layers are scripted and traced), "
            "minus the torch.compile and threading tests (minutes each, no TorchScript)",
        ),
        Package(
            name="ptwt",
            version="1.0.1",
            import_name="ptwt",
            source_root="src",
            migrate=("src/ptwt", "tests"),
            tests=("tests/test_jit.py",),
            requires=("scipy>=1.10", "PyWavelets"),
            subset="test_jit, which traces the wavelet transforms (the library itself has no TorchScript)",
        ),
        Package(
            name="torchani",
            version="2.9.0",
            import_name="torchani",
            migrate=("torchani", "tests"),
            tests=("tests/test_aev.py", "tests/test_grad_module.py", "tests/test_repulsion.py",
                   "tests/test_dispersion.py", "tests/test_electro.py", "tests/test_nn.py",
                   "tests/test_potentials_custom.py", "tests/test_sae.py", "tests/test_utils.py"),
            requires=("pytest", "parameterized", "expecttest"),
            subset="the suites that need no model weights from the network (most torchani tests download "
            "them); each runs eager and under torch.jit.script (`*_jit` classes); the neighbour pairs are cut by "
            "`nonzero()` on a distance mask (data-dependent shapes)",
        ),
        Package(
            name="torch-nl",
            version="0.3",
            import_name="torch_nl",
            migrate=("torch_nl",),
            tests=("torch_nl/test_nl.py",),
            requires=("ase", "numpy"),
            subset="the whole suite (its tests live in the package): the two `@torch.jit.script` neighbour-list "
            "builders, whose pair lists are cut by boolean masks (data-dependent shapes), checked against ASE",
        ),
        Package(
            name="mace-torch",
            version="0.3.16",
            import_name="mace",
            migrate=("mace", "tests"),
            tests=("tests/test_models.py", "tests/test_modules.py"),
            requires=("pytest",),
            subset="the model and module suites: MACE models (scatter sums over edge lists) built on e3nn and "
            "compiled with e3nn.util.jit.compile (torch.jit.script)",
        ),
        Package(
            name="torchkbnufft",
            version="1.5.2",
            import_name="torchkbnufft",
            migrate=("torchkbnufft", "tests"),
            tests=("tests",),
            requires=("numpy", "scipy"),
            subset="the whole suite: every NUFFT runs the library's `@torch.jit.script` interpolation kernels "
            "(torch.jit.fork / wait)",
        ),
        Package(
            name="pytorch-ignite",
            version="0.5.5",
            import_name="ignite",
            migrate=("ignite", "tests/ignite/test_utils.py", "tests/ignite/engine/test_create_supervised.py"),
            tests=("tests/ignite/test_utils.py", "tests/ignite/engine/test_create_supervised.py"),
            requires=("numpy", "dill", "filelock", "pytest"),
            subset="test_utils (scripts `to_onehot` and a module calling it) and test_create_supervised "
            "(trains and evaluates models traced with torch.jit.trace)",
        ),
        Package(
            name="thinc",
            version="9.1.1",
            import_name="thinc",
            migrate=("thinc",),
            tests=("thinc/tests/layers/test_torchscriptwrapper.py", "thinc/tests/layers/test_pytorch_wrapper.py",
                   "thinc/tests/shims"),
            requires=("pytest", "hypothesis", "mock"),
            binaries=True,
            subset="spaCy's machine-learning library (NLP): the TorchScript wrapper (`pytorch_to_torchscript_wrapper` "
            "scripts a wrapped module with torch.jit.script, the shim saves and loads it with torch.jit.save / load), "
            "the PyTorch wrapper and shim suites around it; the tests live in the package; its Cython modules are "
            "copied from the installed wheel into the tree",
        ),
        Package(
            name="hummingbird-ml",
            version="0.4.12",
            import_name="hummingbird",
            migrate=("hummingbird", "tests"),
            tests=("tests/test_backends.py", "tests/test_extra_conf.py", "tests/test_sklearn_decision_tree_converter.py",
                   "tests/test_sklearn_imputer_converter.py", "tests/test_sklearn_sv_converter.py",
                   "tests/test_sklearn_linear_converter.py", "tests/test_sklearn_pipeline.py",
                   "tests/test_sklearn_isolation_forest_converter.py"),
            requires=("pytest",),
            subset="the suites that use the `torch.jit` backend (scikit-learn models compiled to tensor programs and "
            "traced with torch.jit.trace, saved and loaded with torch.jit.save / load) beside the eager one",
        ),
        Package(
            name="cuequivariance-torch",
            version="0.13.0",
            import_name="cuequivariance_torch",
            migrate=("cuequivariance_torch", "tests"),
            tests=("tests/operations", "tests/primitives", "tests/layers"),
            requires=("cuequivariance==0.13.0", "pytest"),
            subset="the operation, primitive and layer suites of NVIDIA's equivariant-GNN layers (spherical harmonics, "
            "tensor products, symmetric contractions as in MACE): modules run eager and through the test helper "
            "`module_with_mode`, whose `torch.jit.script(module)` / `torch.jit.trace(module, inputs)` compile whatever "
            "module a test hands in (a target ts2export cannot follow); on CPU most cases skip (they need CUDA), "
            "and of the scripted / traced ones only transpose's run",
        ),
        Package(
            name="torchprofile",
            version="0.1.0",
            import_name="torchprofile",
            migrate=("torchprofile", "tests"),
            tests=("tests/test_ops.py",),
            subset="test_ops: the MAC count of each operator, which the library reads off the TorchScript graph "
            "of torch.jit._get_trace_graph (it walks the IR's nodes); test_models left out (needs transformers "
            "and torchvision)",
        ),
        Package(
            name="kornia",
            version="0.9.0rc1",
            import_name="kornia",
            source="github:kornia/kornia@3695153f40186723662fc229e81566ee1a8cdf4d",  # tag v0.9.0rc1
            migrate=("kornia", "tests", "testing", "conftest.py"),
            tests=("tests",),
            requires=("pytest", "numpy", "pillow"),
            pytest_args=("--ignore=tests/io",),
            env=(("KORNIA_TEST_OPTIMIZER", "jit"),),
            timeout=1200,
            subset="the whole suite on CPU and float32 (the sdist ships no tests: taken from the git tag), minus tests/io "
            "(downloads images): about 150 `test_jit` cases that call torch.jit.script / trace on kornia ops, and with "
            "KORNIA_TEST_OPTIMIZER=jit the `test_dynamo` cases, whose `torch_optimizer` fixture (root conftest.py) "
            "returns torch.jit.script, so every op they hand it is scripted (a target ts2export cannot follow); the "
            "library's checks run under `torch.jit.is_scripting()` guards",
        ),
        Package(
            name="torch-geometric",
            version="2.8.0.post1",
            import_name="torch_geometric",
            source="github:pyg-team/pytorch_geometric@d4e1c45689967a614a7f3d873ad4ba83c4a1f3bd",  # tag 2.8.0.post1
            migrate=("torch_geometric", "test"),
            tests=("test",),
            # TS2EXPORT_REAL_SORT_CASES: the cases over INDEX_DTYPES, a set of torch dtypes, come in a per-process order
            env=(("FULL_TEST", "1"), ("TS2EXPORT_REAL_SORT_CASES", "1")),
            requires=("pytest",),
            subset="the whole suite with FULL_TEST=1 (the sdist ships no tests: taken from the git tag), under which "
            "the conv, pool, model and utils tests also script their modules and functions with torch.jit.script; "
            "MessagePassing layers generate their `propagate` from Jinja templates at class creation, for TorchScript; "
            "tests needing optional packages (torch-sparse, torch-scatter, pyg-lib, networkx, onnx, ...) skip",
        ),
    )
}
