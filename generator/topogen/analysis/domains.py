"""Candidate domains for a job, checked as topogen's mutation would leave the job there."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from operator import attrgetter

from topogen.analysis.cannotrun import CannotRun
from topogen.analysis.cluster import Domains, Packs
from topogen.analysis.context import AnalysisContext
from topogen.analysis.families import Family, Side
from topogen.analysis.job_fit import PodDemand, pack, pack_pods, room
from topogen.analysis.links import LinkView, linked_pairs, links
from topogen.analysis.members import Member
from topogen.analysis.placement import place_in_domains
from topogen.analysis.provisioning import PoolRoom
from topogen.analysis.zonepaths import JobPaths
from topogen.model import PodAffinityTerm, Toleration

__all__ = ["DomainCheck", "check_domain", "check_domains", "domain_check_values"]

# a domain's blocked paths: the first three described, and every policy blocking one
Blocked = tuple[tuple[str, ...], frozenset[str]]


@dataclass(unsafe_hash=True)  # equal and hashed by its fields, as a frozen dataclass
class DomainCheck:
    """One candidate domain checked for one job. Not frozen, though nothing assigns to
    one once made: a fleet makes tens of thousands (and the parent again from a worker's
    pickle), and a frozen dataclass's __init__ (object.__setattr__ per field) cost 7x."""

    name: str
    zones: tuple[str, ...]
    tolerations: tuple[Toleration, ...]
    identity: tuple[str, str] | None
    traffic_ok: bool
    capacity_ok: bool
    problems: Sequence[str]  # a tuple, or CannotRun (its texts made when first read)
    policies: tuple[str, ...]
    gpus_free: Fraction  # its GPUs, with what autoscalers can add there (rooms)
    gpus_needed: Fraction
    already_eligible: int
    gpus_now: Fraction = Fraction(0)  # the GPUs of its existing nodes
    rooms: tuple[PoolRoom, ...] = ()  # what each autoscaler's pool can add there
    # the job fits only once autoscalers add nodes: where, and up to what (PoolRoom.describe)
    scale_up: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.traffic_ok and self.capacity_ok

    def __reduce__(self) -> tuple[type[DomainCheck], tuple[object, ...]]:
        """Pickled as its fields in order (a worker's results hold tens of thousands)."""
        return DomainCheck, domain_check_values(self)


# a check's fields in order: DomainCheck(*domain_check_values(check)) is an equal check
domain_check_values: Callable[[DomainCheck], tuple[object, ...]] = attrgetter(
    *(f.name for f in fields(DomainCheck))
)


def check_domain(
    members: Sequence[Member], name: str, zones: tuple[str, ...], ctx: AnalysisContext
) -> DomainCheck:
    """The job confined to one domain as topogen's mutation would leave it: can every
    member run there, is its traffic allowed, do its pods fit."""
    return check_domains(members, [(name, zones)], ctx)[0]


def check_domains(
    members: Sequence[Member],
    candidates: Sequence[tuple[str, tuple[str, ...]]],
    ctx: AnalysisContext,
) -> list[DomainCheck]:
    """check_domain for every candidate domain, sharing the work between domains."""
    topo = ctx.topology
    doms = ctx.cluster.domains(candidates)
    job = _JobInDomains(members, doms, ctx)
    gpus_needed = Fraction(0)
    for m in members:
        for g in topo.gpu_resources:
            want = m.template.requests.get(g)
            if want is not None:
                gpus_needed += want * m.replicas
    identities = ctx.cluster.identities(doms, ctx.identity_label)
    eligible = _already_eligible(members, doms, ctx)
    packs = job.packs()
    # one-zone domains whose pairs need no per-domain check: only those of these zones
    # can be blocked (None: ask every domain)
    maybe_blocked = job.blocked_zones()
    runs = [p.nonempty_mask() for p in job.pinned]  # per member: the domains it can run in
    every = (1 << len(doms.names)) - 1
    cannot = 0  # the domains some member cannot run in
    for r in runs:
        cannot |= every & ~r
    out = []
    for d, name in enumerate(doms.names):
        zones = doms.zones[d]
        problems: tuple[str, ...] | CannotRun = ()
        policies: tuple[str, ...] = ()
        traffic_ok = True
        fits = False
        scale_up: tuple[str, ...] = ()
        if cannot >> d & 1:
            failing = [
                (m.role, m.name, job.pinned[i])
                for i, m in enumerate(members)
                if not runs[i] >> d & 1
            ]
            problems = CannotRun((d, name, zones), failing, ctx.cluster.provisioning)
        else:
            quiet = maybe_blocked is not None and not maybe_blocked & doms.masks[d]
            blocked = None if quiet else job.blocked(d)
            if blocked:
                traffic_ok = False
                problems = tuple(blocked[0])
                policies = tuple(sorted(blocked[1]))
            else:
                fits, short, opened = packs[d] or job.pack(packs, d)
                if short:
                    problems = (short,)  # the domain's name is said where it is shown
                elif opened:
                    scale_up = _scale_up_texts(opened, ctx)
        out.append(
            DomainCheck(
                name,
                zones,
                doms.tolerations[d],
                identities[d],
                traffic_ok,
                fits,
                problems,
                policies,
                doms.gpus_free[d],
                gpus_needed,
                eligible[d],
                doms.gpus_now[d],
                doms.rooms[d],
                scale_up,
            )
        )
    return out


def _already_eligible(
    members: Sequence[Member], doms: Domains, ctx: AnalysisContext
) -> tuple[int, ...]:
    """Per domain: how many members may land there now (before topogen pins them), shared
    by the jobs whose members may land in the same zones."""
    zones = tuple(ctx.cluster.zones_mask(m.placement.zones) for m in members)
    key = (zones, id(doms))
    hit = ctx.cluster.eligible.get(key)
    if hit is None:
        ctx.cluster.keep(doms)
        hit = ctx.cluster.eligible[key] = tuple(
            sum(1 for zm in zones if zm & mask) for mask in doms.masks
        )
    return hit


def _scale_up_texts(opened: Sequence[tuple[str, str]], ctx: AnalysisContext) -> tuple[str, ...]:
    """`NodePool gpu in us-east-1b, up to 16 GPUs` for each pool and zone a job's pods
    went to new nodes of."""
    out = []
    for pool, zone in opened:
        room = next((r for r in ctx.cluster.provisioning.room((zone,)) if r.pool == pool), None)
        out.append(room.describe() if room is not None else f"{pool} in {zone}")
    return tuple(out)


class _JobInDomains:
    """One job pinned to each candidate domain (members.pin, for all domains at once)."""

    def __init__(self, members: Sequence[Member], doms: Domains, ctx: AnalysisContext) -> None:
        self.members = list(members)
        self.doms = doms
        self.ctx = ctx
        topo = ctx.topology
        key = (
            topo.zone_label if ctx.colocate == "zone" or not ctx.domain_label else ctx.domain_label
        )
        self.key = key
        coordinator = next((m for m in members if m.role == "coordinator"), None)
        self.affinity = None
        if coordinator is not None:
            job = coordinator.template.labels.get(ctx.profile.job_label, "")
            self.affinity = PodAffinityTerm(ctx.profile.coordinator_affinity(job), key)
        self._diagonal: tuple[int, bool] | None = None
        self._diagonal_ready = False
        self._pod_families: dict[tuple[int, bool], Family] = {}
        self._host_families: dict[tuple[int, int], Family] = {}
        self._order: list[int] | None = None
        self._pairs: list[tuple[int, int, int | None, list[str], tuple[str, ...]]] = []
        self._talk: list[tuple[int, int, tuple[str, ...], tuple[str, ...]]] | None = None
        self._uniform: bool | None = None  # is every key linking members zone-uniform
        self.pinned = [
            place_in_domains(
                m.template,
                ctx.cluster.nodes,
                doms.zones,
                doms.tolerations if m.role == "coordinator" else doms.none,
            )
            for m in members
        ]

    def identity(self, d: int) -> tuple[str, str] | None:
        return self.ctx.cluster.identities(self.doms, self.ctx.identity_label)[d]

    def _affinity_of(self, m: Member) -> tuple[PodAffinityTerm, ...]:
        t = m.template
        if m.role != "worker" or self.affinity is None:
            return t.pod_affinity
        return tuple(dict.fromkeys((*t.pod_affinity, self.affinity)))

    def _family(self, i: int, d: int) -> Family:
        eng = self.ctx.engine
        m = self.members[i]
        t = m.template
        if t.host_network:
            key = (i, d)
            fam = self._host_families.get(key)
            if fam is None:
                fam = self._host_families[key] = eng.pinned_host_family(self.pinned[i], d, t.ports)
            return fam
        single = len(self.doms.zones[d]) == 1
        hit = self._pod_families.get((i, single))
        if hit is None:
            hit = self._pod_families[(i, single)] = self._pod_family(i, d)
        return hit

    def _pod_family(self, i: int, d: int) -> Family:
        eng = self.ctx.engine
        m = self.members[i]
        t = m.template
        identity = self.identity(d)
        if identity is not None:
            # pinned: the identity label is set to the domain's zone; in that zone this is
            # the identity the label would be stamped with
            labels = {k: v for k, v in t.labels.items() if k != identity[0]}
            return eng.pod_family(labels, m.workload.namespace, t.ports, True, t.service_account)
        return self.ctx.family(m)

    def paths(self, d: int) -> JobPaths:
        """The job's zone pairs in domain d, as members.pin leaves its members."""
        eng = self.ctx.engine
        identity = self.identity(d)
        sides = []
        for i, m in enumerate(self.members):
            placed = self.pinned[i][d]
            labels = dict(m.template.labels)
            if identity is not None:
                labels[identity[0]] = identity[1]
            sides.append(
                Side(
                    m.role,
                    m.replicas,
                    eng.zones_mask(placed.zones),
                    self._family(i, d),
                    placed,
                    m.workload.namespace,
                    labels,
                    self._affinity_of(m),
                )
            )
        return JobPaths(eng, sides)

    def blocked_zones(self) -> int | None:
        """Where every domain is one zone and no member pair needs a per-domain check
        (_diagonal_setup): the zones (bits over the topology's) whose domain blocked() may
        find a path in; None: any domain may have one."""
        diagonal = self._diagonal_of()
        return diagonal[0] if diagonal is not None and not diagonal[1] else None

    def _diagonal_of(self) -> tuple[int, bool] | None:
        if not self._diagonal_ready:
            self._diagonal = self._diagonal_setup()
            self._diagonal_ready = True
        return self._diagonal

    def blocked(self, d: int) -> Blocked | None:
        """Domain d's blocked paths: (the first three described, every policy), or None."""
        diagonal = self._diagonal_of()
        if diagonal is None:
            return self._paths_blocked(d)
        eng = self.ctx.engine
        z = eng.zone_index[self.doms.zones[d][0]]
        uniform, per_domain = diagonal
        if not uniform >> z & 1 and not per_domain:
            return None
        texts: list[str] = []
        policies: set[str] = set()
        for i, j, masks, other, anti_keys in self._pairs:
            if masks is not None:
                if not masks >> z & 1:
                    continue
            elif not self._possible_in(i, j, d, z, other, anti_keys):
                continue
            fa, fb = self._family(i, d), self._family(j, d)
            if masks is None and not eng.diagonal(fa, fb) >> z & 1:
                continue
            text, names = eng.described_cell(
                self.members[i].role, fa, z, self.members[j].role, fb, z
            )
            if len(texts) < 3:
                texts.append(text)
            policies.update(names)
        if not texts:
            return None
        return tuple(texts), frozenset(policies)

    def _paths_blocked(self, d: int) -> Blocked | None:
        """blocked(d) from the job's zone pairs in domain d (JobPaths), shared by the jobs
        whose members have the same roles, families, links and zones there (_shape)."""
        shape = self._shape(d)
        cache = self.ctx.engine.domain_blocked
        if shape is not None and shape in cache:
            return cache[shape]
        paths = self.paths(d)
        found = None
        if paths.blocked_count:
            found = (
                tuple(b.describe() for b in paths.blocked(limit=3)),
                frozenset(str(p) for p in paths.blocked_policies()),
            )
        if shape is not None:
            cache[shape] = found
        return found

    def _shape(self, d: int) -> tuple[object, ...] | None:
        """What JobPaths reads of the job in domain d: per member its role, family and
        zones there; the member pairs that talk and on which keys (from labels, namespaces
        and pod affinity). Where a key linking two members is not zone-uniform (one value
        per zone), the scheduler's choices read the nodes themselves: the placements are
        part of the shape. None where the domain stamps the identity label (links may
        read it): not shared."""
        if self.identity(d) is not None:
            return None
        eng = self.ctx.engine
        talk = self._talking()
        if self._uniform is None:
            keys = {k for _, _, linked, anti in talk for k in (*linked, *anti)}
            self._uniform = all(eng.zone_uniform(k) for k in keys)
        members = tuple(
            (m.role, self._family(i, d).fid, eng.zones_mask(self.pinned[i].zones(d)))
            for i, m in enumerate(self.members)
        )
        return (tuple(talk), members, None if self._uniform else (d, *self.pinned))

    def _talking(self) -> list[tuple[int, int, tuple[str, ...], tuple[str, ...]]]:
        """The member pairs that talk, with the keys that link them and, for two replicas
        of one member, its anti-affinity keys (links.linked_pairs over the members as
        members.pin leaves them: with the coordinator's affinity)."""
        if self._talk is None:
            replicas = [m.replicas for m in self.members]
            self._talk = [
                (i, j, tuple(linked), tuple(anti))
                for i, j, linked, anti in linked_pairs(replicas, links(self._views()))
            ]
        return self._talk

    def _views(self) -> list[LinkView]:
        return [
            LinkView(m.workload.namespace, m.template.labels, self._affinity_of(m))
            for m in self.members
        ]

    def _diagonal_setup(self) -> tuple[int, bool] | None:
        """For one-zone domains co-located on the zone label: the member pairs, and the
        zones where a pair that needs no per-domain check is blocked. None: domains need
        the full check (several zones, co-location on another key)."""
        ctx, doms = self.ctx, self.doms
        eng = ctx.engine
        if self.key != ctx.topology.zone_label or any(len(z) != 1 for z in doms.zones):
            return None
        ident = ctx.identity_label
        if ident and any(
            ident in set(t.selector.keys()) for v in self._views() for t in v.pod_affinity
        ):
            return None  # links would depend on the identity each domain sets
        uniform = 0
        per_domain = False
        for i, j, linked, anti_keys in self._talking():
            other = [k for k in linked if k != self.key]
            masks: int | None = None
            a, b = self.members[i].template, self.members[j].template
            if (
                not a.host_network
                and not b.host_network
                and doms.zones
                and not other
                and not anti_keys
            ):
                masks = eng.diagonal(self._family(i, 0), self._family(j, 0))
                uniform |= masks
            else:
                per_domain = True
            self._pairs.append((i, j, masks, other, anti_keys))
        return uniform, per_domain

    def _possible_in(
        self, i: int, j: int, d: int, z: int, linked: list[str], anti_keys: tuple[str, ...]
    ) -> bool:
        """May the scheduler put members i and j in zone z of domain d together?"""
        eng = self.ctx.engine
        pi, pj = self.pinned[i], self.pinned[j]
        for k in linked:
            if not eng.pinned_values(pi, d, z, k) & eng.pinned_values(pj, d, z, k):
                return False
        for k in anti_keys:
            va, vb = eng.pinned_values(pi, d, z, k), eng.pinned_values(pj, d, z, k)
            if not any(x != y for x in va for y in vb):
                return False
        return True

    def packs(self) -> Packs:
        """pack() per domain, shared by every job of the same shape (filled when asked)."""
        cache = self.ctx.cluster.packs
        key = (
            tuple(
                (m.role, m.replicas, tuple(m.template.requests.items()), id(self.pinned[i]))
                for i, m in enumerate(self.members)
            ),
            id(self.doms),
        )
        results = cache.get(key)
        if results is None:
            results = cache[key] = [None] * len(self.doms.names)
            self.ctx.cluster.keep(self.pinned, self.doms)
        return results

    def pack(self, results: Packs, d: int) -> tuple[bool, str, tuple[tuple[str, str], ...]]:
        """(fits, what is missing, the (pool, zone) of the new nodes it needs): on the
        existing nodes when they hold it, else with the nodes autoscalers can add."""
        hit = results[d]
        if hit is None:
            if self._surely_fits(d):
                hit = results[d] = (True, "", ())
            else:
                names = self.ctx.cluster.nodes.names
                demands = [
                    PodDemand(m.role, m.replicas, m.template.requests, names(self.pinned[i][d]))
                    for i, m in enumerate(self.members)
                ]
                nodes, gpus = self.doms.nodes[d], self.ctx.topology.gpu_resources
                if not self.doms.scale_up[d]:
                    hit = (*pack(demands, nodes, gpus), ())
                else:
                    now = [n for n in nodes if n.scale_up is None]
                    hit = (True, "", ())
                    if not self._surely_fits(d, now_only=True) and not pack(demands, now, gpus)[0]:
                        budgets = self.ctx.cluster.provisioning.budgets()
                        hit = pack_pods(demands, nodes, gpus, budgets)
                results[d] = hit
        return hit

    def _surely_fits(self, d: int, now_only: bool = False) -> bool:
        """True when packing.pack cannot fail, without placing pod by pod.

        pack places the demands in order, each first-fit; identical pods first-fit onto a
        set of nodes fail only when the nodes' remaining room (in pods) is short. A pod of
        an earlier demand takes at most one node's room, so a demand surely fits when its
        nodes' room when empty, less that much per earlier pod, still holds it.
        """
        if self._order is None:
            gpus = self.ctx.topology.gpu_resources
            self._order = sorted(
                range(len(self.members)),
                key=lambda i: (
                    -sum(self.members[i].template.requests.get(g, 0) for g in gpus),
                    -self.members[i].template.requests.get("cpu", 0),
                    self.members[i].role,
                ),
            )
        order = self._order
        if self.doms.scale_up[d] and not now_only:
            return False  # the pools' limits are shared: only pack_pods can tell
        earlier = 0
        nodes = self.ctx.cluster.nodes
        for i in order:
            m = self.members[i]
            counts = self.pinned[i].allocatables(d)
            if now_only:
                counts = {a: c for a, c in counts.items() if a not in nodes.new_allocatables}
            total, most = room(counts, nodes, m.template.requests)
            if total - earlier * most < m.replicas:
                return False
            earlier += m.replicas
        return True
