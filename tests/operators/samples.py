"""One small manifest per kind some registered operator reads: a job whose coordinator and
workers its controller makes (or, for single-template kinds, one pod template)."""

from __future__ import annotations

POD = "{containers: [{name: main, image: img, resources: {limits: {nvidia.com/gpu: 1}}}]}"
CPU_POD = "{containers: [{name: main, image: img}]}"
LABELS = "{labels: {app: bert, role: gpu-worker}}"


def _kubeflow(kind: str, field: str, leader: str) -> str:
    return f"""
    apiVersion: kubeflow.org/v1
    kind: {kind}
    metadata: {{name: bert, namespace: ml}}
    spec:
      {field}:
        {leader}: {{replicas: 1, template: {{spec: {CPU_POD}}}}}
        Worker: {{replicas: 3, template: {{spec: {POD}}}}}
    """


def _builtin(api: str, kind: str, spec: str) -> str:
    return f"""
    apiVersion: {api}
    kind: {kind}
    metadata: {{name: bert, namespace: ml}}
    spec: {spec}
    """


_TEMPLATE = f"{{metadata: {LABELS}, spec: {POD}}}"

# (API group, kind) -> manifest
SAMPLES: dict[tuple[str, str], str] = {
    ("kubeflow.org", "PyTorchJob"): _kubeflow("PyTorchJob", "pytorchReplicaSpecs", "Master"),
    ("kubeflow.org", "TFJob"): _kubeflow("TFJob", "tfReplicaSpecs", "Chief"),
    ("kubeflow.org", "XGBoostJob"): _kubeflow("XGBoostJob", "xgbReplicaSpecs", "Master"),
    ("kubeflow.org", "PaddleJob"): _kubeflow("PaddleJob", "paddleReplicaSpecs", "Master"),
    ("kubeflow.org", "MPIJob"): _kubeflow("MPIJob", "mpiReplicaSpecs", "Launcher"),
    ("jobset.x-k8s.io", "JobSet"): f"""
    apiVersion: jobset.x-k8s.io/v1alpha2
    kind: JobSet
    metadata: {{name: bert, namespace: ml}}
    spec:
      replicatedJobs:
        - name: leader
          replicas: 1
          template: {{spec: {{parallelism: 1, template: {{spec: {CPU_POD}}}}}}}
        - name: workers
          replicas: 1
          template: {{spec: {{parallelism: 3, template: {{spec: {POD}}}}}}}
    """,
    ("batch.volcano.sh", "Job"): f"""
    apiVersion: batch.volcano.sh/v1alpha1
    kind: Job
    metadata: {{name: bert, namespace: ml}}
    spec:
      tasks:
        - {{name: master, replicas: 1, template: {{spec: {CPU_POD}}}}}
        - {{name: worker, replicas: 3, template: {{spec: {POD}}}}}
    """,
    ("kubeflow.org", "JAXJob"): f"""
    apiVersion: kubeflow.org/v1
    kind: JAXJob
    metadata: {{name: bert, namespace: ml}}
    spec:
      jaxReplicaSpecs:
        Worker: {{replicas: 4, template: {{spec: {POD}}}}}
    """,
    ("ray.io", "RayCluster"): f"""
    apiVersion: ray.io/v1
    kind: RayCluster
    metadata: {{name: bert, namespace: ml}}
    spec:
      headGroupSpec: {{rayStartParams: {{}}, template: {{spec: {CPU_POD}}}}}
      workerGroupSpecs:
        - {{groupName: gpu, replicas: 3, rayStartParams: {{}}, template: {{spec: {POD}}}}}
    """,
    ("ray.io", "RayJob"): f"""
    apiVersion: ray.io/v1
    kind: RayJob
    metadata: {{name: bert, namespace: ml}}
    spec:
      entrypoint: python train.py
      rayClusterSpec:
        headGroupSpec: {{rayStartParams: {{}}, template: {{spec: {CPU_POD}}}}}
        workerGroupSpecs:
          - {{groupName: gpu, replicas: 3, rayStartParams: {{}}, template: {{spec: {POD}}}}}
    """,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): f"""
    apiVersion: leaderworkerset.x-k8s.io/v1
    kind: LeaderWorkerSet
    metadata: {{name: bert, namespace: ml}}
    spec:
      replicas: 1
      leaderWorkerTemplate:
        size: 4
        leaderTemplate: {{spec: {CPU_POD}}}
        workerTemplate: {{spec: {POD}}}
    """,
    ("trainer.kubeflow.org", "TrainJob"): """
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    metadata: {name: bert, namespace: ml}
    spec:
      runtimeRef: {name: torch-distributed}
      trainer:
        numNodes: 4
        resourcesPerNode: {limits: {nvidia.com/gpu: 1}}
    """,
    ("", "Pod"): f"""
    apiVersion: v1
    kind: Pod
    metadata: {{name: bert, namespace: ml, labels: {{app: bert, role: gpu-worker}}}}
    spec: {POD}
    """,
    ("apps", "Deployment"): _builtin("apps/v1", "Deployment", f"{{template: {_TEMPLATE}}}"),
    ("apps", "StatefulSet"): _builtin("apps/v1", "StatefulSet", f"{{template: {_TEMPLATE}}}"),
    ("apps", "ReplicaSet"): _builtin("apps/v1", "ReplicaSet", f"{{template: {_TEMPLATE}}}"),
    ("apps", "DaemonSet"): _builtin("apps/v1", "DaemonSet", f"{{template: {_TEMPLATE}}}"),
    ("batch", "Job"): _builtin("batch/v1", "Job", f"{{template: {_TEMPLATE}}}"),
    ("batch", "CronJob"): _builtin(
        "batch/v1",
        "CronJob",
        f'{{schedule: "* * * * *", jobTemplate: {{spec: {{template: {_TEMPLATE}}}}}}}',
    ),
}

# (profile, kind) -> the sample where two operators read one kind (by API version)
VERSIONED: dict[tuple[str, tuple[str, str]], str] = {
    ("mpi-operator", ("kubeflow.org", "MPIJob")): f"""
    apiVersion: kubeflow.org/v2beta1
    kind: MPIJob
    metadata: {{name: bert, namespace: ml}}
    spec:
      mpiReplicaSpecs:
        Launcher: {{replicas: 1, template: {{spec: {CPU_POD}}}}}
        Worker: {{replicas: 3, template: {{spec: {POD}}}}}
    """,
}

# profile -> a job of one coordinator and three workers its operator's controller makes
JOBS: dict[str, str] = {
    "kubeflow-training-operator": SAMPLES[("kubeflow.org", "PyTorchJob")],
    "mpi-operator": VERSIONED[("mpi-operator", ("kubeflow.org", "MPIJob"))],
    "kuberay": SAMPLES[("ray.io", "RayCluster")],
    "leaderworkerset": SAMPLES[("leaderworkerset.x-k8s.io", "LeaderWorkerSet")],
    "jobset": SAMPLES[("jobset.x-k8s.io", "JobSet")],
    "volcano": SAMPLES[("batch.volcano.sh", "Job")],
    "kubeflow-trainer": SAMPLES[("trainer.kubeflow.org", "TrainJob")],
    "custom": f"""
    apiVersion: apps/v1
    kind: Deployment
    metadata: {{name: coord, namespace: ml}}
    spec:
      replicas: 1
      template:
        metadata: {{labels: {{app: bert, role: coordinator}}}}
        spec: {CPU_POD}
    ---
    apiVersion: batch/v1
    kind: Job
    metadata: {{name: workers, namespace: ml}}
    spec:
      parallelism: 3
      template:
        metadata: {{labels: {{app: bert, role: gpu-worker}}}}
        spec: {POD}
    """,
}
# what a custom group names (the custom operator has no labels of its own)
CUSTOM = {
    "groupLabel": "app",
    "roleLabel": "role",
    "coordinatorRoles": ["coordinator"],
    "workerRoles": ["gpu-worker"],
}
