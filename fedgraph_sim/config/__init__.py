"""Typed run configuration: YAML file + dotted ``key=value`` overrides, validated up front.

Every entry point validates the whole configuration before it writes anything, and every mistake
becomes one :class:`~fedgraph_sim.errors.ConfigError` line naming the key. The schema is in
``sections``, reading and validating in ``loading`` (the cross-section rules in ``checks``), and
the grouping of defense stacks in ``defense_setting``; this package's names are the public surface.
"""

from fedgraph_sim.config.defense_setting import DefenseSetting, defense_label
from fedgraph_sim.config.loading import (DEFAULT_CONFIG, DEFAULT_ROUND, config_hash, default_tree, load_config,
                                         merge_tree, parse_overrides, set_dotted, to_yaml, validate_config)
from fedgraph_sim.config.sections import (AGGREGATION_KEYS, ATTACK_GRANTS, ATTACK_NAME, AggregationConfig,
                                          AttackConfig, AuxConfig, DataConfig, EveryRound, FederationConfig,
                                          MetricsConfig, ModelConfig, OutputConfig, PartitionConfig, RunConfig,
                                          SecAggPlusConfig, Section, ThreatConfig, TrainConfig)

__all__ = ["AGGREGATION_KEYS", "ATTACK_GRANTS", "ATTACK_NAME", "AggregationConfig", "AttackConfig", "AuxConfig",
           "DEFAULT_CONFIG", "DEFAULT_ROUND", "DataConfig", "DefenseSetting", "EveryRound", "FederationConfig",
           "MetricsConfig", "ModelConfig", "OutputConfig", "PartitionConfig", "RunConfig", "SecAggPlusConfig",
           "Section", "ThreatConfig", "TrainConfig", "default_tree", "defense_label", "load_config", "merge_tree",
           "parse_overrides", "set_dotted", "to_yaml", "validate_config", "config_hash"]
