# Times search-conversations with long terms (issue 19, part 3: a 100 KB term took 23 s;
# `term` is now capped at 1000 characters) on a generated store, through the search index
# and with it off (DuckDB), as one-shot `skills run` processes: best of 3 wall times.
#   python3 scripts/measure-long-term.py BINARY DATA_DIR [LENGTH=1000]
# DATA_DIR: a store made by `BENCH_MESSAGES=100000 scripts/bench search`
# ($CARGO_TARGET_DIR/bench-data/search-100000-5eed).
import json, os, random, subprocess, sys, time
binary, data = sys.argv[1], sys.argv[2]
n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
skills = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "skills")
rng = random.Random(7)
terms = {
    "random letters (no match)": "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(n)),
    "`the ` repeated (common 4-grams, no match)": ("the " * n)[:n],
    "`a%` repeated (wildcards)": ("a%" * n)[:n],
    "`e_` repeated (one-character wildcards)": ("e_" * n)[:n],
    "`serde` + 995 spaces": ("serde" + " " * n)[:n],
}
def run(term, index):
    env = dict(os.environ, SKILLS_DIR=skills, SKILLS_DATA_DIR=data, SKILLS_SEARCH_INDEX="on" if index else "off")
    best, rows, err = None, None, ""
    for _ in range(3):
        t = time.monotonic()
        r = subprocess.run([binary, "run", "search-conversations", "--json", "--args-json", json.dumps({"term": term})],
                           env=env, capture_output=True, text=True)
        took = time.monotonic() - t
        best = took if best is None else min(best, took)
        if r.returncode == 0:
            rows = json.loads(r.stdout)["data"]["count"]
        else:
            err = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"
    return best, rows, err
print(f"| term ({n} characters) | index: wall | rows | DuckDB (index off): wall | rows |")
print("|---|---|---|---|---|")
for label, term in terms.items():
    assert len(term) == n, (label, len(term))
    a = run(term, True)
    b = run(term, False)
    cell = lambda r: (f"{r[0]*1000:.0f} ms", str(r[1]) if r[1] is not None else r[2])
    print(f"| {label} | {cell(a)[0]} | {cell(a)[1]} | {cell(b)[0]} | {cell(b)[1]} |")
