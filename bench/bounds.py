"""Upper bounds for the fleet measure: how many GPUs the jobs could keep busy at best.

Static: each job (its GPUs g_j) goes wholly into one of its allowed domains or not at all,
a domain holds at most its GPUs. `best_packing` maximises the GPUs placed: exactly (the
HiGHS MIP solver, or a branch and bound search when that is not installed) when the solver
finishes within its limit, otherwise an upper bound (the solver's dual bound, or the
fractional relaxation: a max flow from jobs to domains); the result says which. Every pod of the generated jobs asks for one GPU and the nodes have CPU and
pod room to spare, so a domain's GPU count is exactly what it can hold.

Over time: `makespan_bound` is a lower bound on the makespan of any schedule that runs
every job wholly inside an allowed domain: for every set S of domains and every arrival
time t, the work (GPU x time) of the jobs arriving at t or later that may only use
domains of S needs at least that work / S's usable GPUs after t (a domain's usable GPUs:
the most that whole jobs allowed there can occupy at once); and no job ends before its
arrival plus its duration. Preemption and splitting are allowed in the relaxation, so no
real schedule beats it, but it can be loose. `min_makespan` tightens it: the exact
minimum makespan of whole, unsplit, unpreempted jobs with their arrival times (a HiGHS
MIP: each job in one allowed domain, a start at or after its arrival, and per domain a
resource flow of GPUs from jobs that end to jobs that start after them, which exists
exactly when the jobs running at every moment fit the domain) where the instance is
small enough and the solver proves it within its limit; otherwise the larger of the
relaxation and the solver's dual bound, or the relaxation where the idealised online
schedule below already reaches it (then it is exact too). The result says which.
`fifo_makespan` is what an idealised gang scheduler reaches online (no knowledge of
later arrivals): whole jobs only, first come first served with backfill, each into the
allowed domain with the most GPUs free at its start; a reference and an upper bound on
the minimum, not a lower bound.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Demand",
    "Makespan",
    "Packing",
    "best_packing",
    "fifo_makespan",
    "flow_bound",
    "makespan_bound",
    "min_makespan",
]

TimedJob = tuple[float, float, int, tuple[str, ...]]  # (arrival, duration, GPUs, domains)


@dataclass(frozen=True)
class Demand:
    key: str
    gpus: int
    domains: tuple[str, ...]  # allowed domains that can hold it alone


@dataclass(frozen=True)
class Packing:
    gpus: int  # the bound
    exact: bool  # True: an optimal packing achieves it; False: the fractional relaxation
    found: int  # the best packing the search found (== gpus when exact)
    assignment: Mapping[str, str]  # job -> domain of that packing


def flow_bound(demands: Sequence[Demand], capacity: Mapping[str, int]) -> int:
    """Max flow source -> jobs (g_j) -> allowed domains -> sink (capacity): an upper bound."""
    domains = sorted(capacity)
    n = len(demands)
    src, sink = n + len(domains), n + len(domains) + 1
    graph: list[list[list[int]]] = [[] for _ in range(sink + 1)]  # [to, cap, rev index]

    def edge(a: int, b: int, cap: int) -> None:
        graph[a].append([b, cap, len(graph[b])])
        graph[b].append([a, 0, len(graph[a]) - 1])

    at = {d: n + i for i, d in enumerate(domains)}
    for i, dem in enumerate(demands):
        edge(src, i, dem.gpus)
        for d in dem.domains:
            edge(i, at[d], dem.gpus)
    for d in domains:
        edge(at[d], sink, capacity[d])
    flow = 0
    while True:  # Dinic
        level = [-1] * (sink + 1)
        level[src] = 0
        queue = deque([src])
        while queue:
            v = queue.popleft()
            for to, cap, _ in graph[v]:
                if cap > 0 and level[to] < 0:
                    level[to] = level[v] + 1
                    queue.append(to)
        if level[sink] < 0:
            return flow
        it = [0] * (sink + 1)

        def push(v: int, f: int, level: list[int] = level, it: list[int] = it) -> int:
            if v == sink:
                return f
            while it[v] < len(graph[v]):
                e = graph[v][it[v]]
                to, cap, rev = e
                if cap > 0 and level[to] == level[v] + 1:
                    got = push(to, min(f, cap))
                    if got:
                        e[1] -= got
                        graph[to][rev][1] += got
                        return got
                it[v] += 1
            return 0

        while True:
            f = push(src, 1 << 30)
            if not f:
                break
            flow += f


def best_packing(
    demands: Sequence[Demand], capacity: Mapping[str, int], budget: int = 200_000
) -> Packing:
    """The most GPUs of whole jobs placed in allowed domains (see the module docstring):
    the HiGHS MIP solver when installed (`make bench` installs it), else branch and bound."""
    try:
        import highspy  # noqa: F401
    except ImportError:
        return _search(demands, capacity, budget)
    return _mip(demands, capacity)


def _mip(demands: Sequence[Demand], capacity: Mapping[str, int], seconds: float = 60) -> Packing:
    """x[j, d] binary; each job in at most one domain; a domain's jobs within its GPUs.
    Optimal: the bound is exact; stopped by the time limit: HiGHS's dual bound (an upper
    bound on every packing), or the flow bound when that is lower."""
    import highspy

    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.silent()
    h.setOptionValue("time_limit", seconds)
    x = {(d.key, dom): h.addBinary() for d in demands for dom in d.domains}
    for d in demands:
        if d.domains:
            h.addConstr(sum(x[d.key, dom] for dom in d.domains) <= 1)
    for dom, cap in capacity.items():
        terms = [d.gpus * x[d.key, dom] for d in demands if dom in d.domains]
        if terms:
            h.addConstr(sum(terms) <= cap)
    if not x:
        return Packing(0, True, 0, {})
    h.maximize(sum(d.gpus * x[d.key, dom] for d in demands for dom in d.domains))
    info = h.getInfo()
    found = round(info.objective_function_value)
    values = h.getSolution().col_value
    index = {var.index: k for k, var in x.items()}
    assignment = {index[i][0]: index[i][1] for i, v in enumerate(values) if v > 0.5 and i in index}
    if h.getModelStatus() == highspy.HighsModelStatus.kOptimal:
        return Packing(found, True, found, assignment)
    bound = min(int(info.mip_dual_bound + 1e-6), flow_bound(demands, capacity))
    return Packing(bound, bound == found, found, assignment)


def _search(demands: Sequence[Demand], capacity: Mapping[str, int], budget: int) -> Packing:
    bound = flow_bound(demands, capacity)
    jobs = sorted((d for d in demands if d.domains), key=lambda d: (-d.gpus, len(d.domains), d.key))
    suffix = [0] * (len(jobs) + 1)
    for i in range(len(jobs) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + jobs[i].gpus
    room = dict(capacity)
    users = {d: frozenset(i for i, j in enumerate(jobs) if d in j.domains) for d in capacity}
    best: list[tuple[int, dict[str, str]]] = [(0, {})]
    chosen: dict[str, str] = {}
    nodes = [0]

    def search(i: int, placed: int) -> bool:
        """True when the bound is reached (nothing better exists) or the budget ran out."""
        if placed > best[0][0]:
            best[0] = (placed, dict(chosen))
            if placed == bound:
                return True
        nodes[0] += 1
        if nodes[0] > budget:
            return True
        if i == len(jobs) or placed + min(suffix[i], sum(room.values())) <= best[0][0]:
            return False
        job = jobs[i]
        tried: set[tuple[int, frozenset[int]]] = set()
        for d in sorted(job.domains, key=lambda d: (room[d], d)):  # best fit first
            same = (room[d], users[d])  # a domain like one tried: the same subtree
            if room[d] < job.gpus or same in tried:
                continue
            tried.add(same)
            room[d] -= job.gpus
            chosen[job.key] = d
            stop = search(i + 1, placed + job.gpus)
            del chosen[job.key]
            room[d] += job.gpus
            if stop:
                return True
        return search(i + 1, placed)

    search(0, 0)
    found, assignment = best[0]
    exact = found == bound or nodes[0] <= budget
    return Packing(found if exact else bound, exact, found, assignment)


def makespan_bound(jobs: Sequence[TimedJob], capacity: Mapping[str, int]) -> float:
    """Lower bound on the makespan from time 0: jobs as (arrival, duration, gpus, domains)."""
    room = {d: _reachable(capacity[d], {g for _, _, g, ds in jobs if d in ds}) for d in capacity}
    domains = sorted(d for d in room if room[d] > 0)
    bit = {d: 1 << i for i, d in enumerate(domains)}
    out = max((a + d for a, d, _, _ in jobs), default=0.0)
    masked = sorted((a, d * g, sum(bit[x] for x in ds if x in bit)) for a, d, g, ds in jobs if ds)
    for subset in range(1, 1 << len(domains)):
        cap = sum(room[d] for d in domains if bit[d] & subset)
        work = 0.0
        for a, w, mask in reversed(masked):  # latest arrival first: work arriving at a or later
            if mask & ~subset == 0:
                work += w
                out = max(out, a + work / cap)
    return out


def _reachable(capacity: int, sizes: set[int]) -> int:
    """The most GPUs whole jobs of these sizes can occupy together in `capacity` GPUs."""
    can = [True] + [False] * capacity
    for n in range(1, capacity + 1):
        can[n] = any(g <= n and can[n - g] for g in sizes)
    return max(n for n in range(capacity + 1) if can[n])


def fifo_makespan(jobs: Sequence[TimedJob], capacity: Mapping[str, int]) -> float:
    """The makespan of the idealised online gang scheduler of the module docstring: jobs
    as (arrival, duration, gpus, domains), each started whole when it fits, in arrival
    order with backfill."""
    free = dict(capacity)
    arrivals = sorted(range(len(jobs)), key=lambda i: (jobs[i][0], i))
    waiting: list[int] = []
    running: list[tuple[float, int, str]] = []  # (end, job, domain)
    clock = end = 0.0
    while arrivals or waiting or running:
        nxt = [e for e, _, _ in running] + [jobs[i][0] for i in arrivals[:1]]
        if not nxt:
            return float("inf")  # a job no domain can ever hold
        clock = min(nxt)
        for r in [r for r in running if r[0] <= clock]:
            running.remove(r)
            free[r[2]] += jobs[r[1]][2]
        while arrivals and jobs[arrivals[0]][0] <= clock:
            waiting.append(arrivals.pop(0))
        for i in list(waiting):
            _, duration, gpus, domains = jobs[i]
            fits = [d for d in domains if free.get(d, 0) >= gpus]
            if fits:
                d = max(fits, key=lambda d: (free[d], d))
                free[d] -= gpus
                running.append((clock + duration, i, d))
                waiting.remove(i)
                end = max(end, clock + duration)
    return end


@dataclass(frozen=True)
class Makespan:
    bound: float  # a lower bound on every whole-job schedule's makespan
    exact: bool  # True: a schedule reaches it (the minimum)
    how: str  # "MIP" | "relaxation" | "relaxation = MIP" | "MIP dual bound"


MIP_JOBS = 24  # the exact minimum is tried up to this many jobs


def min_makespan(
    jobs: Sequence[TimedJob], capacity: Mapping[str, int], seconds: float = 120
) -> Makespan:
    """The tightest makespan bound we can state (see the module docstring)."""
    relaxed = makespan_bound(jobs, capacity)
    online = fifo_makespan(jobs, capacity)
    if relaxed >= online - 1e-9:
        return Makespan(relaxed, True, "relaxation")
    if len(jobs) > MIP_JOBS or any(not ds for *_, ds in jobs):
        return Makespan(relaxed, False, "relaxation")
    try:
        import highspy  # noqa: F401
    except ImportError:
        return Makespan(relaxed, False, "relaxation")
    optimal, dual = _makespan_mip(jobs, capacity, online, seconds)
    # the solver's tolerances (integrality 1e-6 on big-M rows of the horizon) cost at
    # most a few 1e-5 time units: the bound stated is 1e-3 below the solver's
    lower = dual - 1e-3
    if lower <= relaxed:  # the relaxation is as tight (the minimum, where the MIP proved it)
        return Makespan(relaxed, optimal, "relaxation = MIP" if optimal else "relaxation")
    return Makespan(lower, optimal, "MIP" if optimal else "MIP dual bound")


def _makespan_mip(
    jobs: Sequence[TimedJob], capacity: Mapping[str, int], horizon: float, seconds: float
) -> tuple[bool, float]:
    """(proved optimal, the dual bound) of the whole-job minimum makespan MIP: x[j, d] one
    domain per job; s[j] >= arrival; y[i, j] = 1 when i ends before j starts; per domain a
    flow of GPUs source -> jobs -> sink, f[i, j] only where y[i, j] (a schedule's jobs fit
    their domain at every moment exactly when such a flow exists: Artigues, Michelon and
    Reusser 2003). `horizon` is a schedule's makespan, so the minimum is at most that."""
    import highspy

    h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.silent()
    h.setOptionValue("time_limit", seconds)
    h.setOptionValue("mip_rel_gap", 1e-6)
    n = len(jobs)
    cmax = h.addVariable(lb=0, ub=horizon)
    start = [h.addVariable(lb=a, ub=max(a, horizon - d)) for a, d, _, _ in jobs]
    x = {(j, dom): h.addBinary() for j, (*_, ds) in enumerate(jobs) for dom in ds}
    for j, (_, d, _, ds) in enumerate(jobs):
        h.addConstr(sum(x[j, dom] for dom in ds) == 1)
        h.addConstr(cmax - start[j] >= d)
    y = {(i, j): h.addBinary() for i in range(n) for j in range(n)
         if i != j and set(jobs[i][3]) & set(jobs[j][3])}  # fmt: skip
    for (i, j), before in y.items():
        big = horizon - jobs[j][0]  # s[i] + d[i] - s[j] never exceeds it
        h.addConstr(start[j] - start[i] - big * before >= jobs[i][1] - big)
        if i < j:
            h.addConstr(before + y[j, i] <= 1)
    for dom, cap in capacity.items():
        users = [j for j in range(n) if dom in jobs[j][3]]
        if not users:
            continue
        src = {j: h.addVariable(lb=0, ub=jobs[j][2]) for j in users}
        sink = {j: h.addVariable(lb=0, ub=jobs[j][2]) for j in users}
        flow = {}
        for i in users:
            for j in users:
                if i != j:
                    most = min(jobs[i][2], jobs[j][2])
                    flow[i, j] = h.addVariable(lb=0, ub=most)
                    h.addConstr(flow[i, j] - most * y[i, j] <= 0)
        h.addConstr(sum(src.values()) <= cap)
        for j in users:
            g = jobs[j][2]
            h.addConstr(src[j] + sum(flow[i, j] for i in users if i != j) - g * x[j, dom] == 0)
            h.addConstr(sink[j] + sum(flow[j, k] for k in users if k != j) - g * x[j, dom] == 0)
    h.minimize(cmax)
    optimal = h.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return optimal, float(h.getInfo().mip_dual_bound)
