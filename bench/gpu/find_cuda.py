#!/usr/bin/env python3
"""Where the GPU machine keeps CUDA 13's libraries, compute-sanitizer and ncu.

  find_cuda.py [--lib-dirs D:D...] [--bin-dirs D:D...] [--path D:D...]
               [--site-dirs D:D...] [--json OUT.json]

The training binaries, the kernel test and the runtime's tests need
libcublas.so.13, libcublasLt.so.13 and libnccl.so.2 (docs/cuda.md section
7); they are not in the bundle (the toolkit's copies are 814 MB). A
machine with PyTorch or JAX from pip has them in the wheels' folders:
`site-packages/nvidia/cu13/lib` (the CUDA 13 wheels), `nvidia/cublas/lib`,
`nvidia/nccl/lib`, ...; a machine with the toolkit has them in
/usr/local/cuda/lib64. libcudart.so.13 is looked
for too but not required: the binaries use the driver API, and cuBLAS and
NCCL link the runtime statically (readelf -d lists no libcudart).

Search order, first hit wins per library: --lib-dirs (default the
toolkit's /usr/local/cuda/lib64, .../targets/x86_64-linux/lib,
/usr/local/cuda/lib), then `*/nvidia/*/lib` under every folder on this
Python's sys.path and site.getsitepackages() (PYTHONPATH first, as Python
itself searches), then the usual prefixes of other Pythons (--site-dirs
replaces these folders). Libraries that load one another (cuBLAS loads
cuBLASLt by soname) are found in the same folder by a normal
installation; the folders go on LD_LIBRARY_PATH in search order.

compute-sanitizer: --bin-dirs (default /usr/local/cuda/bin), then --path
(default $PATH), then the wheels' `nvidia/cu13/bin`, `nvidia/cuda_nvcc/bin`,
`nvidia/*/compute-sanitizer/`.

ncu (Nsight Compute): the same folders, then
/opt/nvidia/nsight-compute/*/ (where the CUDA images keep it).

Prints three lines for run.sh on stdout, `LD_LIBRARY_PATH=<the folders,
':'-joined>`, `COMPUTE_SANITIZER=<its path, or unavailable>` and
`NCU=<its path, or unavailable>`, and one
line per library on stderr saying which folder it came from; --json
writes every finding, a missing required library with "dir": null and
why, and "ok": false.
"""

import argparse
import glob
import json
import os
import site
import sys

REQUIRED = ["libcublas.so.13", "libcublasLt.so.13", "libnccl.so.2"]
OPTIONAL = ["libcudart.so.13"]
TOOLKIT_LIB_DIRS = ["/usr/local/cuda/lib64",
                    "/usr/local/cuda/targets/x86_64-linux/lib",
                    "/usr/local/cuda/lib"]
TOOLKIT_BIN_DIRS = ["/usr/local/cuda/bin"]
# Site folders of a Python other than this one (a venv's, conda's, the
# user's), where `python3` is not the interpreter PyTorch was installed in.
OTHER_SITES = ["/usr/local/lib/python3*/site-packages",
               "/usr/local/lib/python3*/dist-packages",
               "/usr/lib/python3/dist-packages",
               "/opt/conda/lib/python3*/site-packages",
               os.path.expanduser("~/.local/lib/python3*/site-packages")]


def split(dirs):
    return [d for d in dirs.split(":") if d] if dirs is not None else None


def site_dirs():
    """This Python's package folders in its own search order, then the
    usual ones of other Pythons; each once."""
    dirs = list(sys.path)
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # some virtualenvs
        pass
    try:
        dirs.append(site.getusersitepackages())
    except AttributeError:
        pass
    for pattern in OTHER_SITES:
        dirs += sorted(glob.glob(pattern))
    seen, out = set(), []
    for d in dirs:
        if d and os.path.isdir(d):
            real = os.path.realpath(d)
            if real not in seen:
                seen.add(real)
                out.append(d)
    return out


def wheel_dirs(sites, *parts):
    """`site/nvidia/<package>/<parts>` for every site; cu13 (the CUDA 13
    wheels' shared folder) first within a site."""
    out = []
    for s in sites:
        found = sorted(glob.glob(os.path.join(s, "nvidia", "*", *parts)))
        found.sort(key=lambda d: "/nvidia/cu13/" not in d)
        out += [d for d in found if os.path.isdir(d)]
    return out


def find(a):
    sites = a.site_dirs if a.site_dirs is not None else site_dirs()
    lib_dirs = (a.lib_dirs if a.lib_dirs is not None else TOOLKIT_LIB_DIRS) + \
        wheel_dirs(sites, "lib")
    libraries, chosen = {}, []
    for name in REQUIRED + OPTIONAL:
        hit = next((d for d in lib_dirs
                    if os.path.exists(os.path.join(d, name))), None)
        if hit:
            libraries[name] = {"dir": hit, "required": name in REQUIRED}
            if hit not in chosen:
                chosen.append(hit)
        else:
            libraries[name] = {"dir": None, "required": name in REQUIRED,
                               "missing": "not found in %d folders"
                               % len(lib_dirs)}
    chosen.sort(key=lib_dirs.index)

    bin_dirs = (a.bin_dirs if a.bin_dirs is not None else TOOLKIT_BIN_DIRS) + \
        (a.path if a.path is not None else split(os.environ.get("PATH", ""))) + \
        wheel_dirs(sites, "bin") + wheel_dirs(sites, "compute-sanitizer")
    sanitizer = next((os.path.join(d, "compute-sanitizer") for d in bin_dirs
                      if os.access(os.path.join(d, "compute-sanitizer"),
                                   os.X_OK)), None)
    ncu = next((os.path.join(d, "ncu") for d in
                bin_dirs + sorted(glob.glob("/opt/nvidia/nsight-compute/*"))
                if os.access(os.path.join(d, "ncu"), os.X_OK)), None)
    return {"ok": all(libraries[n]["dir"] for n in REQUIRED),
            "libraries": libraries, "ld_library_path": chosen,
            "compute_sanitizer": sanitizer or "unavailable",
            "ncu": ncu or "unavailable",
            "searched_lib_dirs": lib_dirs}


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib-dirs", type=split,
                   help="toolkit library folders, ':'-separated (default: "
                   + ":".join(TOOLKIT_LIB_DIRS) + ")")
    p.add_argument("--bin-dirs", type=split,
                   help="toolkit program folders (default: /usr/local/cuda/bin)")
    p.add_argument("--path", type=split, help="instead of $PATH")
    p.add_argument("--site-dirs", type=split,
                   help="instead of this Python's package folders and the "
                   "usual ones of others")
    p.add_argument("--json", help="write the findings here")
    a = p.parse_args()
    out = find(a)
    for name, lib in out["libraries"].items():
        print("find_cuda: %-18s %s" % (name, lib["dir"] or (
            "MISSING" if lib["required"] else "not found (not required)")),
            file=sys.stderr)
    print("find_cuda: %-18s %s" % ("compute-sanitizer", out["compute_sanitizer"]),
          file=sys.stderr)
    print("find_cuda: %-18s %s" % ("ncu", out["ncu"]), file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    print("LD_LIBRARY_PATH=" + ":".join(out["ld_library_path"]))
    print("COMPUTE_SANITIZER=" + out["compute_sanitizer"])
    print("NCU=" + out["ncu"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
