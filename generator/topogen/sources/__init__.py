"""Sources: read files (or a live cluster) into model objects. Nothing else reads inputs.

Modules: yamlio (safe parsing), objects (documents into KubeObjects), nodes, policies,
podspec, workloads (pods per the operators' registry), live, loader (what topogen.yaml
names).
"""
