"""Install the pinned Claude Code and Codex CLIs: ``npm ci`` once per lock file.

``npm ci`` of this folder's ``package.json`` + ``package-lock.json`` (exact versions; each
client's native binary comes as an optional dependency for this platform) into
``$INTEROP_CACHE_DIR/<hash of the two files>/`` (default ``~/.cache/ctxcompact-interop``),
outside the repository. A finished install is marked by a ``.complete`` file; a changed lock
file is a new folder, so repeated runs download nothing. Installs are built in a temporary
folder and renamed into place, under a lock, so parallel runs never see half of one.

``python tests/interop/install.py`` installs (``make interop`` does it before pytest, so the
download is not under a test's time limit) and prints where and which versions.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFESTS = (HERE / "package.json", HERE / "package-lock.json")
CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
CODEX_PACKAGE = "@openai/codex"
NPM_TIMEOUT = 900  # seconds: two ~100 MB downloads on a slow link


class InstallError(RuntimeError):
    """npm could not install the pinned clients."""


@dataclass(frozen=True)
class Clients:
    """Where the installed clients are, and their versions as installed."""

    root: Path

    @property
    def claude(self) -> Path:
        return self.root / "node_modules" / ".bin" / "claude"

    @property
    def codex(self) -> Path:
        return self.root / "node_modules" / ".bin" / "codex"

    def version(self, package: str) -> str:
        manifest = self.root / "node_modules" / package / "package.json"
        return str(json.loads(manifest.read_text())["version"])


def pinned_version(package: str) -> str:
    """The exact version ``package.json`` pins."""
    return str(json.loads(MANIFESTS[0].read_text())["dependencies"][package])


def cache_base() -> Path:
    given = os.environ.get("INTEROP_CACHE_DIR")
    if given:
        return Path(given)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache") / "ctxcompact-interop"


def install_clients() -> Clients:
    """The pinned clients, installed with ``npm ci`` unless this lock file's install exists."""
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in MANIFESTS)).hexdigest()[:16]
    base = cache_base()
    target = base / digest
    if not (target / ".complete").exists():
        base.mkdir(parents=True, exist_ok=True)
        with _locked(base / ".lock"):
            if not (target / ".complete").exists():
                _npm_ci(base, target)
    clients = Clients(target)
    for package in (CLAUDE_PACKAGE, CODEX_PACKAGE):
        if clients.version(package) != pinned_version(package):
            raise InstallError(f"{target}: {package} {clients.version(package)} is not the pinned one")
    return clients


def _npm_ci(base: Path, target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise InstallError("npm is not on PATH")
    work = base / f"{target.name}.tmp-{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    for manifest in MANIFESTS:
        shutil.copyfile(manifest, work / manifest.name)
    argv = [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    done = subprocess.run(argv, cwd=work, capture_output=True, text=True, timeout=NPM_TIMEOUT, check=False)
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise InstallError(f"`npm ci` failed ({done.returncode}):\n{done.stderr[-3000:]}")
    for line in _versions(Clients(work)):
        if not any(pinned_version(p) in line for p in (CLAUDE_PACKAGE, CODEX_PACKAGE)):
            shutil.rmtree(work, ignore_errors=True)
            raise InstallError(
                f"an installed client does not run here (was a postinstall script skipped?): {line}"
            )
    (work / ".complete").write_text(" ".join(argv) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    work.rename(target)


def _versions(clients: Clients) -> list[str]:
    """What each client's ``--version`` prints (its native binary ran), or why it did not."""
    out = []
    for binary in (clients.claude, clients.codex):
        try:
            done = subprocess.run(
                [binary, "--version"], capture_output=True, text=True, timeout=60, check=False
            )
            out.append(f"{binary.name}: {done.stdout.strip() or done.stderr.strip()[-500:]}")
        except OSError as exc:
            out.append(f"{binary.name}: {exc}")
    return out


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


if __name__ == "__main__":
    try:
        installed = install_clients()
    except InstallError as exc:
        raise SystemExit(f"interop: could not install the pinned clients: {exc}") from None
    print(f"interop clients in {installed.root}:", end="")
    print("".join(f" {p} {installed.version(p)}" for p in (CLAUDE_PACKAGE, CODEX_PACKAGE)))
