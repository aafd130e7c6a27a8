#!/usr/bin/env python3
"""schedule_props.py - property test: random schedules, independently checked.

For every sample that lowers, draws random parameters, meshes, virtual-rank
counts, matmul tiles, chunk sizes and `roles` splits (by editing the sample's
text, fed to mkc on stdin), runs `mkc --emit=json` and checks the schedule
with check_schedule.py (in this process: no Python start-up per case).

A case fails when mkc crashes, reports an internal error, or emits a schedule
the checker rejects.  mkc may reject a drawn case with an ordinary diagnostic
(a tile that does not fit, say): that is counted, not failed, unless more
than a quarter of the cases are rejected (then the generator is wrong).

Reproducible: case i of seed s is drawn from random.Random("s:i") alone, so
a failure prints the exact mkc command and source to rerun it, and
`--case i` reruns just that case.  Bounded: stops starting cases after
--seconds (default 50).

Environment: MKC (mkc binary; default build/mkc), MK_PROPS_SEED (default 1),
MK_PROPS_COUNT (default 3000), MK_PROPS_SECONDS (default 50), MK_PROPS_JOBS.

To add a sample: once it lowers, add an entry to SAMPLES (its parameters,
and the hints worth varying).  A sample listed here that does not lower yet
is skipped with a note, so entries may be added ahead of the lowering.
"""
import os
import random
import re
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_schedule  # noqa: E402

MESHES = [(1, 1), (1, 2), (1, 4), (1, 8), (2, 2), (2, 4), (2, 8), (4, 8)]
SMS = 132


# ---- drawing hints ------------------------------------------------------------
def mm_tile(r, m_max, n_max, cap=64):
    """A matmul tile hint within the rules of docs/language.md section 7,
    cutting the output into at most `cap` tiles where it can."""
    ms = [m for m in (64, 128, 192, 256) if m <= m_max] or [64]
    ns = [n for n in (16, 32, 64, 96, 128, 192, 256) if n <= min(n_max, 256)] or [16]
    for _ in range(20):
        m, n = r.choice(ms), r.choice(ns)
        if -(-m_max // m) * -(-n_max // n) <= cap:
            break
    else:
        m, n = ms[-1], ns[-1]
    k = r.choice((16, 32, 64, 128))
    while 2 * (m * k + k * n) * 2 > 227 * 1024 and k > 16:
        k //= 2
    return "tile %d x %d x %d" % (m, n, k)


def cap_for(world):
    """Tiles per op: the JSON lists every rank's tasks, so fewer on big meshes."""
    return max(4, 128 // world)


def chunk(r, shard_bytes, cap):
    """A chunk size (a multiple of 16 bytes) cutting a shard into <= cap pieces."""
    sizes = [c for c in (16, 48, 256, 4096, 12288, 16384, 65536, 262144, 1 << 20)
             if -(-shard_bytes // c) <= cap]
    return "chunk %d" % r.choice(sizes)


def roles(r, ctas, comm):
    """`roles compute a, nvlink b[, rdma c]` fitting in `ctas` CTAs."""
    parts, left = [], ctas
    for name in comm:
        k = r.randint(1, max(1, min(24, left // 4)))
        parts.append("%s %d" % (name, k))
        left -= k
    parts.insert(0, "compute %d" % r.randint(1, max(1, left)))
    return "  roles " + ", ".join(parts) + "\n"


def sub_each(pattern, fn, text):
    return re.sub(pattern, lambda m: fn(m), text)


# ---- the samples -------------------------------------------------------------
# Each entry: draw(r, world) -> (defines, edit(text, r, rpg) -> text, checker
# options).  Sizes stay small: the point is many shapes, not big ones.
def draw_ag_gemm(r, world, explicit):
    rows = r.choice((8, 16, 32, 64) if world >= 16 else (8, 16, 32, 64, 128, 192, 256))
    M = world * rows
    if M < 64:
        M = 64 * world  # the matmul tile needs 64 rows
    N = r.choice((64, 128, 192, 256, 384, 512))
    K = r.choice((32, 64, 128, 256, 512))
    defs = {"M": M, "N": N, "K": K}
    shard = M // world * K * 2

    def edit(text, r2, rpg):
        text = sub_each(r"tile \d+ x \d+ x \d+", lambda m: mm_tile(r2, M, N, cap_for(world)), text)
        if explicit:
            text = sub_each(r"chunk \S+", lambda m: chunk(r2, shard, max(2, 32 // world)), text)
            text = re.sub(r"\n\s*roles [^\n]*\n", "\n", text)
            text = text.replace("\n}", "\n" + roles(r2, SMS // rpg, ("nvlink", "rdma")) + "}")
        else:
            if r2.random() < 0.6:
                text = text.replace("allgather(A, 0)", "allgather(A, 0) " + chunk(r2, shard, max(2, 32 // world)))
            if r2.random() < 0.3:
                text = text.replace("\n}", "\n" + roles(r2, SMS // rpg, ("nvlink", "rdma")) + "}")
        return text
    # the collective sends each byte over the network once per node; the
    # explicit `for q in remote` stage sends it to every remote GPU, as written
    return defs, edit, [] if explicit else ["--rdma-once"]


def draw_chain(r, world):
    big = world >= 16
    M = r.choice((64, 128, 192, 256) if big else (64, 128, 192, 256, 320, 512, 1024))
    N = r.choice((16, 64, 128, 256) if big else (16, 64, 128, 256, 384))
    K = r.choice((16, 32, 64, 128, 256))
    defs = {"M": M, "N": N, "K": K}

    def edit(text, r2, rpg):
        if r2.random() < 0.7:
            text = text.replace("matmul(X, W)", "matmul(X, W)  " + mm_tile(r2, M, N, cap_for(world)))
        if r2.random() < 0.5:
            while True:
                a, b = r2.choice((16, 64, 128, 256)), r2.choice((16, 64, 128, 256))
                if -(-M // a) * -(-N // b) <= cap_for(world):
                    break
            text = text.replace("relu(H)", "relu(H)  tile %d x %d" % (a, b))
        if r2.random() < 0.3:
            text = text.replace("\n}", "\n" + roles(r2, SMS // rpg, ()) + "}")
        return text
    return defs, edit, []


def draw_mlp_chain(r, world):
    big = world >= 8
    T = r.choice((64, 128, 192, 256) if big else (64, 128, 192, 256, 512))
    D = r.choice((64, 128, 256) if big else (64, 128, 256, 384, 512))
    defs = {"T": T, "D": D}

    def edit(text, r2, rpg):
        text = sub_each(r"tile \d+ x \d+ x \d+", lambda m: mm_tile(r2, T, D, cap_for(world)), text)
        if r2.random() < 0.3:
            text = text.replace("\n}", "\n" + roles(r2, SMS // rpg, ()) + "}")
        return text
    return defs, edit, []


def add_chunk(text, r2, call, shard, world):
    """Maybe give the collective `call` a chunk hint."""
    if r2.random() < 0.6:
        text = text.replace(call, call + " " + chunk(r2, shard, max(2, 32 // world)))
    return text


def add_roles(text, r2, rpg, comm, p=0.3):
    if r2.random() < p:
        text = text.replace("\n}", "\n" + roles(r2, SMS // rpg, comm) + "}")
    return text


def draw_gemm_rs(r, world, allreduce):
    big = world >= 16
    rows = r.choice((8, 16, 32) if big else (8, 16, 32, 64, 128))
    M = max(64, world * rows)
    M -= M % world
    N = r.choice((64, 128, 256) if big else (64, 128, 256, 384))
    K = world * r.choice((8, 16, 32, 64))
    defs = {"M": M, "N": N, "K": K}
    call = "allreduce(C)" if allreduce else "reduce_scatter(C, 0)"

    def edit(text, r2, rpg):
        text = sub_each(r"tile \d+ x \d+ x \d+", lambda m: mm_tile(r2, M, N, cap_for(world)), text)
        text = add_chunk(text, r2, call, M // world * N * 2, world)
        return add_roles(text, r2, rpg, ("nvlink", "rdma", "reduce"))
    return defs, edit, ["--rdma-once"]


def draw_tp_mlp(r, world):
    big = world >= 16
    rows = r.choice((8, 16, 32) if big else (8, 16, 32, 64))
    S = max(64, world * rows)
    S -= S % world
    H = r.choice((64, 128) if big else (64, 128, 256))
    F = world * r.choice((16, 32, 64, 128))
    defs = {"S": S, "H": H, "F": F}
    nmax = iter((F // world, H))

    def edit(text, r2, rpg):
        text = sub_each(r"tile \d+ x \d+ x \d+",
                        lambda m: mm_tile(r2, S, next(nmax), cap_for(world)), text)
        text = add_chunk(text, r2, "allgather(X, 0)", S // world * H * 2, world)
        text = add_chunk(text, r2, "reduce_scatter(P, 0)", S // world * H * 2, world)
        return add_roles(text, r2, rpg, ("nvlink", "rdma", "reduce"))
    return defs, edit, ["--rdma-once"]


def draw_attention(r, world, heads):
    rows = r.choice((64, 128) if world >= 8 else (64, 128, 256))
    defs = {"S": world * rows, "D": r.choice((64, 128))}
    if heads:
        defs["NH"] = r.choice((1, 2) if world >= 8 else (1, 2, 4))

    def edit(text, r2, rpg):
        return add_roles(text, r2, rpg, ("nvlink", "rdma"), 0.2)
    return defs, edit, []


def draw_moe(r, world):
    E = world * r.choice((1, 2, 4))
    T = world * r.choice((16, 32, 64))
    topk = r.choice([k for k in (1, 2, 4) if k <= E])
    defs = {"T": T, "E": E, "H": r.choice((64, 128, 256)), "F": r.choice((64, 128)),
            "topk": topk}

    def edit(text, r2, rpg):
        return add_roles(text, r2, rpg, ())
    return defs, edit, []


def draw_decode_mlp(r, world):
    """Decode-size MLP: few rows, the plan's split-K (or a split hint)."""
    D = r.choice((256, 512))
    defs = {"T": r.choice((1, 3, 16, 100)), "D": D, "F": r.choice((512, 1024))}

    def edit(text, r2, rpg):
        for call in ("matmul(N, Wg)", "matmul(N, Wu)", "matmul(A, Wd)"):
            if r2.random() < 0.5:
                text = text.replace(call, call + "  split %d" % r2.choice((1, 2, 4)))
        return text
    return defs, edit, []


def draw_decode_attention(r, world):
    """Decode attention: few queries per head, the plan's split-KV (or a hint)."""
    defs = {"H": world * r.choice((1, 2)), "T": r.choice((1, 3, 16)),
            "S": r.choice((256, 512, 1024)), "D": r.choice((64, 128))}

    def edit(text, r2, rpg):
        if r2.random() < 0.5:
            text = text.replace("attention(Q, K, V)", "attention(Q, K, V)  split %d" %
                                r2.choice((1, 2, 4)))
        return text
    return defs, edit, []


SAMPLES = {
    "ag_gemm": lambda r, w: draw_ag_gemm(r, w, False),
    "ag_gemm_explicit": lambda r, w: draw_ag_gemm(r, w, True),
    "chain": draw_chain,
    "mlp_chain": draw_mlp_chain,
    "gemm_rs": lambda r, w: draw_gemm_rs(r, w, False),
    "gemm_ar": lambda r, w: draw_gemm_rs(r, w, True),
    "tp_mlp": draw_tp_mlp,
    "ring_attention": lambda r, w: draw_attention(r, w, False),
    "ring_attention_causal": lambda r, w: draw_attention(r, w, True),
    "moe_dispatch_gemm": draw_moe,
    "decode_mlp": draw_decode_mlp,
    "decode_attention": draw_decode_attention,
}

# what mkc says of a construct it cannot lower yet: not a failure, not a
# rejection of the drawn case either
NOT_YET = re.compile(r"cannot be lowered|not lowered yet|not built yet")


# ---- mutations: the checker must catch a broken schedule ---------------------
# Each takes a parsed schedule, breaks it in place and returns the check that
# must then complain, or None when this schedule offers nothing to break.
def first(tasks, pred):
    return next((t for t in tasks if pred(t)), None)


def m_drop_signal(d):
    t = first(d["tasks"], lambda t: t["signals"])
    if not t:
        return None
    t["signals"].pop()
    return "flags"


def m_extra_signal(d):
    t = first(d["tasks"], lambda t: t["signals"])
    if not t:
        return None
    t["signals"].append(t["signals"][0])
    return "flags"


def m_self_wait(d):
    # a task that waits on a flag it signals itself: a cycle
    t = first(d["tasks"], lambda t: t["signals"])
    if not t:
        return None
    t["waits"].append(t["signals"][0])
    return "deadlock"


def m_swap_order(d):
    # a waiter put before its own producer on the producer's CTA: a cycle
    for t in d["tasks"]:
        for f in t["waits"]:
            for u in d["tasks"]:
                if f in u["signals"] and u["rank"] == t["rank"] and u is not t:
                    if u["role"] != t["role"]:
                        continue
                    # move t onto u's CTA, just before u
                    for v in d["tasks"]:
                        if v is not t and v["rank"] == u["rank"] and v["cta"] == u["cta"] \
                                and v["order"] >= u["order"]:
                            v["order"] += 1
                    old = (t["rank"], t["cta"], t["order"])
                    t["cta"], t["order"] = u["cta"], u["order"] - 1
                    for v in d["tasks"]:
                        if v is not t and (v["rank"], v["cta"]) == old[:2] and v["order"] > old[2]:
                            v["order"] -= 1
                    return "deadlock"
    return None


def move(d, t, rank, cta, order):
    """Task t to place `order` of CTA (rank, cta), the lists renumbered."""
    old = (t["rank"], t["cta"], t["order"])
    for v in d["tasks"]:
        if v is not t and (v["rank"], v["cta"]) == old[:2] and v["order"] > old[2]:
            v["order"] -= 1
    for v in d["tasks"]:
        if v is not t and (v["rank"], v["cta"]) == (rank, cta) and v["order"] >= order:
            v["order"] += 1
    t["cta"], t["order"] = cta, order


def pool_blocks(d):
    """(pool, rank, cta, its entries by order) for every CTA holding a pool."""
    out = []
    for q in d.get("pools", []):
        held = {}
        for x in q["tasks"]:
            held.setdefault(d["tasks"][x]["cta"], []).append(d["tasks"][x])
        for cta, ts in sorted(held.items()):
            out.append((q, q["rank"], cta, sorted(ts, key=lambda t: t["order"])))
    return out


def m_pool_deadlock(d):
    # a task a pool waits for, put after the pool on a CTA holding it: that
    # CTA may take the task that waits for it before it runs it
    for q, rank, cta, ts in pool_blocks(d):
        waits = {f for x in q["tasks"] for f in d["tasks"][x]["waits"]}
        u = first(d["tasks"], lambda u: u["rank"] == rank and u["role"] == ts[0]["role"] and
                  waits.intersection(u["signals"]) and u["id"] not in q["tasks"])
        if u:
            move(d, u, rank, cta, ts[-1]["order"] + (u["cta"] != cta))
            return "deadlock"
    return None


def m_pool_split(d):
    # another task between two of a CTA's entries of a pool
    for q, rank, cta, ts in pool_blocks(d):
        u = first(d["tasks"], lambda u: (u["rank"], u["cta"]) == (rank, cta) and
                  u["order"] > ts[-1]["order"])
        if len(ts) >= 2 and u:
            move(d, u, rank, cta, ts[0]["order"] + 1)
            return "pools"
    return None


def m_pool_twice(d):
    q = first(d.get("pools", []), lambda q: len(q["tasks"]) >= 2)
    if not q:
        return None
    q["tasks"][-1] = q["tasks"][0]
    return "pools"


def m_pool_ctas(d):
    q = first(d.get("pools", []), lambda q: True)
    if not q:
        return None
    q["ctas"] += 1
    return "pools"


def m_dup_order(d):
    t = first(d["tasks"], lambda t: t["order"] > 0)
    if not t:
        return None
    t["order"] -= 1
    return "order"


def m_role_cta(d):
    if len(d["roles"]) < 2:
        return None
    t = d["tasks"][0]
    other = first(d["roles"], lambda r: r["name"] != t["role"])
    t["cta"] = other["first_cta"]
    return "roles"


def m_overfill(d):
    d["ctas"] = d["sms"] // d["ranks_per_gpu"] + 1
    return "fit"


def m_shrink_write(d):
    # the last row of an output tile goes unwritten
    t = first(d["tasks"], lambda t: any(
        x["name"] == t["writes"][0]["tensor"] and x["kind"] == "out" for x in d["tensors"]))
    if not t:
        return None
    g = t["writes"][0]
    if g["hi"][0] - g["lo"][0] < 2:
        return None
    g["hi"][0] -= 1
    return "coverage"


def m_grow_write(d):
    # a write reaching into a neighbour's rows: overlapping writes
    by = {}
    for t in d["tasks"]:
        g = t["writes"][0]
        by.setdefault((g["tensor"], g["rank"]), []).append(g)
    for lst in by.values():
        lst.sort(key=lambda g: (g["lo"], g["hi"]))
        for a, b in zip(lst, lst[1:]):
            if a["hi"][0] == b["hi"][0] and a["lo"][0] == b["lo"][0] and len(a["lo"]) > 1 \
                    and a["hi"][1] == b["lo"][1]:
                a["hi"][1] += 1
                return "coverage"
            if a["hi"][0] == b["lo"][0] and a["lo"][1:] == b["lo"][1:]:
                a["hi"][0] += 1
                return "coverage"
    return None


def m_drop_wait(d):
    # the first task of a CTA stops waiting: nothing orders it after its
    # producers any more (it has no predecessor left in the graph)
    t = first(d["tasks"], lambda t: t["order"] == 0 and t["waits"])
    if not t:
        return None
    t["waits"] = []
    t.pop("late_waits", None)
    return "ordering"


def m_short_read(d):
    # a task that declares less than it reads (a matmul short of one k, a
    # copy short of one row): ordering alone cannot see it
    t = first(d["tasks"], lambda t: t["kind"] in ("matmul", "copy", "rdma", "ew", "row")
              and t["reads"] and t["reads"][0]["hi"][-1] - t["reads"][0]["lo"][-1] > 1)
    if not t:
        return None
    t["reads"][0]["hi"][-1] -= 1
    return "dataflow"


def m_split_slices(d):
    # a split-K sum (split-KV merge) that misses its last partial
    t = first(d["tasks"], lambda t: t["kind"] in ("sumk", "attnsum") and
              t["reads"][0]["hi"][0] - t["reads"][0]["lo"][0] > 1)
    if not t:
        return None
    t["reads"][0]["hi"][0] -= 1
    return "dataflow"


def m_split_range(d):
    # a split-K partial whose K range of B is not A's
    t = first(d["tasks"], lambda t: t["kind"] == "mmpart" and len(t["reads"]) == 2 and
              t["reads"][1]["hi"][0] - t["reads"][1]["lo"][0] > 1)
    if not t:
        return None
    t["reads"][1]["hi"][0] -= 1
    return "dataflow"


def m_local_shape(d):
    x = first(d["tensors"], lambda x: x["placement"]["kind"] == "split")
    if not x:
        return None
    x["local"][x["placement"]["dim"]] += 1
    return "tensors"


MUTATIONS = [m_drop_signal, m_extra_signal, m_self_wait, m_swap_order, m_dup_order,
             m_role_cta, m_overfill, m_shrink_write, m_grow_write, m_drop_wait,
             m_short_read, m_local_shape, m_split_slices, m_split_range,
             m_pool_deadlock, m_pool_split, m_pool_twice, m_pool_ctas]


def mutants(raw, copts):
    """Every mutation of the schedule must be caught; returns failures."""
    bad = []
    for m in MUTATIONS:
        d = check_schedule.json.loads(raw)
        want = m(d)
        if want is None:
            continue
        c = check_schedule.Checker(d, 1, rdma_once="--rdma-once" in copts)
        try:
            c.run()
        except check_schedule.Bad as e:
            bad.append("%s: checker gave up: %s" % (m.__name__, e))
            continue
        if not c.counts.get(want):
            bad.append("%s: want a '%s' violation, got %s" % (
                m.__name__, want, dict(c.counts) or "none"))
    return bad


# ---- one case ------------------------------------------------------------------
def draw_case(seed, i, names):
    r = random.Random("%s:%d" % (seed, i))
    name = names[i % len(names)]
    nodes, gpus = r.choice(MESHES)
    world = nodes * gpus
    rpg = 1
    if nodes == 1 and r.random() < 0.4:
        rpg = world  # every rank a share of one GPU (virtual ranks)
    defs, edit, copts = SAMPLES[name](r, world)
    return name, nodes, gpus, rpg, defs, edit, copts, r


def run_case(mkc, top, seed, i, names):
    name, nodes, gpus, rpg, defs, edit, copts, r = draw_case(seed, i, names)
    with open(os.path.join(top, "samples", name + ".mk")) as f:
        text = edit(f.read(), r, rpg)
    args = [mkc, "--emit=json", "-", "-D", "nodes=%d" % nodes, "-D", "gpus=%d" % gpus]
    for k, v in sorted(defs.items()):
        args += ["-D", "%s=%d" % (k, v)]
    if rpg > 1:
        args.append("--ranks-per-gpu=%d" % rpg)
    cmd = " ".join(args)
    try:
        p = subprocess.run(args, input=text.encode(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=120)
    except (OSError, subprocess.TimeoutExpired) as e:
        return {"case": i, "sample": name, "cmd": cmd, "src": text, "status": "fail",
                "why": "cannot run mkc: %s" % e}
    err = p.stderr.decode(errors="replace")
    base = {"case": i, "sample": name, "cmd": cmd, "src": text, "copts": copts}
    if p.returncode == 1 and NOT_YET.search(err) and "internal" not in err:
        return dict(base, status="notyet", why=err.strip().splitlines()[0])
    if p.returncode == 1 and "internal" not in err:
        return dict(base, status="rejected", why=err.strip().splitlines()[0] if err else "")
    if p.returncode != 0:
        return dict(base, status="fail", why="mkc exit %d\n%s" % (p.returncode, err))
    try:
        doc = check_schedule.json.loads(p.stdout)
    except ValueError as e:
        return dict(base, status="fail", why="mkc printed bad JSON: %s" % e)
    c = check_schedule.Checker(doc, 5, rdma_once="--rdma-once" in copts)
    try:
        nbad = c.run()
    except check_schedule.Bad as e:
        return dict(base, status="fail", why="not a schedule: %s" % e)
    if nbad:
        lines = ["%s: %s" % (k, m) for k in sorted(c.errors) for m in c.errors[k]]
        return dict(base, status="fail", why="%d violations:\n  %s" % (nbad, "\n  ".join(lines)))
    nmut = 0
    if i % 5 == 0 and len(c.tasks) <= 600:
        bad = mutants(p.stdout, copts)
        if bad:
            return dict(base, status="fail", why="the checker missed broken schedules:\n  " +
                        "\n  ".join(bad))
        nmut = 1
    return dict(base, status="ok", tasks=len(c.tasks), world=nodes * gpus, mutated=nmut)


def job(a):
    mkc, top, seed, i, names, deadline = a
    if time.monotonic() > deadline:
        return None
    return run_case(mkc, top, seed, i, names)


def lowers(mkc, top, name):
    """Whether a sample lowers yet; (False, why) when it does not."""
    p = subprocess.run([mkc, "--emit=graph", os.path.join(top, "samples", name + ".mk")],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = p.stderr.decode(errors="replace")
    if p.returncode == 1 and "cannot be lowered" in err:
        return False, err.strip().splitlines()[0]
    return True, ""


def main(argv):
    top = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    mkc = os.environ.get("MKC") or os.path.join(top, "build", "mkc")
    seed = os.environ.get("MK_PROPS_SEED", "1")
    count = int(os.environ.get("MK_PROPS_COUNT", "3000"))
    seconds = float(os.environ.get("MK_PROPS_SECONDS", "50"))
    jobs = int(os.environ.get("MK_PROPS_JOBS", str(max(2, min(8, os.cpu_count() or 2)))))
    only = None
    if len(argv) > 2 and argv[1] == "--case":
        only = int(argv[2])

    names = []
    for name in SAMPLES:
        ok, why = lowers(mkc, top, name)
        if ok:
            names.append(name)
        else:
            print("skip %s: does not lower yet (%s)" % (name, why))
    if not names:
        print("no sample lowers")
        return 1

    if only is not None:
        res = run_case(mkc, top, seed, only, names)
        print("case %d: %s\n$ %s\n%s" % (only, res["status"], res["cmd"], res.get("why", "")))
        print("--- source ---\n" + res["src"])
        return 0 if res["status"] != "fail" else 1

    deadline = time.monotonic() + seconds
    t0 = time.monotonic()

    results = []
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        # in order of cases; each worker stops starting cases at the deadline
        for res in ex.map(job, [(mkc, top, seed, i, names, deadline) for i in range(count)],
                          chunksize=4):
            if res is not None:
                results.append(res)
    took = time.monotonic() - t0

    fails = [x for x in results if x["status"] == "fail"]
    rejected = [x for x in results if x["status"] == "rejected"]
    checked = [x for x in results if x["status"] == "ok"]
    notyet = [x for x in results if x["status"] == "notyet"]
    for x in fails[:5]:
        print("FAIL case %d (%s; rerun: MKC=%s MK_PROPS_SEED=%s %s --case %d)" % (
            x["case"], x["sample"], mkc, seed, argv[0], x["case"]))
        print("$ %s   # source on stdin:" % x["cmd"])
        print("  " + x["src"].replace("\n", "\n  ").rstrip())
        print(x["why"])
    per = {}
    for x in checked:
        per[x["sample"]] = per.get(x["sample"], 0) + 1
    why = {}
    for x in rejected:
        k = re.sub(r"^[^:]*:\d+:\d+: ", "", x["why"])
        k = re.sub(r"\d+", "N", k)
        why[k] = why.get(k, 0) + 1
    for k, n in sorted(why.items(), key=lambda e: -e[1])[:5]:
        print("rejected by mkc %d time%s: %s" % (n, "s" if n > 1 else "", k))
    print("seed %s: %d schedules checked (%s), %d tasks in all; %d also broken on purpose "
          "(%d ways each) and caught; %d rejected by mkc, %d not lowered yet; %d failed; %.1f s" % (
              seed, len(checked), ", ".join("%s %d" % kv for kv in sorted(per.items())),
              sum(x["tasks"] for x in checked), sum(x["mutated"] for x in checked),
              len(MUTATIONS), len(rejected), len(notyet), len(fails), took))
    if fails:
        return 1
    if len(rejected) * 4 > len(results) - len(notyet):
        print("more than a quarter of the drawn cases were rejected: fix the generator")
        return 1
    if not checked:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
