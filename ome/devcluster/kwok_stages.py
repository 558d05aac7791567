"""kwok stage configuration: how fake nodes and pods move through their lifecycle.

Written for OME rather than taken whole from kwok's defaults: the pod-ready stage leaves readiness gates
alone (OME's controller owns the `ome.io/serving` condition), and two extra stages make the pod's Ready
condition follow that gate the way a kubelet would.
"""

from __future__ import annotations

SERVING_GATE = "ome.io/serving"

_NODE_STATUS_COMMON = """
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      {{ with NodeIP }}
      - address: {{ . | Quote }}
        type: InternalIP
      {{ end }}
      {{ with NodeName }}
      - address: {{ . | Quote }}
        type: Hostname
      {{ end }}
      {{ with NodePort }}
      daemonEndpoints:
        kubeletEndpoint:
          Port: {{ . }}
      {{ end }}
"""

NODE_INITIALIZE = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ['True']
  next:
    statusTemplate: |""" + _NODE_STATUS_COMMON + """
      allocatable:
      {{ YAML .status.allocatable 1 }}
      capacity:
      {{ YAML .status.capacity 1 }}
      nodeInfo:
        architecture: amd64
        containerRuntimeVersion: "kwok-{{ Version }}"
        kernelVersion: "kwok-{{ Version }}"
        kubeletVersion: "kwok-{{ Version }}"
        kubeProxyVersion: "kwok-{{ Version }}"
        operatingSystem: linux
      phase: Running
"""

NODE_HEARTBEAT = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-heartbeat-with-lease
spec:
  resourceRef: {apiGroup: v1, kind: Node}
  selector:
    matchExpressions:
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['True']
  delay:
    durationMilliseconds: 600000
    jitterDurationMilliseconds: 610000
  next:
    statusTemplate: |""" + _NODE_STATUS_COMMON

PULL_FAILS = "pull-fails"
"""A container image whose name contains this never pulls on the fake nodes (ImagePullBackOff), so tests can
publish a revision that fails for a reason of its own."""
_PULL_FAILS_KEY = f"'.spec.containers.[] | select( .image | contains(\"{PULL_FAILS}\") ) | .name'"

POD_START_DELAY = "pod-ready.stage.kwok.x-k8s.io/delay"
"""A pod annotation (a duration such as "3s") that holds the pod in Pending that long before it runs:
a model server's start time, for benchmarks whose pods should not start in milliseconds."""

# Ready is True at once for pods without readiness gates; with gates it waits for the gate stages below.
POD_READY = f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.podIP'
      operator: DoesNotExist
    - key: {_PULL_FAILS_KEY}
      operator: DoesNotExist
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.annotations["{POD_START_DELAY}"]'
  next:""" + """
    statusTemplate: |
      {{ $now := Now }}
      {{ $ready := "True" }}
      {{ if .spec.readinessGates }}{{ $ready = "False" }}{{ end }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{ $now | Quote }}
        status: {{ $ready | Quote }}
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        started: true
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Running
      startTime: {{ $now | Quote }}
"""

# A pod with a `pull-fails` image: scheduled and given an IP, its containers wait in ImagePullBackOff.
POD_IMAGE_PULL_FAILS = f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-fails
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.podIP'
      operator: DoesNotExist
    - key: {_PULL_FAILS_KEY}
      operator: Exists
  next:""" + """
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          waiting:
            reason: ImagePullBackOff
            message: {{ printf "Back-off pulling image %q" .image | Quote }}
      {{ end }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      phase: Pending
      startTime: {{ $now | Quote }}
"""


def _gate_stage(name: str, gate_status: str, ready_now: str) -> str:
    # Mirrors the kubelet: Ready is containers-ready AND every readiness gate True. Only the OME serving
    # gate is modelled; it is the only gate OME sets.
    return f"""
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: {name}
spec:
  resourceRef: {{apiGroup: v1, kind: Pod}}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "{SERVING_GATE}" ) | .status'
      operator: In
      values: ['{gate_status}']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['{ready_now}']
  next:
    statusTemplate: |
      {{{{ $now := Now }}}}
      conditions:
      {{{{ range .status.conditions }}}}
      - type: {{{{ .type | Quote }}}}
      {{{{ if eq .type "Ready" }}}}
        status: "{gate_status}"
        lastTransitionTime: {{{{ $now | Quote }}}}
      {{{{ else }}}}
        status: {{{{ .status | Quote }}}}
        lastTransitionTime: {{{{ or .lastTransitionTime $now | Quote }}}}
      {{{{ end }}}}
      {{{{ end }}}}
"""


POD_GATE_OPEN = _gate_stage("pod-serving-gate-open", "True", "False")
POD_GATE_CLOSED = _gate_stage("pod-serving-gate-closed", "False", "True")

# kube-controller-manager's node lifecycle controller sets Ready=False (and nothing else) on every pod of a
# node whose lease it saw go stale, e.g. across an apiserver restart; the node then comes back, and a real
# kubelet's next status sync sets Ready=True again from its containers. kwok's pod-ready stage runs once
# (before the pod has an IP), so without this stage a pod without readiness gates stays Ready=False for
# good (gated pods come back through pod-serving-gate-open).
POD_READY_AGAIN = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready-again
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.spec.readinessGates'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.status.conditions.[] | select( .type == "ContainersReady" ) | .status'
      operator: In
      values: ['True']
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: In
      values: ['False']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range .status.conditions }}
      - type: {{ .type | Quote }}
      {{ if eq .type "Ready" }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ else }}
        status: {{ .status | Quote }}
        lastTransitionTime: {{ or .lastTransitionTime $now | Quote }}
      {{ end }}
      {{ end }}
"""

POD_COMPLETE = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-complete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.status.phase'
      operator: In
      values: [Running]
    - key: '.metadata.ownerReferences.[].kind'
      operator: In
      values: [Job]
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false
        restartCount: 0
        started: false
        state:
          terminated:
            exitCode: 0
            finishedAt: {{ $now | Quote }}
            reason: Completed
            startedAt: {{ $now | Quote }}
      {{ end }}
      phase: Succeeded
"""

POD_DELETE = """
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef: {apiGroup: v1, kind: Pod}
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    finalizers:
      empty: true
    delete: true
"""

ALL_STAGES = (NODE_INITIALIZE, NODE_HEARTBEAT, POD_READY, POD_IMAGE_PULL_FAILS, POD_GATE_OPEN, POD_GATE_CLOSED,
              POD_READY_AGAIN, POD_COMPLETE, POD_DELETE)


def kwok_config_yaml() -> str:
    return "\n---".join(s.rstrip() for s in ALL_STAGES) + "\n"
