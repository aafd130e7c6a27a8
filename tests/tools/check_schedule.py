#!/usr/bin/env python3
"""check_schedule.py - an independent checker of mkc's JSON schedule.

Reads the output of `mkc --emit=json` (docs/schedule.md) and verifies, from
the JSON alone -- it shares no code and no data structure with the compiler's
own verifier (compiler/verify.c):

  format     every field present, of the right type, ids in range
  tensors    local shape = logical shape / group size along a split dim,
             the logical shape elsewhere; a view's strides inside its root; every region inside the tensor and
             inside the storage of the rank it names
  roles      role ranges disjoint, inside the rank's CTAs; every task on a
             CTA of its role, and of a role that may run its kind
  fit        ctas * ranks_per_gpu <= sms (a persistent kernel whose CTAs are
             not all resident deadlocks)
  order      per rank and CTA, the `order` fields are exactly 0..n-1
  flags      every wait and signal names an existing flag; per flag, the
             listed signals number exactly `expected` per run
  pools      each pool (a stage whose tasks the CTAs holding them take at run
             time) lists every task of its stage on its rank once; a CTA's
             entries of a pool are contiguous; its `ctas` counts the CTAs
             holding them
  deadlock   the graph of per-CTA program order + signal -> flag -> wait is
             acyclic (then the in-order CTA loops finish under any timing);
             a pool is one node there, in the lists of the CTAs holding it
             (any of them may run any of its tasks)
  coverage   writes to one tensor on one rank never overlap; every read of a
             non-input tensor is fully covered by writes (a read of a view:
             the elements of its root that its strides name); every rank's
             storage of an `out` tensor is fully written
  ordering   every write that overlaps a read has a path writer -> reader
             (program order orders no pooled task)
  dataflow   a task reads what its kind needs for the box it writes (so reads
             cannot be under-declared): a copy or RDMA write moves one box to
             a box of the same size (staging buffers may use other
             coordinates); an elementwise task reads at least its write box
             (broadcast operands: its trailing dims); a row task writes whole
             rows; a matmul tile reads its rows of A, its columns of B and
             the same whole reduction range of both; a split-K partial
             (mmpart) the same K range of both into one slice of its
             workspace, and a sumk every slice of its box, each partial
             summed exactly once; a matmul's or a sumk's fused add or mul
             reads its operand's box, the box it writes; a split-KV partial (attnpart) its query
             rows and one key range of K and V (the same for both) into one
             slice of its workspace, and an attnsum every slice of its rows
  transport  compute tasks touch only their rank's memory; copies stay inside
             a node (NVLink); RDMA writes go to another node; with
             --rdma-once, no element of a rank's memory is sent to one node
             twice over RDMA (true of the collectives, not of explicit
             `for q in remote` put stages, which send to every remote rank
             as written)
  timeline   predicted times consistent: t0 <= t1, a CTA's tasks in order do
             not overlap, a waiter starts after its signallers end (ends
             after them, for a flag in its late_waits), the prediction is
             not below the floor

Usage: check_schedule.py [-q] [--rdma-once] [--max-errors N] [FILE.json | -]
Exit status: 0 all checks pass, 1 violations (listed on stdout), 2 unusable
input.  Python 3 standard library only.
"""
import json
import sys
from bisect import bisect_left
from collections import defaultdict, deque

# ---- tables: add a line when the compiler grows a task kind or role ---------
# task kind -> (roles that may run it, locality rule); dataflow rules are the
# check_df_KIND methods (a kind without one is not checked for dataflow)
#   local: reads and writes on the task's own rank
#   node:  every region on a rank of the task's node (NVLink reaches them)
#   rdma:  reads on the task's rank, the write on a rank of another node
TASK_KINDS = {
    "copy": ({"nvlink"}, "node"),
    "rdma": ({"rdma"}, "rdma"),
    "matmul": ({"compute"}, "local"),
    "ew": ({"compute"}, "local"),
    "row": ({"compute"}, "local"),
    "reduce": ({"compute", "reduce", "nvlink"}, "node"),
    "attn": ({"compute"}, "local"),
    "route": ({"compute"}, "local"),
    "pack": ({"compute"}, "local"),
    "dispatch": ({"compute"}, "node"),
    "combine": ({"compute"}, "node"),
    "mmpart": ({"compute"}, "local"),
    "sumk": ({"compute"}, "local"),
    "attnpart": ({"compute"}, "local"),
    "attnsum": ({"compute"}, "local"),
}
ROLES = {"compute", "nvlink", "rdma", "reduce"}
TENSOR_KINDS = {"in", "out", "temp"}
DTYPES = {"bf16", "f16", "f32", "i32", "e4m3"}
PLACEMENTS = {"local", "split", "partial"}
GROUPS = {"world", "gpus", "nodes"}
EPS = 2e-3  # times are printed with 3 decimals


class Bad(Exception):
    """The input is not a schedule at all (exit 2)."""


class Checker:
    def __init__(self, doc, max_errors=20, rdma_once=False):
        self.doc = doc
        self.rdma_once = rdma_once
        self.max_errors = max_errors
        self.errors = defaultdict(list)  # check -> messages
        self.counts = defaultdict(int)

    # ---- reporting -----------------------------------------------------------
    def err(self, check, msg):
        self.counts[check] += 1
        if len(self.errors[check]) < self.max_errors:
            self.errors[check].append(msg)

    def tdesc(self, i):
        t = self.tasks[i]
        return "task %d (%s %s, rank %d CTA %d order %d)" % (
            t["id"], t["kind"], t["stage"], t["rank"], t["cta"], t["order"])

    def rdesc(self, g):
        return "%s@%d[%s]" % (g["tensor"], g["rank"], ", ".join(
            "%d:%d" % (a, b) for a, b in zip(g["lo"], g["hi"])))

    # ---- format --------------------------------------------------------------
    @staticmethod
    def need(obj, key, typ, where):
        if not isinstance(obj, dict) or key not in obj:
            raise Bad("%s: missing '%s'" % (where, key))
        v = obj[key]
        ok = isinstance(v, typ) and not (typ is int and isinstance(v, bool))
        if typ is float:
            ok = isinstance(v, (int, float)) and not isinstance(v, bool)
        if not ok:
            raise Bad("%s: '%s' is not %s" % (where, key, typ.__name__))
        return v

    def load(self):
        d, need = self.doc, self.need
        need(d, "pipeline", str, "schedule")
        mesh = need(d, "mesh", dict, "schedule")
        self.nodes = need(mesh, "nodes", int, "mesh")
        self.gpus = need(mesh, "gpus", int, "mesh")
        self.world = need(d, "world", int, "schedule")
        self.sms = need(d, "sms", int, "schedule")
        self.rpg = need(d, "ranks_per_gpu", int, "schedule")
        self.ctas = need(d, "ctas", int, "schedule")
        need(d, "threads", int, "schedule")
        need(d, "smem", int, "schedule")
        for k in ("predicted_us", "bound_us", "compute_us", "comm_us"):
            need(d, k, float, "schedule")
        if self.nodes < 1 or self.gpus < 1 or self.world != self.nodes * self.gpus:
            self.err("format", "world %d != nodes %d x gpus %d" % (
                self.world, self.nodes, self.gpus))
        if self.rpg < 1 or self.ctas < 1:
            self.err("format", "ranks_per_gpu %d, ctas %d" % (self.rpg, self.ctas))

        self.tensors = {}
        for i, t in enumerate(need(d, "tensors", list, "schedule")):
            w = "tensors[%d]" % i
            name = need(t, "name", str, w)
            if name in self.tensors:
                self.err("format", "tensor '%s' listed twice" % name)
            need(t, "kind", str, w)
            need(t, "dtype", str, w)
            need(t, "shape", list, w)
            need(t, "local", list, w)
            pl = need(t, "placement", dict, w)
            need(pl, "kind", str, w + ".placement")
            self.tensors[name] = t

        self.roles = {}
        for i, r in enumerate(need(d, "roles", list, "schedule")):
            w = "roles[%d]" % i
            name = need(r, "name", str, w)
            need(r, "first_cta", int, w)
            need(r, "ctas", int, w)
            if name in self.roles:
                self.err("roles", "role '%s' listed twice" % name)
            self.roles[name] = r

        self.flags = {}
        for i, f in enumerate(need(d, "flags", list, "schedule")):
            w = "flags[%d]" % i
            fid = need(f, "id", int, w)
            need(f, "rank", int, w)
            need(f, "expected", int, w)
            if fid in self.flags:
                self.err("flags", "flag %d listed twice" % fid)
            self.flags[fid] = f

        self.pools = d.get("pools", [])
        if type(self.pools) is not list:
            raise Bad("schedule: 'pools' is not a list")
        for i, q in enumerate(self.pools):
            w = "pools[%d]" % i
            if type(q) is not dict or type(q.get("stage")) is not str or \
                    type(q.get("rank")) is not int or type(q.get("ctas")) is not int or \
                    type(q.get("tasks")) is not list or not all(type(x) is int for x in q["tasks"]):
                raise Bad("%s: want {stage, rank, ctas, tasks}" % w)

        self.tasks = need(d, "tasks", list, "schedule")
        tkeys = {"id", "rank", "cta", "order", "role", "kind", "stage",
                 "reads", "writes", "waits", "signals"}
        for i, t in enumerate(self.tasks):
            w = "tasks[%d]" % i
            if not isinstance(t, dict) or not tkeys <= t.keys():
                raise Bad("%s: missing %s" % (w, sorted(tkeys - set(t))))
            if t["id"] != i:
                raise Bad("%s: id %r, want %d (ids are positions)" % (w, t["id"], i))
            for k in ("rank", "cta", "order"):
                if type(t[k]) is not int:
                    raise Bad("%s: '%s' is not int" % (w, k))
            for k in ("role", "kind", "stage"):
                if type(t[k]) is not str:
                    raise Bad("%s: '%s' is not str" % (w, k))
            for k in ("reads", "writes"):
                for g in t[k]:
                    if (type(g) is not dict or type(g.get("tensor")) is not str or
                            type(g.get("rank")) is not int or
                            type(g.get("lo")) is not list or type(g.get("hi")) is not list or
                            not all(type(x) is int for x in g["lo"] + g["hi"])):
                        raise Bad("%s: bad region %r" % (w, g))
            for k in ("waits", "signals"):
                if type(t[k]) is not list or not all(type(f) is int for f in t[k]):
                    raise Bad("%s: '%s' is not a list of flag ids" % (w, k))
            if "late_waits" in t and (type(t["late_waits"]) is not list or
                                      not all(f in t["waits"] for f in t["late_waits"])):
                raise Bad("%s: 'late_waits' is not a list of its waits" % w)
            if "predicted_us" in t:
                p = t["predicted_us"]
                if not (isinstance(p, list) and len(p) == 2):
                    raise Bad("%s: predicted_us is not [t0, t1]" % w)

    # ---- tensors and regions -------------------------------------------------
    def group_size(self, g):
        return {"world": self.world, "gpus": self.gpus, "nodes": self.nodes}[g]

    def shard_of(self, g, rank):
        return {"world": rank, "gpus": rank % self.gpus,
                "nodes": rank // self.gpus}[g]

    def storage(self, name, rank):
        """The box of logical coordinates that `rank` stores."""
        t = self.tensors[name]
        lo = [0] * len(t["shape"])
        hi = list(t["shape"])
        pl = t["placement"]
        if pl["kind"] == "split":
            d, loc = pl["dim"], t["local"][pl["dim"]]
            s = self.shard_of(pl["group"], rank)
            lo[d], hi[d] = s * loc, (s + 1) * loc
        return lo, hi

    def check_views(self):
        """A view names a root that is no view, strides of its rank, the
        last 1, and every element inside the root's local piece."""
        for name, t in self.tensors.items():
            v = t.get("view")
            if v is None:
                continue
            r = self.tensors.get(v.get("of")) if isinstance(v, dict) else None
            st, off = (v.get("strides"), v.get("offset")) if isinstance(v, dict) else (None, None)
            if r is None or "view" in r or type(off) is not int or type(st) is not list or \
                    len(st) != len(t["local"]) or not all(type(x) is int for x in st) or \
                    st[-1] != 1 or t["kind"] != "temp":
                self.err("tensors", "%s: view %r" % (name, v))
                t["view"] = None
                continue
            last = off + sum((n - 1) * s for n, s in zip(t["local"], st))
            size = 1
            for n in r["local"]:
                size *= n
            if off < 0 or min(st) < 0 or last >= size:
                self.err("tensors", "%s: view of %s reaches element %d of %d" % (
                    name, v["of"], last, size))
                t["view"] = None

    def resolve(self, g):
        """The regions of storage a read g touches: g itself, or for a view
        the boxes of its root (on the same rank) its elements lie in, one
        per run of the last dimension, runs one row below the other merged."""
        t = self.tensors[g["tensor"]]
        v = t.get("view")
        if not v:
            return [g]
        name = v["of"]
        root = self.tensors[name]
        st, off, rl = v["strides"], v["offset"], root["local"]
        slo, _ = self.storage(g["tensor"], g["rank"])
        rlo, _ = self.storage(name, g["rank"])
        lo = [a - b for a, b in zip(g["lo"], slo)]
        hi = [a - b for a, b in zip(g["hi"], slo)]
        n = len(lo)
        if any(a >= b for a, b in zip(lo, hi)):
            return []
        rs = [1] * len(rl)  # the root's row-major strides
        for d in range(len(rl) - 2, -1, -1):
            rs[d] = rs[d + 1] * rl[d + 1]
        boxes = []
        idx = list(lo[:-1])
        while True:
            f = off + sum(i * s for i, s in zip(idx, st)) + lo[-1]
            left = hi[-1] - lo[-1]
            while left > 0:  # a run, cut at the root's row ends
                c, r = [], f
                for s in rs:
                    c.append(r // s)
                    r %= s
                k = min(left, rl[-1] - c[-1])
                b = {"tensor": name, "rank": g["rank"],
                     "lo": [x + y for x, y in zip(c, rlo)],
                     "hi": [x + y + 1 for x, y in zip(c, rlo)]}
                b["hi"][-1] = b["lo"][-1] + k
                p = boxes[-1] if boxes else None
                if p and len(rl) > 1 and p["hi"][-2] == b["lo"][-2] and \
                        p["lo"][:-2] == b["lo"][:-2] and p["lo"][-1] == b["lo"][-1] and \
                        p["hi"][-1] == b["hi"][-1]:
                    p["hi"][-2] = b["hi"][-2]
                else:
                    boxes.append(b)
                f += k
                left -= k
            d = n - 2
            while d >= 0:
                idx[d] += 1
                if idx[d] < hi[d]:
                    break
                idx[d] = lo[d]
                d -= 1
            if d < 0:
                return boxes

    def check_tensors(self):
        self.check_views()
        for name, t in self.tensors.items():
            shape, local, pl = t["shape"], t["local"], t["placement"]
            if t["kind"] not in TENSOR_KINDS:
                self.err("tensors", "%s: kind '%s'" % (name, t["kind"]))
            if t["dtype"] not in DTYPES:
                self.err("tensors", "%s: dtype '%s'" % (name, t["dtype"]))
            if not shape or any(not isinstance(x, int) or x < 1 for x in shape):
                self.err("tensors", "%s: shape %r" % (name, shape))
                continue
            if len(local) != len(shape):
                self.err("tensors", "%s: local %r vs shape %r" % (name, local, shape))
                continue
            kind = pl["kind"]
            if kind not in PLACEMENTS:
                self.err("tensors", "%s: placement '%s'" % (name, kind))
                continue
            want = list(shape)
            if kind == "split":
                d, g = pl.get("dim"), pl.get("group")
                if not isinstance(d, int) or not 0 <= d < len(shape) or g not in GROUPS:
                    self.err("tensors", "%s: split dim %r group %r" % (name, d, g))
                    continue
                n = self.group_size(g)
                if shape[d] % n:
                    self.err("tensors", "%s: dim %d (%d) not divisible by %s (%d)" % (
                        name, d, shape[d], g, n))
                want[d] = shape[d] // n
            elif "dim" in pl or "group" in pl:
                self.err("tensors", "%s: %s placement with a dim/group" % (name, kind))
            if local != want:
                self.err("tensors", "%s: local %r, want %r (%s placement)" % (
                    name, local, want, kind))

    def region_ok(self, g, i):
        t = self.tensors.get(g["tensor"])
        if t is None:
            self.err("regions", "%s names unknown tensor '%s'" % (self.tdesc(i), g["tensor"]))
            return False
        nd = len(t["shape"])
        if len(g["lo"]) != nd or len(g["hi"]) != nd:
            self.err("regions", "%s: %s has %d/%d coordinates, tensor has %d dims" % (
                self.tdesc(i), g["tensor"], len(g["lo"]), len(g["hi"]), nd))
            return False
        if not 0 <= g["rank"] < self.world:
            self.err("regions", "%s: %s on rank %d of %d" % (
                self.tdesc(i), self.rdesc(g), g["rank"], self.world))
            return False
        slo, shi = self.storage(g["tensor"], g["rank"])
        for d in range(nd):
            a, b = g["lo"][d], g["hi"][d]
            if not (0 <= a < b <= t["shape"][d]):
                self.err("regions", "%s: %s empty or outside shape %r" % (
                    self.tdesc(i), self.rdesc(g), t["shape"]))
                return False
            if a < slo[d] or b > shi[d]:
                self.err("regions", "%s: %s outside what rank %d stores (dim %d: %d:%d)" % (
                    self.tdesc(i), self.rdesc(g), g["rank"], d, slo[d], shi[d]))
                return False
        return True

    # ---- roles, fit, order, locality ------------------------------------------
    def check_roles(self):
        if self.ctas * self.rpg > self.sms:
            self.err("fit", "%d CTAs per rank x %d ranks per GPU = %d > %d SMs" % (
                self.ctas, self.rpg, self.ctas * self.rpg, self.sms))
        spans = []
        for name, r in self.roles.items():
            if name not in ROLES:
                self.err("roles", "unknown role '%s'" % name)
            a, n = r["first_cta"], r["ctas"]
            if n < 1 or a < 0 or a + n > self.ctas:
                self.err("roles", "role %s: CTAs %d..%d outside 0..%d" % (
                    name, a, a + n - 1, self.ctas - 1))
            spans.append((a, a + n, name))
        spans.sort()
        for (a0, b0, n0), (a1, b1, n1) in zip(spans, spans[1:]):
            if a1 < b0:
                self.err("roles", "roles %s and %s share CTAs %d..%d" % (n0, n1, a1, b0 - 1))

    def node(self, rank):
        return rank // self.gpus

    def check_tasks(self):
        self.valid_regions = []
        by_cta = defaultdict(list)
        for i, t in enumerate(self.tasks):
            if not 0 <= t["rank"] < self.world:
                self.err("format", "%s: rank out of range" % self.tdesc(i))
            r = self.roles.get(t["role"])
            if r is None:
                self.err("roles", "%s: unknown role '%s'" % (self.tdesc(i), t["role"]))
            elif not r["first_cta"] <= t["cta"] < r["first_cta"] + r["ctas"]:
                self.err("roles", "%s: CTA %d is not one of role %s (%d..%d)" % (
                    self.tdesc(i), t["cta"], t["role"], r["first_cta"],
                    r["first_cta"] + r["ctas"] - 1))
            if not 0 <= t["cta"] < self.ctas:
                self.err("roles", "%s: CTA outside 0..%d" % (self.tdesc(i), self.ctas - 1))
            by_cta[(t["rank"], t["cta"])].append(i)
            kind = TASK_KINDS.get(t["kind"])
            if kind is None:
                self.err("transport", "%s: unknown task kind '%s'" % (self.tdesc(i), t["kind"]))
            elif t["role"] not in kind[0]:
                self.err("roles", "%s: a %s task on a %s CTA" % (
                    self.tdesc(i), t["kind"], t["role"]))
            if len(t["writes"]) < 1:
                self.err("format", "%s writes nothing" % self.tdesc(i))
            good = all([self.region_ok(g, i) for g in t["reads"] + t["writes"]])
            self.valid_regions.append(good)
            if good and kind is not None:
                self.check_locality(i, t, kind[1])
        self.chains = {}
        for key, ids in by_cta.items():
            ids.sort(key=lambda i: self.tasks[i]["order"])
            orders = [self.tasks[i]["order"] for i in ids]
            if orders != list(range(len(ids))):
                self.err("order", "rank %d CTA %d: orders %s, want 0..%d" % (
                    key[0], key[1], orders[:12], len(ids) - 1))
            self.chains[key] = ids

    def check_locality(self, i, t, rule):
        me = t["rank"]
        regs = t["reads"] + t["writes"]
        if rule == "local":
            for g in regs:
                if g["rank"] != me:
                    self.err("transport", "%s touches %s on another rank" % (
                        self.tdesc(i), self.rdesc(g)))
        elif rule == "node":
            for g in regs:
                if self.node(g["rank"]) != self.node(me):
                    self.err("transport", "%s reaches %s on another node over NVLink" % (
                        self.tdesc(i), self.rdesc(g)))
        elif rule == "rdma":
            for g in t["reads"]:
                if g["rank"] != me:
                    self.err("transport", "%s posts from %s, not its own memory" % (
                        self.tdesc(i), self.rdesc(g)))
            for g in t["writes"]:
                if self.node(g["rank"]) == self.node(me):
                    self.err("transport", "%s uses RDMA inside its node (%s)" % (
                        self.tdesc(i), self.rdesc(g)))

    # ---- flags and the graph --------------------------------------------------
    def check_flags(self):
        for fid, f in self.flags.items():
            if not 0 <= f["rank"] < self.world:
                self.err("flags", "flag %d on rank %d of %d" % (fid, f["rank"], self.world))
            if f["expected"] < 1:
                self.err("flags", "flag %d expects %d signals" % (fid, f["expected"]))
        count = defaultdict(int)
        self.signallers = defaultdict(list)
        self.waiters = defaultdict(list)
        for i, t in enumerate(self.tasks):
            for fid in t["signals"]:
                if fid not in self.flags:
                    self.err("flags", "%s signals unknown flag %d" % (self.tdesc(i), fid))
                    continue
                count[fid] += 1
                self.signallers[fid].append(i)
            for fid in t["waits"]:
                if fid not in self.flags:
                    self.err("flags", "%s waits on unknown flag %d" % (self.tdesc(i), fid))
                    continue
                self.waiters[fid].append(i)
        for fid, f in self.flags.items():
            if count[fid] != f["expected"]:
                w = self.waiters[fid]
                self.err("flags", "flag %d (rank %d) gets %d signals per run, expects %d%s" % (
                    fid, f["rank"], count[fid], f["expected"],
                    "; waited on by " + self.tdesc(w[0]) if w else ""))

    def check_pools(self):
        # pool (rank, stage) -> its task ids; a task's pool's first task
        n = len(self.tasks)
        self.pool_of = {}
        seen = set()
        for q in self.pools:
            key = (q["rank"], q["stage"])
            if key in seen:
                self.err("pools", "rank %d has two pools of stage %s" % key)
                continue
            seen.add(key)
            ids = q["tasks"]
            bad = [x for x in ids if not 0 <= x < n or self.tasks[x]["rank"] != q["rank"] or
                   self.tasks[x]["stage"] != q["stage"] or x in self.pool_of]
            if len(set(ids)) != len(ids):
                bad.append(next(x for x in ids if ids.count(x) > 1))
            if bad or not ids:
                self.err("pools", "pool %s of rank %d lists %s" % (
                    q["stage"], q["rank"], "no task" if not ids else
                    "a task of another rank or stage, or one twice: %d" % bad[0]))
                continue
            for x in ids:
                self.pool_of[x] = ids[0]
            want = [i for i, t in enumerate(self.tasks)
                    if t["rank"] == q["rank"] and t["stage"] == q["stage"]]
            if len(want) != len(ids):
                self.err("pools", "pool %s of rank %d lists %d of the stage's %d tasks" % (
                    q["stage"], q["rank"], len(ids), len(want)))
            ctas = {self.tasks[x]["cta"] for x in ids}
            if len(ctas) != q["ctas"]:
                self.err("pools", "pool %s of rank %d: %d CTAs hold its tasks, it counts %d" % (
                    q["stage"], q["rank"], len(ctas), q["ctas"]))
        for key, ids in self.chains.items():
            blocks = [self.pool_of.get(x) for x in ids]
            ends = set()
            for a, b in zip([None] + blocks, blocks):
                if b is not None and b != a:
                    if b in ends:
                        self.err("pools", "rank %d CTA %d: its entries of a pool are not "
                                 "contiguous" % key)
                    ends.add(b)

    def build_graph(self):
        # self.succ / self.pred: the deadlock graph, each pool one node (its
        # first task's); self.opred: what orders a write before a read
        # (program order only between tasks no pool holds)
        n = len(self.tasks)
        self.fnode = {fid: n + k for k, fid in enumerate(sorted(self.flags))}
        self.nnodes = n + len(self.fnode)
        succ = [[] for _ in range(self.nnodes)]
        pred = [[] for _ in range(self.nnodes)]
        opred = [[] for _ in range(self.nnodes)]
        node = [self.pool_of.get(i, i) for i in range(n)]

        def edge(a, b, order=True):
            na = node[a] if a < n else a
            nb = node[b] if b < n else b
            if na != nb:
                succ[na].append(nb)
                pred[nb].append(na)
            if order:
                opred[b].append(a)

        for ids in self.chains.values():
            for a, b in zip(ids, ids[1:]):
                edge(a, b, a not in self.pool_of and b not in self.pool_of)
        for i, t in enumerate(self.tasks):
            for fid in t["signals"]:
                if fid in self.fnode:
                    edge(i, self.fnode[fid])
            for fid in t["waits"]:
                if fid in self.fnode:
                    edge(self.fnode[fid], i)
        self.succ, self.pred, self.opred = succ, pred, opred

    def check_acyclic(self):
        deg = [len(p) for p in self.pred]
        q = deque(v for v in range(self.nnodes) if deg[v] == 0)
        seen = 0
        topo = []
        while q:
            u = q.popleft()
            topo.append(u)
            seen += 1
            for v in self.succ[u]:
                deg[v] -= 1
                if deg[v] == 0:
                    q.append(v)
        self.topo = topo if seen == self.nnodes else None
        if seen == self.nnodes:
            return
        # walk predecessors inside the unfinished part until a node repeats
        left = [v for v in range(self.nnodes) if deg[v] > 0]
        v, pos, path = left[0], {}, []
        while v not in pos:
            pos[v] = len(path)
            path.append(v)
            v = next(u for u in self.pred[v] if deg[u] > 0)
        cyc = path[pos[v]:][::-1]
        n = len(self.tasks)
        inv = {node: fid for fid, node in self.fnode.items()}
        words = [self.tdesc(x) if x < n else "flag %d" % inv[x] for x in cyc[:8]]
        self.err("deadlock", "%d of %d nodes on or behind a cycle; cycle: %s%s" % (
            len(left), self.nnodes, " -> ".join(words), " -> ..." if len(cyc) > 8 else ""))

    # ---- coverage and ordering -------------------------------------------------
    @staticmethod
    def inter(a, b):
        v = 1
        for alo, ahi, blo, bhi in zip(a["lo"], a["hi"], b["lo"], b["hi"]):
            lo, hi = max(alo, blo), min(ahi, bhi)
            if hi <= lo:
                return 0
            v *= hi - lo
        return v

    @staticmethod
    def volume(lo, hi):
        v = 1
        for a, b in zip(lo, hi):
            v *= max(0, b - a)
        return v

    def index_writes(self):
        """(tensor, rank) -> sorted [(lo0, task, region)], and max extent in dim 0."""
        w = defaultdict(list)
        for i, t in enumerate(self.tasks):
            if not self.valid_regions[i]:
                continue
            for g in t["writes"]:
                w[(g["tensor"], g["rank"])].append((g["lo"][0], i, g))
        self.writes = {}
        for key, lst in w.items():
            lst.sort(key=lambda e: (e[0], e[1]))
            ext = max(g["hi"][0] - g["lo"][0] for _, _, g in lst)
            self.writes[key] = (lst, [e[0] for e in lst], ext)
        self.written = {k[0] for k in w}

    def overlapping(self, g):
        """Writes overlapping region g: [(task, region, volume)]."""
        ent = self.writes.get((g["tensor"], g["rank"]))
        if not ent:
            return []
        lst, keys, ext = ent
        # writes with lo0 in (g.lo0 - ext, g.hi0)
        lo, hi = bisect_left(keys, g["lo"][0] - ext + 1), bisect_left(keys, g["hi"][0])
        out = []
        for k in range(lo, hi):
            _, j, h = lst[k]
            v = self.inter(g, h)
            if v:
                out.append((j, h, v))
        return out

    def check_coverage(self):
        for (name, rank), (lst, keys, ext) in self.writes.items():
            for k, (_, i, g) in enumerate(lst):
                for k2 in range(k + 1, len(lst)):
                    _, j, h = lst[k2]
                    if h["lo"][0] >= g["hi"][0]:
                        break
                    if self.inter(g, h):
                        self.err("coverage", "%s and %s both write %s / %s" % (
                            self.tdesc(i), self.tdesc(j), self.rdesc(g), self.rdesc(h)))
        for i, t in enumerate(self.tasks):
            if not self.valid_regions[i]:
                continue
            for g in [h for r in t["reads"] for h in self.resolve(r)]:
                x = self.tensors[g["tensor"]]
                over = self.overlapping(g)
                if x["kind"] != "in" or g["tensor"] in self.written:
                    for j, h, _ in over:
                        if j == i:
                            self.err("coverage", "%s reads %s, which it writes itself" % (
                                self.tdesc(i), self.rdesc(g)))
                if x["kind"] == "in":
                    continue
                got = sum(v for j, _, v in over if j != i)
                want = self.volume(g["lo"], g["hi"])
                if got != want:
                    self.err("coverage", "%s reads %s: %d of %d elements written in the kernel" % (
                        self.tdesc(i), self.rdesc(g), got, want))
        for name, x in self.tensors.items():
            if x["kind"] != "out":
                continue
            for rank in range(self.world):
                lo, hi = self.storage(name, rank)
                box = {"tensor": name, "rank": rank, "lo": lo, "hi": hi}
                got = sum(v for _, _, v in self.overlapping(box))
                want = self.volume(lo, hi)
                if got != want:
                    self.err("coverage", "output %s on rank %d: %d of %d elements written" % (
                        name, rank, got, want))

    def ancestors(self, i, cache):
        a = cache.get(i)
        if a is None:
            a = set()
            stack = [i]
            while stack:
                u = stack.pop()
                for v in self.opred[u]:
                    if v not in a:
                        a.add(v)
                        stack.append(v)
            cache[i] = a
        return a

    def check_ordering(self):
        pos = {}  # task -> (rank, cta, order) for the program-order shortcut
        for i, t in enumerate(self.tasks):
            pos[i] = (t["rank"], t["cta"], t["order"])
        cache = {}
        for i, t in enumerate(self.tasks):
            if not self.valid_regions[i]:
                continue
            waits = set(t["waits"])
            for g in [h for r in t["reads"] for h in self.resolve(r)]:
                for j, h, _ in self.overlapping(g):
                    if j == i:
                        continue
                    u = self.tasks[j]
                    if waits.intersection(u["signals"]):
                        continue  # the writer signals a flag the reader waits on
                    pj, pi = pos[j], pos[i]
                    if pj[:2] == pi[:2] and pj[2] < pi[2] and \
                            i not in self.pool_of and j not in self.pool_of:
                        continue  # earlier on the same CTA
                    if self.topo is not None and j in self.ancestors(i, cache):
                        continue
                    self.err("ordering", "%s reads %s; %s writes %s with no path to the reader" % (
                        self.tdesc(i), self.rdesc(g), self.tdesc(j), self.rdesc(h)))

    # ---- dataflow: what each kind of task must read -------------------------
    def check_dataflow(self):
        for i, t in enumerate(self.tasks):
            fn = getattr(self, "check_df_" + t["kind"], None)
            if fn and self.valid_regions[i] and len(t["writes"]) == 1:
                why = fn(t, t["writes"][0])
                if why:
                    self.err("dataflow", "%s: %s" % (self.tdesc(i), why))

    def check_df_copy(self, t, w):
        if len(t["reads"]) != 1:
            return "a copy reads %d regions" % len(t["reads"])
        g = t["reads"][0]
        if len(g["lo"]) != len(w["lo"]) or \
                [b - a for a, b in zip(g["lo"], g["hi"])] != [b - a for a, b in zip(w["lo"], w["hi"])]:
            return "copies %s to %s: boxes of different sizes" % (self.rdesc(g), self.rdesc(w))
        return None

    check_df_rdma = check_df_copy

    @staticmethod
    def within(lo, hi, glo, ghi):
        """Box lo:hi inside box glo:ghi."""
        return all(c <= a and b <= d for a, b, c, d in zip(lo, hi, glo, ghi))

    def check_df_ew(self, t, w):
        if "layout" in t:
            # a layout op's copy (slice, merge_heads, transpose, ...):
            # its reads hold exactly the elements it writes, rearranged
            n = sum(self.volume(g["lo"], g["hi"]) for g in t["reads"])
            if n != self.volume(w["lo"], w["hi"]):
                return "a %s copy reads %d elements for the %d of %s" % (
                    t["layout"], n, self.volume(w["lo"], w["hi"]), self.rdesc(w))
            return None
        nd = len(w["lo"])
        for g in t["reads"]:
            k = len(g["lo"])
            if k > nd or not self.within(w["lo"][nd - k:], w["hi"][nd - k:], g["lo"], g["hi"]):
                return "reads %s for %s: does not hold the box (or its trailing dims)" % (
                    self.rdesc(g), self.rdesc(w))
        return None

    def check_df_row(self, t, w):
        full = self.tensors[w["tensor"]]["shape"][-1]
        if w["lo"][-1] != 0 or w["hi"][-1] != full:
            return "writes %s: not whole rows (0:%d)" % (self.rdesc(w), full)
        return self.check_df_ew(t, w)

    def check_df_epilogue(self, g, w):
        """The operand of an add or mul fused into a matmul's epilogue
        (compiler/expand.c): the write's box of a tensor of its shape, or
        of a bias (1-D) the write's columns."""
        xs, ws = self.tensors[g["tensor"]]["shape"], self.tensors[w["tensor"]]["shape"]
        if len(xs) == 1 and len(ws) > 1:
            if xs[0] != ws[-1] or g["rank"] != w["rank"] or \
                    [g["lo"][0], g["hi"][0]] != [w["lo"][-1], w["hi"][-1]]:
                return "reads %s as the bias of %s: not its columns" % (
                    self.rdesc(g), self.rdesc(w))
            return None
        if xs != ws or \
                g["rank"] != w["rank"] or list(g["lo"]) != list(w["lo"]) or \
                list(g["hi"]) != list(w["hi"]):
            return "reads %s in the epilogue for %s: not its box" % (self.rdesc(g), self.rdesc(w))
        return None

    def gate_read(self, g, b):
        """A gate-up matmul's third read (compiler/expand.c fuse_gates):
        B's box of another weight of B's shape, on B's rank."""
        return g["tensor"] != b["tensor"] and g["rank"] == b["rank"] and \
            self.tensors[g["tensor"]]["shape"] == self.tensors[b["tensor"]]["shape"] and \
            list(g["lo"]) == list(b["lo"]) and list(g["hi"]) == list(b["hi"])

    def norm_read(self, g, a):
        """The weight of an rmsnorm in a matmul's tile (compiler/expand.c
        fuse_norms), its last read: all of a 1-D tensor of A's row length,
        on A's rank."""
        n = self.tensors[a["tensor"]]["shape"][-1]
        return self.tensors[g["tensor"]]["shape"] == [n] and g["rank"] == a["rank"] and \
            list(g["lo"]) == [0] and list(g["hi"]) == [n]

    def check_df_matmul(self, t, w):
        reads = t["reads"]
        if t.get("norm_weight"):
            if len(reads) < 3 or not self.norm_read(reads[-1], reads[0]):
                return "reads %s as its rmsnorm's weight: not all of a row of %s" % (
                    self.rdesc(reads[-1]), self.rdesc(reads[0]))
            reads = reads[:-1]
        if len(reads) == 3 and len(w["lo"]) >= 2 and \
                not self.gate_read(reads[2], reads[1]):
            e = self.check_df_epilogue(reads[2], w)
            if e:
                return e
        elif len(reads) != 2 or len(w["lo"]) < 2:
            return None  # another layout of operands: not checked
        a, b = reads[:2]
        if len(a["lo"]) != len(w["lo"]) or len(b["lo"]) != len(w["lo"]):
            return None
        if not self.within([w["lo"][-2]], [w["hi"][-2]], [a["lo"][-2]], [a["hi"][-2]]):
            return "reads rows %s of A for %s" % (self.rdesc(a), self.rdesc(w))
        if not self.within([w["lo"][-1]], [w["hi"][-1]], [b["lo"][-1]], [b["hi"][-1]]):
            return "reads columns %s of B for %s" % (self.rdesc(b), self.rdesc(w))
        # the reduction: all of what this rank holds of A along its last dim,
        # and the same range of B
        slo, shi = self.storage(a["tensor"], a["rank"])
        k0, k1 = slo[-1], shi[-1]
        if not self.within([k0], [k1], [a["lo"][-1]], [a["hi"][-1]]) or \
                not self.within([k0], [k1], [b["lo"][-2]], [b["hi"][-2]]):
            return "reduces over %d:%d of A and %d:%d of B, not all of the %d:%d that " \
                "rank %d holds of %s" % (a["lo"][-1], a["hi"][-1], b["lo"][-2], b["hi"][-2],
                                         k0, k1, a["rank"], a["tensor"])
        if not self.within(w["lo"][:-2], w["hi"][:-2], a["lo"][:-2], a["hi"][:-2]) or \
                not self.within(w["lo"][:-2], w["hi"][:-2], b["lo"][:-2], b["hi"][:-2]):
            return "batch dims of %s, %s and %s differ" % (
                self.rdesc(a), self.rdesc(b), self.rdesc(w))
        return None

    def check_df_mmpart(self, t, w):
        """Split-K: rows of A and columns of B over one K range (the same for
        both) into slice [s, s+1) of a workspace [S, rows, cols]."""
        if len(t["reads"]) != 2 or len(w["lo"]) != 3:
            return "a split-K partial reads %d regions and writes %d dims" % (
                len(t["reads"]), len(w["lo"]))
        a, b = t["reads"]
        if len(a["lo"]) != 2 or len(b["lo"]) != 2:
            return None  # another layout of operands: not checked
        if w["hi"][0] - w["lo"][0] != 1:
            return "writes %s: not one slice" % self.rdesc(w)
        if [a["lo"][0], a["hi"][0]] != [w["lo"][1], w["hi"][1]] or \
                [b["lo"][1], b["hi"][1]] != [w["lo"][2], w["hi"][2]]:
            return "reads %s and %s for %s: not its rows and columns" % (
                self.rdesc(a), self.rdesc(b), self.rdesc(w))
        if [a["lo"][1], a["hi"][1]] != [b["lo"][0], b["hi"][0]] or a["hi"][1] <= a["lo"][1]:
            return "reduces over %d:%d of A and %d:%d of B" % (
                a["lo"][1], a["hi"][1], b["lo"][0], b["hi"][0])
        return None

    def check_df_sumk(self, t, w):
        """A split-K sum reads every slice of its box of the workspace (and
        the box of its epilogue's operand)."""
        if len(t["reads"]) not in (1, 2):
            return "a split-K sum reads %d regions" % len(t["reads"])
        if len(t["reads"]) == 2:
            e = self.check_df_epilogue(t["reads"][1], w)
            if e:
                return e
        g = t["reads"][0]
        full = self.tensors[g["tensor"]]["shape"][0]
        if len(g["lo"]) != 3 or [g["lo"][0], g["hi"][0]] != [0, full] or \
                list(g["lo"][1:]) != list(w["lo"][-2:]) or list(g["hi"][1:]) != list(w["hi"][-2:]):
            return "reads %s for %s: not all %d slices of its box" % (
                self.rdesc(g), self.rdesc(w), full)
        return None

    def check_df_attnpart(self, t, w):
        """Split-KV: Q rows, K and V over one key range, into slice [s, s+1)
        of a workspace [S, heads x queries, D + 2]."""
        if len(t["reads"]) != 3 or len(w["lo"]) != 3:
            return "a split-KV partial reads %d regions and writes %d dims" % (
                len(t["reads"]), len(w["lo"]))
        q, k, v = t["reads"]
        if w["hi"][0] - w["lo"][0] != 1:
            return "writes %s: not one slice" % self.rdesc(w)
        if [k["lo"], k["hi"]] != [v["lo"], v["hi"]]:
            return "reads keys %s and values %s: not one range" % (self.rdesc(k), self.rdesc(v))
        if q["hi"][-2] - q["lo"][-2] != w["hi"][1] - w["lo"][1]:
            return "writes %s for the query rows %s" % (self.rdesc(w), self.rdesc(q))
        return None

    def check_df_attnsum(self, t, w):
        """A split-KV merge reads every slice of its rows of the workspace."""
        if len(t["reads"]) != 1:
            return "a split-KV merge reads %d regions" % len(t["reads"])
        g = t["reads"][0]
        full = self.tensors[g["tensor"]]["shape"][0]
        if len(g["lo"]) != 3 or [g["lo"][0], g["hi"][0]] != [0, full] or \
                g["hi"][1] - g["lo"][1] != w["hi"][-2] - w["lo"][-2]:
            return "reads %s for %s: not all %d slices of its rows" % (
                self.rdesc(g), self.rdesc(w), full)
        return None

    def check_sumk_once(self):
        """Every split-K (split-KV) partial is summed by exactly one sumk
        (attnsum): the sums' reads of one workspace on one rank never
        overlap, and each partial lies inside one of them."""
        for part, total in (("mmpart", "sumk"), ("attnpart", "attnsum")):
            self.check_summed_once(part, total)

    def check_summed_once(self, part, total):
        sums = defaultdict(list)
        for i, t in enumerate(self.tasks):
            if t["kind"] == total and self.valid_regions[i] and len(t["reads"]) >= 1:
                g = t["reads"][0]
                sums[(g["tensor"], g["rank"])].append((i, g))
        for key, lst in sums.items():
            lst.sort(key=lambda e: (e[1]["lo"][1], e[1]["lo"][2]))
            for k, (i, g) in enumerate(lst):
                for j, h in lst[k + 1:]:
                    if self.inter(g, h):
                        self.err("dataflow", "%s and %s both sum %s" % (
                            self.tdesc(i), self.tdesc(j), self.rdesc(g)))
        for i, t in enumerate(self.tasks):
            if t["kind"] != part or not self.valid_regions[i] or len(t["writes"]) != 1:
                continue
            w = t["writes"][0]
            if not any(self.within(w["lo"], w["hi"], g["lo"], g["hi"])
                       for _, g in sums.get((w["tensor"], w["rank"]), [])):
                self.err("dataflow", "%s: partial %s is summed by no %s" % (
                    self.tdesc(i), self.rdesc(w), total))

    def check_df_pack(self, t, w):
        """MoE between nodes: a pack chooses among all of the rank's tokens."""
        if len(t["reads"]) < 2:
            return "a pack reads %d regions (ids, rows[, gates])" % len(t["reads"])
        for g in t["reads"]:
            slo, shi = self.storage(g["tensor"], g["rank"])
            if g["rank"] != t["rank"] or list(g["lo"]) != list(slo) or list(g["hi"]) != list(shi):
                return "reads %s: not all that rank %d holds of %s" % (
                    self.rdesc(g), t["rank"], g["tensor"])
        return None

    def check_df_dispatch(self, t, w):
        """A bucket fills from every source: a table and rows each, one
        source per rank (its own tokens, or what its node received from
        one other node), all on the task's node."""
        if len(t["reads"]) != 2 * self.world:
            return "a dispatch reads %d regions; %d sources need %d" % (
                len(t["reads"]), self.world, 2 * self.world)
        node = t["rank"] // self.gpus
        if any(g["rank"] // self.gpus != node for g in t["reads"]):
            return "a dispatch reads another node's memory"
        return None

    def check_rdma_once(self):
        """No bytes of one rank's memory go to one node twice over RDMA."""
        by = defaultdict(list)
        for i, t in enumerate(self.tasks):
            if t["kind"] != "rdma" or not self.valid_regions[i]:
                continue
            nodes = {self.node(g["rank"]) for g in t["writes"]}
            for g in t["reads"]:
                for nd in nodes:
                    by[(g["tensor"], g["rank"], nd)].append((i, g))
        for (name, rank, nd), lst in by.items():
            lst.sort(key=lambda e: e[1]["lo"][0])
            for k, (i, g) in enumerate(lst):
                for j, h in lst[k + 1:]:
                    if h["lo"][0] >= g["hi"][0]:
                        break
                    if self.inter(g, h):
                        self.err("transport", "%s and %s both send %s and %s to node %d" % (
                            self.tdesc(i), self.tdesc(j), self.rdesc(g), self.rdesc(h), nd))

    # ---- timeline --------------------------------------------------------------
    def check_timeline(self):
        d = self.doc
        if any("predicted_us" not in t for t in self.tasks):
            return
        end = 0.0
        for i, t in enumerate(self.tasks):
            t0, t1 = t["predicted_us"]
            if t0 < -EPS or t1 < t0 - EPS:
                self.err("timeline", "%s predicted %.3f..%.3f" % (self.tdesc(i), t0, t1))
            end = max(end, t1)
        for ids in self.chains.values():
            for a, b in zip(ids, ids[1:]):
                if self.tasks[b]["predicted_us"][0] < self.tasks[a]["predicted_us"][1] - EPS:
                    self.err("timeline", "%s starts before %s, its predecessor on the CTA, ends" % (
                        self.tdesc(b), self.tdesc(a)))
        for fid, ws in self.waiters.items():
            if not self.signallers[fid]:
                continue
            last = max(self.tasks[s]["predicted_us"][1] for s in self.signallers[fid])
            for w in ws:
                if fid in self.tasks[w].get("late_waits", []):
                    # waited for by the task's engine after it starts: before it ends
                    if self.tasks[w]["predicted_us"][1] < last - EPS:
                        self.err("timeline", "%s predicted to end at %.3f, before flag %d's "
                                 "last signal at %.3f" % (self.tdesc(w),
                                                         self.tasks[w]["predicted_us"][1], fid, last))
                elif self.tasks[w]["predicted_us"][0] < last - EPS:
                    self.err("timeline", "%s predicted to start at %.3f, before flag %d's last "
                             "signal at %.3f" % (self.tdesc(w), self.tasks[w]["predicted_us"][0],
                                                 fid, last))
        run = d.get("run_us", 0.0)
        if abs(end + run - d["predicted_us"]) > EPS and self.tasks:
            self.err("timeline", "predicted_us %.3f, but the last task ends at %.3f (+ run_us %.3f)" % (
                d["predicted_us"], end, run))
        if abs(d["bound_us"] - max(d["compute_us"], d["comm_us"])) > EPS:
            self.err("timeline", "bound_us %.3f != max(compute_us %.3f, comm_us %.3f)" % (
                d["bound_us"], d["compute_us"], d["comm_us"]))
        if d["predicted_us"] < d["bound_us"] - EPS:
            self.err("timeline", "predicted %.3f us is below the floor %.3f us" % (
                d["predicted_us"], d["bound_us"]))

    # ---- driver ----------------------------------------------------------------
    def run(self):
        self.load()
        self.check_tensors()
        self.check_roles()
        self.check_tasks()
        self.check_flags()
        self.check_pools()
        self.build_graph()
        self.check_acyclic()
        self.index_writes()
        self.check_coverage()
        self.check_ordering()
        self.check_dataflow()
        self.check_sumk_once()
        if self.rdma_once:
            self.check_rdma_once()
        self.check_timeline()
        return sum(self.counts.values())


def main(argv):
    quiet, path, maxe, once = False, "-", 20, False
    args = list(argv[1:])
    while args:
        a = args.pop(0)
        if a in ("-q", "--quiet"):
            quiet = True
        elif a == "--rdma-once":
            once = True
        elif a == "--max-errors" and args:
            maxe = int(args.pop(0))
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        elif a.startswith("-") and a != "-":
            print("check_schedule: unknown option %s" % a, file=sys.stderr)
            return 2
        else:
            path = a
    try:
        text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
        doc = json.loads(text)
    except (OSError, ValueError) as e:
        print("check_schedule: %s: %s" % (path, e), file=sys.stderr)
        return 2
    c = Checker(doc, maxe, once)
    try:
        nbad = c.run()
    except Bad as e:
        print("check_schedule: %s: not a schedule: %s" % (path, e), file=sys.stderr)
        return 2
    for check in sorted(c.errors):
        for m in c.errors[check]:
            print("%s: %s: %s" % (path, check, m))
        if c.counts[check] > len(c.errors[check]):
            print("%s: %s: ... and %d more" % (path, check, c.counts[check] - len(c.errors[check])))
    if not quiet or nbad:
        print("%s: %s, mesh %dx%d, %d ranks/GPU: %d tasks, %d flags, %d CTAs/rank: %s" % (
            path, doc.get("pipeline"), c.nodes, c.gpus, c.rpg, len(c.tasks), len(c.flags),
            c.ctas, "%d violation%s" % (nbad, "s" if nbad != 1 else "") if nbad else "ok"))
    return 1 if nbad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
