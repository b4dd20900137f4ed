"""Build the sandbox's JavaScript engine, the extension `saip.sandbox._engine` (docs/sandbox.md): QuickJS-ng's C
sources from the source distribution that libs/sandbox/quickjs.lock pins by its hash (pip checks it), compiled with
every .c file of the sandbox's package (engine.c, budget.c, bridge.c), next to the package's sources. `make install`
runs it, and so does the engine stage of the images that run tools' code: `python scripts/build_engine.py [--work
FOLDER]`. A QuickJS source already compiled is not compiled again; nothing is downloaded at run time."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import sysconfig
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "libs" / "sandbox" / "quickjs.lock"
PACKAGE = ROOT / "libs" / "sandbox" / "src" / "saip" / "sandbox"
SOURCES = ("quickjs.c", "libregexp.c", "libunicode.c", "dtoa.c")
FLAGS = ["-O2", "-fPIC", "-DNDEBUG", "-D_GNU_SOURCE"]
UPSTREAM = "upstream-quickjs/"


def fetched(work: Path) -> Path:
    """The QuickJS sources, from the locked source distribution (downloaded and unpacked once per lock)."""
    stamp = work / ".fetched"
    if stamp.exists() and stamp.stat().st_mtime >= LOCK.stat().st_mtime:
        return work
    dist = work / "dist"
    dist.mkdir(parents=True, exist_ok=True)
    for old in dist.iterdir():
        old.unlink()
    download = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:"]
    subprocess.run([*download, "--require-hashes", "-r", str(LOCK), "-d", str(dist)], check=True)
    (archive,) = dist.glob("*.tar.gz")
    with tarfile.open(archive) as sdist:
        for member in sdist.getmembers():
            inside = member.name.partition(UPSTREAM)[2] if UPSTREAM in member.name else ""
            if inside and member.isfile() and "/" not in inside:
                member.name = inside
                sdist.extract(member, work, filter="data")
    stamp.touch()
    return work


def compiled(work: Path, compiler: str) -> list[Path]:
    """Each QuickJS source as an object file, compiled when it is newer than its object (two at a time)."""

    def one(source: str) -> Path:
        code, target = work / source, work / source.replace(".c", ".o")
        if not target.exists() or target.stat().st_mtime < code.stat().st_mtime:
            subprocess.run([compiler, *FLAGS, "-w", "-c", str(code), "-o", str(target)], check=True)
        return target

    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(one, SOURCES))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--work", type=Path, default=ROOT / ".venv" / "quickjs", help="where the sources are kept")
    arguments = parser.parse_args()
    compiler = os.environ.get("CC", "cc")
    work = fetched(arguments.work)
    objects = compiled(work, compiler)
    engine = PACKAGE / f"_engine{sysconfig.get_config_var('EXT_SUFFIX')}"
    include = sysconfig.get_paths()["include"]
    # The names the package's files share through their headers stay inside the extension (none can be taken for
    # another library's); of its own, the extension exports PyInit__engine alone.
    link = [compiler, *FLAGS, "-shared", "-fvisibility=hidden", "-Wall", "-Werror", f"-I{work}", f"-I{include}"]
    own = sorted(map(str, PACKAGE.glob("*.c")))
    subprocess.run([*link, *own, *map(str, objects), "-lm", "-o", str(engine)], check=True)
    print(f"built {engine.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
