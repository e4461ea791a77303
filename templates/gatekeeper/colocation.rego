# topogen co-location checks for one training group: Gatekeeper ConstraintTemplate
# code, Rego v1 (version "v1" in the template; OPA 1.x parses it as is).
#
# The same checks, messages and reference semantics as topogen's CEL ValidatingPolicy
# (render/cel.py, render/reference.py). Every value comes from input.parameters
# (the Constraint); nothing here is specific to a group. The parameters hold what a pod
# is looked up in (zoneSet, deniedPairs), so a pod costs lookups, not walks of tables.
package topogen.colocation

pod := input.review.object

params := input.parameters

labels := object.get(pod.metadata, "labels", {})

annotations := object.get(pod.metadata, "annotations", {})

spec := object.get(pod, "spec", {})

pod_name := name if {
	name := object.get(pod.metadata, "name", "")
	name != ""
} else := "being created"

namespace := ns if {
	ns := object.get(pod.metadata, "namespace", "")
	ns != ""
} else := object.get(input.review, "namespace", "")

# --- which pods: the group's namespaces, its job label, a role, not placed by Kueue TAS.
# A selector comes as lookups: {"in": {key: {value: true}}, "notIn": {key: {value: true}},
# "exists": [key], "absent": [key]} (matchLabels as `in` of one value).

has_label(key) if labels[key]

selector_matches(sel) if {
	every key, values in sel.in {
		values[labels[key]]
	}
	every key, values in sel.notIn {
		not values[labels[key]]
	}
	every key in sel.exists {
		has_label(key)
	}
	every key in sel.absent {
		not has_label(key)
	}
}

is_coordinator if {
	some sel in params.coordinators
	selector_matches(sel)
}

# a detached pod of a job (KubeRay's submitter: no job label) is pinned like the coordinator
is_coordinator if detached

detached if {
	not has_label(params.jobLabel)
	some sel in object.get(params, "detached", [])
	selector_matches(sel)
}

is_worker if {
	not is_coordinator
	some sel in params.workers
	selector_matches(sel)
}

placed_by_kueue if {
	some key in params.skipKeys
	has_label(key)
}

placed_by_kueue if {
	some key in params.skipKeys
	annotations[key]
}

placed_by_kueue if {
	some gate in object.get(spec, "schedulingGates", [])
	gate.name == params.skipGate
}

in_group if {
	namespace in params.namespaces
	has_label(params.jobLabel)
	not placed_by_kueue
}

in_group if {
	namespace in params.namespaces
	detached
	not placed_by_kueue
}

# --- where the pod may land: a nodeSelector zone wins; else the zones of every
# required node-affinity term (each term must constrain the zone, or the pod is unpinned)

zone_in(e) if {
	e.key == params.zoneLabel
	e.operator == "In"
}

selector_zone := [zone] if {
	zone := spec.nodeSelector[params.zoneLabel]
} else := []

terms := found if {
	found := spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms
	count(found) > 0
} else := []

term_pinned(t) if {
	some e in object.get(t, "matchExpressions", [])
	zone_in(e)
}

term_zones(t) := [v | some e in object.get(t, "matchExpressions", []); zone_in(e); some v in e.values]

zone_sets := [selector_zone] if {
	count(selector_zone) > 0
} else := sets if {
	count(terms) > 0
	every t in terms {
		term_pinned(t)
	}
	sets := [term_zones(t) | some t in terms]
}

within_domain if {
	sets := zone_sets
	every s in sets {
		count(s) > 0
		every v in s {
			params.zoneSet[v]
		}
	}
}

identity_claim_holds(value) if {
	sets := zone_sets
	every s in sets {
		every v in s {
			v == value
		}
	}
}

may_land := {v | some s in zone_sets; some v in s}

# --- a worker's pod affinity to its own job's coordinator

coordinator_term(t) if {
	t.topologyKey == params.topologyKey
	t.labelSelector.matchLabels[params.jobLabel] == labels[params.jobLabel]
}

# The form topogen's Gatekeeper mutator writes (a mutator cannot copy a label value):
# the API server turns matchLabelKeys into `<job label> In (<the pod's value>)`.
coordinator_term(t) if {
	t.topologyKey == params.topologyKey
	is_object(t.labelSelector)
	params.jobLabel in object.get(t, "matchLabelKeys", [])
}

has_coordinator_term if {
	some t in spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution
	coordinator_term(t)
}

# --- the checks

violation contains {"msg": msg, "details": {"check": "coordinator-pinned"}} if {
	in_group
	is_coordinator
	not within_domain
	msg := sprintf(
		"pod %s: the coordinator of group %s must be pinned to %s in [%s] (topogen co-location)",
		[pod_name, params.group, params.zoneLabel, concat(", ", params.zones)],
	)
}

violation contains {"msg": msg, "details": {"check": "worker-affinity"}} if {
	in_group
	is_worker
	not has_coordinator_term
	msg := sprintf(
		"pod %s: a worker of group %s must require pod affinity to its coordinator on %s (topogen co-location)",
		[pod_name, params.group, params.topologyKey],
	)
}

violation contains {"msg": msg, "details": {"check": "identity"}} if {
	params.identityLabel != ""
	value := labels[params.identityLabel]
	in_group
	any_role
	not identity_claim_holds(value)
	msg := sprintf(
		"pod %s: identity label %s=%s claims a zone the pod is not pinned to",
		[pod_name, params.identityLabel, value],
	)
}

# deniedPairs: zone A -> zone B -> the policies that deny the pair, as the message names them
violation contains {"msg": msg, "details": {"check": check}} if {
	some a, pairs in params.deniedPairs
	may_land[a]
	some b, texts in pairs
	may_land[b]
	in_group
	any_role
	some policies in texts
	check := sprintf("denied:%s:%s", [a, b])
	msg := sprintf(
		"pod %s: node affinity spans %s and %s, whose traffic is denied by %s",
		[pod_name, a, b, policies],
	)
}

any_role if is_coordinator

any_role if is_worker
