"""The Cilium agent's identity label filter (cilium/cilium pkg/labelsfilter): which pod
labels make up a security identity, by default and under the agent's `labels` option.

Its home: a selector on a label the filter drops selects nothing, so the reachability
analysis (analysis/reachability.py, through pod_identity_labels) is to see a pod only
through this filter. Not modelled yet: every label counts.
"""

from __future__ import annotations

__all__: list[str] = []
