#!/usr/bin/python3
"""Writes a synthetic fleet of fingerprints for `probe fleet`: make_fleet.py BASE.json OUT_DIR N.

Each host is BASE (a real `probe collect` document) widened to 8 GPUs and 60 libraries (about
20 KB, the size issue 3 names), with its own hostname, GPU UUIDs and bus ids. Every 1000th host
is an outlier: a different driver, cuDNN or NCCL net plugin, in turn. Prints the outlier count.
"""
import copy
import json
import os
import sys


def main(base_path, out_dir, n):
    base = json.load(open(base_path))
    gpu0 = base["gpus"][0]
    base["gpus"] = []
    for i in range(8):
        g = copy.deepcopy(gpu0)
        g["index"] = i
        g["pci_bus_id"] = "00000000:%02X:00.0" % (0x18 + i)
        base["gpus"].append(g)
    libs = list(base["libraries"])
    k = 0
    while len(libs) < 60:
        lib = copy.deepcopy(base["libraries"][k % len(base["libraries"])])
        lib["path"] = "/opt/venv%d/lib/python3.11/site-packages/nvidia/lib/%s" % (
            k, os.path.basename(lib["path"]))
        lib["origin"] = "pip"
        libs.append(lib)
        k += 1
    base["libraries"] = libs
    os.makedirs(out_dir, exist_ok=True)
    outliers = 0
    for h in range(n):
        d = copy.deepcopy(base) if h % 1000 == 999 else base
        d["hostname"] = "gpu-node-%05d" % h
        for i, g in enumerate(d["gpus"]):
            g["uuid"] = "GPU-%08x-0000-0000-0000-%012x" % (h, i)
        if h % 1000 == 999:
            outliers += 1
            kind = (h // 1000) % 3
            if kind == 0:
                d["driver"]["version"] = "535.104.05"
            elif kind == 1:
                for lib in d["libraries"]:
                    if lib["name"] == "cudnn":
                        lib["version"] = "8.9.7"
            else:
                d["libraries"].append({"name": "nccl-net-ofi", "version": "1.7.4",
                                       "path": "/opt/aws-ofi-nccl/lib/libnccl-net-ofi.so",
                                       "real_path": None, "version_source": "file name",
                                       "origin": "ld.so.conf"})
        with open(os.path.join(out_dir, "%05d.json" % h), "w") as f:
            json.dump(d, f, indent=1)
    print(outliers)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
