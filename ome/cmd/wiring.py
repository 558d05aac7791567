"""What `ome-manager` runs: the operator config, every controller, the webhooks. One place to read it."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import structlog

from ome.api.resources import ROLLOUT_POLICIES
from ome.config import inferenceservice_config as isvc_config
from ome.config.config_source import ConfigSource
from ome.config.durations import parse_duration
from ome.config.inferenceservice_config import ConfigError, InferenceServiceConfig, UpdateRetry
from ome.controllers.acceleratorclass import setup as acceleratorclass
from ome.controllers.autoscaler import controller as autoscaler
from ome.controllers.autoscaler.entries import AutoscalerEntries
from ome.controllers.autoscaler.reconciler import Features as AutoscalerFeatures
from ome.controllers.benchmarkjob import setup as benchmarkjob
from ome.controllers.inferencereplica import setup as inferencereplica
from ome.controllers.inferenceservice import controller as inferenceservice
from ome.controllers.inferenceservice import routing
from ome.controllers.instancerollout import setup as instancerollout
from ome.controllers.migration import setup as migration
from ome.controllers.migration.reconciler import MigrationSettings
from ome.controllers.modelmetadata import setup as modelmetadata
from ome.controllers.rolloutcanary import setup as rolloutcanary
from ome.controllers.rolloutcoordination import setup as rolloutcoordination
from ome.controllers.runtimeinheritance import setup as runtimeinheritance
from ome.framework import resources
from ome.framework.client import Client
from ome.framework.events import EventBudget
from ome.framework.manager import Manager
from ome.framework.webhook_server import WebhookServer
from ome.omenative.migration_plan import Caps
from ome.omenative.podmonitor import POD_MONITORS
from ome.omenative.rollout_budget import OperatorDefault
from ome.omenative.rollout_retry import RetryPolicy
from ome.omenative.rollout_settings import RolloutSettings
from ome.omenative.settings import InferenceReplicaSettings
from ome.webhooks.self_register import Registration

__all__ = ["ConfigError", "Registration", "Settings", "add_controllers", "add_webhooks", "load_settings",
           "self_register_webhooks", "unregister_webhooks"]

log = structlog.get_logger("setup")


class Settings:
    """Startup facts: the validated config and which optional CRDs the cluster serves."""

    def __init__(self, config: InferenceServiceConfig, *, lws_served: bool, config_namespace: str,
                 pod_monitor_served: bool = False) -> None:
        # Command-line tuning; ome-manager sets these from its flags.
        self.inferenceservice_workers = 1
        self.inferencereplica_workers = 1
        self.inferencereplica_controller = True  # --enable-inferencereplica-controller
        self.revision_retention = 10
        self.revision_grace = timedelta(hours=24)
        self.config_cache_ttl = 30.0
        self.config = config
        self.lws_served = lws_served
        self.config_namespace = config_namespace
        # KEDA's CRDs and the AutoscalerPolicy feature, looked for once at startup (load_settings).
        self.autoscaler = AutoscalerFeatures(keda_served=False, policy_enabled=False)
        # The RolloutPolicy CRD (alpha, installed when `ome.rolloutPolicy.enabled`), looked for at startup.
        self.rollout_policy_served = False
        # Like controller-runtime's scheme registration: a PodMonitor CRD installed later needs a restart.
        self.pod_monitor_served = pod_monitor_served
        # HTTPRoute and backend-policy CRDs served at start, and the traffic translator they select.
        self.routing = routing.RoutingFacts()

    @property
    def event_budget(self) -> EventBudget:
        """What every event recorder of the manager allows per object and type (the eventRecorder entry)."""
        return self.config.event_recorder.budget()

    def replica_settings(self) -> InferenceReplicaSettings:
        life = self.config.lifecycle
        retry = life.update_retry or UpdateRetry()
        deadline = life.teardown.deadline
        return InferenceReplicaSettings(
            instance_ready_timeout=parse_duration(life.instance_ready_timeout) or None,  # "0s": unset
            status_encoding="ColumnarV2" if self.config.omenative_status.status_encoding == "ColumnarV2"
            else "Rows",
            max_decoded_instances=self.config.omenative_status.max_decoded_instances,
            revision_history_limit=life.revision_history_limit,
            teardown_deadline=parse_duration(deadline) if deadline else None,
            retry_initial_delay=parse_duration(retry.initial_delay) or 60.0,
            retry_multiplier=retry.multiplier,
            retry_max_delay=parse_duration(retry.max_delay) or 1800.0,
            pod_monitor_served=self.pod_monitor_served,
            migration_audit_configured=life.migration_caps() is not None,
            scale_up_pod_batch_size=life.scale_up_pod_batch_size,
            scale_down_pod_batch_size=life.scale_down_pod_batch_size,
            scale_down_requeue_interval=parse_duration(life.scale_down_requeue_interval),
            gang_schedule_timeout=life.gang_clamp(),
            stuck_pod_grace_period=parse_duration(life.stuck_pod_grace_period),
            unschedulable_grace_period=parse_duration(life.unschedulable_grace_period),
        )

    def migration_settings(self) -> MigrationSettings:
        """The migration controller's: lifecycle.audit caps (None: requests wait), the deadline default."""
        life = self.config.lifecycle
        caps = life.migration_caps()
        block = life.force_delete_block
        if block is not None and (problem := block.problem()) is not None:
            # As v1.3: a block that decodes but is unusable only turns the escalation off.
            log.debug("lifecycle.forceDelete ignored; the force-delete escalation is off", reason=problem)
        return MigrationSettings(
            caps=Caps(*caps) if caps is not None else None,
            instance_ready_timeout=parse_duration(life.instance_ready_timeout),
            stuck_grace=parse_duration(life.stuck_pod_grace_period) if life.stuck_pod_grace_period else None,
            columnar=self.config.omenative_status.status_encoding == "ColumnarV2",
            force_delete=self.config.lifecycle.force_delete(),
            auto_migrate_attempts=self.config.lifecycle.auto_migrate_attempts(),
            max_concurrent_reconciles=self.inferencereplica_workers)

    def rollout_settings(self) -> RolloutSettings:
        """The Instance rollout controller's settings: operator default strategies and the retry policy."""
        life = self.config.lifecycle
        defaults: dict[str, OperatorDefault] = {}
        for component in ("engine", "decoder", "router"):
            found = self.config.deploy.update_strategy.for_component(component)
            if found is not None:
                defaults[component] = OperatorDefault(found.type, found.max_surge, found.max_unavailable)
        retry = life.update_retry
        policy = RetryPolicy() if retry is None else RetryPolicy(
            max_attempts=retry.max_attempts, initial_delay=parse_duration(retry.initial_delay) or 60.0,
            multiplier=retry.multiplier, max_delay=parse_duration(retry.max_delay) or 1800.0)
        grace = getattr(life, "unschedulable_grace_period", None)
        return RolloutSettings(
            defaults=defaults, retry=policy,
            instance_ready_timeout=parse_duration(life.instance_ready_timeout),
            gang_schedule_timeout=life.gang_clamp(),
            unschedulable_grace=parse_duration(grace) if isinstance(grace, str) else None,
            stuck_grace=parse_duration(life.stuck_pod_grace_period) if life.stuck_pod_grace_period else None,
            columnar=self.config.omenative_status.status_encoding == "ColumnarV2",
            max_decoded_instances=self.config.omenative_status.max_decoded_instances,
            ratio_tolerance=self.config.coordination.default_ratio_tolerance_percent,
            max_concurrent_reconciles=self.inferencereplica_workers)


async def load_settings(client: Client, namespace: str) -> Settings:
    """Reads and validates inferenceservice-config; a bad config is fatal (ConfigError)."""
    config = await isvc_config.load(client, namespace, require_omenative_status=True)
    lws = await client.is_served(resources.LEADER_WORKER_SETS)
    pod_monitors = await client.is_served(POD_MONITORS)
    log.info("configuration loaded", namespace=namespace, default_mode=config.deploy.default_deployment_mode,
             leaderworkerset_served=lws, podmonitor_served=pod_monitors)
    status = config.omenative_status
    log.info("Configured InferenceReplica status representation",
             instanceStatusEncoding=status.instance_status_encoding, maxDecodedInstances=status.decode_bound)
    for key in config.lifecycle.not_acted_on():
        log.warning("lifecycle setting not implemented by this controller; it has no effect",
                    key=f"lifecycle.{key}")
    for key, closest in config.lifecycle.unknown_keys():
        log.warning("lifecycle setting is not a known key; it has no effect", key=f"lifecycle.{key}",
                    did_you_mean=f"lifecycle.{closest}" if closest else None)
    settings = Settings(config, lws_served=lws, config_namespace=namespace, pod_monitor_served=pod_monitors)
    budget = settings.event_budget
    log.info("Configured event budget", burstSize=budget.burst,
             refillInterval=f"{budget.refill_interval:g}s")
    settings.routing = await routing.detect(client)
    settings.autoscaler = await autoscaler.detect(client, config)
    settings.rollout_policy_served = await client.is_served(ROLLOUT_POLICIES)
    if not settings.autoscaler.keda_served:
        log.info("won't watch keda.sh/v1alpha1/ScaledObject resources: the CRD is not served")
    log.info("autoscaling", keda_served=settings.autoscaler.keda_served,
             autoscaler_policy_enabled=settings.autoscaler.policy_enabled)
    return settings


def add_controllers(manager: Manager, settings: Settings) -> None:
    source = ConfigSource(manager.client, settings.config_namespace, settings.config,
                          ttl=settings.config_cache_ttl)
    scaling_entries = AutoscalerEntries()  # the autoscaler publishes, the InferenceService controller writes
    inferenceservice.add_to_manager(manager, settings.config, lws_served=settings.lws_served,
                                    config_namespace=settings.config_namespace,
                                    max_concurrent_reconciles=settings.inferenceservice_workers,
                                    revision_retention=settings.revision_retention,
                                    revision_grace=settings.revision_grace,
                                    config_source=source, routing_facts=settings.routing,
                                    pod_monitor_served=settings.pod_monitor_served,
                                    replica_teardown=settings.inferencereplica_controller,
                                    autoscaler_entries=scaling_entries)
    if settings.inferencereplica_controller:
        replica = dataclasses.replace(settings.replica_settings(),
                                      max_concurrent_reconciles=settings.inferencereplica_workers)
        inferencereplica.add_to_manager(manager, replica)
    else:
        log.info("InferenceReplica controller disabled (--enable-inferencereplica-controller=false): "
                 "no pods are created or updated for OMENative services")
    autoscaler.add_to_manager(manager, settings.config, features=settings.autoscaler, entries=scaling_entries,
                              config_namespace=settings.config_namespace, config_source=source,
                              max_concurrent_reconciles=settings.inferenceservice_workers)
    if settings.inferencereplica_controller:  # the Instances' pods are the InferenceReplica controller's part
        instancerollout.add_to_manager(manager, settings.rollout_settings())
        rollout = settings.rollout_settings()
        rolloutcoordination.add_to_manager(manager, defaults=rollout.defaults,
                                           ratio_tolerance=rollout.ratio_tolerance,
                                           max_concurrent_reconciles=settings.inferenceservice_workers)
        rolloutcanary.add_to_manager(manager, lambda: source.config,
                                     policy_enabled=settings.rollout_policy_served,
                                     max_concurrent_reconciles=settings.inferenceservice_workers)
        migration.add_to_manager(manager, settings.migration_settings())
    from ome.controllers import nodeagent  # noqa: PLC0415 - optional until the package lands

    nodeagent.add_to_manager(manager, config_namespace=settings.config_namespace)
    modelmetadata.add_to_manager(manager, settings.config.ome_agent,
                                 config_namespace=settings.config_namespace)
    acceleratorclass.add_to_manager(manager)
    benchmarkjob.add_to_manager(manager, config_namespace=settings.config_namespace)
    runtimeinheritance.add_to_manager(manager)


def add_webhooks(server: WebhookServer, manager: Manager, settings: Settings) -> None:
    from ome.webhooks import autoscaler_admission, registry, rollout_group_validation  # noqa: PLC0415

    # References to an AutoscalerPolicy are admitted only when the feature was found on at startup.
    autoscaler_admission.POLICY_GATE.enabled = settings.autoscaler.policy_enabled
    # And a rollout group's policyRef when the RolloutPolicy CRD is served (RolloutPolicyRefUnsupported).
    rollout_group_validation.ROLLOUT_POLICY_GATE.enabled = settings.rollout_policy_served
    registry.register_webhooks(server, manager.cache, settings.config, settings.config_namespace)


async def self_register_webhooks(
    client: Client, server: WebhookServer, ca_bundle: bytes, registered: list[Registration]
) -> None:
    """Once the server listens, point the apiserver at it; the registration is appended to `registered`."""
    from ome.webhooks import self_register  # noqa: PLC0415

    await server.wait_ready()
    registered.append(await self_register.register(client, port=server.port, ca_bundle=ca_bundle))
    log.info("webhook configurations registered", url=f"https://127.0.0.1:{server.port}")
    # Another replica that stops deletes them when they name it last: put them back while we serve.
    await self_register.keep_registered(client, port=server.port, ca_bundle=ca_bundle)


async def unregister_webhooks(client: Client, registered: list[Registration]) -> None:
    """On shutdown: remove the configurations that still point at this process."""
    from ome.webhooks import self_register  # noqa: PLC0415

    for registration in registered:
        await self_register.unregister(client, registration, only_if_ours=True)
    if registered:
        log.info("webhook configurations removed")
