"""Build every .tir of a checkout (bench/models aside) for llvm and for cuda -arch=sm_90 and
hash each build's outputs (or keep its error): run on two checkouts and compare the JSON to
show a change left every output byte as it was.

    python tools/hash_outputs.py CHECKOUT OUT.json
"""
import hashlib, json, sys, glob, os, multiprocessing as mp
ROOT = sys.argv[1]; OUT = sys.argv[2]
sys.path.insert(0, ROOT)
def one(path):
    import tirc
    text = open(path).read()
    res = {}
    for tgt in ("llvm", "cuda -arch=sm_90"):
        try:
            c = tirc.compile(text, target=tgt, load=False, name="m", filename=os.path.basename(path))
            h = hashlib.sha256()
            for k in sorted(c.files):
                h.update(k.encode()); h.update(c.files[k])
            res[tgt] = h.hexdigest()[:16]
        except Exception as e:
            res[tgt] = type(e).__name__ + ": " + str(e).split("\n")[0][:200]
    return os.path.relpath(path, ROOT), res
if __name__ == "__main__":
    files = sorted(set(glob.glob(ROOT + "/**/*.tir", recursive=True)) - set(glob.glob(ROOT + "/.venv/**", recursive=True)))
    files = [f for f in files if os.path.getsize(f) < 3_000_000 and "/bench/models/" not in f]
    with mp.Pool(2) as p:
        out = dict(p.map(one, files, chunksize=4))
    json.dump(out, open(OUT, "w"), indent=1, sort_keys=True)
    print(len(out))
