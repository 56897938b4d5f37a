"""Launch script -> LaunchConfig -> EffectiveConfig (what megatron-core's schedules will see)."""
