"""The Cilium agent's identity label filter (cilium/cilium pkg/labelsfilter).

A pod's security identity is built from a filtered set of its labels: by default
the agent keeps reserved labels, the namespace and namespace labels,
app.kubernetes.io, the service account and the cluster, and drops every other
io.kubernetes*, kubernetes.io*, k8s.io*, *beta.kubernetes.io*, topology.kubernetes.io*
key, pod-template-hash, controller-revision-hash, ... A selector on a dropped key
selects nothing.

The agent's `labels` option (`--labels`, Helm `labels`) adds prefixes; any prefix
that is not an exclusion (`!`) turns the filter into an allow-list: a label is
then kept only when an inclusive prefix matches more of it than any exclusion
does. Each prefix is `[source:]regexp`, matched at the start of the key (Go's
regexp; the patterns used in practice read the same in Python's `re`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, lru_cache

from topogen.model import CiliumSettings

__all__ = [
    "DEFAULT_PREFIXES",
    "LabelFilter",
    "LabelPrefix",
    "LabelPrefixError",
    "label_filter",
    "parse_prefix",
]

# pkg/labelsfilter defaultLabelPrefixCfg, in order (v1.20.2)
DEFAULT_PREFIXES: tuple[str, ...] = (
    "reserved:.*",
    re.escape("io.kubernetes.pod.namespace"),
    re.escape("io.cilium.k8s.namespace.labels"),
    re.escape("app.kubernetes.io"),
    re.escape("io.cilium.k8s.policy.cluster"),
    re.escape("io.cilium.k8s.policy.serviceaccount"),
    r"!io\.kubernetes",
    r"!kubernetes\.io",
    "!" + re.escape("statefulset.kubernetes.io/pod-name"),
    "!" + re.escape("apps.kubernetes.io/pod-index"),
    "!" + re.escape("batch.kubernetes.io/job-completion-index"),
    "!" + re.escape("batch.kubernetes.io/controller-uid"),
    r"!.*beta\.kubernetes\.io",
    r"!k8s\.io",
    "!pod-template-generation",
    "!pod-template-hash",
    "!controller-revision-hash",
    "!controller-uid",
    "!annotation.*",
    "!etcd_node",
    r"!topology\.kubernetes\.io",
)


class LabelPrefixError(ValueError):
    """A `labels` entry the agent would refuse at start-up."""


@dataclass(frozen=True)
class LabelPrefix:
    source: str  # "" : any source
    prefix: str
    ignore: bool
    pattern: re.Pattern[str]

    def match_length(self, source: str, key: str) -> int | None:
        """Length of the match at the start of `key`, None when it does not match there."""
        if self.source and self.source != source:
            return None
        m = self.pattern.search(key)
        if m is None or m.start() != 0:
            return None
        return m.end()

    def __str__(self) -> str:
        text = f"{self.source}:{self.prefix}"
        return "!" + text if self.ignore else text


def parse_prefix(text: str) -> LabelPrefix:
    """One entry of the agent's `labels` option, as parseLabelPrefix reads it."""
    source, sep, prefix = text.partition(":")
    if not sep:
        source, prefix = "", text
    if not prefix:
        raise LabelPrefixError(f"invalid label source {source!r}, prefix {prefix!r}")
    ignore = prefix.startswith("!")
    if ignore:
        prefix = prefix[1:]
    try:
        pattern = re.compile(prefix)
    except re.error as exc:
        raise LabelPrefixError(f"{text!r} is not a regular expression: {exc}") from None
    return LabelPrefix(source, prefix, ignore, pattern)


@cache
def _defaults() -> tuple[LabelPrefix, ...]:
    return tuple(parse_prefix(p) for p in DEFAULT_PREFIXES)


@dataclass(frozen=True)
class LabelFilter:
    """Which labels count for identity: Cilium's defaults plus the agent's `labels`."""

    agent_labels: tuple[str, ...] = ()  # the agent's `labels` option, verbatim

    @property
    def prefixes(self) -> tuple[LabelPrefix, ...]:
        return _defaults() + tuple(parse_prefix(p) for p in self.agent_labels)

    @property
    def allow_list(self) -> bool:
        """Whether the agent's `labels` name an inclusive prefix (then only matches count)."""
        return any(not parse_prefix(p).ignore for p in self.agent_labels)

    def keeps(self, key: str, source: str = "k8s") -> bool:
        """Whether a label with this key (from this source) is part of the identity."""
        return _keeps(self, key, source)

    def check(self) -> None:
        """Raise LabelPrefixError for an entry the agent would refuse."""
        for p in self.agent_labels:
            parse_prefix(p)


def label_filter(settings: CiliumSettings) -> LabelFilter:
    """The filter the agent with these options applies (one object per option value: the
    caches of keeps() then find it by identity)."""
    key = settings.identity_labels
    hit = _FILTERS.get(key)
    if hit is None:
        hit = LabelFilter(key)
        if len(_FILTERS) < 64:
            _FILTERS[key] = hit
    return hit


_FILTERS: dict[tuple[str, ...], LabelFilter] = {}


@lru_cache(maxsize=65536)
def _keeps(flt: LabelFilter, key: str, source: str) -> bool:
    included = ignored = 0
    for p in _prefixes(flt):
        length = p.match_length(source, key)
        if length is None:
            continue
        if p.ignore:
            # the shortest matching exclusion
            if ignored == 0 or length < ignored:
                ignored = length
        elif length > included:
            # the longest matching inclusion
            included = length
    return (not _allow_list(flt) and ignored == 0) or included > ignored


@lru_cache(maxsize=256)
def _prefixes(flt: LabelFilter) -> tuple[LabelPrefix, ...]:
    return flt.prefixes


@lru_cache(maxsize=256)
def _allow_list(flt: LabelFilter) -> bool:
    return flt.allow_list
