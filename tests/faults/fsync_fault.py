"""The fsync-error fault (fsync_fault.c): built with the C toolchain into a directory the caller
owns, preloaded into a gateway with FSYNC_FAULT_FILE naming its trigger; `fail(trigger)` starts
the EIO answers, `heal(trigger)` ends them. No device-mapper or FUSE layer here, so the failure is
made at the C library call, where the gateway's fdatasync meets it."""
from __future__ import annotations

import os
import subprocess

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsync_fault.c")


def build(out_dir: str) -> str:
    """The shared object's path, compiled from our source (cc -shared)."""
    lib = os.path.join(out_dir, "fsync_fault.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", lib, SOURCE, "-ldl"], check=True, capture_output=True)
    return lib


def preload_env(lib: str, trigger: str, env: dict | None = None) -> dict:
    """`env` (os.environ by default) with the shim preloaded in front of any LD_PRELOAD it has."""
    env = dict(os.environ if env is None else env)
    env["LD_PRELOAD"] = " ".join(p for p in (lib, env.get("LD_PRELOAD", "")) if p)
    env["FSYNC_FAULT_FILE"] = trigger
    return env


def fail(trigger: str) -> None:
    with open(trigger, "w"):
        pass


def heal(trigger: str) -> None:
    try:
        os.unlink(trigger)
    except FileNotFoundError:
        pass
