"""Prefill-decode pairing (pure): the `Pairing` gate of a blue-green group holding both engine and
decoder, and the `OME_<PEER>_ENDPOINT` / `OME_<PEER>_REVISION_ENDPOINT` variables of grouped services' pods.

An engine pod pairs with the decoder revision its `OME_DECODER_REVISION_ENDPOINT` names for its whole
life (env is fixed at creation): a pod made for the engine's update revision pairs with the decoder's
update revision, any other pod with the decoder's current one. So an old engine needs an old decoder
and a new engine a new decoder. The gate keeps both true while a group rolls (with two or more of each;
a single decoder has nothing to keep back):

- the engine's last Instance on an old revision waits until a decoder Instance serves the decoder's
  new revision;
- the decoder's last Instance on an old revision waits while any engine Instance is on an old one.

A pairing protocol change (`spec.rollout.pairingProtocol`) gives both a new revision, so the same two
rules keep one same-token engine and decoder pair serving throughout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from ome.omenative import instance_names as names
from ome.omenative.coordination_types import GATE_PAIRING, GroupContext, GroupDecision, Limit, Member

ENGINE: Final = "engine"
DECODER: Final = "decoder"


def applies(members: Mapping[str, Member]) -> bool:
    return ENGINE in members and DECODER in members


def reserved(members: Mapping[str, Member]) -> dict[str, int]:
    """Instances each member keeps on its old revision for pairing now (0 or 1)."""
    if not applies(members):
        return {}
    engine, decoder = members[ENGINE], members[DECODER]
    out = {}
    if engine.rolling and decoder.rolling and decoder.serving_target == 0 and engine.desired >= 1:
        out[ENGINE] = 1
    if decoder.rolling and engine.rolling and decoder.desired >= 2:
        out[DECODER] = 1
    return out


def apply(ctx: GroupContext, decision: GroupDecision) -> None:
    """Narrow the decision's limits by the two pairing rules (a held member gets gate `Pairing`)."""
    members = ctx.members
    if not applies(members):
        return
    engine, decoder = members[ENGINE], members[DECODER]
    keep = reserved(members)
    if keep.get(ENGINE):
        reason = (f"engine keeps an Instance on its old revision until a decoder Instance serves the new "
                  f"revision ({decoder.serving_target} of {decoder.desired} do)")
        _narrow(decision, engine, engine.desired - 1, reason)
    if keep.get(DECODER):
        reason = (f"decoder keeps an Instance on its old revision while {engine.old + engine.moving} engine "
                  "Instances are on an old revision")
        _narrow(decision, decoder, decoder.desired - 1, reason)


def _narrow(decision: GroupDecision, m: Member, total: int, reason: str) -> None:
    current = decision.limits.get(m.component) or Limit()
    if current.total is not None and current.total <= total:
        return
    decision.limits[m.component] = Limit(total=max(total, 0), moving=current.moving, gate=GATE_PAIRING,
                                         reason=reason, moving_gate=current.moving_gate or current.gate,
                                         moving_reason=current.moving_reason or current.reason)


# -- peer endpoints ------------------------------------------------------------------------------------


def endpoint_var(peer: str) -> str:
    return f"OME_{peer.upper()}_ENDPOINT"


def revision_endpoint_var(peer: str) -> str:
    return f"OME_{peer.upper()}_REVISION_ENDPOINT"


def peer_env(
    base: str,
    namespace: str,
    peers: Iterable[str],
    revisions: Mapping[str, tuple[str, str]],
    own_target: str,
    pod_revision: str,
    domain: str = "cluster.local",
) -> list[tuple[str, str]]:
    """The peer variables of one pod of a grouped service.

    `peers` are the service's other components; `revisions` maps a peer with an InferenceReplica to its
    (update, current) revision hashes. A pod on `own_target` pairs with each peer's update revision;
    any other pod with the peer's current revision (its update one before it has finished a rollout)."""
    env: list[tuple[str, str]] = []
    for peer in sorted(peers):
        env.append((endpoint_var(peer), f"{names.component_name(base, peer)}.{namespace}.svc.{domain}"))
        target, current = revisions.get(peer, ("", ""))
        chosen = target if (not pod_revision or pod_revision == own_target) else (current or target)
        if chosen:
            service = names.revision_service_name(base, peer, chosen)
            env.append((revision_endpoint_var(peer), f"{service}.{namespace}.svc.{domain}"))
    return env
