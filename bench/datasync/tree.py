"""Test trees for the datasync benchmarks.

  tree.py files ROOT COUNT SIZE   COUNT files of SIZE random bytes, 1,000 per directory
  tree.py edit ROOT SEED COUNT    COUNT writes of 1 MiB of random bytes at seeded random
                                  offsets inside the files directly under ROOT
"""
import os
import random
import sys


def files(root, count, size):
    for i in range(count):
        d = os.path.join(root, "d%04d" % (i // 1000))
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%07d" % i), "wb") as f:
            f.write(os.urandom(size))


def edit(root, seed, count):
    rng = random.Random(1000 + seed)
    names = sorted(os.listdir(root))
    for _ in range(count):
        path = os.path.join(root, rng.choice(names))
        size = os.path.getsize(path)
        if size < (1 << 20):
            sys.exit("tree.py edit: %s is smaller than 1 MiB" % path)
        with open(path, "r+b") as f:
            f.seek(rng.randrange(0, size - (1 << 20) + 1))
            f.write(os.urandom(1 << 20))


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "files":
        files(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 5 and sys.argv[1] == "edit":
        edit(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(__doc__)
