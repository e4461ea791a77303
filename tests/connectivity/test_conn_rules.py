"""Hand-worked cases, one per documented rule, each checked through `connectivity` and `explain`.

Every case is written from the Kubernetes NetworkPolicy documentation
(kubernetes.io/docs/concepts/services-networking/network-policies/), the Cilium
policy documentation (docs.cilium.io/en/stable/security/policy/), or design.md,
and states which rule it pins. Expected values are worked out by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conn_kit import (
    Case,
    Check,
    connectivity_map,
    docs,
    namespace,
    path_args,
    pod,
    run,
    verdict_block,
    write_case,
)

A_WEB = pod("a", "web", {"app": "web"})
A_DB = pod("a", "db", {"app": "db"})
EVERY_TCP_BUT = "TCP/1-{lo}, TCP/{hi}-65535, UDP/*, SCTP/*"


def but(port: int) -> str:
    return EVERY_TCP_BUT.format(lo=port - 1, hi=port + 1)


CASES = [
    # --- Cilium (design.md "Cilium") ------------------------------------------------
    Case(
        "cnp-endpointselector-own-namespace",
        "design.md: a CNP endpointSelector selects pods in the CNP's own namespace; an "
        "ingress section isolates ingress only",
        docs(
            A_WEB,
            A_DB,
            pod("b", "web", {"app": "web"}),
            pod("b", "db", {"app": "db"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db-ingress, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromEndpoints: [{matchLabels: {app: api}}]
""",
        ),
        {
            ("a/web", "a/db"): None,
            ("b/web", "b/db"): "all",
            ("a/web", "b/db"): "all",
            ("b/web", "a/db"): None,
            ("a/db", "a/web"): "all",
        },
        (
            Check(
                "a/web",
                "a/db",
                None,
                False,
                why=("receiver ingress: default deny (isolated by cnp a/db-ingress rule 0)",),
                absent=("sender egress",),
            ),
        ),
    ),
    Case(
        "cilium-both-ends",
        "design.md: traffic must be allowed on both ends, egress at the sender and ingress "
        "at the receiver",
        docs(
            pod("a", "client", {"app": "client"}),
            pod("a", "server", {"app": "server"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: client-egress, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: client}}
  egress:
    - toEndpoints: [{matchLabels: {app: server}}]
      toPorts: [{ports: [{port: "443", protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: server-ingress, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: server}}
  ingress:
    - fromEndpoints: [{matchLabels: {app: client}}]
      toPorts: [{ports: [{port: "80", protocol: TCP}, {port: "443", protocol: TCP}]}]
""",
        ),
        {("a/client", "a/server"): "TCP/443", ("a/server", "a/client"): "all"},
        (
            Check(
                "a/client",
                "a/server",
                "80/TCP",
                False,
                why=("sender egress: default deny (isolated by cnp a/client-egress rule 0)",),
                absent=("receiver ingress",),
            ),
            Check(
                "a/client",
                "a/server",
                "443/TCP",
                True,
                text=(
                    "allowed by cnp a/client-egress rule 0 egress[0]",
                    "allowed by cnp a/server-ingress rule 0 ingress[0]",
                ),
            ),
        ),
    ),
    Case(
        "cilium-enable-default-deny",
        "design.md / Cilium enableDefaultDeny: false keeps a rule from isolating; if any "
        "selecting rule asks for default deny it is on",
        docs(
            A_WEB,
            A_DB,
            pod("a", "other", {"app": "other"}),
            pod("b", "web", {"app": "web"}),
            pod("b", "db", {"app": "db"}),
            pod("b", "other", {"app": "other"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: audit, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: db}}
  enableDefaultDeny: {ingress: false}
  ingress:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts: [{ports: [{port: "5432", protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: audit, namespace: b}
spec:
  endpointSelector: {matchLabels: {app: db}}
  enableDefaultDeny: {ingress: false}
  ingress:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts: [{ports: [{port: "5432", protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: lock, namespace: b}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts: [{ports: [{port: "5432", protocol: TCP}]}]
""",
        ),
        {
            ("a/other", "a/db"): "all",
            ("a/web", "a/db"): "all",
            ("b/other", "b/db"): None,
            ("b/web", "b/db"): "TCP/5432",
        },
        (
            Check(
                "b/other",
                "b/db",
                None,
                False,
                why=("receiver ingress: default deny (isolated by cnp b/lock rule 0)",),
                absent=("b/audit",),
            ),
        ),
    ),
    Case(
        "union-cnp-ccnp-netpol",
        "design.md: allows from all CNP, CCNP and NetworkPolicy objects are a union",
        docs(
            A_WEB,
            A_DB,
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-80, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
    - from: [{podSelector: {matchLabels: {app: web}}}]
      ports: [{port: 80}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db-443, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts: [{ports: [{port: "443", protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: db-5432}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts: [{ports: [{port: "5432", protocol: TCP}]}]
""",
        ),
        {("a/web", "a/db"): "TCP/80, TCP/443, TCP/5432", ("a/db", "a/web"): "all"},
        (
            Check(
                "a/web",
                "a/db",
                "8080/TCP",
                False,
                why=(
                    "receiver ingress: default deny (isolated by ccnp db-5432 rule 0, "
                    "cnp a/db-443 rule 0, netpol a/db-80)",
                ),
            ),
            Check(
                "a/web",
                "a/db",
                "443/TCP",
                True,
                text=("allowed by cnp a/db-443 rule 0 ingress[0]",),
            ),
        ),
    ),
    Case(
        "cilium-deny-wins",
        "design.md / Cilium deny policies: ingressDeny and egressDeny win over any allow",
        docs(
            A_WEB,
            A_DB,
            pod("a", "ops", {"app": "ops"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromEntities: [cluster]
  ingressDeny:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts: [{ports: [{port: "22", protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: ops-no-smtp, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: ops}}
  egress:
    - toEntities: [all]
  egressDeny:
    - toEndpoints: [{}]
      toPorts: [{ports: [{port: "25", protocol: TCP}]}]
""",
        ),
        {
            ("a/web", "a/db"): but(22),
            ("a/ops", "a/db"): but(25),
            ("a/ops", "a/web"): but(25),
            ("a/web", "a/ops"): "all",
            ("a/db", "a/web"): "all",
        },
        (
            Check(
                "a/web",
                "a/db",
                "22/TCP",
                False,
                why=("receiver ingress: denied by cnp a/db rule 0 ingressDeny[0]",),
            ),
            Check(
                "a/ops",
                "a/web",
                "25/TCP",
                False,
                why=("sender egress: denied by cnp a/ops-no-smtp rule 0 egressDeny[0]",),
            ),
            Check("a/web", "a/db", "23/TCP", True, text=("allowed by cnp a/db rule 0 ingress[0]",)),
        ),
    ),
    Case(
        "cilium-match-expressions",
        "design.md: fromEndpoints are label selectors with In/NotIn/Exists/DoesNotExist "
        "(NotIn also matches a missing key; all expressions must hold)",
        docs(
            A_DB,
            pod("a", "c1", {"app": "web", "env": "prod"}),
            pod("a", "c2", {"app": "web", "env": "dev"}),
            pod("a", "c3", {"app": "batch", "env": "prod", "canary": "true"}),
            pod("a", "c4", {"app": "api", "env": "prod"}),
            pod("a", "c5", {"app": "web"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db, namespace: a}
spec:
  endpointSelector:
    matchExpressions: [{key: app, operator: In, values: [db]}]
  ingress:
    - fromEndpoints:
        - matchExpressions:
            - {key: app, operator: In, values: [web, batch]}
            - {key: env, operator: NotIn, values: [dev]}
            - {key: env, operator: Exists}
            - {key: canary, operator: DoesNotExist}
""",
        ),
        {
            ("a/c1", "a/db"): "all",
            ("a/c2", "a/db"): None,
            ("a/c3", "a/db"): None,
            ("a/c4", "a/db"): None,
            ("a/c5", "a/db"): None,
        },
        (
            Check(
                "a/c3",
                "a/db",
                None,
                False,
                why=("receiver ingress: default deny (isolated by cnp a/db rule 0)",),
            ),
        ),
    ),
    Case(
        "cnp-peer-namespace-and-k8s-prefix",
        "design.md: a CNP peer selector without k8s:io.kubernetes.pod.namespace means the "
        "policy's namespace; a k8s: prefix on a key is the same key",
        docs(
            A_WEB,
            A_DB,
            pod("b", "web", {"app": "web"}),
            pod("c", "web", {"app": "web"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db, namespace: a}
spec:
  endpointSelector: {matchLabels: {"k8s:app": db}}
  ingress:
    - fromEndpoints: [{matchLabels: {"k8s:app": web}}]
    - fromEndpoints: [{matchLabels: {app: web, "k8s:io.kubernetes.pod.namespace": c}}]
      toPorts: [{ports: [{port: "8080", protocol: TCP}]}]
""",
        ),
        {("a/web", "a/db"): "all", ("b/web", "a/db"): None, ("c/web", "a/db"): "TCP/8080"},
        (
            Check(
                "b/web",
                "a/db",
                None,
                False,
                why=("receiver ingress: default deny (isolated by cnp a/db rule 0)",),
            ),
            Check(
                "c/web", "a/db", "8080/TCP", True, text=("allowed by cnp a/db rule 0 ingress[1]",)
            ),
        ),
    ),
    Case(
        "cilium-entities",
        "design.md: entity cluster matches every pod; world, host and remote-node match no "
        "pod-to-pod traffic; all matches everything",
        docs(
            A_WEB,
            A_DB,
            pod("a", "cache", {"app": "cache"}),
            pod("b", "web", {"app": "web"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromEntities: [cluster]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: cache, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: cache}}
  ingress:
    - fromEntities: [world, host, remote-node]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: web-out, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: web}}
  egress:
    - toEntities: [all]
""",
        ),
        {
            ("b/web", "a/db"): "all",
            ("a/web", "a/db"): "all",
            ("a/web", "a/cache"): None,
            ("b/web", "a/cache"): None,
            ("a/db", "a/cache"): None,
            ("a/web", "b/web"): "all",
        },
        (
            Check(
                "b/web",
                "a/cache",
                None,
                False,
                why=("receiver ingress: default deny (isolated by cnp a/cache rule 0)",),
            ),
            Check("b/web", "a/db", None, True, text=("fromEntities [cluster]",)),
        ),
    ),
    Case(
        "cilium-cidr-and-fqdn-never-match-pods",
        "design.md: CIDR (and FQDN) rules never match traffic between Cilium-managed pods "
        "(fromNodes, which needs the agent's enable-node-selector-labels: tests/core)",
        docs(
            A_WEB,
            A_DB,
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromCIDR: [10.0.0.0/8]
    - fromCIDRSet: [{cidr: 0.0.0.0/0}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: web, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: web}}
  egress:
    - toCIDR: [10.0.0.0/8]
    - toFQDNs: [{matchName: db.example.com}]
""",
        ),
        {("a/web", "a/db"): None, ("a/db", "a/web"): "all"},
        (
            Check(
                "a/web",
                "a/db",
                None,
                False,
                why=(
                    "sender egress: default deny (isolated by cnp a/web rule 0)",
                    "receiver ingress: default deny (isolated by cnp a/db rule 0)",
                ),
            ),
        ),
    ),
    Case(
        "ccnp-cluster-wide-and-namespace-labels",
        "design.md: a CCNP selects endpoints in every namespace and its peer selectors are "
        "not limited to one namespace; namespace labels via io.cilium.k8s.namespace.labels",
        docs(
            namespace("a", {"team": "blue"}),
            namespace("b", {"team": "blue"}),
            namespace("c", {"team": "red"}),
            A_DB,
            pod("c", "db", {"app": "db"}),
            pod("b", "web", {"app": "web"}),
            pod("c", "web", {"app": "web"}),
            """
apiVersion: cilium.io/v2
kind: CiliumClusterwideNetworkPolicy
metadata: {name: db-from-blue}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - fromEndpoints: [{matchLabels: {"k8s:io.cilium.k8s.namespace.labels.team": blue}}]
""",
        ),
        {
            ("b/web", "a/db"): "all",
            ("b/web", "c/db"): "all",
            ("c/web", "a/db"): None,
            ("c/web", "c/db"): None,
            ("a/db", "c/db"): "all",
            ("c/db", "a/db"): None,
        },
        (
            Check(
                "c/web",
                "c/db",
                None,
                False,
                why=("receiver ingress: default deny (isolated by ccnp db-from-blue rule 0)",),
            ),
        ),
    ),
    Case(
        "cilium-specs-rule-index",
        "design.md: `specs` holds a list of rules; explain names the rule by its index",
        docs(
            A_WEB,
            A_DB,
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db-multi, namespace: a}
specs:
  - endpointSelector: {matchLabels: {app: cache}}
    ingress: [{}]
  - endpointSelector: {matchLabels: {app: db}}
    ingress:
      - fromEndpoints: [{matchLabels: {app: web}}]
    ingressDeny:
      - fromEndpoints: [{matchLabels: {app: web}}]
        toPorts: [{ports: [{port: "9090", protocol: TCP}]}]
""",
        ),
        {("a/web", "a/db"): but(9090), ("a/db", "a/web"): "all"},
        (
            Check(
                "a/web",
                "a/db",
                "9090/TCP",
                False,
                why=("receiver ingress: denied by cnp a/db-multi rule 1 ingressDeny[0]",),
            ),
        ),
    ),
    Case(
        "cilium-l4-only-and-empty-rule",
        "Cilium L4 policy: toPorts without fromEndpoints applies to every peer; an empty "
        "ingress rule selects no peer but still isolates",
        docs(
            A_WEB,
            A_DB,
            pod("a", "cache", {"app": "cache"}),
            pod("b", "web", {"app": "web"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: db, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: db}}
  ingress:
    - toPorts: [{ports: [{port: "5432", protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: cache, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: cache}}
  ingress: [{}]
""",
        ),
        {("b/web", "a/db"): "TCP/5432", ("a/web", "a/db"): "TCP/5432", ("a/web", "a/cache"): None},
        (
            Check(
                "a/web",
                "a/cache",
                None,
                False,
                why=("receiver ingress: default deny (isolated by cnp a/cache rule 0)",),
            ),
        ),
    ),
    Case(
        "cilium-port-range-and-any",
        "issue 10 item 3: Cilium toPorts with endPort ranges and protocol ANY (or no "
        "protocol, which is ANY)",
        docs(
            A_WEB,
            pod("a", "media", {"app": "media"}),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: media, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: media}}
  ingress:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts:
        - ports: [{port: "10000", endPort: 10100, protocol: ANY}, {port: "5060"}]
""",
        ),
        {
            ("a/web", "a/media"): "TCP/5060, TCP/10000-10100, UDP/5060, UDP/10000-10100, "
            "SCTP/5060, SCTP/10000-10100"
        },
        (
            Check(
                "a/web",
                "a/media",
                "10050/UDP",
                True,
                text=("allowed by cnp a/media rule 0 ingress[0]",),
            ),
            Check(
                "a/web",
                "a/media",
                "10101/UDP",
                False,
                why=("receiver ingress: default deny (isolated by cnp a/media rule 0)",),
            ),
        ),
    ),
    Case(
        "cilium-named-ports",
        "issue 10 item 3: named ports resolve against the destination's container ports, on "
        "the egress and the ingress side; a name the destination lacks allows nothing",
        docs(
            A_WEB,
            pod("a", "api", {"app": "api", "tier": "backend"}, (("http", 8080, "TCP"),)),
            pod("a", "legacy", {"app": "legacy", "tier": "backend"}, (("web", 80, "TCP"),)),
            pod("a", "dns", {"app": "dns"}, (("dns", 53, "UDP"),)),
            """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: backend, namespace: a}
spec:
  endpointSelector: {matchLabels: {tier: backend}}
  ingress:
    - fromEndpoints: [{matchLabels: {app: web}}]
      toPorts: [{ports: [{port: http, protocol: TCP}]}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: web-egress, namespace: a}
spec:
  endpointSelector: {matchLabels: {app: web}}
  egress:
    - toEndpoints: [{}]
      toPorts: [{ports: [{port: http, protocol: TCP}, {port: dns, protocol: ANY}]}]
""",
        ),
        {
            ("a/web", "a/api"): "TCP/8080",
            ("a/web", "a/legacy"): None,
            ("a/web", "a/dns"): "UDP/53",
            ("a/api", "a/web"): "all",
        },
        (
            Check(
                "a/web",
                "a/legacy",
                None,
                False,
                why=(
                    "sender egress: default deny (isolated by cnp a/web-egress rule 0)",
                    "receiver ingress: default deny (isolated by cnp a/backend rule 0)",
                ),
                text=("http/TCP -> nothing",),
            ),
            Check("a/web", "a/api", "http/TCP", True, text=("port http/TCP (TCP/8080)",)),
        ),
    ),
    # --- Kubernetes NetworkPolicy -------------------------------------------------------
    Case(
        "netpol-isolation-union-both-ends",
        "Kubernetes: a pod is isolated in a direction once any policy with that policyType "
        "selects it; allows are a union; egress and ingress must both allow",
        docs(
            A_WEB,
            A_DB,
            pod("a", "admin", {"app": "admin"}),
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-web, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
    - from: [{podSelector: {matchLabels: {app: web}}}]
      ports: [{port: 5432}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-admin, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  policyTypes: [Ingress]
  ingress:
    - from: [{podSelector: {matchLabels: {app: admin}}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-egress, namespace: a}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  egress:
    - to: [{podSelector: {matchLabels: {app: db}}}]
      ports: [{port: 5432}]
""",
        ),
        {
            ("a/web", "a/db"): "TCP/5432",
            ("a/admin", "a/db"): "all",
            ("a/web", "a/admin"): None,
            ("a/db", "a/web"): "all",
        },
        (
            Check(
                "a/web",
                "a/admin",
                None,
                False,
                why=("sender egress: default deny (isolated by netpol a/web-egress)",),
            ),
            Check(
                "a/admin",
                "a/db",
                "22/TCP",
                True,
                text=("allowed by netpol a/db-from-admin ingress[0]",),
            ),
        ),
    ),
    Case(
        "netpol-and-versus-or",
        "issue 10 item 3 / Kubernetes: namespaceSelector and podSelector in one `from` "
        "element are ANDed; as two elements they are ORed",
        docs(
            namespace("a", {"team": "blue"}),
            namespace("b", {"team": "blue"}),
            namespace("c", {"team": "red"}),
            A_DB,
            A_WEB,
            pod("a", "cache", {"app": "cache"}),
            pod("a", "batch", {"app": "batch"}),
            pod("b", "web", {"app": "web"}),
            pod("b", "batch", {"app": "batch"}),
            pod("c", "web", {"app": "web"}),
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-and, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
    - from:
        - namespaceSelector: {matchLabels: {team: blue}}
          podSelector: {matchLabels: {app: web}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: cache-or, namespace: a}
spec:
  podSelector: {matchLabels: {app: cache}}
  ingress:
    - from:
        - namespaceSelector: {matchLabels: {team: blue}}
        - podSelector: {matchLabels: {app: web}}
""",
        ),
        {
            ("a/web", "a/db"): "all",
            ("b/web", "a/db"): "all",
            ("b/batch", "a/db"): None,
            ("c/web", "a/db"): None,
            ("a/batch", "a/db"): None,
            ("a/web", "a/cache"): "all",
            ("b/web", "a/cache"): "all",
            ("b/batch", "a/cache"): "all",
            ("c/web", "a/cache"): None,
            ("a/batch", "a/cache"): "all",
        },
        (
            Check(
                "b/batch",
                "a/db",
                None,
                False,
                why=("receiver ingress: default deny (isolated by netpol a/db-and)",),
            ),
            Check(
                "b/batch",
                "a/cache",
                None,
                True,
                text=("netpol a/cache-or ingress[0]: namespaceSelector {team=blue}",),
            ),
        ),
    ),
    Case(
        "netpol-empty-selectors",
        "Kubernetes: an empty podSelector selects every pod of the policy's namespace (as "
        "subject and as peer); an empty namespaceSelector selects every namespace",
        docs(
            A_WEB,
            A_DB,
            pod("b", "web", {"app": "web"}),
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: a}
spec:
  podSelector: {}
  policyTypes: [Ingress, Egress]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-same-ns, namespace: a}
spec:
  podSelector: {}
  ingress:
    - from: [{podSelector: {}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: egress-in-ns, namespace: a}
spec:
  podSelector: {}
  policyTypes: [Egress]
  egress:
    - to: [{podSelector: {}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-from-anywhere, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
    - from: [{namespaceSelector: {}}]
      ports: [{port: 443}]
""",
        ),
        {
            ("a/web", "a/db"): "all",
            ("a/db", "a/web"): "all",
            ("b/web", "a/db"): "TCP/443",
            ("b/web", "a/web"): None,
            ("a/web", "b/web"): None,
        },
        (
            Check(
                "b/web",
                "a/db",
                "80/TCP",
                False,
                why=(
                    "receiver ingress: default deny (isolated by netpol a/allow-same-ns, "
                    "netpol a/db-from-anywhere, netpol a/deny-all)",
                ),
            ),
            Check(
                "a/web",
                "b/web",
                None,
                False,
                why=(
                    "sender egress: default deny (isolated by netpol a/deny-all, "
                    "netpol a/egress-in-ns)",
                ),
            ),
        ),
    ),
    Case(
        "netpol-ipblock-never-matches-pods",
        "issue 10 item 3: ipBlock peers do not match pod-to-pod traffic",
        docs(
            A_WEB,
            A_DB,
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
    - from: [{ipBlock: {cidr: 0.0.0.0/0}}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web, namespace: a}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  egress:
    - to: [{ipBlock: {cidr: 10.0.0.0/8, except: [10.1.0.0/16]}}]
""",
        ),
        {("a/web", "a/db"): None, ("a/db", "a/web"): "all"},
        (
            Check(
                "a/web",
                "a/db",
                None,
                False,
                why=(
                    "sender egress: default deny (isolated by netpol a/web)",
                    "receiver ingress: default deny (isolated by netpol a/db)",
                ),
            ),
        ),
    ),
    Case(
        "netpol-rules-apply-whatever-policy-types-says",
        "Cilium's ParseNetworkPolicy (checked with tools/cilium-oracle): every ingress rule "
        "isolates ingress even under policyTypes [Egress] (Kubernetes would ignore it); "
        "without policyTypes, Egress only when egress rules exist",
        docs(
            A_WEB,
            A_DB,
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: web-egress, namespace: a}
spec:
  podSelector: {matchLabels: {app: web}}
  policyTypes: [Egress]
  ingress:
    - from: [{podSelector: {matchLabels: {app: nobody}}}]
  egress: [{}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db-no-types, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  egress: []
""",
        ),
        {("a/db", "a/web"): None, ("a/web", "a/db"): None},
        (
            Check(
                "a/web",
                "a/db",
                None,
                False,
                why=("receiver ingress: default deny (isolated by netpol a/db-no-types)",),
                text=("allowed by netpol a/web-egress egress[0]",),
                absent=("sender egress",),
            ),
            Check(
                "a/db",
                "a/web",
                None,
                False,
                why=("receiver ingress: default deny (isolated by netpol a/web-egress)",),
                text=("sender egress (a/db)\n  not isolated",),
            ),
        ),
    ),
    Case(
        "netpol-named-ports",
        "issue 10 item 3 / Kubernetes: a named port resolves against the destination pod's "
        "container ports (ingress and egress); a name the destination lacks allows nothing",
        docs(
            A_WEB,
            pod("a", "client", {"app": "client"}),
            pod("a", "api", {"app": "api"}, (("http", 8080, "TCP"), ("metrics", 9090, "TCP"))),
            pod("a", "old", {"app": "old"}, (("http-alt", 8081, "TCP"),)),
            pod("a", "syslog", {"app": "syslog"}, (("syslog", 514, "UDP"),)),
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: http-in, namespace: a}
spec:
  podSelector:
    matchExpressions: [{key: app, operator: In, values: [api, old, syslog]}]
  ingress:
    - from: [{podSelector: {matchExpressions: [{key: app, operator: In, values: [web, client]}]}}]
      ports: [{port: http}, {port: syslog, protocol: UDP}, {port: metrics, protocol: UDP}]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: client-out, namespace: a}
spec:
  podSelector: {matchLabels: {app: client}}
  policyTypes: [Egress]
  egress:
    - ports: [{port: http}]
""",
        ),
        {
            ("a/web", "a/api"): "TCP/8080",
            ("a/web", "a/old"): None,
            ("a/web", "a/syslog"): "UDP/514",
            ("a/client", "a/api"): "TCP/8080",
            ("a/client", "a/syslog"): None,
            ("a/client", "a/web"): None,
            ("a/client", "a/old"): None,
        },
        (
            Check(
                "a/web",
                "a/old",
                None,
                False,
                why=("receiver ingress: default deny (isolated by netpol a/http-in)",),
                text=("http/TCP, metrics/UDP, syslog/UDP -> nothing",),
            ),
            Check(
                "a/client",
                "a/syslog",
                None,
                False,
                why=("sender egress: default deny (isolated by netpol a/client-out)",),
            ),
        ),
    ),
    Case(
        "netpol-endport-sctp-protocol-only",
        "Kubernetes: endPort ranges; SCTP; a port entry with only a protocol allows every "
        "port of it; TCP is the default protocol",
        docs(
            A_WEB,
            pod("a", "sig", {"app": "sig"}),
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: sig, namespace: a}
spec:
  podSelector: {matchLabels: {app: sig}}
  ingress:
    - from: [{podSelector: {matchLabels: {app: web}}}]
      ports: [{port: 32000, endPort: 32768}, {protocol: SCTP, port: 3868}, {protocol: UDP}]
""",
        ),
        {("a/web", "a/sig"): "TCP/32000-32768, UDP/*, SCTP/3868"},
        (
            Check(
                "a/web",
                "a/sig",
                "32769/TCP",
                False,
                why=("receiver ingress: default deny (isolated by netpol a/sig)",),
            ),
            Check(
                "a/web", "a/sig", "3868/SCTP", True, text=("allowed by netpol a/sig ingress[0]",)
            ),
        ),
    ),
    Case(
        "netpol-namespace-not-given",
        "issue 10 item 1: a namespace used but not given has only its "
        "kubernetes.io/metadata.name label; given Namespace objects bring their labels",
        docs(
            namespace("a", {"team": "blue"}),
            namespace("c", {"team": "blue"}),
            A_DB,
            A_WEB,
            pod("b", "web", {"app": "web"}),
            pod("c", "web", {"app": "web"}),
            """
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: db, namespace: a}
spec:
  podSelector: {matchLabels: {app: db}}
  ingress:
    - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: b}}}]
      ports: [{port: 80}]
    - from: [{namespaceSelector: {matchLabels: {team: blue}}}]
      ports: [{port: 443}]
""",
        ),
        {("b/web", "a/db"): "TCP/80", ("c/web", "a/db"): "TCP/443", ("a/web", "a/db"): "TCP/443"},
        (
            Check(
                "b/web",
                "a/db",
                "443/TCP",
                False,
                why=("receiver ingress: default deny (isolated by netpol a/db)",),
            ),
        ),
    ),
]


@pytest.fixture(params=CASES, ids=lambda c: c.id)
def case(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Case, list[str]]:
    c: Case = request.param
    return c, path_args(write_case(tmp_path, c.yaml))


def test_connectivity(case: tuple[Case, list[str]]) -> None:
    c, args = case
    got = connectivity_map(args)
    for pair, want in c.expect.items():
        assert pair in got, f"{pair} not among the pairs"
        assert got[pair] == want, f"{c.id}: {pair[0]} -> {pair[1]}"


def test_explain_agrees(case: tuple[Case, list[str]]) -> None:
    c, args = case
    for (src, dst), want in c.expect.items():
        result = run(["explain", "--from", src, "--to", dst, *args])
        assert result.exit_code == (0 if want else 1), result.output
        assert f"the path allows {want or 'nothing'}\n" in result.output, result.output


def test_explain_names_the_rule(case: tuple[Case, list[str]]) -> None:
    c, args = case
    for check in c.checks:
        port = ["--port", check.port] if check.port else []
        result = run(["explain", "--from", check.src, "--to", check.dst, *port, *args])
        assert result.exit_code == (0 if check.allowed else 1), result.output
        block = verdict_block(result.output)
        assert block.startswith("verdict: ALLOWED" if check.allowed else "verdict: DENIED")
        for line in check.why:
            assert f"\n  {line}\n" in block + "\n", f"{line!r} not in\n{block}"
        for text in check.text:
            assert text in result.output, f"{text!r} not in\n{result.output}"
        for text in check.absent:
            assert text not in block, f"{text!r} in\n{block}"
